"""Row ranges a process of a distributed job reads: the helpers behind
``lancelet.sampler`` and ``lancelet._dataset.sharded_batch_iterator``.

Rows are numbered by their offset in the dataset (deleted rows not counted), as
``take`` numbers them.  Process ``rank`` of ``world_size`` takes every
``world_size``-th run of ``batch_size`` rows, starting with run ``rank``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from lancelet.dataset.read.projection import Columns
from lancelet.dataset.read.scanner import exact_batches
from lancelet.errors import ArgumentError

RowRange = tuple[int, int]


class TakesRows(Protocol):
    """A dataset read by row offsets (``LanceDataset.take``)."""

    def take(self, indices: Any, columns: Columns | None = None) -> pa.Table: ...


def check_shard(rank: int, world_size: int, where: str) -> None:
    if world_size < 1 or not 0 <= rank < world_size:
        raise ArgumentError(
            f"{where}: rank must be in [0, world_size) and world_size at least 1, "
            f"got rank={rank}, world_size={world_size}"
        )


def check_batch_size(batch_size: int, where: str) -> None:
    if batch_size < 1:
        raise ArgumentError(f"{where}: batch_size must be at least 1, got {batch_size}")


def strided_ranges(total: int, rank: int, world_size: int, batch_size: int) -> list[RowRange]:
    """``[start, end)`` of each run of rows of process ``rank``, in row order."""
    starts = np.arange(rank * batch_size, total, world_size * batch_size, dtype=np.int64)
    ends = np.minimum(starts + batch_size, total)
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


def read_ranges(
    dataset: TakesRows, ranges: Iterable[RowRange], columns: Columns | None
) -> Iterator[pa.RecordBatch]:
    """One batch per range, holding its rows in order."""
    for start, end in ranges:
        table = dataset.take(np.arange(start, end, dtype=np.int64), columns=columns)
        yield table.combine_chunks().to_batches()[0]


def every_nth_row(
    batches: Iterable[pa.RecordBatch], rank: int, world_size: int
) -> Iterator[pa.RecordBatch]:
    """The rows of a stream whose position in it is ``rank`` modulo ``world_size``."""
    position = 0
    for batch in batches:
        first = (rank - position) % world_size
        position += batch.num_rows
        if first < batch.num_rows:
            yield batch.take(pa.array(np.arange(first, batch.num_rows, world_size)))


def rebatch(batches: Iterable[pa.RecordBatch], batch_size: int) -> Iterator[pa.RecordBatch]:
    """The rows of a stream in batches of ``batch_size`` rows (the last one shorter)."""
    tables = (pa.Table.from_batches([batch]) for batch in batches)
    return exact_batches(tables, batch_size)


def torch_shard() -> tuple[int, int]:
    """This process's rank and the world size, from :mod:`torch.distributed`."""
    distributed = importlib.import_module("torch.distributed")
    return int(distributed.get_rank()), int(distributed.get_world_size())
