"""Samplers over a dataset, with pylance's names (``lance.sampler``).

A sampler yields record batches of a dataset: all of them in order
(:class:`FullScanSampler`), or the share of one process of a distributed job, by
fragment (:class:`ShardedFragmentSampler`) or by runs of rows
(:class:`ShardedBatchSampler`).  :class:`ShardedFixedBatchSampler` yields row
indices instead, for a PyTorch ``DataLoader``'s ``batch_sampler``.
:func:`maybe_sample` draws a random sample of rows.

Seeded shuffles use :class:`random.Random` the way pylance seeds Python's
``random``, so a seed gives the same order as in pylance; the global generator is
left alone.
"""

from __future__ import annotations

import math
import os
import random
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.dataset import LanceDataset, LanceFragment
from lancelet.dataset import dataset as open_dataset
from lancelet.dataset.read.projection import Columns
from lancelet.dataset.read.sharding import (
    check_batch_size,
    check_shard,
    every_nth_row,
    read_ranges,
    rebatch,
    strided_ranges,
    torch_shard,
)
from lancelet.errors import UnsupportedOptionError
from lancelet.log import LOGGER

__all__ = [
    "FragmentSampler",
    "FullScanSampler",
    "Sampler",
    "ShardedBatchSampler",
    "ShardedFixedBatchSampler",
    "ShardedFragmentSampler",
    "maybe_sample",
]


def maybe_sample(
    dataset: str | os.PathLike[str] | LanceDataset,
    n: int,
    columns: list[str] | str,
    batch_size: int = 10240,
    max_takes: int = 2048,
    filt: str | None = None,
) -> Iterator[pa.RecordBatch]:
    """About ``n`` random rows of ``dataset`` (all of them when it has no more), in
    batches of at most ``batch_size`` rows.

    Without a filter the rows are chosen at random when ``n <= max_takes``; above
    that, as ``max_takes`` runs of consecutive rows at random places (fewer, larger
    reads).  With a filter ``filt``, ``n`` of the matching rows are chosen at random.
    """
    ds = dataset if isinstance(dataset, LanceDataset) else open_dataset(dataset)
    wanted = [columns] if isinstance(columns, str) else columns
    total = len(ds)
    if n >= total:
        yield from ds.to_batches(columns=wanted, batch_size=batch_size, filter=filt)
    elif filt is not None:
        matching = ds.to_table(columns=wanted, filter=filt)
        if matching.num_rows > n:
            chosen = np.sort(np.random.choice(matching.num_rows, n, replace=False))
            matching = matching.take(pa.array(chosen))
        yield from rebatch(matching.to_batches(), batch_size)
    else:
        rows = _runs(total, n, max_takes) if n > max_takes else _scattered(total, n)
        for start in range(0, len(rows), batch_size):
            taken = ds.take(rows[start : start + batch_size], columns=wanted)
            yield taken.combine_chunks().to_batches()[0]


def _scattered(total: int, n: int) -> np.ndarray:
    return np.random.choice(total, n, replace=False)


def _runs(total: int, n: int, takes: int) -> np.ndarray:
    """``n`` row offsets as ``takes`` runs of consecutive rows, each placed at random
    in its own of ``takes`` equal chunks of the dataset.  When ``takes`` does not
    divide ``n``, the rows left over come from the rows after the last chunk, or
    else lengthen the first runs by one."""
    chunk, tail = divmod(total, takes)
    run, left_over = divmod(n, takes)
    from_tail = left_over if tail >= left_over else 0
    lengths = np.full(takes, run, dtype=np.int64)
    lengths[: left_over - from_tail] += 1
    starts = np.arange(takes, dtype=np.int64) * chunk
    starts += (np.random.random_sample(takes) * (chunk - lengths + 1)).astype(np.int64)
    # Consecutive rows from each start: each run's start, shifted by its position.
    run_of_row = np.repeat(np.arange(takes), lengths)
    rows = (
        starts[run_of_row] + np.arange(lengths.sum()) - (np.cumsum(lengths) - lengths)[run_of_row]
    )
    tail_rows = takes * chunk + np.random.choice(tail, from_tail, replace=False)
    LOGGER.debug("sampled %d rows in %d runs of about %d", n, takes, run)
    return np.concatenate([rows, tail_rows])


