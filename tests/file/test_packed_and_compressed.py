"""Packed structs and compressed string buffers, end to end and against pylance.

pylance 14.0.2 writes a struct whose field metadata asks for packing as one
column of ``PackedStruct`` pages, and compresses the bytes buffer of string /
binary pages when the field metadata names ``zstd`` or ``lz4``.  Each test
checks both directions value by value; where pylance cannot read its own output
(a struct nested inside a packed struct) the files are compared page by page.
"""

from __future__ import annotations

from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest

from lancelet._proto import file_pb2
from lancelet.errors import UnsupportedTypeError
from lancelet.file import LanceFileReader, LanceFileWriter, container
from lancelet.file.codecs.general import (
    BufferCompression,
    compression_from_metadata,
)
from lancelet.file.schema import to_lance_fields
from lancelet.file.v2_0.layout import Kind, build_layout, column_count, is_packed_struct
from tests.file import oracle
from tests.file.gen import random_array, seed_of
from tests.file.oracle import assert_same
from tests.storage import FILES

PACKED = {"lance-encoding:packed": "true"}
ROWS = 3000
CACHE = 4096

INNER = pa.struct([("p", pa.int16()), ("q", pa.float64())])
# Struct types pylance writes packed *and* reads back.
READABLE = [
    pa.struct([("a", pa.int32()), ("b", pa.float64())]),
    pa.struct(
        [
            ("i8", pa.int8()),
            ("u64", pa.uint64()),
            ("h", pa.float16()),
            ("d", pa.decimal128(12, 3)),
            ("ts", pa.timestamp("us", "UTC")),
            ("day", pa.date32()),
            ("fb", pa.binary(5)),
        ]
    ),
    pa.struct([("id", pa.int64()), ("vec", pa.list_(pa.float32(), 4))]),
    pa.struct([("m", pa.list_(pa.list_(pa.int16(), 2), 3)), ("w", pa.uint8())]),
]
# pylance writes a struct inside a packed struct but its reader panics on it.
NESTED = [
    pa.struct([("a", pa.int32()), ("n", INNER), ("v", pa.list_(pa.uint16(), 2))]),
    pa.struct([("outer", pa.struct([("inner", INNER), ("z", pa.int8())]))]),
]


# --- helpers ---------------------------------------------------------------------------


