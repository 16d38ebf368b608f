"""Nested data the round-trip property (test_nested_roundtrip_property.py) found wrong,
each case pinned down and compared with pylance."""

from __future__ import annotations

from pathlib import Path

import lance
import lance.file as ref
import pyarrow as pa
import pytest

import lancelet
from lancelet.errors import UnsupportedTypeError
from lancelet.file import LanceFileReader, LanceFileWriter

VERSIONS = ["2.0", "2.1", "2.2"]


def write_mine(path: Path, table: pa.Table, version: str, **options: object) -> str:
    with LanceFileWriter(path, table.schema, version=version, **options) as writer:
        writer.write_batch(table)
    return str(path)


def write_theirs(path: Path, table: pa.Table, version: str, **options: object) -> str:
    with ref.LanceFileWriter(str(path), table.schema, version=version, **options) as writer:
        writer.write_batch(table)
    return str(path)


def assert_values(expected: pa.Table, actual: pa.Table) -> None:
    assert actual.schema == expected.schema
    assert actual.to_pylist() == expected.to_pylist()


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize(
    "values",
    [
        [[]],  # no inner list at all: the inner array is empty
        [[], None],
        [[[]], []],
        [None, [], [[1, None], []], []],
    ],
    ids=str,
)
def test_lists_of_lists_with_empty_outer_lists(
    tmp_path: Path, version: str, values: list[object]
) -> None:
    """The 2.1+ writer indexed the inner lists' offsets for rows that have none
    (IndexError when every outer list of a batch was empty or null)."""
    depth = 3 if values == [[[]], []] else 2
    dtype: pa.DataType = pa.int32()
    for _ in range(depth):
        dtype = pa.list_(dtype)
    table = pa.table({"l": pa.array(values, dtype)})
    path = write_mine(tmp_path / "a.lance", table, version)
    assert_values(table, ref.LanceFileReader(path).read_all().to_table())
    assert_values(table, LanceFileReader(path).read_all().to_table())


@pytest.mark.parametrize(
    "dtype",
    [
        pa.large_list(pa.struct([("c", pa.int64())])),
        pa.large_list(pa.struct([("c", pa.list_(pa.int64(), 4)), ("d", pa.string())])),
        pa.list_(pa.list_(pa.int64())),
        pa.list_(pa.struct([("s", pa.struct([("x", pa.int8())]))])),
    ],
    ids=str,
)
def test_2_0_columns_under_lists_that_got_no_items(tmp_path: Path, dtype: pa.DataType) -> None:
    """A 2.0 column under lists that are all empty gets a page of no rows, as pylance
    writes it: without one pylance's reader panics on a struct below the list."""
    table = pa.table({"l": pa.array([[], None, []], dtype), "i": [1, 2, 3]})
    path = write_mine(tmp_path / "a.lance", table, "2.0")
    theirs = write_theirs(tmp_path / "b.lance", table, "2.0")
    pages = [len(c.pages) for c in ref.LanceFileReader(path).metadata().columns]
    assert pages == [len(c.pages) for c in ref.LanceFileReader(theirs).metadata().columns]
    assert_values(table, ref.LanceFileReader(path).read_all().to_table())
    assert_values(table, LanceFileReader(path).read_all().to_table())


@pytest.mark.parametrize("version", VERSIONS)
def test_fixed_size_lists_of_non_null_items_in_datasets(tmp_path: Path, version: str) -> None:
    """A schema keeps a fixed-size list's items as a logical type string, nullable and
    named ``item``: data whose items are declared non-null still matches the
    dataset's schema (lancelet refused its own first batch)."""
    inner = pa.list_(pa.field("v", pa.float32(), nullable=False), 2)
    dtype = pa.list_(pa.field("item", inner, nullable=False), 2)
    table = pa.table({"f": pa.array([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]], dtype)})
    lancelet.write_dataset(table, tmp_path / "mine", data_storage_version=version)
    lance.write_dataset(table, str(tmp_path / "theirs"), data_storage_version=version)
    theirs = lance.dataset(str(tmp_path / "theirs")).to_table()
    assert lance.dataset(str(tmp_path / "mine")).to_table().equals(theirs)
    assert lancelet.dataset(tmp_path / "mine").to_table().equals(theirs)
    assert theirs.column(0).to_pylist() == table.column(0).to_pylist()


