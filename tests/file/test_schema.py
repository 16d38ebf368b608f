"""lancelet's schema fields match, bit for bit, those pylance writes for the same schema."""

from __future__ import annotations

import struct
from pathlib import Path

import lance.file as ref
import pyarrow as pa
import pytest

from lancelet._proto import file_pb2
from lancelet.errors import SchemaError, UnsupportedTypeError
from lancelet.file.schema import from_lance_fields, parse_logical_type, to_lance_fields
from tests.file.gen import ALL_TYPES


def descriptor_of(path: Path) -> file_pb2.FileDescriptor:
    """Parse global buffer 0 independently of lancelet's reader."""
    data = path.read_bytes()
    _, _, gbo, _, _, _, _, _ = struct.unpack("<QQQIIHH4s", data[-40:])
    pos, size = struct.unpack_from("<QQ", data, gbo)
    desc = file_pb2.FileDescriptor()
    desc.ParseFromString(data[pos : pos + size])
    return desc


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=str)
def test_fields_match_reference(tmp_path: Path, dtype: pa.DataType) -> None:
    schema = pa.schema([pa.field("a", pa.int8()), pa.field("col", dtype, metadata={"m": "1"})])
    path = tmp_path / "t.lance"
    with ref.LanceFileWriter(str(path), schema, version="2.0") as writer:
        writer.write_batch(pa.table({n: pa.nulls(0, schema.field(n).type) for n in schema.names}))
    theirs = list(descriptor_of(path).schema.fields)
    mine = to_lance_fields(schema)
    assert [f.SerializeToString(deterministic=True) for f in mine] == [
        f.SerializeToString(deterministic=True) for f in theirs
    ]
    assert from_lance_fields(theirs).equals(schema, check_metadata=True)


@pytest.mark.parametrize(
    "dtype",
    [
        pa.map_(pa.string(), pa.int32(), keys_sorted=True),  # maps are stored, sorted ones not
        pa.dense_union([]),
        pa.month_day_nano_interval(),
    ],
)
def test_unsupported_types_named(dtype: pa.DataType) -> None:
    with pytest.raises(UnsupportedTypeError, match="'bad'"):
        to_lance_fields(pa.schema([pa.field("bad", dtype)]))


@pytest.mark.parametrize(
    "name",
    [
        "fixed_size_binary:18446744073709551615",
        "fixed_size_binary:-1",  # pyarrow would make it variable-width binary
        "fixed_size_binary:2147483648",
        "fixed_size_binary: 3",
        "fixed_size_binary:3_0",
        "fixed_size_list:int32:-1",  # pyarrow would make it a variable list
        "fixed_size_list:int32:18446744073709551615",
        "fixed_size_list:float:+2",
        "decimal:128:99999999999999999999:2",
        "decimal:128:5:99999999999999999999",
        "decimal:128:0:0",
        "",
    ],
)
def test_malformed_widths_are_schema_errors(name: str) -> None:
    with pytest.raises(SchemaError, match="'c'") as caught:
        parse_logical_type(name, "c")
    assert not isinstance(caught.value, UnsupportedTypeError)


def test_widths_writers_give_parse() -> None:
    assert parse_logical_type("fixed_size_binary:0", "c") == pa.binary(0)
    assert parse_logical_type("fixed_size_list:int8:2147483647", "c").list_size == 2**31 - 1
    assert parse_logical_type("decimal:128:38:-5", "c") == pa.decimal128(38, -5)
    assert parse_logical_type("decimal:256:76:76", "c") == pa.decimal256(76, 76)
