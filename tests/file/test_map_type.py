"""The Arrow map type in Lance files: written and read in format 2.2 as pylance does,
refused before 2.2 as pylance refuses it.

pylance stores a map as a field of logical type ``map`` with one child, its entries
(a non-null ``struct``), whose children are the key (non-null) and the value, and lays
it out as a list of those entries.  Its readers name the key and value fields ``key``
and ``value`` whatever names were written.
"""

from __future__ import annotations

from pathlib import Path

import lance.file as ref
import pyarrow as pa
import pytest

from lancelet._proto import file_pb2
from lancelet.errors import CorruptFileError, TypeVersionError, UnsupportedTypeError
from lancelet.file import LanceFileReader, LanceFileWriter, container
from tests.file import surgery
from tests.storage import FILES

STRINGS_TO_INTS = pa.map_(pa.string(), pa.int32())

CASES: dict[str, pa.Array] = {
    "nulls and empties": pa.array(
        [[("a", 1), ("b", 2)], None, [], [("c", None)], [("a", 5)] * 4], STRINGS_TO_INTS
    ),
    "renamed, non-null list values": pa.array(
        [[(1, [1, 2])], [], [(2, []), (3, [None])]],
        pa.map_(
            pa.field("k", pa.int64(), nullable=False),
            pa.field("v", pa.list_(pa.int8()), nullable=False),
        ),
    ),
    "maps of maps": pa.array(
        [[("x", [("y", 1.5)]), ("z", None)], None, [("w", [])]],
        pa.map_(pa.string(), pa.map_(pa.string(), pa.float64())),
    ),
    "struct values": pa.array(
        [[(7, {"s": "q", "f": [1.0, 2.0]})], [(8, None)], None],
        pa.map_(pa.int32(), pa.struct([("s", pa.string()), ("f", pa.list_(pa.float32(), 2))])),
    ),
    "in a list": pa.array([[[("a", 1)], None, []], [], None], pa.list_(STRINGS_TO_INTS)),
    "in a struct": pa.array(
        [{"m": [("a", 1)], "i": 1}, None, {"m": None, "i": 3}],
        pa.struct([("m", STRINGS_TO_INTS), ("i", pa.int8())]),
    ),
}


def _table(values: pa.Array, rows: int = 1) -> pa.Table:
    column = pa.concat_arrays([values] * rows)
    return pa.table({"m": column, "n": pa.array(range(len(column)), pa.int64())})


def _canonical(dtype: pa.DataType) -> pa.DataType:
    """The type both libraries read back: map fields named key and value."""
    if pa.types.is_map(dtype):
        key, item = dtype.key_field, dtype.item_field
        return pa.map_(
            key.with_name("key").with_type(_canonical(key.type)),
            item.with_name("value").with_type(_canonical(item.type)),
        )
    if pa.types.is_struct(dtype):
        return pa.struct([f.with_type(_canonical(f.type)) for f in dtype])
    if pa.types.is_list(dtype):
        return pa.list_(dtype.value_field.with_type(_canonical(dtype.value_type)))
    return dtype


def _assert_same(expected: pa.Table, actual: pa.Table) -> None:
    for name in expected.column_names:
        assert actual.schema.field(name).type == expected.schema.field(name).type
        assert str(actual.schema.field(name).type) == str(_canonical(expected[name].type))
        assert actual[name].to_pylist() == expected[name].to_pylist()


def _write_mine(path: Path, table: pa.Table, version: str = "2.2", **options: object) -> str:
    with LanceFileWriter(path, table.schema, version=version, **options) as writer:
        for batch in table.to_batches(max_chunksize=3):
            writer.write_batch(batch)
    return str(path)


def _write_theirs(path: Path, table: pa.Table, version: str = "2.2") -> str:
    with ref.LanceFileWriter(str(path), table.schema, version=version) as writer:
        writer.write_batch(table)
    return str(path)


def _fields(path: str) -> list[file_pb2.Field]:
    source = FILES.open_input(path)
    descriptor = file_pb2.FileDescriptor()
    descriptor.ParseFromString(
        bytes(container.read_global_buffer(source, container.read_footer(source), 0))
    )
    return list(descriptor.schema.fields)


@pytest.mark.parametrize("case", CASES)
def test_maps_written_by_lancelet_read_by_pylance(tmp_path: Path, case: str) -> None:
    table = _table(CASES[case], rows=40)
    path = _write_mine(tmp_path / "a.lance", table, max_page_bytes=256)
    reader = ref.LanceFileReader(path)
    _assert_same(table, reader.read_all().to_table())
    rows = [0, 1, 17, len(table) - 1]
    _assert_same(table.take(rows), reader.take_rows(rows).to_table())