@pytest.mark.parametrize("version", VERSIONS)
def test_lists_of_the_null_type_in_datasets(tmp_path: Path, version: str) -> None:
    """pyarrow's cast of a list of the null type breaks its offsets: a scan no longer
    casts columns already of their type."""
    dtype = pa.large_list(pa.list_(pa.null()))
    schema = pa.schema([pa.field("n", dtype, nullable=False)])
    table = pa.table({"n": pa.array([[], [[], [None, None], []], [[None] * 3, []]], dtype)}, schema)
    lance.write_dataset(table, str(tmp_path / "theirs"), data_storage_version=version)
    assert_values(table, lancelet.dataset(tmp_path / "theirs").to_table())
    lancelet.write_dataset(table, tmp_path / "mine", data_storage_version=version)
    assert_values(table, lancelet.dataset(tmp_path / "mine").to_table())
    assert_values(table, lance.dataset(str(tmp_path / "mine")).to_table())
    # Appends conform the data to the dataset's schema; a reader with a schema given
    # is cast to it: neither may break the lists.
    loose = pa.Table.from_arrays(table.columns, schema=pa.schema([pa.field("n", dtype)]))
    lancelet.write_dataset(loose, tmp_path / "theirs", mode="append")
    reader = pa.RecordBatchReader.from_batches(loose.schema, loose.to_batches())
    lancelet.write_dataset(reader, tmp_path / "given", schema=schema, data_storage_version=version)
    twice = pa.concat_tables([table, table])
    assert_values(twice, lance.dataset(str(tmp_path / "theirs")).to_table())
    assert_values(table, lance.dataset(str(tmp_path / "given")).to_table())


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_non_null_fields_of_null_structs_in_datasets(tmp_path: Path, version: str) -> None:
    """Under a null struct a non-nullable field reads as null (in pylance too); a scan
    refused such rows as data that does not fit the schema."""
    dtype = pa.large_list(
        pa.struct(
            [
                pa.field("h", pa.list_(pa.int64(), 2), nullable=False),
                pa.field("i", pa.int32(), nullable=False),
            ]
        )
    )
    schema = pa.schema([pa.field("l", dtype, nullable=False)])
    values = pa.array([[], [None], [{"h": [1, 2], "i": 5}, None]], dtype)
    table = pa.table({"l": values}, schema)
    lance.write_dataset(table, str(tmp_path / "theirs"), data_storage_version=version)
    got = lancelet.dataset(tmp_path / "theirs").to_table()
    assert got.to_pylist() == lance.dataset(str(tmp_path / "theirs")).to_table().to_pylist()
    assert got.to_pylist() == table.to_pylist()


