"""ZONEMAP: pylance's indices read by lancelet, lancelet's files read by pylance."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelet
from lancelet.errors import CorruptIndexError
from lancelet.expr import Equals, IndexQuery, IsIn, IsNull, Range
from lancelet.file import LanceFileReader
from lancelet.index._files import IndexDetails
from lancelet.index._zones import cut_zones
from lancelet.index.zonemap import ZoneMapIndex, write_zonemap, zonemap_details
from tests.index._pylance import ZONE, Built, same_rows, swap_index
from tests.storage import local

F64 = pa.float64()
I64 = pa.int64()


def _queries() -> list[tuple[IndexQuery, str]]:
    """Queries on i and f with the SQL pylance runs for the same condition."""
    return [
        (Equals("i", pa.scalar(7, I64)), "i = 7"),
        (Equals("i", pa.scalar(-499, I64)), "i = -499"),
        (Range("i", pa.scalar(-10, I64), True, pa.scalar(10, I64), False), "i >= -10 AND i < 10"),
        (Range("i", pa.scalar(300, I64), False, None), "i > 300"),
        (Range("i", None, True, pa.scalar(-450, I64), True), "i <= -450"),
        (IsIn("i", pa.array([1, 2, 399], I64)), "i IN (1, 2, 399)"),
        (IsNull("i"), "i IS NULL"),
        (Equals("f", pa.scalar(0.0, F64)), "f = 0.0"),
        (Equals("f", pa.scalar(-0.0, F64)), "f = -0.0"),
        (Range("f", pa.scalar(-0.0, F64), False, pa.scalar(5.0, F64), True), "f > -0.0 AND f <= 5"),
        (Range("f", pa.scalar(250.0, F64), True, None), "f >= 250"),
        (Equals("f", pa.scalar(float("nan"), F64)), ""),  # no SQL pylance indexes
        (IsIn("f", pa.array([0.0, 1e9], F64)), "f IN (0.0, 1e9)"),
        (IsNull("f"), "f IS NULL"),
    ]


def _expected(built: Built, query: IndexQuery) -> np.ndarray:
    """Matching live rows, by pyarrow over the data (both float semantics for zeros)."""
    values = built.live[query.column]
    if isinstance(query, IsNull):
        return built.matching(pc.is_null(values))
    if isinstance(query, Equals):
        if isinstance(query.value.as_py(), float) and np.isnan(query.value.as_py()):
            return built.matching(pc.is_nan(values))
        return built.matching(pc.equal(values, query.value))
    if isinstance(query, IsIn):
        return built.matching(pc.is_in(values, query.values))
    assert isinstance(query, Range)
    mask = pc.is_valid(values)
    if query.low is not None:
        above = pc.greater_equal if query.low_inclusive else pc.greater
        mask = pc.and_(mask, above(values, query.low))
    if query.high is not None:
        below = pc.less_equal if query.high_inclusive else pc.less
        mask = pc.and_(mask, below(values, query.high))
    return built.matching(mask)


@pytest.mark.parametrize("column", ["i", "f"])
def test_pylance_zonemap_answers_hold_every_match(built: Built, column: str) -> None:
    index = ZoneMapIndex.open(local(built.index_dir(column)))
    for query, _ in _queries():
        if query.column != column:
            continue
        result = index.search(query)
        assert result is not None, query
        expected = _expected(built, query)
        assert np.isin(expected, result.addresses).all(), query
        assert np.all(np.diff(result.addresses.astype(np.int64)) > 0)
        if result.exact:
            assert np.array_equal(np.intersect1d(result.addresses, _live(built)), expected)
    # A zone map prunes: a narrow query on ints does not return every row.
    narrow = index.search(Equals("i", pa.scalar(-499, I64))) if column == "i" else None
    assert narrow is None or len(narrow.addresses) < built.live.num_rows


def _live(built: Built) -> np.ndarray:
    return np.sort(built.live["_rowaddr"].to_numpy())


def test_statistics_and_details_match_pylance(built: Built) -> None:
    ds = lance.dataset(built.path)
    index = ZoneMapIndex.open(local(built.index_dir("i")))
    assert index.statistics() == ds.stats.index_stats("i_idx")["indices"][0]
    meta = next(m for m in lancelet.dataset(built.path)._manifest.indices if m.name == "i_idx")
    details = zonemap_details(ZONE)
    assert meta.index_details.type_url == details.type_url
    assert meta.index_details.value == details.value
    assert meta.index_version == details.index_version


def _float_bits(column: pa.ChunkedArray) -> np.ndarray:
    return np.asarray(column.combine_chunks().fill_null(0).to_numpy()).view(np.uint64)


@pytest.mark.parametrize("column", ["i", "f"])
def test_writer_matches_pylance_file(built: Built, column: str, tmp_path: Path) -> None:
    theirs = LanceFileReader(os.path.join(built.index_dir(column), "zonemap.lance"))
    value_type = built.live.schema.field(column).type
    details = write_zonemap(
        built.batches(column), local(tmp_path), value_type, built.version, rows_per_zone=ZONE
    )
    assert details == zonemap_details(ZONE)
    mine = LanceFileReader(tmp_path / "zonemap.lance")
    a, b = theirs.read_all().to_table(), mine.read_all().to_table()
    assert a.schema.equals(b.schema, check_metadata=True)
    for name in a.column_names:
        if pa.types.is_floating(a.schema.field(name).type):
            assert a[name].is_null().equals(b[name].is_null())
            assert np.array_equal(_float_bits(a[name]), _float_bits(b[name])), name
        else:
            assert a[name].equals(b[name]), name
    assert theirs.read_global_buffer(1) == mine.read_global_buffer(1)
    m1, m2 = theirs.metadata(), mine.metadata()
    assert (m1.major_version, m1.minor_version) == (m2.major_version, m2.minor_version)


@pytest.mark.parametrize("column", ["i", "f"])
def test_pylance_reads_lancelet_zonemap(built: Built, column: str, tmp_path: Path) -> None:
    value_type = built.live.schema.field(column).type

    def write(directory: str) -> IndexDetails:
        batches = built.batches(column)
        return write_zonemap(
            batches, local(directory), value_type, built.version, rows_per_zone=ZONE
        )

    path = swap_index(built, column, write, tmp_path)
    for query, sql in _queries():
        if query.column == column and sql:
            same_rows(path, sql)


def test_zones_follow_live_rows_and_fragments() -> None:
    # Fragment 1 has rows 0, 2, 3, 7, 8; fragment 3 rows 5, 6: zones of three live rows.
    offsets = [1 << 32 | o for o in (0, 2, 3, 7, 8)] + [3 << 32 | 5, 3 << 32 | 6]
    addresses = np.array(offsets, dtype=np.uint64)
    values = pa.array(np.arange(7))
    parts = [(values.slice(0, 2), addresses[:2]), (values.slice(2), addresses[2:])]
    zones = list(cut_zones(parts, 3, pa.int64()))
    assert [(z.fragment_id, z.start, z.length) for z in zones] == [(1, 0, 4), (1, 7, 2), (3, 5, 2)]
    assert [z.values.to_pylist() for z in zones] == [[0, 1, 2], [3, 4], [5, 6]]


def test_missing_and_damaged_files_are_errors(built: Built, tmp_path: Path) -> None:
    with pytest.raises(CorruptIndexError, match="zonemap.lance"):
        ZoneMapIndex.open(local(tmp_path))
    shutil.copytree(built.index_dir("i"), tmp_path / "idx")
    path = tmp_path / "idx" / "zonemap.lance"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptIndexError, match="zonemap.lance"):
        ZoneMapIndex.open(local(tmp_path / "idx"))


def test_null_counts_that_contradict_the_null_rows_are_errors(tmp_path: Path) -> None:
    values = pa.array([1, None, 3, None], pa.int64())
    addresses = np.arange(4, dtype=np.uint64)
    write_zonemap([(values, addresses)], local(tmp_path), pa.int64(), "2.2", rows_per_zone=2)
    reader = LanceFileReader(tmp_path / "zonemap.lance")
    table = reader.read_all().to_table()
    forged = table.set_column(2, "null_count", pa.array([0, 1], pa.uint32()))
    nulls = reader.read_global_buffer(1)
    os.remove(tmp_path / "zonemap.lance")
    writer = lancelet.file.LanceFileWriter(tmp_path / "zonemap.lance", forged.schema, version="2.2")
    writer.add_schema_metadata("null_bitmap", str(writer.add_global_buffer(nulls)))
    writer.add_schema_metadata("rows_per_zone", "2")
    writer.write_batch(forged)
    writer.close()
    with pytest.raises(CorruptIndexError, match="null"):
        ZoneMapIndex.open(local(tmp_path))


def test_unanswerable_queries_give_none(built: Built) -> None:
    index = ZoneMapIndex.open(local(built.index_dir("i")))
    assert index.search(Equals("i", pa.scalar(1.5, F64))) is None  # not an int64 value
    assert index.search(IsIn("i", pa.array([1, None], I64))) is None