@pytest.mark.parametrize("case", CASES)
def test_maps_written_by_pylance_read_by_lancelet(tmp_path: Path, case: str) -> None:
    table = _table(CASES[case], rows=40)
    reader = LanceFileReader(_write_theirs(tmp_path / "a.lance", table))
    _assert_same(table, reader.read_all().to_table())
    rows = [len(table) - 1, 2, 2, 0]
    _assert_same(table.take(rows), reader.take_rows(rows).to_table())
    _assert_same(table.slice(5, 30), reader.read_range(5, 30).to_table())


@pytest.mark.parametrize("case", CASES)
def test_the_schema_records_maps_as_pylance_does(tmp_path: Path, case: str) -> None:
    """The same Lance fields (names, ids, parents, logical types, nullability, legacy
    encodings), in the same columns."""
    table = _table(CASES[case])
    mine = _write_mine(tmp_path / "mine.lance", table)
    theirs = _write_theirs(tmp_path / "theirs.lance", table)
    assert _fields(mine) == _fields(theirs)
    assert len(ref.LanceFileReader(mine).metadata().columns) == len(
        ref.LanceFileReader(theirs).metadata().columns
    )


def test_map_fields_are_key_value_and_entries(tmp_path: Path) -> None:
    table = _table(CASES["renamed, non-null list values"])
    fields = _fields(_write_theirs(tmp_path / "theirs.lance", table))
    described = [(f.name, f.logical_type, f.nullable, f.parent_id) for f in fields[:4]]
    assert described == [
        ("m", "map", True, -1),
        ("entries", "struct", False, 0),
        ("k", "int64", False, 1),
        ("v", "list", False, 1),
    ]
    # Both readers name them key and value.
    for reader in (ref.LanceFileReader, LanceFileReader):
        dtype = reader(str(tmp_path / "theirs.lance")).read_all().to_table().schema.field(0).type
        assert (dtype.key_field.name, dtype.item_field.name) == ("key", "value")


@pytest.mark.parametrize("version", ["2.0", "2.1"])
@pytest.mark.parametrize("case", ["nulls and empties", "in a list", "in a struct"])
def test_maps_before_2_2_are_refused_as_pylance_refuses_them(
    tmp_path: Path, version: str, case: str
) -> None:
    table = _table(CASES[case])
    with pytest.raises(NotImplementedError):
        _write_theirs(tmp_path / "theirs.lance", table, version)
    column = "m" if case != "in a list" else "m.item"
    column = "m.m" if case == "in a struct" else column
    with pytest.raises(TypeVersionError, match=rf"column '{column}' is a map.*format {version}"):
        _write_mine(tmp_path / "mine.lance", table, version)
    assert not (tmp_path / "mine.lance").exists()
    # The same exception classes a pylance caller catches.
    assert issubclass(TypeVersionError, NotImplementedError)
    assert issubclass(TypeVersionError, OSError)


def test_sorted_keys_are_refused_as_pylance_refuses_them(tmp_path: Path) -> None:
    dtype = pa.map_(pa.string(), pa.int32(), keys_sorted=True)
    table = pa.table({"m": pa.array([[("a", 1)]], dtype)})
    with pytest.raises(RuntimeError, match="keys_sorted"):
        _write_theirs(tmp_path / "theirs.lance", table)
    with pytest.raises(UnsupportedTypeError, match="'m'.*keys_sorted"):
        _write_mine(tmp_path / "mine.lance", table)


def test_a_2_0_file_claiming_a_map_is_corrupt(tmp_path: Path) -> None:
    """A 2.0 file cannot hold a map: one whose schema says so was damaged or forged."""
    entries = pa.struct([pa.field("key", pa.string(), nullable=False), ("value", pa.int32())])
    table = pa.table({"m": pa.array([[{"key": "a", "value": 1}]], pa.list_(entries))})
    path = _write_mine(tmp_path / "a.lance", table, "2.0")
    parts = surgery.parse(Path(path).read_bytes())
    parts.descriptor.schema.fields[0].logical_type = "map"
    Path(path).write_bytes(surgery.emit(parts))
    with pytest.raises(CorruptFileError, match="'m' is a map"):
        LanceFileReader(path)


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda fields: fields[2].__setattr__("nullable", True), "key field is nullable"),
        (lambda fields: fields.pop(3), "not a key and a value"),
    ],
    ids=["nullable key", "no value"],
)
def test_damaged_map_schemas_are_corrupt(tmp_path: Path, edit: object, problem: str) -> None:
    path = _write_mine(tmp_path / "a.lance", _table(CASES["nulls and empties"]))
    parts = surgery.parse(Path(path).read_bytes())
    fields = list(parts.descriptor.schema.fields)
    edit(fields)
    del parts.descriptor.schema.fields[:]
    parts.descriptor.schema.fields.extend(fields)
    Path(path).write_bytes(surgery.emit(parts))
    with pytest.raises(CorruptFileError, match=problem):
        LanceFileReader(path)
