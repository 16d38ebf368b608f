"""lancelet files read by pylance and pylance files read by lancelet, value by value."""

from __future__ import annotations

from pathlib import Path

import lance.file as ref
import pyarrow as pa
import pytest

from lancelet.file import LanceFileReader
from tests.file.gen import ALL_TYPES, LEAF_TYPES, NESTED_TYPES, random_table, seed_of
from tests.file.oracle import assert_same, write_lancelet, write_reference


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=str)
def test_each_type_lancelet_to_reference(tmp_path: Path, dtype: pa.DataType) -> None:
    table = random_table([dtype, dtype], 2500, seed=seed_of(str(dtype)))
    path = write_lancelet(tmp_path / "a.lance", table, data_cache_bytes=4096)
    assert_same(table, ref.LanceFileReader(str(path)).read_all().to_table())


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=str)
def test_each_type_reference_to_lancelet(tmp_path: Path, dtype: pa.DataType) -> None:
    table = random_table([dtype, dtype], 2500, seed=1 + seed_of(str(dtype)))
    path = write_reference(tmp_path / "a.lance", table, data_cache_bytes=4096)
    assert_same(table, LanceFileReader(path).read_all().to_table())


@pytest.mark.parametrize("seed", range(4))
def test_wide_table_both_ways(tmp_path: Path, seed: int) -> None:
    table = random_table(ALL_TYPES, 3000, seed=seed, null_rate=0.1 * seed)
    mine = write_lancelet(tmp_path / "mine.lance", table, data_cache_bytes=16 * 1024)
    theirs = write_reference(tmp_path / "theirs.lance", table, data_cache_bytes=16 * 1024)
    assert_same(table, ref.LanceFileReader(str(mine)).read_all().to_table())
    assert_same(table, LanceFileReader(theirs).read_all().to_table())
    assert_same(table, LanceFileReader(mine).read_all().to_table())


def test_multi_page_columns(tmp_path: Path) -> None:
    table = random_table(LEAF_TYPES + NESTED_TYPES[:6], 20_000, seed=7)
    path = write_lancelet(tmp_path / "a.lance", table, data_cache_bytes=8 * 1024)
    meta = ref.LanceFileReader(str(path)).metadata()
    # Every column spans several pages except the tiny boolean and null ones.
    assert sorted(len(c.pages) for c in meta.columns)[2] > 1
    assert_same(table, ref.LanceFileReader(str(path)).read_all().to_table())
    theirs = write_reference(tmp_path / "b.lance", table, data_cache_bytes=8 * 1024)
    assert max(len(c.pages) for c in LanceFileReader(theirs).metadata().columns) > 1
    assert_same(table, LanceFileReader(theirs).read_all().to_table())


def test_all_nulls_and_no_nulls(tmp_path: Path) -> None:
    for rate in (0.0, 1.0):
        table = random_table(LEAF_TYPES + NESTED_TYPES, 300, seed=3, null_rate=rate)
        mine = write_lancelet(tmp_path / f"m{rate}.lance", table)
        theirs = write_reference(tmp_path / f"t{rate}.lance", table)
        assert_same(table, ref.LanceFileReader(str(mine)).read_all().to_table())
        assert_same(table, LanceFileReader(theirs).read_all().to_table())


def test_empty_file(tmp_path: Path) -> None:
    table = random_table(ALL_TYPES, 0, seed=0)
    mine = write_lancelet(tmp_path / "m.lance", table)
    theirs = write_reference(tmp_path / "t.lance", table)
    assert_same(table, ref.LanceFileReader(str(mine)).read_all().to_table())
    assert_same(table, LanceFileReader(theirs).read_all().to_table())
    assert LanceFileReader(mine).num_rows() == 0


def test_metadata_preserved(tmp_path: Path) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False, metadata={"k": "v", "unit": "m"}),
            pa.field("s", pa.struct([pa.field("x", pa.string(), metadata={"inner": "1"})])),
            pa.field("vec", pa.list_(pa.float32(), 4), metadata={"dim": "4"}),
        ],
        metadata={"owner": "lancelet", "b": "\u00e9"},
    )
    table = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "s": pa.array([{"x": "a"}, {"x": None}, {"x": "c"}], schema.field("s").type),
            "vec": pa.array([[1, 2, 3, 4]] * 3, schema.field("vec").type),
        },
        schema=schema,
    )
    mine = write_lancelet(tmp_path / "m.lance", table)
    theirs = write_reference(tmp_path / "t.lance", table)
    assert_same(table, ref.LanceFileReader(str(mine)).read_all().to_table())
    assert_same(table, LanceFileReader(theirs).read_all().to_table())


def test_reference_dictionary_and_fsst_pages(tmp_path: Path) -> None:
    low_card = pa.array([None, "x", "", "yy"] * 5000)
    fsst_field = pa.field("f", pa.string(), metadata={"lance-encoding:compression": "fsst"})
    words = pa.array(
        [f"value {i % 977} of the page \u00e9" if i % 11 else None for i in range(60_000)]
    )
    table = pa.table(
        {"d": pa.concat_arrays([low_card] * 3), "f": words},
        schema=pa.schema([pa.field("d", pa.string()), fsst_field]),
    )
    path = write_reference(tmp_path / "t.lance", table)
    encodings = [
        p.encoding for c in ref.LanceFileReader(str(path)).metadata().columns for p in c.pages
    ]
    assert any("Dictionary" in e for e in encodings) and any("Fsst" in e for e in encodings)
    assert_same(table, LanceFileReader(path).read_all().to_table())
    rows = [0, 1, 5, 59_999, 12_345]
    assert LanceFileReader(path).take_rows(rows).to_table().equals(table.take(rows))