class Sampler(ABC):
    """Yields record batches of a dataset; subclasses say which rows, in what order."""

    @abstractmethod
    def __call__(
        self,
        dataset: LanceDataset,
        *args: Any,
        batch_size: int = 128,
        columns: Columns | None = None,
        filter: str | None = None,
        batch_readahead: int = 16,
        with_row_id: bool | None = False,
        **kwargs: Any,
    ) -> Iterator[pa.RecordBatch]: ...


class FragmentSampler(Sampler):
    """Scans the fragments :meth:`iter_fragments` picks, in the order it gives them."""

    def __call__(
        self,
        dataset: LanceDataset,
        *args: Any,
        batch_size: int = 128,
        columns: Columns | None = None,
        filter: str | None = None,
        batch_readahead: int = 16,
        with_row_id: bool | None = False,
        **kwargs: Any,
    ) -> Iterator[pa.RecordBatch]:
        fragments = list(self.iter_fragments(dataset, *args, **kwargs))
        scanner = dataset.scanner(
            columns=columns,
            filter=filter,
            batch_size=batch_size,
            batch_readahead=batch_readahead,
            with_row_id=with_row_id,
            fragments=fragments,
        )
        yield from scanner.to_batches()

    @abstractmethod
    def iter_fragments(
        self, ds: LanceDataset, *args: Any, **kwargs: Any
    ) -> Iterator[LanceFragment]: ...


class FullScanSampler(FragmentSampler):
    """Every fragment, in the dataset's order."""

    def iter_fragments(  # type: ignore[override]  # pylance's base names it ds, these dataset
        self, dataset: LanceDataset, *args: Any, **kwargs: Any
    ) -> Iterator[LanceFragment]:
        yield from dataset.get_fragments()


class _Sharded:
    """Which process of how many, the shuffle's seed and the epoch."""

    def __init__(self, rank: int, world_size: int, randomize: bool = False, seed: int = 0):
        check_shard(rank, world_size, type(self).__name__)
        self._rank = rank
        self._world_size = world_size
        self._randomize = randomize
        self._seed = seed
        self._epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self._epoch = epoch


class ShardedFragmentSampler(_Sharded, FragmentSampler):
    """Process ``rank`` of ``world_size`` reads fragments ``rank``, ``rank +
    world_size``, ... (of the fragments shuffled with ``seed`` when ``randomize``)."""

    @staticmethod
    def from_torch(randomize: bool = False, seed: int = 0) -> ShardedFragmentSampler:
        """With rank and world size from :mod:`torch.distributed`."""
        rank, world_size = torch_shard()
        return ShardedFragmentSampler(rank, world_size, randomize=randomize, seed=seed)

    def iter_fragments(  # type: ignore[override]  # pylance's base names it ds, these dataset
        self, dataset: LanceDataset, *args: Any, **kwargs: Any
    ) -> Iterator[LanceFragment]:
        fragments = dataset.get_fragments()
        if self._randomize:
            # pylance shuffles fragments by the seed alone, whatever the epoch.
            random.Random(self._seed).shuffle(fragments)
        yield from fragments[self._rank :: self._world_size]


