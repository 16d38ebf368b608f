"""``ShardedBatchIterator``: one process's share of a dataset's batches (pylance's
older API for what :mod:`lancelet.sampler` does)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from typing import Literal

import pyarrow as pa

from lancelet.dataset import LanceDataset
from lancelet.dataset import dataset as open_dataset
from lancelet.dataset.read.projection import Columns
from lancelet.dataset.read.sharding import (
    check_batch_size,
    check_shard,
    read_ranges,
    strided_ranges,
    torch_shard,
)
from lancelet.errors import ArgumentError, UnsupportedOptionError

__all__ = ["ShardedBatchIterator"]

Granularity = Literal["fragment", "batch"]


class ShardedBatchIterator:
    """The batches of shard ``rank`` of ``world_size``.

    ``granularity="fragment"`` (the default) gives the shard fragments ``rank``,
    ``rank + world_size``, ...; ``"batch"`` gives it every ``world_size``-th run of
    ``batch_size`` rows, starting with run ``rank``.  Deprecated in pylance in favour
    of the samplers, and it warns as pylance does.
    """

    def __init__(
        self,
        data: str | os.PathLike[str] | LanceDataset,
        rank: int,
        world_size: int,
        *,
        columns: Columns | None = None,
        batch_size: int = 1024 * 10,
        granularity: Granularity = "fragment",
        batch_readahead: int = 8,
        with_row_id: bool = False,
    ):
        warnings.warn(
            "ShardedBatchIterator is deprecated, use :class:`Sampler` instead", stacklevel=2
        )
        check_shard(rank, world_size, "ShardedBatchIterator")
        check_batch_size(batch_size, "ShardedBatchIterator")
        self._rank = rank
        self._world_size = world_size
        self._columns = columns
        self._batch_size = batch_size
        self._granularity = granularity
        self._batch_readahead = batch_readahead
        self._with_row_id = with_row_id
        self._ds = data if isinstance(data, LanceDataset) else open_dataset(data)

    @staticmethod
    def from_torch(
        data: str | os.PathLike[str] | LanceDataset,
        *,
        columns: Columns | None = None,
        batch_size: int = 1024 * 10,
        granularity: Granularity = "fragment",
        batch_readahead: int = 8,
        with_row_id: bool = False,
    ) -> ShardedBatchIterator:
        """With rank and world size from :mod:`torch.distributed`."""
        rank, world_size = torch_shard()
        return ShardedBatchIterator(
            data,
            rank,
            world_size,
            columns=columns,
            batch_size=batch_size,
            granularity=granularity,
            batch_readahead=batch_readahead,
            with_row_id=with_row_id,
        )

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        if self._granularity == "fragment":
            return self._by_fragment()
        if self._granularity == "batch":
            return self._by_runs()
        raise ArgumentError(
            f"ShardedBatchIterator: unknown granularity {self._granularity!r} "
            "(it is 'fragment' or 'batch')"
        )

    def _by_fragment(self) -> Iterator[pa.RecordBatch]:
        for fragment in self._ds.get_fragments()[self._rank :: self._world_size]:
            yield from fragment.to_batches(
                columns=self._columns,
                batch_size=self._batch_size,
                batch_readahead=self._batch_readahead,
                with_row_id=self._with_row_id,
            )

    def _by_runs(self) -> Iterator[pa.RecordBatch]:
        if self._with_row_id:
            raise UnsupportedOptionError(
                "ShardedBatchIterator: with_row_id is not supported with granularity='batch'"
            )
        total = self._ds.count_rows()
        ranges = strided_ranges(total, self._rank, self._world_size, self._batch_size)
        return read_ranges(self._ds, ranges, self._columns)