def packed_table(
    dtype: pa.DataType, rows: int = ROWS, meta: dict[str, str] | None = None
) -> pa.Table:
    """A packed struct column between two ordinary ones, so column indices must shift."""
    rng = np.random.default_rng(seed_of(str(dtype)))
    schema = pa.schema(
        [
            pa.field("before", pa.int32()),
            pa.field("s", dtype, metadata=meta or PACKED),
            pa.field("after", pa.string(), metadata={"note": "x"}),
        ],
        metadata={"owner": "lancelet"},
    )
    columns = [
        random_array(pa.int32(), rows, rng),
        random_array(dtype, rows, rng, null_rate=0.0),
        random_array(pa.string(), rows, rng),
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def write_lancelet(path: Path, table: pa.Table) -> Path:
    return oracle.write_lancelet(path, table, data_cache_bytes=CACHE)


def write_reference(path: Path, table: pa.Table) -> Path:
    return oracle.write_reference(path, table, data_cache_bytes=CACHE)


def columns_of(path: Path) -> list[container.ColumnInfo]:
    source = FILES.open_input(str(path))
    return container.read_columns(source, container.read_footer(source))


def descriptor_of(path: Path) -> file_pb2.FileDescriptor:
    source = FILES.open_input(str(path))
    raw = container.read_global_buffer(source, container.read_footer(source), 0)
    descriptor = file_pb2.FileDescriptor()
    descriptor.ParseFromString(raw.to_pybytes())
    return descriptor


def page_dump(path: Path) -> list[list[tuple[int, bytes, list[bytes]]]]:
    """Per column, per page: rows, serialized encoding, and the page buffers' bytes."""
    data = path.read_bytes()
    return [
        [
            (
                page.num_rows,
                page.encoding.SerializeToString(),
                [
                    data[o : o + s]
                    for o, s in zip(page.buffer_offsets, page.buffer_sizes, strict=True)
                ],
            )
            for page in column.pages
        ]
        for column in columns_of(path)
    ]


def check_reads(path: Path, table: pa.Table) -> None:
    """Everything lancelet can ask of a file: whole, range, take, projection."""
    reader = LanceFileReader(path)
    assert_same(table, reader.read_all().to_table())
    assert_same(table.slice(650, 120), reader.read_range(650, 120).to_table())
    rows = [0, 5, 699, 700, 1401, len(table) - 1]
    assert_same(table.take(rows), reader.take_rows(rows).to_table())
    unsorted = [len(table) - 1, 3, 1400, 3]
    assert_same(table.take(unsorted), reader.take_rows(unsorted).to_table())
    projected = LanceFileReader(path, columns=["s", "after"]).read_all().to_table()
    assert_same(table.select(["s", "after"]), projected)
    only = reader.take_rows(rows, columns=["s"]).to_table()
    assert_same(table.select(["s"]).take(rows), only)


# --- layout and schema ---------------------------------------------------------------


def test_packed_struct_is_one_leaf_column(tmp_path: Path) -> None:
    table = packed_table(NESTED[0], rows=10)
    nodes = build_layout(table.schema)
    assert [n.column for n in nodes] == [0, 1, 2]
    assert nodes[1].kind is Kind.LEAF and nodes[1].children == ()
    assert column_count(nodes) == 3
    theirs = write_reference(tmp_path / "t.lance", table)
    columns = columns_of(theirs)
    assert len(columns) == 3
    encoding = columns[1].pages[0].encoding
    # Not wrapped in Nullable: the page encoding is the PackedStruct itself.
    assert encoding.WhichOneof("array_encoding") == "packed_struct"
    assert len(encoding.packed_struct.inner) == NESTED[0].num_fields


@pytest.mark.parametrize("dtype", READABLE + NESTED, ids=str)
def test_schema_fields_match_reference(tmp_path: Path, dtype: pa.DataType) -> None:
    # The descriptor still lists the packed struct's children as fields.
    table = packed_table(dtype, rows=5)
    theirs = descriptor_of(write_reference(tmp_path / "t.lance", table))
    mine = descriptor_of(write_lancelet(tmp_path / "m.lance", table))
    expected = [f.SerializeToString() for f in theirs.schema.fields]
    assert [f.SerializeToString() for f in to_lance_fields(table.schema)] == expected
    assert [f.SerializeToString() for f in mine.schema.fields] == expected
    assert len(theirs.schema.fields) > 3


PACKING_METADATA = [
    ({"lance-encoding:packed": "true"}, True),
    ({"lance-encoding:packed": "1"}, True),
    ({"lance-encoding:packed": "yes"}, True),
    ({"packed": "true"}, True),
    ({"packed": "TRUE"}, True),
    ({"packed": "on"}, True),
    ({"packed": "1", "lance-encoding:packed": "false"}, True),
    ({"packed": "t"}, False),
    ({"packed": "false"}, False),
    ({"packed": "false", "lance-encoding:packed": "true"}, False),
    ({"other": "true"}, False),
]


@pytest.mark.parametrize(("meta", "packed"), PACKING_METADATA, ids=str)
def test_packing_rule_matches_reference_writer(
    tmp_path: Path, meta: dict[str, str], packed: bool
) -> None:
    table = packed_table(READABLE[0], rows=20, meta=meta)
    assert is_packed_struct(table.schema.field("s")) is packed
    theirs = write_reference(tmp_path / "t.lance", table)
    assert len(columns_of(theirs)) == column_count(build_layout(table.schema))
    assert_same(table, LanceFileReader(theirs).read_all().to_table())
    mine = write_lancelet(tmp_path / "m.lance", table)
    assert len(columns_of(mine)) == len(columns_of(theirs))
    assert_same(table, LanceFileReader(mine).read_all().to_table())


# --- packed structs, both directions ---------------------------------------------------


@pytest.mark.parametrize("dtype", READABLE + NESTED, ids=str)
def test_packed_reference_to_lancelet(tmp_path: Path, dtype: pa.DataType) -> None:
    table = packed_table(dtype)
    path = write_reference(tmp_path / "t.lance", table)
    assert len(columns_of(path)[1].pages) > 1
    check_reads(path, table)


@pytest.mark.parametrize("dtype", READABLE, ids=str)
def test_packed_lancelet_to_reference(tmp_path: Path, dtype: pa.DataType) -> None:
    table = packed_table(dtype)
    path = write_lancelet(tmp_path / "m.lance", table)
    assert len(columns_of(path)[1].pages) > 1
    reader = ref.LanceFileReader(str(path))
    assert_same(table, reader.read_all().to_table())
    rows = [0, 5, 699, 700, 1401, len(table) - 1]
    assert_same(table.take(rows), reader.take_rows(rows).to_table())
    assert_same(table.slice(650, 120), reader.read_range(650, 120).to_table())
    projected = ref.LanceFileReader(str(path), columns=["s"]).read_all().to_table()
    assert_same(table.select(["s"]), projected)
    check_reads(path, table)


@pytest.mark.parametrize("dtype", READABLE + NESTED, ids=str)
def test_packed_pages_identical_to_reference(tmp_path: Path, dtype: pa.DataType) -> None:
    # The only check possible for nested structs, which pylance cannot read back.
    table = packed_table(dtype)
    mine = page_dump(write_lancelet(tmp_path / "m.lance", table))
    theirs = page_dump(write_reference(tmp_path / "t.lance", table))
    assert mine[1] == theirs[1]


def test_packed_inside_struct_and_list(tmp_path: Path) -> None:
    point = READABLE[0]
    outer = pa.struct([pa.field("p", point, metadata=PACKED), pa.field("c", pa.int8())])
    listed = pa.list_(pa.field("item", point, metadata={"packed": "true"}))
    rng = np.random.default_rng(11)
    lengths = rng.integers(0, 4, ROWS)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    items = random_array(point, int(offsets[-1]), rng, null_rate=0.0)
    table = pa.table(
        {
            "o": pa.StructArray.from_arrays(
                [random_array(point, ROWS, rng, 0.0), random_array(pa.int8(), ROWS, rng)],
                fields=list(outer),
            ),
            "l": pa.ListArray.from_arrays(pa.array(offsets), items, type=listed),
        }
    )
    theirs = write_reference(tmp_path / "t.lance", table)
    mine = write_lancelet(tmp_path / "m.lance", table)
    assert len(columns_of(theirs)) == len(columns_of(mine)) == 5
    assert_same(table, LanceFileReader(theirs).read_all().to_table())
    assert_same(table, ref.LanceFileReader(str(mine)).read_all().to_table())
    sub = LanceFileReader(theirs, columns=["o.p"]).read_all().to_table()
    assert sub.column(0).combine_chunks().equals(table["o"].combine_chunks().field("p"))
    rows = [1, 2, 1999]
    assert_same(table.take(rows), LanceFileReader(mine).take_rows(rows).to_table())


def test_empty_packed_file(tmp_path: Path) -> None:
    table = packed_table(READABLE[2], rows=0)
    mine = write_lancelet(tmp_path / "m.lance", table)
    theirs = write_reference(tmp_path / "t.lance", table)
    assert_same(table, ref.LanceFileReader(str(mine)).read_all().to_table())
    assert_same(table, LanceFileReader(theirs).read_all().to_table())


# --- what neither writer accepts ------------------------------------------------------


def _struct_table(arr: pa.Array) -> pa.Table:
    schema = pa.schema([pa.field("x", pa.int64()), pa.field("ps", arr.type, metadata=PACKED)])
    return pa.Table.from_arrays([pa.array(range(len(arr)), pa.int64()), arr], schema=schema)


REFUSED = {
    "bool child": pa.array(
        [{"a": 1, "b": True}], pa.struct([("a", pa.int32()), ("b", pa.bool_())])
    ),
    "string child": pa.array(
        [{"a": 1, "b": "x"}], pa.struct([("a", pa.int32()), ("b", pa.string())])
    ),
    "list child": pa.array([{"b": [1]}], pa.struct([("b", pa.list_(pa.int32()))])),
    "null child": pa.array([{"a": 1}, {"a": None}], pa.struct([("a", pa.int32())])),
    "null row": pa.array([{"a": 1}, None], pa.struct([("a", pa.int32())])),
    "null list": pa.array(
        [{"v": [1, 2]}, {"v": None}], pa.struct([("v", pa.list_(pa.int32(), 2))])
    ),
    "null item": pa.array([{"v": [1, None]}], pa.struct([("v", pa.list_(pa.int32(), 2))])),
    "null nested row": pa.array(
        [{"n": {"p": 1, "q": 2.0}}, {"n": None}], pa.struct([("n", INNER)])
    ),
}


@pytest.mark.parametrize("case", REFUSED, ids=str)
def test_refused_like_reference(tmp_path: Path, case: str) -> None:
    table = _struct_table(REFUSED[case])
    with pytest.raises(Exception):  # noqa: B017 - pylance raises ValueError or RuntimeError
        write_reference(tmp_path / "t.lance", table)
    path = tmp_path / "m.lance"
    with pytest.raises(UnsupportedTypeError, match="'ps'"):
        write_lancelet(path, table)
    assert not path.exists()


def test_empty_struct_refused(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("ps", pa.struct([]), metadata=PACKED)])
    with pytest.raises(UnsupportedTypeError, match=r"'ps'.*at least one field"):
        LanceFileWriter(tmp_path / "m.lance", schema, version="2.0")


