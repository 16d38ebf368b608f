"""Read partitions sized by the bytes a query reads, as Spark sizes a Parquet scan's:
small fragments packed into one task, a small table spread over the cores, a large
fragment cut into pieces of about max_partition_bytes; every row read once."""

from __future__ import annotations

import itertools
import pickle
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import datasource as sds

import lancelet as ll
from lancelet.spark.options import read_options
from lancelet.spark.partition_plan import Sizing, partitions, pieces
from lancelet.spark.reader import (
    FragmentRange,
    FragmentRanges,
    LanceFilteringReader,
    LanceReader,
    dataset_schema,
    open_dataset,
)
from lancelet.table.fragment import DataFile, Fragment


def _fragment(number: int, rows: int, size: int) -> Fragment:
    data = DataFile(f"{number}.lance", [0, 1], [0, 1], 2, 2, size)
    return Fragment(number, [data], physical_rows=rows)


@settings(max_examples=60, deadline=None)
@given(
    shapes=st.lists(st.tuples(st.integers(0, 5000), st.integers(1, 1 << 28)), max_size=30),
    cores=st.integers(1, 16),
    max_bytes=st.integers(1 << 20, 1 << 28),
)
def test_every_row_once_within_the_split(
    shapes: list[tuple[int, int]], cores: int, max_bytes: int
) -> None:
    fragments = [_fragment(i, rows, size) for i, (rows, size) in enumerate(shapes)]
    sizes = {f.id: f.files[0].file_size_bytes or 0 for f in fragments}
    sizing = Sizing(max_bytes, parallelism=cores)
    groups = partitions(fragments, sizes, sizing)
    covered: dict[int, list[tuple[int, int]]] = {}
    for group in groups:
        assert group
        for piece in group:
            covered.setdefault(piece.fragment.id, []).append((piece.start, piece.stop))
    for fragment in fragments:
        ranges = sorted(covered.get(fragment.id, []))
        if not fragment.physical_rows:
            assert not ranges
            continue
        assert ranges[0][0] == 0 and ranges[-1][1] == fragment.physical_rows
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    total = sum(sizes[f.id] + (4 << 20) for f in fragments if f.physical_rows)
    split = min(max_bytes, max(4 << 20, total // cores))
    for group in groups:
        # Spark's rule: biggest first, a piece joins while the pieces before it, each
        # with the open cost, and it stay within the split.
        held = 0
        for number, piece in enumerate(sorted(group, key=lambda p: -p.size)):
            assert number == 0 or held + piece.size <= split
            held += piece.size + (4 << 20)
        # A piece is about a split or less (row counts round).
        for piece in group:
            rows = piece.fragment.physical_rows
            assert piece.size <= split + sizes[piece.fragment.id] // max(rows, 1) + 1


def test_small_fragments_share_a_task_and_a_large_one_is_cut() -> None:
    small = [_fragment(i, 1000, 1 << 20) for i in range(10)]  # 10 MiB in all
    sizing = Sizing(128 << 20, parallelism=2)
    groups = partitions(small, {f.id: 1 << 20 for f in small}, sizing)
    # Each counts its 4 MiB open cost: 25 MiB per core, 5 fragments a task.
    assert [len(g) for g in groups] == [5, 5]
    big = [_fragment(0, 1_000_000, 1 << 30)]
    cut = pieces(big, {0: 1 << 30}, 128 << 20)
    assert len(cut) == 8 and {p.stop - p.start for p in cut} == {125_000}
    assert len(partitions(big, {0: 1 << 30}, sizing)) == 8


def _partitions(uri: str, **options: str) -> tuple[pa.Table, list[sds.InputPartition]]:
    parsed = read_options({"path": uri, **options})
    schema = dataset_schema(open_dataset(parsed), parsed)
    reader = LanceReader(schema, parsed)
    parts = list(reader.partitions())
    task = pickle.loads(pickle.dumps(reader))
    batches = [b for p in parts for b in task.read(pickle.loads(pickle.dumps(p)))]
    return pa.Table.from_batches(batches), parts


@pytest.fixture
def many_fragments(tmp_path: Path) -> tuple[str, pa.Table]:
    table = pa.table({"id": np.arange(6000), "x": np.arange(6000) * 0.5})
    uri = str(tmp_path / "many")
    ll.write_dataset(table, uri, max_rows_per_file=250)
    ll.dataset(uri).delete("id % 7 = 0")
    return uri, table.filter(pa.compute.not_equal(pa.compute.modulo(table["id"], 7), 0))


def test_a_table_of_small_fragments_reads_in_few_tasks(
    many_fragments: tuple[str, pa.Table],
) -> None:
    uri, expected = many_fragments
    got, parts = _partitions(uri, min_partitions="2")
    assert len(parts) <= 2 and any(isinstance(p, FragmentRanges) for p in parts)
    assert sorted(got["id"].to_pylist()) == expected["id"].to_pylist()
    # A fixed cut of each fragment, as asked.
    got, parts = _partitions(uri, rows_per_partition="100")
    assert len(parts) == 24 * 3 and all(isinstance(p, FragmentRange) for p in parts)
    assert sorted(got["id"].to_pylist()) == expected["id"].to_pylist()


def test_one_fragment_is_spread_over_the_cores(tmp_path: Path) -> None:
    rows = 100_000
    table = pa.table({"id": np.arange(rows), "v": np.random.default_rng(0).random(rows)})
    uri = str(tmp_path / "one")
    ll.write_dataset(table, uri)
    got, parts = _partitions(uri, min_partitions="2", max_partition_bytes=str(1 << 18))
    assert len(parts) >= 4 and all(isinstance(p, FragmentRange) for p in parts)
    assert got["id"].to_pylist() == list(range(rows))
    assert got["v"].equals(table["v"])
    # Only the columns read count: one column of two makes half as many pieces.
    _, fewer = _partitions(uri, min_partitions="2", max_partition_bytes=str(1 << 18), columns="id")
    assert len(fewer) < len(parts)


def test_bad_sizing_options_are_refused(many_fragments: tuple[str, pa.Table]) -> None:
    uri, _ = many_fragments
    for key in ("max_partition_bytes", "min_partitions"):
        with pytest.raises(ValueError, match=key):
            read_options({"path": uri, key: "0"})


def test_pieces_of_an_empty_table() -> None:
    assert partitions([], {}, Sizing()) == []
    assert partitions([_fragment(0, 0, 10)], {0: 10}, Sizing()) == []


def test_a_filtered_read_sizes_by_the_columns_it_tests(tmp_path: Path) -> None:
    """With pushed filters, the columns they do not test count a quarter of their bytes:
    a selective filter on a narrow column of a wide table makes fewer partitions, and
    reads the same rows as the unfiltered read filtered afterwards."""
    rows = 60_000
    rng = np.random.default_rng(1)
    wide = pa.array([rng.bytes(200) for _ in range(rows)], pa.binary())
    table = pa.table({"id": np.arange(rows), "blob": wide})
    uri = str(tmp_path / "wide")
    ll.write_dataset(table, uri)
    options = {"path": uri, "min_partitions": "1", "max_partition_bytes": str(1 << 20)}
    parsed = read_options(options, per_query=True)
    schema = dataset_schema(open_dataset(parsed), parsed)
    plain = LanceFilteringReader(schema, parsed)
    filtered = LanceFilteringReader(schema, parsed)
    assert not list(filtered.pushFilters([sds.LessThan(("id",), 300)]))
    many, few = list(plain.partitions()), list(filtered.partitions())
    assert 1 <= len(few) < len(many)
    task = pickle.loads(pickle.dumps(filtered))
    got = pa.Table.from_batches([b for p in few for b in task.read(pickle.loads(pickle.dumps(p)))])
    assert got["id"].to_pylist() == list(range(300))
    assert got["blob"].equals(table["blob"].slice(0, 300))


def test_the_filter_option_packs_whole_fragments(many_fragments: tuple[str, pa.Table]) -> None:
    """The ``filter`` option's scan reads fragments whole: they are packed into about
    as many tasks as cores (not one task each), none cut or read twice, and the rows
    are those pyarrow's filter keeps."""
    uri, expected = many_fragments
    got, parts = _partitions(uri, min_partitions="2", filter="id >= 1000 AND id < 4500")
    assert len(parts) <= 2
    ranges = [r for p in parts for r in (p.ranges if isinstance(p, FragmentRanges) else [p])]
    fragments = ll.dataset(uri).get_fragments()
    assert sorted(r.fragment.id for r in ranges) == sorted(f.fragment_id for f in fragments)
    assert all((r.start, r.stop) == (0, r.fragment.physical_rows) for r in ranges)
    keep = pa.compute.and_(
        pa.compute.greater_equal(expected["id"], 1000), pa.compute.less(expected["id"], 4500)
    )
    assert sorted(got["id"].to_pylist()) == expected.filter(keep)["id"].to_pylist()
    # A fragment too big for one task is still read whole, by one.
    _, parts = _partitions(uri, min_partitions="64", filter="id < 10")
    assert len(parts) == len(fragments)
