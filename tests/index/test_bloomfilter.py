"""BLOOMFILTER: pylance's indices read by lancelet, lancelet's files (bit for bit the
same filters) read by pylance."""

from __future__ import annotations

import os
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
from lancelet.index._sbbf import filter_bytes, xxh64
from lancelet.index.bloomfilter import BloomFilterIndex, bloomfilter_details, write_bloomfilter
from tests.index._pylance import ZONE, Built, same_rows, swap_index
from tests.storage import local


def _queries() -> list[tuple[IndexQuery, str]]:
    return [
        (Equals("s", pa.scalar("k5")), "s = 'k5'"),
        (IsIn("s", pa.array(["k1", "k96", "absent"])), "s IN ('k1', 'k96', 'absent')"),
        (Equals("s", pa.scalar("absent")), "s = 'absent'"),
        (IsNull("s"), "s IS NULL"),
        (Equals("n32", pa.scalar(3, pa.int32())), "n32 = 3"),
        (IsIn("n32", pa.array([0, 49], pa.int32())), "n32 IN (0, 49)"),
    ]


def _expected(built: Built, query: IndexQuery) -> np.ndarray:
    values = built.live[query.column]
    if isinstance(query, IsNull):
        return built.matching(pc.is_null(values))
    if isinstance(query, Equals):
        return built.matching(pc.equal(values, query.value))
    assert isinstance(query, IsIn)
    return built.matching(pc.is_in(values, query.values))


def test_xxh64_known_values() -> None:
    data = np.frombuffer(b"" + b"\0" * 8, dtype=np.uint8)
    assert int(xxh64(data, np.array([0]), np.array([0]))[0]) == 17241709254077376921
    assert filter_bytes(8192, 0.00057) == 32768


@pytest.mark.parametrize("column", ["s", "n32"])
def test_pylance_bloomfilter_answers_hold_every_match(built: Built, column: str) -> None:
    value_type = built.live.schema.field(column).type
    index = BloomFilterIndex.open(local(built.index_dir(column)), value_type)
    for query, _ in _queries():
        if query.column != column:
            continue
        result = index.search(query)
        assert result is not None, query
        assert np.isin(_expected(built, query), result.addresses).all(), query
    absent = index.search(Equals("s", pa.scalar("absent"))) if column == "s" else None
    assert absent is None or len(absent.addresses) < built.live.num_rows
    assert index.search(Range(column, None, True, None, True)) is None
    ds = lance.dataset(built.path)
    assert index.statistics() == ds.stats.index_stats(f"{column}_idx")["indices"][0]


def test_details_match_pylance(built: Built) -> None:
    meta = next(m for m in lancelet.dataset(built.path)._manifest.indices if m.name == "s_idx")
    details = bloomfilter_details()
    assert (meta.index_details.type_url, meta.index_details.value) == (details.type_url, b"")
    assert meta.index_version == details.index_version


@pytest.mark.parametrize("column", ["s", "n32"])
def test_writer_matches_pylance_file(built: Built, column: str, tmp_path: Path) -> None:
    theirs = LanceFileReader(os.path.join(built.index_dir(column), "bloomfilter.lance"))
    value_type = built.live.schema.field(column).type
    write_bloomfilter(
        built.batches(column),
        local(tmp_path),
        value_type,
        built.version,
        number_of_items=ZONE,
        probability=0.01,
    )
    mine = LanceFileReader(tmp_path / "bloomfilter.lance")
    assert theirs.read_all().to_table().equals(mine.read_all().to_table())
    assert theirs.schema.equals(mine.schema, check_metadata=True)
    assert theirs.read_global_buffer(1) == mine.read_global_buffer(1)


@pytest.mark.parametrize("column", ["s", "n32"])
def test_pylance_reads_lancelet_bloomfilter(built: Built, column: str, tmp_path: Path) -> None:
    value_type = built.live.schema.field(column).type

    def write(directory: str) -> IndexDetails:
        return write_bloomfilter(
            built.batches(column),
            local(directory),
            value_type,
            built.version,
            number_of_items=ZONE,
            probability=0.01,
        )

    path = swap_index(built, column, write, tmp_path)
    for query, sql in _queries():
        if query.column == column:
            same_rows(path, sql)


def test_float_zero_probes_both_signs(tmp_path: Path) -> None:
    values = pa.array([-0.0, 1.5, None], pa.float64())
    write_bloomfilter(
        [(values, np.arange(3, dtype=np.uint64))], local(tmp_path), pa.float64(), "2.2"
    )
    index = BloomFilterIndex.open(local(tmp_path), pa.float64())
    result = index.search(Equals("f", pa.scalar(0.0)))
    assert result is not None and 0 in result.addresses
    nulls = index.search(IsNull("f"))
    assert nulls is not None and nulls.exact and nulls.addresses.tolist() == [2]


def test_missing_and_damaged_files_are_errors(built: Built, tmp_path: Path) -> None:
    with pytest.raises(CorruptIndexError, match="bloomfilter.lance"):
        BloomFilterIndex.open(local(tmp_path), pa.string())
    source = Path(built.index_dir("s")) / "bloomfilter.lance"
    (tmp_path / "bloomfilter.lance").write_bytes(source.read_bytes()[:-40])
    with pytest.raises(CorruptIndexError, match="bloomfilter.lance"):
        BloomFilterIndex.open(local(tmp_path), pa.string())