# --- compressed string / binary buffers -------------------------------------------------

STRING_TYPES = [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()]
COMPRESSIONS = [
    {"lance-encoding:compression": "zstd"},
    {"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "19"},
    {"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "-5"},
    {"lance-encoding:compression": "lz4"},
    {"lance-encoding:compression": "lz4", "lance-encoding:compression-level": "7"},
    {"lance-encoding:compression": "none"},
]


def compressed_table(meta: dict[str, str], rows: int = ROWS) -> pa.Table:
    rng = np.random.default_rng(seed_of(str(meta)))
    fields = [pa.field(f"c{i}", t, metadata=meta) for i, t in enumerate(STRING_TYPES)]
    item = pa.field("item", pa.string(), metadata=meta)
    fields.append(pa.field("ls", pa.list_(item)))
    fields.append(pa.field("st", pa.struct([pa.field("b", pa.binary(), metadata=meta)])))
    arrays = [random_array(f.type, rows, rng) for f in fields[:-1]]
    arrays.append(random_array(fields[-1].type, rows, rng))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata={"k": "v"}))


def compressions_in(path: Path) -> set[tuple[str, int | None]]:
    found = set()
    for column in columns_of(path):
        for page in column.pages:
            enc = page.encoding
            if enc.WhichOneof("array_encoding") != "binary":
                continue
            flat = enc.binary.bytes.flat
            if flat.HasField("compression"):
                level = flat.compression.level if flat.compression.HasField("level") else None
                found.add((flat.compression.scheme, level))
    return found