class ShardedBatchSampler(_Sharded, Sampler):
    """Process ``rank`` of ``world_size`` reads every ``world_size``-th run of
    ``batch_size`` rows, starting with run ``rank``.

    With a filter the runs cannot be known before scanning: every process scans the
    matching rows in order and keeps every ``world_size``-th one.  ``randomize``
    shuffles the runs (by ``seed``, as pylance does, whatever the epoch); with a
    filter, it shuffles the stream of batches through a buffer (by ``seed`` and the
    epoch).
    """

    # Batches held back to shuffle a filtered stream.
    SHUFFLE_BUFFER = 256

    @staticmethod
    def from_torch(randomize: bool = False, seed: int = 0) -> ShardedBatchSampler:
        """With rank and world size from :mod:`torch.distributed`."""
        rank, world_size = torch_shard()
        return ShardedBatchSampler(rank, world_size, randomize=randomize, seed=seed)

    def __call__(
        self,
        dataset: LanceDataset,
        *args: Any,
        batch_size: int = 128,
        columns: Columns | None = None,
        filter: str | None = None,
        batch_readahead: int = 16,
        with_row_id: bool | None = None,
        **kwargs: Any,
    ) -> Iterator[pa.RecordBatch]:
        where = type(self).__name__
        check_batch_size(batch_size, where)
        if with_row_id:
            raise UnsupportedOptionError(f"{where} does not return row ids (with_row_id=True)")
        if filter is None:
            return self._by_runs(dataset, batch_size, columns)
        return self._filtered(dataset, batch_size, columns, filter)

    def _by_runs(
        self, dataset: LanceDataset, batch_size: int, columns: Columns | None
    ) -> Iterator[pa.RecordBatch]:
        ranges = strided_ranges(dataset.count_rows(), self._rank, self._world_size, batch_size)
        if self._randomize:
            random.Random(self._seed).shuffle(ranges)
        return read_ranges(dataset, ranges, columns)

    def _filtered(
        self, dataset: LanceDataset, batch_size: int, columns: Columns | None, filter: str
    ) -> Iterator[pa.RecordBatch]:
        matching = dataset.scanner(columns=columns, filter=filter, scan_in_order=True)
        mine = rebatch(
            every_nth_row(matching.to_batches(), self._rank, self._world_size), batch_size
        )
        if not self._randomize:
            yield from mine
            return
        rng = random.Random(self._seed + self._epoch)
        held: list[pa.RecordBatch] = []
        for batch in mine:
            held.append(batch)
            if len(held) > self.SHUFFLE_BUFFER:
                yield held.pop(rng.randrange(len(held)))
        rng.shuffle(held)
        yield from held


class ShardedFixedBatchSampler(ShardedBatchSampler):
    """Row indices for a dataset of ``total_num_rows`` rows, in batches of
    ``batch_size``: process ``rank`` of ``world_size`` gets the ``rank``-th of
    ``world_size`` equal blocks of consecutive rows (the last one shorter), cut into
    batches.  ``randomize`` shuffles the batches, by ``seed`` and the epoch.

    Called on a dataset it reads rows as :class:`ShardedBatchSampler` does.
    """

    def __init__(
        self,
        rank: int,
        world_size: int,
        randomize: bool = False,
        seed: int = 0,
        batch_size: int = 0,
        total_num_rows: int = 0,
    ):
        super().__init__(rank, world_size, randomize, seed)
        self._batch_size = batch_size
        self._total_num_rows = total_num_rows

    def _block(self) -> range:
        per_rank = math.ceil(self._total_num_rows / self._world_size)
        start = min(self._rank * per_rank, self._total_num_rows)
        return range(start, min(start + per_rank, self._total_num_rows))

    def __len__(self) -> int:
        """The number of batches of this process."""
        block = self._block()
        if not block:
            return 0
        check_batch_size(self._batch_size, type(self).__name__)
        return math.ceil(len(block) / self._batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        block = self._block()
        if block:
            check_batch_size(self._batch_size, type(self).__name__)
        batches = [
            list(block[i : i + self._batch_size]) for i in range(0, len(block), self._batch_size)
        ]
        if self._randomize:
            random.Random(self._seed + self._epoch).shuffle(batches)
        yield from batches

    @staticmethod
    def from_torch(  # type: ignore[override]  # pylance's signature
        batch_size: int, total_num_rows: int, randomize: bool = False, seed: int = 0
    ) -> ShardedFixedBatchSampler:
        """With rank and world size from :mod:`torch.distributed`."""
        rank, world_size = torch_shard()
        return ShardedFixedBatchSampler(
            rank, world_size, randomize, seed, batch_size, total_num_rows
        )
