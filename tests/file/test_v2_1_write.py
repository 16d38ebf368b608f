"""Lance 2.1 / 2.2 files written by lancelet, checked by pylance reading them.

pylance (``lance.file.LanceFileReader``) is the oracle: every file must read back
with exactly the input's values, types and metadata; page layouts are checked
through pylance's own description of each page; and for data where lancelet
makes the reference's choices, the page buffers must match pylance's byte for byte.
"""

from __future__ import annotations

import os
from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest

from lancelet.errors import (
    SchemaError,
    UnsupportedOptionError,
    UnsupportedTypeError,
    UnsupportedVersionError,
)
from lancelet.file import LanceFileWriter
from tests.file.gen import ALL_TYPES, random_table, seed_of
from tests.file.oracle import assert_same

VERSIONS = ["2.1", "2.2"]
BATCH = 700


def write(path: Path, table: pa.Table, version: str, **kwargs: object) -> Path:
    with LanceFileWriter(path, table.schema, version=version, **kwargs) as writer:  # type: ignore[arg-type]
        for batch in table.to_batches(max_chunksize=BATCH):
            writer.write_batch(batch)
    return path


def write_reference(path: Path, table: pa.Table, version: str) -> Path:
    with ref.LanceFileWriter(str(path), table.schema, version=version) as writer:
        writer.write_batch(table)
    return path


def read_reference(path: Path) -> pa.Table:
    return ref.LanceFileReader(str(path)).read_all().to_table()


def layouts(path: Path) -> list[list[str]]:
    """pylance's description of every page, per column."""
    meta = ref.LanceFileReader(str(path)).metadata()
    return [[page.encoding for page in column.pages] for column in meta.columns]


def page_bytes(path: Path) -> list[list[list[bytes]]]:
    """Every page buffer, as pylance locates it."""
    data = path.read_bytes()
    meta = ref.LanceFileReader(str(path)).metadata()
    return [
        [[data[b.position : b.position + b.size] for b in page.buffers] for page in column.pages]
        for column in meta.columns
    ]


def roundtrip(tmp_path: Path, table: pa.Table, version: str, **kwargs: object) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = write(tmp_path / f"t{version}.lance", table, version, **kwargs)
    assert_same(table, read_reference(path))
    return path