def _expected_compression(meta: dict[str, str]) -> set[tuple[str, int | None]]:
    level = meta.get("lance-encoding:compression-level")
    return {(meta["lance-encoding:compression"], None if level is None else int(level))}


@pytest.mark.parametrize("meta", COMPRESSIONS, ids=str)
def test_compressed_reference_to_lancelet(tmp_path: Path, meta: dict[str, str]) -> None:
    table = compressed_table(meta)
    path = write_reference(tmp_path / "t.lance", table)
    assert compressions_in(path) == _expected_compression(meta)
    assert max(len(c.pages) for c in columns_of(path)) > 1
    reader = LanceFileReader(path)
    assert_same(table, reader.read_all().to_table())
    rows = [3, 699, 700, 2999, 1]
    assert_same(table.take(rows), reader.take_rows(rows).to_table())
    assert_same(table.slice(690, 30), reader.read_range(690, 30).to_table())


@pytest.mark.parametrize("meta", COMPRESSIONS, ids=str)
def test_compressed_lancelet_to_reference(tmp_path: Path, meta: dict[str, str]) -> None:
    table = compressed_table(meta)
    path = write_lancelet(tmp_path / "m.lance", table)
    assert compressions_in(path) == _expected_compression(meta)
    assert_same(table, ref.LanceFileReader(str(path)).read_all().to_table())
    assert_same(table, LanceFileReader(path).read_all().to_table())


def test_compressed_encoding_matches_reference(tmp_path: Path) -> None:
    # binary is never dictionary-encoded, so both writers pick Binary + compression.
    meta = {"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "3"}
    schema = pa.schema([pa.field("b", pa.binary(), metadata=meta)])
    table = pa.table({"b": random_array(pa.binary(), 500, np.random.default_rng(1))}, schema=schema)
    mine = columns_of(write_lancelet(tmp_path / "m.lance", table))
    theirs = columns_of(write_reference(tmp_path / "t.lance", table))
    assert [p.encoding for p in mine[0].pages] == [p.encoding for p in theirs[0].pages]


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({}, None),
        ({"lance-encoding:compression": "snappy"}, None),
        ({"lance-encoding:compression": "fsst"}, None),
        ({"lance-encoding:compression": "lz4"}, BufferCompression("lz4")),
        (
            {"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "abc"},
            BufferCompression("zstd"),
        ),
        (
            {"lance-encoding:compression": "zstd", "lance-encoding:compression-level": " 3"},
            BufferCompression("zstd"),
        ),
        (
            {"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "100"},
            BufferCompression("zstd", 100),
        ),
    ],
    ids=str,
)
def test_compression_from_metadata(
    meta: dict[str, str], expected: BufferCompression | None
) -> None:
    encoded = {k.encode(): v.encode() for k, v in meta.items()}
    assert compression_from_metadata(encoded) == expected


def test_out_of_range_zstd_level_round_trips(tmp_path: Path) -> None:
    meta = {"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "100"}
    schema = pa.schema([pa.field("s", pa.string(), metadata=meta)])
    table = pa.table({"s": [f"row {i}" for i in range(300)]}, schema=schema)
    path = write_lancelet(tmp_path / "m.lance", table)
    assert compressions_in(path) == {("zstd", 100)}
    assert_same(table, ref.LanceFileReader(str(path)).read_all().to_table())
