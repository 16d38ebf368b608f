"""Page encodings described as pylance describes them (``metadata().columns[i].pages[j]
.encoding``, the Rust ``{:#?}`` text of the page's protobuf message): lancelet's text
must be pylance's, character for character, for the files pylance writes."""

from __future__ import annotations

import builtins
from pathlib import Path

import lance
import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest

import lancelet
from lancelet.file import LanceFileReader, LanceFileWriter
from lancelet.file.describe import upper_camel
from tests.file.gen import ALL_TYPES, random_table, seed_of

PACKED = {"lance-encoding:packed": "true"}
VARIABLE_STRUCT = pa.struct([("id", pa.int32()), ("text", pa.utf8()), ("payload", pa.binary())])


def _descriptions(reader: ref.LanceFileReader | LanceFileReader) -> list[list[str]]:
    meta = reader.metadata()
    return [[page.encoding for page in column.pages] for column in meta.columns]


def _write_reference(path: Path, table: pa.Table, version: str) -> Path:
    with ref.LanceFileWriter(str(path), table.schema, version=version) as writer:
        writer.write_batch(table)
    return path


def _assert_described_as_pylance(path: Path) -> None:
    theirs = _descriptions(ref.LanceFileReader(str(path)))
    assert _descriptions(LanceFileReader(path)) == theirs