# -- every type, nested any way -------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("dtype", ALL_TYPES, ids=str)
def test_each_type_read_by_pylance(tmp_path: Path, version: str, dtype: pa.DataType) -> None:
    table = random_table([dtype], 1500, seed_of(str(dtype)))
    roundtrip(tmp_path, table, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_no_nulls_and_all_nulls(tmp_path: Path, version: str) -> None:
    for null_rate in (0.0, 1.0):
        table = random_table(ALL_TYPES, 600, 3, null_rate=null_rate)
        roundtrip(tmp_path, table, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_struct_level_nulls(tmp_path: Path, version: str) -> None:
    inner = pa.StructArray.from_arrays(
        [pa.array([1, None, 3, 4, 5, 6]), pa.array(["a", "b", None, "d", "e", "f"])],
        names=["x", "y"],
        mask=pa.array([False, False, False, True, False, False]),
    )
    lists = pa.array([[1, 2], [3], [4, 5, 6], [7], None, []], pa.list_(pa.int32()))
    outer = pa.StructArray.from_arrays(
        [inner, lists, pa.array([1.5, 2.5, None, 4.5, 5.5, 6.5])],
        names=["inner", "l", "f"],
        mask=pa.array([False, True, False, False, True, False]),
    )
    list_of_structs = pa.array(
        [[{"k": 1}, None], None, [], [None], [{"k": None}], [{"k": 6}]],
        pa.list_(pa.struct([("k", pa.int64())])),
    )
    table = pa.table({"outer": outer, "ls": list_of_structs})
    roundtrip(tmp_path, table, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_garbage_under_nulls(tmp_path: Path, version: str) -> None:
    """Values hidden by a null list or a null struct are not written."""
    offsets = pa.array([0, 2, 5, 5, 8], pa.int32())
    values = pa.array(np.arange(8, dtype=np.int16))
    lists = pa.ListArray.from_arrays(offsets, values, mask=pa.array([False, True, False, False]))
    assert lists.to_pylist() == [[0, 1], None, [], [5, 6, 7]]
    under_struct = pa.StructArray.from_arrays(
        [pa.array([[1, 2], [3], [4, 5, 6], [7]], pa.list_(pa.int32()))],
        names=["l"],
        mask=pa.array([False, True, False, False]),
    )
    table = pa.table({"lists": lists, "s": under_struct})
    roundtrip(tmp_path, table, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_lists_empty_null_and_nested(tmp_path: Path, version: str) -> None:
    n = 3000
    table = pa.table(
        {
            "all_empty": pa.array([[]] * n, pa.list_(pa.int32())),
            "all_null": pa.array([None] * n, pa.list_(pa.string())),
            "mixed": pa.array(
                [None if i % 7 == 0 else [] if i % 5 == 0 else [i, None] for i in range(n)],
                pa.list_(pa.int64()),
            ),
            "nested": pa.array(
                [None if i % 11 == 0 else [[i, None], [], None] for i in range(n)],
                pa.large_list(pa.list_(pa.int64())),
            ),
            "deep": pa.array(
                [[[["x" * (i % 4)]], [[], None]] if i % 3 else [] for i in range(n)],
                pa.list_(pa.list_(pa.list_(pa.string()))),
            ),
        }
    )
    roundtrip(tmp_path, table, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_empty_table(tmp_path: Path, version: str) -> None:
    table = random_table(ALL_TYPES, 0, 1)
    path = tmp_path / "empty.lance"
    with LanceFileWriter(path, table.schema, version=version):
        pass
    got = read_reference(path)
    assert got.num_rows == 0
    assert got.schema.equals(table.schema, check_metadata=True)


@pytest.mark.parametrize("version", VERSIONS)
def test_footer_version(tmp_path: Path, version: str) -> None:
    path = roundtrip(tmp_path, pa.table({"a": [1, 2, 3]}), version)
    meta = ref.LanceFileReader(str(path)).metadata()
    assert f"{meta.major_version}.{meta.minor_version}" == version


def test_version_names(tmp_path: Path) -> None:
    table = pa.table({"a": [1, 2, 3]})
    path = tmp_path / "stable.lance"
    with LanceFileWriter(path, table.schema, version="STABLE") as writer:
        writer.write_batch(table)
    meta = ref.LanceFileReader(str(path)).metadata()
    assert (meta.major_version, meta.minor_version) == (2, 2)
    with pytest.raises(UnsupportedVersionError, match="2.3"):
        LanceFileWriter(tmp_path / "next.lance", table.schema, version="next")
    assert not (tmp_path / "next.lance").exists()


@pytest.mark.parametrize("version", VERSIONS)
def test_metadata_preserved(tmp_path: Path, version: str) -> None:
    schema = pa.schema(
        [
            pa.field("a", pa.int32(), metadata={"unit": "m", "lance-encoding:compression": "zstd"}),
            pa.field("s", pa.struct([pa.field("x", pa.string(), metadata={"k": "v"})])),
            pa.field("n", pa.float64(), nullable=False),
        ],
        metadata={"owner": "test"},
    )
    table = pa.table(
        {"a": [1, 2, None], "s": [{"x": "p"}, None, {"x": None}], "n": [1.0, 2.0, 3.0]},
        schema=schema,
    )
    path = tmp_path / "meta.lance"
    with LanceFileWriter(path, schema, version=version) as writer:
        writer.write_batch(table)
        writer.add_schema_metadata("extra", "1")
    got = read_reference(path)
    assert got.schema.metadata == {b"owner": b"test", b"extra": b"1"}
    assert_same(table.replace_schema_metadata(got.schema.metadata), got)


# -- pages and layouts ------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_multi_page_columns(tmp_path: Path, version: str) -> None:
    table = random_table(ALL_TYPES, 4000, 5)
    path = roundtrip(tmp_path, table, version, data_cache_bytes=20_000, max_page_bytes=8_000)
    pages = layouts(path)
    wide = [ALL_TYPES.index(t) for t in (pa.int64(), pa.string(), pa.list_(pa.float32(), 8))]
    assert all(len(pages[column]) > 1 for column in wide)
    reader = ref.LanceFileReader(str(path))
    rows = np.sort(np.random.default_rng(2).choice(4000, 60, replace=False))
    taken = reader.take_rows(rows.tolist()).to_table()
    assert_same(table.take(pa.array(rows)), taken)
    assert_same(table.slice(1234, 1300), reader.read_range(1234, 1300).to_table())


@pytest.mark.parametrize("version", VERSIONS)
def test_max_page_bytes_splits_pages_where_pylance_keeps_one(tmp_path: Path, version: str) -> None:
    # A deliberate difference: pylance's 2.1+ writer ignores max_page_bytes (it splits
    # pages only when reading), lancelet honours it, so that a writer's pages, and the
    # memory a reader needs for one, stay bounded.  The values are the same either way.
    table = pa.table({"a": pa.array(range(3000), pa.int64())})
    theirs = tmp_path / "theirs.lance"
    with ref.LanceFileWriter(str(theirs), table.schema, version=version, max_page_bytes=1) as w:
        w.write_batch(table)
    ours = roundtrip(tmp_path, table, version, max_page_bytes=8_000)
    assert len(ref.LanceFileReader(str(theirs)).metadata().columns[0].pages) == 1
    assert len(layouts(ours)[0]) > 1
    assert_same(table, ref.LanceFileReader(str(ours)).read_all().to_table())


@pytest.mark.parametrize("version", VERSIONS)
def test_full_zip_for_wide_values(tmp_path: Path, version: str) -> None:
    rng = np.random.default_rng(9)
    n = 400
    table = pa.table(
        {
            "blob": pa.array([rng.bytes(300 + i % 50) for i in range(n)], pa.binary()),
            "nullable": pa.array(
                [None if i % 5 == 0 else rng.bytes(260) for i in range(n)], pa.large_binary()
            ),
            "in_list": pa.array(
                [None if i % 7 == 0 else [rng.bytes(300)] * (i % 3) for i in range(n)],
                pa.list_(pa.binary()),
            ),
            "vector": pa.array(
                [None if i % 4 == 0 else list(rng.random(80)) for i in range(n)],
                pa.list_(pa.float64(), 80),
            ),
            "huge": pa.array([rng.bytes(40_000) for _ in range(3)] + [b"x"] * (n - 3)),
        }
    )
    path = roundtrip(tmp_path, table, version)
    pages = layouts(path)
    assert all("FullZipLayout" in page for column in pages for page in column)
    assert "Zstd" in pages[4][0]  # values over 32 KiB are compressed one by one
    rows = [0, 3, 4, 200, 399]
    assert_same(table.take(rows), ref.LanceFileReader(str(path)).take_rows(rows).to_table())


@pytest.mark.parametrize("version", VERSIONS)
def test_wide_strings_that_fsst_cannot_shrink(tmp_path: Path, version: str) -> None:
    """pylance's test_writer_maintains_order strings (each repeats its own number): a
    symbol table learnt from a sample fits no other string, so lancelet stores them
    as they are (pylance compresses them anyway, into more bytes than they had); wide
    text still gets FSST."""
    n = 600
    rng = np.random.default_rng(12)
    words = ["carefully", "ironic", "packages", "deposits", "the", "quickly"]
    table = pa.table(
        {
            "numbers": [None if i % 11 == 0 else f"{i}" * 1024 for i in range(n)],
            "text": [" ".join(rng.choice(words, 80)) for _ in range(n)],
        }
    )
    path = roundtrip(tmp_path, table, version)
    numbers, text = (column[0] for column in layouts(path))
    assert "FullZipLayout" in numbers and "Fsst" not in numbers
    assert "FullZipLayout" in text and "Fsst" in text
    rows = [0, 11, 12, 599]
    assert_same(table.take(rows), ref.LanceFileReader(str(path)).take_rows(rows).to_table())


@pytest.mark.parametrize("version", VERSIONS)
def test_same_bytes_as_pylance(tmp_path: Path, version: str) -> None:
    """Where lancelet makes the reference's choices, pages are byte for byte pylance's."""
    rng = np.random.default_rng(0)
    n = 5000
    table = pa.table(
        {
            "i64": pa.array(np.arange(n, dtype=np.int64)),
            "i32n": pa.array([None if i % 7 == 0 else i for i in range(n)], pa.int32()),
            "f64": pa.array(rng.random(n)),
            "u16": pa.array(rng.integers(0, 60000, n, dtype=np.uint16)),
            "low": pa.array([["a", "bb", "ccc"][i % 3] for i in range(n)]),
            "short": pa.array([str(i) for i in range(n)]),
            "b": pa.array(rng.random(n) > 0.5),
            "l": pa.array(
                [None if i % 11 == 0 else list(range(i % 4)) for i in range(n)],
                pa.list_(pa.int32()),
            ),
            "st": pa.array(
                [None if i % 13 == 0 else {"x": i, "y": str(i)} for i in range(n)],
                pa.struct([("x", pa.int64()), ("y", pa.string())]),
            ),
            "fsl": pa.array([[float(i)] * 8 for i in range(n)], pa.list_(pa.float32(), 8)),
            "dec": pa.array([i * 7 for i in range(n)], pa.int64()).cast(pa.decimal128(30, 2)),
            "wide": pa.array([rng.bytes(300) for _ in range(n // 10)] * 10, pa.binary()),
            "null": pa.array([None] * n, pa.int64()),
        }
    )
    mine = write(tmp_path / "mine.lance", table, version)
    theirs = write_reference(tmp_path / "theirs.lance", table, version)
    assert_same(table, read_reference(mine))
    assert layouts(mine) == layouts(theirs)
    ours, reference = page_bytes(mine), page_bytes(theirs)
    for name, got, want in zip(table.column_names, ours, reference, strict=False):
        if name == "low" and version == "2.2":
            # The dictionary is lz4-compressed; lz4 builds may pick other matches.
            got, want = [p[:2] for p in got], [p[:2] for p in want]
        assert got == want, name


@pytest.mark.parametrize("version", VERSIONS)
def test_dictionary_and_constant_pages(tmp_path: Path, version: str) -> None:
    n = 3000
    table = pa.table(
        {
            "arrow_dict": pa.array([["x", "y", None][i % 3] for i in range(n)]).dictionary_encode(),
            "low_card": pa.array([None if i % 9 == 0 else f"v{i % 5}" for i in range(n)]),
            "const_int": pa.array([None if i % 3 == 0 else 5 for i in range(n)], pa.int32()),
            "const_str": pa.array(["hello"] * n),
            "const_bool": pa.array([True] * n),
            "const_wide": pa.array([b"z" * 40] * n, pa.binary(40)),
            "const_in_list": pa.array(
                [[7, 7] if i % 2 else [] for i in range(n)], pa.list_(pa.int8())
            ),
        }
    )
    path = roundtrip(tmp_path, table, version)
    pages = [column[0] for column in layouts(path)]
    assert "dictionary: Some" in pages[0] and "dictionary: Some" in pages[1]
    constant = ["ConstantLayout" in page for page in pages[2:]]
    assert constant == ([True] * 5 if version == "2.2" else [False] * 5)


def test_dictionaries_of_wide_integers(tmp_path: Path) -> None:
    """64-bit integers and decimals over a narrow range take the direct-addressing
    dictionary (negative values, a sign-extended high half, the extremes of int64
    elsewhere); pylance reads every value back."""
    rng = np.random.default_rng(11)
    n = 5000
    small = rng.integers(-40, 40, n)
    table = pa.table(
        {
            "i64": pa.array(small, pa.int64()),
            "u64": pa.array(rng.integers(2**64 - 30, 2**64 - 1, n, dtype=np.uint64, endpoint=True)),
            "dec": pa.array(small, pa.int64()).cast(pa.decimal128(22, 2)),
            "dec_wide": pa.array([10**30 * int(v) for v in small[:n]], pa.decimal128(38, 0)),
            "extremes": pa.array(rng.choice([-(2**63), 2**63 - 1, 0], n), pa.int64()),
        }
    )
    path = write(tmp_path / "mine.lance", table, "2.2")
    assert_same(table, read_reference(path))
    pages = [column[0] for column in layouts(path)]
    assert all("dictionary: Some" in page for page in pages), pages


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("n", [300, 1024, 5000])
def test_all_null_pages_with_levels(tmp_path: Path, version: str, n: int) -> None:
    """Pages whose values are all null (or absent) but whose lists or structs need levels:
    2.1 stores the raw levels, 2.2 compresses them (RLE or bit packing, as mini-block
    levels), and a null struct hides the values Arrow keeps under it.  The 2.2 file is
    pylance's byte for byte."""
    table = pa.table(
        {
            "all_empty": pa.array([[]] * n, pa.list_(pa.int32())),
            "empty_or_null": pa.array(
                [None if i % 3 else [] for i in range(n)], pa.list_(pa.int32())
            ),
            "null_items": pa.array(
                [[None, None] if i % 2 else [] for i in range(n)], pa.list_(pa.int32())
            ),
            "struct_nulls": pa.array(
                [None if i % 2 else {"a": None} for i in range(n)], pa.struct([("a", pa.int32())])
            ),
            "scattered": pa.array(
                [None if (i * 7919) % 5 == 0 else [] for i in range(n)], pa.list_(pa.int32())
            ),
            "const_in_list": pa.array(
                [[7, 7] if i % 2 else [] for i in range(n)], pa.list_(pa.int8())
            ),
        }
    )
    mine = write(tmp_path / "mine.lance", table, version)
    theirs = write_reference(tmp_path / "theirs.lance", table, version)
    assert_same(table, read_reference(mine))
    if version == "2.2":
        assert all("ConstantLayout" in column[0] for column in layouts(mine))
        assert mine.read_bytes() == theirs.read_bytes()
    else:
        # pylance stores the struct's nulls as a constant page of raw u16 levels;
        # lancelet's mini-block of the (hidden) values and packed levels is smaller.
        ours, reference = layouts(mine), layouts(theirs)
        assert ours[:3] + ours[4:] == reference[:3] + reference[4:]
        assert mine.stat().st_size <= theirs.stat().st_size


@pytest.mark.parametrize("version", VERSIONS)
def test_general_compression_from_metadata(tmp_path: Path, version: str) -> None:
    n = 20_000
    texts = [f"row {i} of a fairly repetitive column" for i in range(n)]
    schema = pa.schema(
        [
            pa.field("z", pa.string(), metadata={"lance-encoding:compression": "zstd"}),
            pa.field(
                "l",
                pa.int64(),
                metadata={
                    "lance-encoding:compression": "lz4",
                    "lance-encoding:dict-divisor": "100000",
                },
            ),
            pa.field("n", pa.int64(), metadata={"lance-encoding:compression": "none"}),
        ]
    )
    table = pa.table({"z": texts, "l": np.arange(n) % 1000, "n": np.arange(n)}, schema=schema)
    path = roundtrip(tmp_path, table, version)
    pages = [column[0] for column in layouts(path)]
    assert "Zstd" in pages[0]
    assert "Lz4" in pages[1]
    assert "Flat" in pages[2] and "Bitpacking" not in pages[2]


@pytest.mark.parametrize("version", VERSIONS)
def test_structural_encoding_forced(tmp_path: Path, version: str) -> None:
    key = "lance-encoding:structural-encoding"
    schema = pa.schema(
        [
            pa.field("mb", pa.binary(), metadata={key: "miniblock"}),
            pa.field("fz", pa.int32(), metadata={key: "fullzip"}),
        ]
    )
    table = pa.table(
        {"mb": [b"q" * 1000, None, b"r" * 300] * 50, "fz": [*range(149), None]},
        schema=schema,
    )
    path = roundtrip(tmp_path, table, version)
    pages = [column[0] for column in layouts(path)]
    assert "MiniBlockLayout" in pages[0]
    assert "FullZipLayout" in pages[1]


@pytest.mark.parametrize("version", VERSIONS)
def test_parent_metadata_reaches_the_leaves(tmp_path: Path, version: str) -> None:
    """pylance applies a struct's or list's encoding metadata to every leaf below it."""
    n = 500
    fullzip = {"lance-encoding:structural-encoding": "fullzip"}
    inner = pa.field("b", pa.int32(), metadata={"k": "v"})
    schema = pa.schema(
        [
            pa.field("st", pa.struct([("a", pa.int32()), inner]), metadata=fullzip),
            pa.field("l", pa.list_(pa.int32()), metadata=fullzip),
            pa.field("ls", pa.list_(pa.struct([("a", pa.string())])), metadata=fullzip),
            pa.field("flag", pa.bool_(), metadata=fullzip),
        ]
    )
    table = pa.table(
        {
            "st": [None if i % 9 == 0 else {"a": i, "b": i} for i in range(n)],
            "l": [None if i % 5 == 0 else list(range(i % 3)) for i in range(n)],
            "ls": [[{"a": str(i)}] * (i % 2) for i in range(n)],
            "flag": [None if i % 3 == 0 else i % 2 == 0 for i in range(n)],
        }
    ).cast(schema)
    mine = write(tmp_path / "mine.lance", table, version)
    theirs = write_reference(tmp_path / "theirs.lance", table, version)
    assert_same(table, read_reference(mine))
    assert all("FullZipLayout" in column[0] for column in layouts(mine))
    assert layouts(mine) == layouts(theirs)
    assert page_bytes(mine) == page_bytes(theirs)
    assert mine.read_bytes() == theirs.read_bytes()


@pytest.mark.parametrize("version", VERSIONS)
def test_minichunk_size(tmp_path: Path, version: str) -> None:
    """``lance-encoding:minichunk-size`` sets the bytes variable-width chunks aim at."""
    n = 20_000
    fields, columns = [], {}
    for size in ("0", "100", "16384", "32760"):
        meta = {"lance-encoding:minichunk-size": size, "lance-encoding:compression": "none"}
        fields.append(pa.field(f"s{size}", pa.string(), metadata=meta))
        columns[f"s{size}"] = [f"value {i}" for i in range(n)]
    table = pa.table(columns).cast(pa.schema(fields))
    mine = write(tmp_path / "mine.lance", table, version)
    theirs = write_reference(tmp_path / "theirs.lance", table, version)
    assert_same(table, read_reference(mine))
    assert page_bytes(mine) == page_bytes(theirs)
    too_big = pa.field("s", pa.string(), metadata={"lance-encoding:minichunk-size": "40000"})
    if version == "2.1":
        with pytest.raises(SchemaError, match="minichunk-size"):
            LanceFileWriter(tmp_path / "x.lance", pa.schema([too_big]), version=version)


@pytest.mark.parametrize("version", VERSIONS)
def test_many_empty_lists_before_values(tmp_path: Path, version: str) -> None:
    """More levels than a mini-block chunk can count: the page falls back to full-zip."""
    values = [[]] * 70_000 + [[1, 2, 3]] * 10
    table = pa.table({"l": pa.array(values, pa.list_(pa.int32()))})
    path = roundtrip(tmp_path, table, version)
    assert "FullZipLayout" in layouts(path)[0][0]


@pytest.mark.parametrize("version", VERSIONS)
def test_run_length_and_byte_stream_split(tmp_path: Path, version: str) -> None:
    """Runs where they beat bit packing (values, and from 2.2 levels); byte stream split
    under general compression: the same pages as pylance's."""
    n = 30_000
    i = np.arange(n)
    zstd_bss = {"lance-encoding:compression": "zstd", "lance-encoding:bss": "on"}
    schema = pa.schema(
        [
            pa.field("runs", pa.int32()),
            pa.field("short_runs", pa.int32()),
            pa.field("sparse_nulls", pa.int64()),
            pa.field("no_rle", pa.int64(), metadata={"lance-encoding:rle-threshold": "0"}),
            pa.field("floats", pa.float64(), metadata=zstd_bss),
        ]
    )
    table = pa.table(
        {
            "runs": (i // 10).astype(np.int32),
            "short_runs": (i // 3).astype(np.int32),
            "sparse_nulls": pa.array(i // 1000, mask=i % 5000 == 7),
            "no_rle": i // 1000,
            "floats": 5.0 + i * 0.001,
        },
        schema=schema,
    )
    mine = write(tmp_path / "mine.lance", table, version)
    theirs = write_reference(tmp_path / "theirs.lance", table, version)
    assert_same(table, read_reference(mine))
    pages = [column[0] for column in layouts(mine)]
    assert "Rle" in pages[0] and "Rle" not in pages[1]
    assert ("Rle" in pages[2].split("value_compression")[0]) == (version == "2.2")
    assert "Rle" not in pages[3]
    assert "ByteStreamSplit" in pages[4]
    assert layouts(mine) == layouts(theirs)
    ours, reference = page_bytes(mine), page_bytes(theirs)
    for name, got, want in zip(table.column_names, ours, reference, strict=True):
        if name == "floats":  # zstd frames may differ between builds; compare layouts only
            continue
        assert got == want, name


@pytest.mark.parametrize("version", VERSIONS)
def test_fsst_read_by_pylance(tmp_path: Path, version: str) -> None:
    rng = np.random.default_rng(3)
    words = ["carefully", "ironic", "packages", "deposits", "the", "quickly", "final", "é漢"]
    short = [" ".join(rng.choice(words, int(rng.integers(1, 8)))) for _ in range(4000)]
    wide = [" ".join(rng.choice(words, 60)) for _ in range(4000)]
    forced = pa.field("forced", pa.string(), metadata={"lance-encoding:compression": "fsst"})
    plain = pa.field("plain", pa.string(), metadata={"lance-encoding:compression": "none"})
    schema = pa.schema(
        [pa.field("short", pa.string()), pa.field("wide", pa.large_string()), forced, plain]
    )
    table = pa.table(
        {
            "short": pa.array([None if i % 9 == 0 else s for i, s in enumerate(short)]),
            "wide": pa.array(wide, pa.large_string()),
            "forced": pa.array([f"{i} {s}" for i, s in enumerate(short)]),
            "plain": short,
        },
        schema=schema,
    )
    path = roundtrip(tmp_path, table, version)
    pages = [column[0] for column in layouts(path)]
    assert "Fsst" in pages[0] and "MiniBlockLayout" in pages[0]
    assert "Fsst" in pages[1] and "FullZipLayout" in pages[1]
    assert "Fsst" in pages[2]
    assert "Fsst" not in pages[3]
    reader = ref.LanceFileReader(str(path))
    rows = [0, 1, 9, 1999, 3999]
    assert_same(table.take(rows), reader.take_rows(rows).to_table())
    small = pa.table({"forced": short[:300]}, schema=pa.schema([forced]))
    small_path = roundtrip(tmp_path / "small", small, version)  # stored as is: under 32 KiB
    assert "Fsst" in layouts(small_path)[0][0]
    theirs = write_reference(tmp_path / "theirs.lance", table.select(["short"]), version)
    mine_short = sum(len(b) for b in page_bytes(path)[0][0])
    theirs_short = sum(len(b) for b in page_bytes(theirs)[0][0])
    assert mine_short <= 1.1 * theirs_short


@pytest.mark.parametrize("version", VERSIONS)
def test_packed_structs(tmp_path: Path, version: str) -> None:
    n = 3000
    meta = {"lance-encoding:packed": "true"}
    fixed = pa.struct([("a", pa.int32()), ("b", pa.float64()), ("c", pa.binary(3))])
    variable = pa.struct([("a", pa.int32()), ("s", pa.string())])
    fields = [pa.field("fixed", fixed, metadata=meta)]
    columns = {
        "fixed": pa.array(
            [None if i % 7 == 0 else {"a": i, "b": i / 2, "c": b"xyz"} for i in range(n)], fixed
        )
    }
    if version == "2.2":
        fields.append(pa.field("variable", variable, metadata=meta))
        columns["variable"] = pa.array(
            [None if i % 5 == 0 else {"a": i, "s": "x" * (i % 9)} for i in range(n)], variable
        )
    schema = pa.schema(fields)
    table = pa.table(columns).cast(schema)
    mine = write(tmp_path / "mine.lance", table, version)
    theirs = write_reference(tmp_path / "theirs.lance", table, version)
    assert_same(table, read_reference(mine))
    assert layouts(mine) == layouts(theirs)
    assert page_bytes(mine) == page_bytes(theirs)
    assert mine.read_bytes() == theirs.read_bytes()


# -- refused requests ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "error"),
    [
        ("lance-encoding:rle-threshold", "2", SchemaError),
        ("lance-encoding:bss", "sometimes", SchemaError),
        ("lance-encoding:compression", "snappy", SchemaError),
        ("lance-encoding:structural-encoding", "sparse", SchemaError),
        ("lance-encoding:dict-size-ratio", "1.5", SchemaError),
        ("lance-encoding:compression-level", "high", SchemaError),
        ("lance-encoding:no-such-key", "1", UnsupportedOptionError),
    ],
)
def test_unimplemented_metadata_refused(
    tmp_path: Path, key: str, value: str, error: type[Exception]
) -> None:
    schema = pa.schema([pa.field("a", pa.string(), metadata={key: value})])
    table = pa.table({"a": ["x"] * 200}, schema=schema)
    with (
        pytest.raises(error, match="column 'a'"),
        LanceFileWriter(tmp_path / "x.lance", schema, version="2.2") as writer,
    ):
        writer.write_batch(table)
    assert os.listdir(tmp_path) == []


def test_refused_on_nested_fields_and_packed_structs(tmp_path: Path) -> None:
    inner = pa.field("v", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    schema = pa.schema([pa.field("l", pa.list_(inner))])
    with pytest.raises(UnsupportedOptionError, match="l.v"):
        LanceFileWriter(tmp_path / "x.lance", schema, version="2.1")
    meta = {"lance-encoding:packed": "true"}
    variable = pa.field("p", pa.struct([("a", pa.int32()), ("s", pa.string())]), metadata=meta)
    with pytest.raises(UnsupportedTypeError, match="2.2"):
        LanceFileWriter(tmp_path / "x.lance", pa.schema([variable]), version="2.1")
    nested = pa.field("p", pa.struct([("a", pa.list_(pa.int32()))]), metadata=meta)
    with pytest.raises(UnsupportedTypeError, match="cannot be packed"):
        LanceFileWriter(tmp_path / "x.lance", pa.schema([nested]), version="2.2")
    nullable = pa.field("p", pa.struct([("a", pa.int32())]), metadata=meta)
    table = pa.table({"p": pa.array([{"a": 1}, {"a": None}], nullable.type)})
    with (
        pytest.raises(UnsupportedTypeError, match="cannot be null"),
        LanceFileWriter(tmp_path / "x.lance", pa.schema([nullable]), version="2.2") as writer,
    ):
        writer.write_batch(table.cast(pa.schema([nullable])))
    wide_fsl = pa.schema([pa.field("f", pa.list_(pa.string(), 2))])
    with pytest.raises(UnsupportedTypeError, match="fixed-size lists"):
        LanceFileWriter(tmp_path / "x.lance", wide_fsl, version="2.2")
    assert os.listdir(tmp_path) == []


def test_refused_2_0_only_options(tmp_path: Path) -> None:
    table = pa.table({"a": [1]})
    with pytest.raises(UnsupportedOptionError, match="bogus"):
        LanceFileWriter(tmp_path / "x.lance", table.schema, version="2.2", bogus=1)


def test_many_batches_of_one_schema_checked_once_and_still_refused_when_they_differ(
    tmp_path: Path,
) -> None:
    """Batches after the first of the same schema skip the schema check; a JSON
    extension column still goes in storage form in every batch, top-level columns
    with and without nulls are written alike, and a batch of another schema is
    refused."""
    docs = ['{"a": 1}', '{"b": [1, 2]}', "null", '{"c": "x"}']
    table = pa.table(
        {
            "j": pa.array([docs[i % 4] for i in range(3000)], pa.json_()),
            "n": pa.array([None if i % 9 == 0 else i for i in range(3000)], pa.int64()),
            "s": pa.array([f"row {i}" for i in range(3000)]),
        }
    )
    path = tmp_path / "t.lance"
    writer = LanceFileWriter(path, table.schema, version="2.2")
    for batch in table.to_batches(max_chunksize=BATCH):
        writer.write_batch(batch)
    with pytest.raises(SchemaError):
        writer.write_batch(table.select(["j", "s", "n"]).to_batches()[0])
    assert not path.exists()
    write(path, table, "2.2")
    theirs = write_reference(tmp_path / "ref.lance", table, "2.2")
    got = ref.LanceFileReader(str(path)).read_all().to_table()
    assert got.equals(ref.LanceFileReader(str(theirs)).read_all().to_table())
    assert got.column("n").equals(table.column("n"))
