"""lancelet.sampler and ShardedBatchIterator: the rows each shard gets, checked against
pylance's samplers on the same data, and random sampling against its definition."""

from __future__ import annotations

import itertools
from pathlib import Path

import lance
import lance.sampler as pylance_sampler
import numpy as np
import pyarrow as pa
import pytest
from lance._dataset.sharded_batch_iterator import ShardedBatchIterator as PylanceIterator

import lancelet
from lancelet import sampler
from lancelet._dataset.sharded_batch_iterator import ShardedBatchIterator
from lancelet.errors import ArgumentError, UnsupportedOptionError

ROWS = 1000


def _table(rows: int = ROWS) -> pa.Table:
    return pa.table({"id": np.arange(rows), "text": [f"t{i}" for i in range(rows)]})


@pytest.fixture
def uri(tmp_path: Path) -> Path:
    """Written by lancelet in fragments of 150 rows (the last shorter), with deletions."""
    path = tmp_path / "ds"
    ds = lancelet.write_dataset(_table(), path, max_rows_per_file=150)
    ds.delete("id % 97 = 3")
    return path


def _ids(batches: object) -> list[list[int]]:
    return [b["id"].to_pylist() for b in batches]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("rank", "world_size", "batch_size", "total"),
    [(0, 4, 250, 1000), (3, 4, 250, 1000), (1, 3, 7, 100), (2, 4, 10, 2), (0, 1, 3, 5)],
)
@pytest.mark.parametrize("randomize", [False, True])
def test_fixed_batch_sampler_matches_pylance(
    rank: int, world_size: int, batch_size: int, total: int, randomize: bool
) -> None:
    def both(epoch: int) -> tuple[list[list[int]], list[list[int]]]:
        ours = sampler.ShardedFixedBatchSampler(
            rank, world_size, randomize, 7, batch_size=batch_size, total_num_rows=total
        )
        theirs = pylance_sampler.ShardedFixedBatchSampler(
            rank, world_size, randomize, 7, batch_size=batch_size, total_num_rows=total
        )
        ours.set_epoch(epoch)
        theirs.set_epoch(epoch)
        batches = list(ours)
        # pylance's len is the first rank's count for every rank; ours counts its own.
        assert len(ours) == len(batches)
        return batches, list(theirs)

    for epoch in (0, 1, 2):
        ours, theirs = both(epoch)
        assert ours == theirs


def test_fixed_batch_sampler_partitions_rows() -> None:
    """The ranks' batches together hold every row once, each rank's consecutively."""
    total, world = 1003, 4
    per_rank = [
        list(
            itertools.chain(
                *sampler.ShardedFixedBatchSampler(r, world, batch_size=64, total_num_rows=total)
            )
        )
        for r in range(world)
    ]
    assert list(itertools.chain(*per_rank)) == list(range(total))
    assert all(rows == list(range(rows[0], rows[0] + len(rows))) for rows in per_rank if rows)


def test_bad_shard_arguments_are_refused() -> None:
    with pytest.raises(ArgumentError, match="rank"):
        sampler.ShardedBatchSampler(4, 4)
    with pytest.raises(ValueError, match="batch_size"):
        list(sampler.ShardedFixedBatchSampler(0, 2, total_num_rows=10))


@pytest.mark.parametrize(
    ("rank", "world_size", "batch_size"), [(0, 4, 100), (2, 3, 37), (1, 2, 1000)]
)
@pytest.mark.parametrize("randomize", [False, True])
def test_batch_sampler_matches_pylance(
    uri: Path, rank: int, world_size: int, batch_size: int, randomize: bool
) -> None:
    ours = sampler.ShardedBatchSampler(rank, world_size, randomize=randomize, seed=3)
    theirs = pylance_sampler.ShardedBatchSampler(rank, world_size, randomize=randomize, seed=3)
    got = _ids(ours(lancelet.dataset(uri), batch_size=batch_size, columns=["id"]))
    expected = _ids(theirs(lance.dataset(uri), batch_size=batch_size, columns=["id"]))
    assert got == expected


@pytest.mark.parametrize(
    ("rank", "world_size", "batch_size"), [(0, 4, 50), (3, 4, 7), (1, 2, 1000)]
)
def test_filtered_batch_sampler_matches_pylance(
    uri: Path, rank: int, world_size: int, batch_size: int
) -> None:
    where = "id >= 100 AND id % 3 = 1"
    ours = sampler.ShardedBatchSampler(rank, world_size)
    theirs = pylance_sampler.ShardedBatchSampler(rank, world_size)
    got = _ids(ours(lancelet.dataset(uri), batch_size=batch_size, columns=["id"], filter=where))
    expected = _ids(theirs(lance.dataset(uri), batch_size=batch_size, columns=["id"], filter=where))
    # pylance holds a full batch back until one more row arrives: the same rows and
    # batches, its last one possibly empty.
    assert got == [b for b in expected if b]