def _options_table(rng: np.random.Generator, n: int, meta: dict[str, str]) -> pa.Table:
    fields = [pa.field(name, dtype, metadata=meta) for name, dtype in
              (("f", pa.float64()), ("s", pa.string()), ("i", pa.int32()))]  # fmt: skip
    return pa.table(
        {
            "f": rng.random(n).round(1),
            "s": [f"word{k % 300} and more text" for k in range(n)],
            "i": np.repeat(np.arange(n // 100), 100).astype(np.int32),
        },
        schema=pa.schema(fields),
    )


def _layouts_table(rng: np.random.Generator, n: int) -> pa.Table:
    return pa.table(
        {
            "constant": [7] * n,
            "nulls": pa.array([None] * n, pa.int64()),
            "struct": pa.array([{"a": 1, "b": "x"}] * n),
            "vector": pa.array([[1.0, 2.0, 3.0]] * n, pa.list_(pa.float32(), 3)),
            "huge": [rng.bytes(40_000) if k < 3 else b"x" for k in range(n)],
            "dictionary": pa.array(["a", "b"] * (n // 2)).dictionary_encode(),
            "lists": [[[1], [2, 3]]] * n,
        }
    )


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("dtype", ALL_TYPES[::3], ids=str)
def test_each_type(tmp_path: Path, version: str, dtype: pa.DataType) -> None:
    table = random_table([dtype], 1500, seed_of(str(dtype)))
    _assert_described_as_pylance(_write_reference(tmp_path / "t.lance", table, version))


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize(
    "meta",
    [
        {"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "3"},
        {"lance-encoding:compression": "lz4"},
        {"lance-encoding:bss": "on"},
        {"lance-encoding:rle-threshold": "0.9"},
        {"lance-encoding:structural-encoding": "fullzip"},
        {"lance-encoding:compression": "fsst"},  # symbol tables: bytes with every escape
    ],
    ids=str,
)
def test_compression_options(tmp_path: Path, version: str, meta: dict[str, str]) -> None:
    table = _options_table(np.random.default_rng(0), 5000, meta)
    _assert_described_as_pylance(_write_reference(tmp_path / "t.lance", table, version))


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_layouts(tmp_path: Path, version: str) -> None:
    """Constant, all-null, dictionary, fixed-size list, nested list and per-value
    compressed pages; and packed and blob columns."""
    table = _layouts_table(np.random.default_rng(1), 5000)
    _assert_described_as_pylance(_write_reference(tmp_path / "t.lance", table, version))
    fixed = pa.struct([("a", pa.int64()), ("b", pa.float64())])
    schema = pa.schema(
        [
            pa.field("packed", fixed, metadata=PACKED),
            pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"}),
        ]
    )
    rows = [{"a": k, "b": k / 2} for k in range(50)]
    table = pa.table({"packed": rows, "blob": [bytes(k) for k in range(50)]}, schema=schema)
    _assert_described_as_pylance(_write_reference(tmp_path / "p.lance", table, version))


def _variable_packed_table() -> pa.Table:
    """The table of pylance's test_struct_variable_children_roundtrip."""
    array = pa.StructArray.from_arrays(
        [
            pa.array([1, 2, 3, 4], pa.int32()),
            pa.array(["alpha", "beta", "gamma", "delta"], pa.utf8()),
            pa.array([b"\x01\x02", b"\xff", b"\x03\x04\x05", b"\x10"], type=pa.binary()),
        ],
        type=VARIABLE_STRUCT,
    )
    return pa.Table.from_arrays(
        [array], schema=pa.schema([pa.field("record", array.type, metadata=PACKED)])
    )


def test_variable_packed_struct_in_both_directions(tmp_path: Path) -> None:
    """pylance's test_struct_variable_children_roundtrip: a 2.2 dataset of a packed
    struct with string and binary fields is one VariablePackedStruct full-zip page,
    described the same by both libraries for both libraries' files."""
    table = _variable_packed_table()
    files = {}
    for name, module in (("lancelet", lancelet), ("pylance", lance)):
        dataset = module.write_dataset(table, tmp_path / name, data_storage_version="2.2")
        assert dataset.to_table().equals(table)
        files[name] = next((tmp_path / name / "data").glob("*.lance"))
    (mine_page,), (their_page,) = (
        _descriptions(LanceFileReader(files[name]))[0] for name in ("lancelet", "pylance")
    )
    assert "VariablePackedStruct" in mine_page and "FullZipLayout" in mine_page
    assert mine_page == their_page
    for path in files.values():
        _assert_described_as_pylance(path)
    assert ref.LanceFileReader(str(files["lancelet"])).read_all().to_table().equals(table)
    assert LanceFileReader(files["pylance"]).read_all().to_table().equals(table)


def _builtin_base(error: BaseException) -> type[BaseException]:
    return next(c for c in type(error).__mro__ if getattr(builtins, c.__name__, None) is c)


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_variable_packed_struct_needs_2_2(tmp_path: Path, version: str) -> None:
    """Before 2.2 pylance refuses to pack strings: its file writer with a ValueError
    (2.0) or NotImplementedError (2.1), write_dataset with an OSError; lancelet's
    errors are of those classes too, and name the version that stores them."""
    table = _variable_packed_table()
    with pytest.raises(Exception) as theirs:
        _write_reference(tmp_path / "theirs.lance", table, version)
    with (
        pytest.raises(_builtin_base(theirs.value), match="2.2"),
        LanceFileWriter(tmp_path / "mine.lance", table.schema, version=version) as writer,
    ):
        writer.write_batch(table)
    with pytest.raises(OSError):
        lance.write_dataset(table, tmp_path / "theirs", data_storage_version=version)
    with pytest.raises(OSError, match="2.2"):
        lancelet.write_dataset(table, tmp_path / "mine", data_storage_version=version)


@pytest.mark.parametrize(
    ("name", "rust"),
    [
        ("REPDEF_ALL_VALID_ITEM", "RepdefAllValidItem"),
        ("COMPRESSION_ALGORITHM_LZ4", "CompressionAlgorithmLz4"),
        ("bits_per_value", "BitsPerValue"),
        ("PackedStructFixedWidthMiniBlock", "PackedStructFixedWidthMiniBlock"),
        ("page", "Page"),
        ("HTTPServer2go", "HttpServer2go"),
    ],
)
def test_upper_camel(name: str, rust: str) -> None:
    assert upper_camel(name) == rust