def test_taking_2_0_dictionaries_with_nulls_across_fragments(tmp_path: Path) -> None:
    """pylance's 2.0 dictionary pages keep a null item for null rows; lancelet reads
    them without it, so rows of several fragments can be taken (pyarrow cannot join
    dictionaries that hold nulls)."""
    dtype = pa.dictionary(pa.int32(), pa.string())
    table = pa.table({"d": pa.array(["a", None, "b", None, "a"], dtype)})
    uri = str(tmp_path / "theirs")
    lance.write_dataset(table, uri, data_storage_version="2.0", max_rows_per_file=2)
    want = lance.dataset(uri).take([4, 1, 0, 3]).column(0).to_pylist()
    assert lancelet.dataset(uri).take([4, 1, 0, 3]).column(0).to_pylist() == want
    assert want == ["a", None, "a", None]
    file = LanceFileReader(next((tmp_path / "theirs" / "data").iterdir()))
    assert file.read_all().to_table().column(0).chunk(0).dictionary.null_count == 0


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize(
    ("values", "dtype"),
    [
        ([[None] * 3, None, [None] * 3], pa.list_(pa.int8(), 3)),
        ([[None, None], [[1, 2, 3], None]], pa.list_(pa.list_(pa.int8(), 3), 2)),
        ([[None, None]] * 2, pa.list_(pa.list_(pa.int64(), 3), 2)),
        ([[[None] * 3, None]] * 2, pa.list_(pa.list_(pa.float64(), 3), 2)),
        ([[[None] * 3, [None] * 3]] * 2, pa.list_(pa.list_(pa.bool_(), 3), 2)),
        ([[[[None] * 3, [None] * 3]], None], pa.list_(pa.list_(pa.list_(pa.int32(), 3), 2))),
    ],
    ids=str,
)
def test_fixed_size_lists_of_null_items_pylance_writes(
    tmp_path: Path, version: str, values: list[object], dtype: pa.DataType
) -> None:
    """pylance writes fixed-size lists whose items are all null as full-zip pages whose
    items are a Constant without a value (only the validity bitmaps are stored)."""
    table = pa.table({"f": pa.array(values, dtype)})
    path = write_theirs(tmp_path / "a.lance", table, version)
    reader = LanceFileReader(path)
    assert_values(table, reader.read_all().to_table())
    rows = [len(values) - 1, 0]
    assert_values(table.take(rows), reader.take_rows(rows).to_table())


INNER = pa.struct([("x", pa.int32())])


@pytest.mark.parametrize(
    ("values", "dtype"),
    [
        ([{"x": 1}, None], INNER),
        ([[{"x": 1}, None]], pa.list_(INNER)),
        ([{"s": None}, {"s": {"x": 1}}], pa.struct([("s", INNER)])),
    ],
    ids=["top", "in a list", "in a struct"],
)
def test_2_0_refuses_null_structs_as_pylance_does(
    tmp_path: Path, values: list[object], dtype: pa.DataType
) -> None:
    table = pa.table({"c": pa.array(values, dtype)})
    with pytest.raises(ValueError, match="does not encode struct validity"):
        write_theirs(tmp_path / "theirs.lance", table, "2.0")
    with pytest.raises(UnsupportedTypeError, match="format 2.0 cannot store nulls at the struct"):
        write_mine(tmp_path / "mine.lance", table, "2.0")
    assert not (tmp_path / "mine.lance").exists()


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_levels_of_wide_fixed_size_lists_under_lists(tmp_path: Path, version: str) -> None:
    """A page of over 1024 levels whose mini-block chunks each hold far fewer (wide
    values, a few per chunk) packs no full block of levels: the writer failed with
    "cannot reshape array of size 0".  The file is pylance's, byte for byte."""
    n = 1100
    items = pa.FixedSizeListArray.from_arrays(pa.array(range(n * 30), pa.float64()), 30)
    offsets = pa.array(range(n + 1), pa.int32())
    lists = pa.ListArray.from_arrays(offsets, items, mask=pa.array([i % 7 == 0 for i in range(n)]))
    table = pa.table({"l": lists})
    mine = write_mine(tmp_path / "mine.lance", table, version)
    theirs = write_theirs(tmp_path / "theirs.lance", table, version)
    assert_values(table, ref.LanceFileReader(mine).read_all().to_table())
    assert Path(mine).read_bytes() == Path(theirs).read_bytes()


def test_2_0_datasets_refuse_null_structs_with_pylance_exception(tmp_path: Path) -> None:
    table = pa.table({"s": pa.array([{"x": 1}, None], INNER)})
    with pytest.raises(OSError, match="does not encode struct validity"):
        lance.write_dataset(table, str(tmp_path / "theirs"), data_storage_version="2.0")
    with pytest.raises(OSError, match="'s' has null rows; Lance file format 2.0"):
        lancelet.write_dataset(table, tmp_path / "mine", data_storage_version="2.0")