def test_filtered_batch_sampler_randomized_keeps_the_rows(uri: Path) -> None:
    where = "id < 600"
    plain = sampler.ShardedBatchSampler(1, 3)
    shuffled = sampler.ShardedBatchSampler(1, 3, randomize=True, seed=5)
    ds = lancelet.dataset(uri)
    in_order = _ids(plain(ds, batch_size=10, filter=where, columns=["id"]))
    mixed = _ids(shuffled(ds, batch_size=10, filter=where, columns=["id"]))
    assert sorted(map(tuple, mixed)) == sorted(map(tuple, in_order))
    assert mixed != in_order


def test_batch_sampler_refuses_row_ids(uri: Path) -> None:
    with pytest.raises(UnsupportedOptionError, match="with_row_id"):
        sampler.ShardedBatchSampler(0, 2)(lancelet.dataset(uri), with_row_id=True)


@pytest.mark.parametrize("randomize", [False, True])
def test_fragment_sampler_matches_pylance(uri: Path, randomize: bool) -> None:
    for rank in range(3):
        ours = sampler.ShardedFragmentSampler(rank, 3, randomize=randomize, seed=11)
        theirs = pylance_sampler.ShardedFragmentSampler(rank, 3, randomize=randomize, seed=11)
        got = pa.Table.from_batches(list(ours(lancelet.dataset(uri), columns=["id"])))
        expected = pa.Table.from_batches(list(theirs(lance.dataset(uri), columns=["id"])))
        assert got["id"].to_pylist() == expected["id"].to_pylist()


def test_full_scan_sampler_reads_everything(uri: Path) -> None:
    got = pa.Table.from_batches(list(sampler.FullScanSampler()(lancelet.dataset(uri))))
    assert got.equals(lance.dataset(uri).to_table())


@pytest.mark.parametrize(("n", "max_takes"), [(50, 2048), (300, 16), (301, 7), (980, 4)])
def test_maybe_sample_draws_distinct_rows(uri: Path, n: int, max_takes: int) -> None:
    ds = lancelet.dataset(uri)
    batches = list(sampler.maybe_sample(ds, n, ["id", "text"], batch_size=128, max_takes=max_takes))
    assert all(b.num_rows <= 128 for b in batches)
    got = pa.Table.from_batches(batches)
    assert got.schema == ds.schema
    ids = got["id"].to_numpy()
    assert len(ids) == n == len(set(ids.tolist()))
    assert set(ids.tolist()) <= set(ds.to_table()["id"].to_pylist())
    assert got["text"].to_pylist() == [f"t{i}" for i in ids]


def test_maybe_sample_runs_cover_each_chunk() -> None:
    """Above max_takes, the rows are runs of consecutive rows, one in each chunk."""
    total, n, takes = 1000, 103, 10
    rows = np.sort(sampler._runs(total, n, takes))
    assert len(rows) == n == len(np.unique(rows))
    chunk = total // takes
    per_chunk = np.bincount(np.minimum(rows // chunk, takes - 1), minlength=takes)
    assert per_chunk.min() >= n // takes


def test_maybe_sample_takes_all_when_n_is_large(uri: Path) -> None:
    ds = lancelet.dataset(uri)
    got = pa.Table.from_batches(list(sampler.maybe_sample(str(uri), 10_000, "id")))
    assert got["id"].to_pylist() == ds.to_table()["id"].to_pylist()


def test_maybe_sample_with_a_filter(uri: Path) -> None:
    got = pa.Table.from_batches(list(sampler.maybe_sample(uri, 40, ["id"], filt="id % 2 = 0")))
    ids = got["id"].to_pylist()
    assert len(ids) == 40 == len(set(ids))
    assert all(i % 2 == 0 and i % 97 != 3 for i in ids)


@pytest.mark.parametrize(("rank", "world_size"), [(0, 2), (1, 2), (2, 3)])
def test_sharded_iterator_by_fragment_matches_pylance(
    uri: Path, rank: int, world_size: int
) -> None:
    with pytest.warns(UserWarning, match="deprecated"):
        ours = ShardedBatchIterator(uri, rank, world_size, columns=["id"], batch_size=40)
    with pytest.warns(UserWarning):
        theirs = PylanceIterator(str(uri), rank, world_size, columns=["id"], batch_size=40)
    assert _ids(ours) == _ids(theirs)


@pytest.mark.parametrize(("rank", "world_size", "batch_size"), [(1, 2, 15), (0, 3, 100)])
def test_sharded_iterator_by_batch_matches_pylance(
    uri: Path, rank: int, world_size: int, batch_size: int
) -> None:
    with pytest.warns(UserWarning):
        ours = ShardedBatchIterator(
            lancelet.dataset(uri), rank, world_size, batch_size=batch_size, granularity="batch"
        )
        theirs = PylanceIterator(
            lance.dataset(uri), rank, world_size, batch_size=batch_size, granularity="batch"
        )
    got, expected = list(ours), list(theirs)
    assert [b.to_pylist() for b in got] == [b.to_pylist() for b in expected]


def test_sharded_iterator_refusals(uri: Path) -> None:
    with pytest.warns(UserWarning):
        by_batch = ShardedBatchIterator(uri, 0, 2, granularity="batch", with_row_id=True)
        unknown = ShardedBatchIterator(uri, 0, 2, granularity="rows")  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError, match="with_row_id"):
        list(by_batch)
    with pytest.raises(ValueError, match="granularity"):
        iter(unknown)
