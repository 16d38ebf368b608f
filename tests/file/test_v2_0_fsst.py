"""Tests for FSST decompression of Lance 2.0 ``Fsst`` pages.

Files are written with the reference (pylance), their page buffers are parsed
here by hand, and the strings are rebuilt with lancelet's decoder.
"""

from __future__ import annotations

import importlib
import struct
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from numpy.typing import NDArray

from lancelet.errors import CorruptFileError
from lancelet.file.codecs.fsst import (
    FSST_SYMBOL_TABLE_SIZE,
    fsst_decompress,
    parse_symbol_table,
)

lance_file = pytest.importorskip("lance.file")


def _pb(name: str) -> ModuleType:
    """Import one of lancelet's generated protobuf modules."""
    return importlib.import_module(f"lancelet._proto.{name}")


FSST_META = {"lance-encoding:compression": "fsst"}

# --------------------------------------------------------------------------
# Reading pages written by the reference
# --------------------------------------------------------------------------


def _column_pages(path: Path, column: int) -> list[tuple[Any, list[bytes]]]:
    """Return (ArrayEncoding, page buffers) for every page of one column."""
    data = path.read_bytes()
    _, cmo_pos, _, _, num_cols, major, minor, magic = struct.unpack("<QQQIIHH4s", data[-40:])
    assert (magic, major, minor) == (b"LANC", 0, 3)  # 2.0 files report 0.3
    assert column < num_cols
    pos, size = struct.unpack_from("<QQ", data, cmo_pos + 16 * column)
    meta = _pb("file2_pb2").ColumnMetadata()
    meta.ParseFromString(data[pos : pos + size])
    any_pb2 = importlib.import_module("google.protobuf.any_pb2")
    pages = []
    for page in meta.pages:
        wrapped = any_pb2.Any()
        wrapped.ParseFromString(page.encoding.direct.encoding)
        encoding = _pb("encodings_v2_0_pb2").ArrayEncoding()
        assert wrapped.Unpack(encoding)
        buffers = [
            data[off : off + n]
            for off, n in zip(page.buffer_offsets, page.buffer_sizes, strict=True)
        ]
        pages.append((encoding, buffers))
    return pages


def _flat_buffer(encoding: Any) -> int:
    """Buffer index of a flat encoding, possibly wrapped in Nullable(NoNull)."""
    kind = encoding.WhichOneof("array_encoding")
    if kind == "nullable":
        return _flat_buffer(encoding.nullable.no_nulls.values)
    assert kind == "flat", kind
    return int(encoding.flat.buffer.buffer_index)


def _decode_fsst_page(encoding: Any, buffers: list[bytes]) -> list[bytes | None]:
    """Decode an Fsst(Binary) page: Binary gives compressed values, FSST expands."""
    assert encoding.WhichOneof("array_encoding") == "fsst"
    binary = encoding.fsst.binary.binary
    ends = np.frombuffer(buffers[_flat_buffer(binary.indices)], dtype="<u8")
    compressed = np.frombuffer(buffers[_flat_buffer(binary.bytes)], dtype=np.uint8)
    # Binary: end offsets without the leading 0; a null adds null_adjustment.
    is_null = ends >= binary.null_adjustment
    ends = np.where(is_null, ends - binary.null_adjustment, ends)
    offsets = np.concatenate((np.zeros(1, dtype=np.uint64), ends))
    out_offsets, out = fsst_decompress(encoding.fsst.symbol_table, compressed, offsets)
    raw = out.tobytes()
    return [
        None if is_null[i] else raw[out_offsets[i] : out_offsets[i + 1]] for i in range(len(ends))
    ]


def _write(path: Path, array: pa.Array, **kwargs: Any) -> Path:
    field = pa.field("s", array.type, metadata=FSST_META)
    table = pa.table({"s": array}, schema=pa.schema([field]))
    with lance_file.LanceFileWriter(str(path), table.schema, version="2.0", **kwargs) as w:
        w.write_batch(table)
    return path


def _as_bytes(values: list[Any]) -> list[bytes | None]:
    return [v.encode() if isinstance(v, str) else v for v in values]


def _roundtrip(path: Path, array: pa.Array, **kwargs: Any) -> list[Any]:
    """Write ``array`` with FSST requested; return the decoded pages' encodings."""
    _write(path, array, **kwargs)
    pages = _column_pages(path, 0)
    decoded: list[bytes | None] = []
    for encoding, buffers in pages:
        decoded.extend(_decode_fsst_page(encoding, buffers))
    assert decoded == _as_bytes(array.to_pylist())
    return [encoding for encoding, _ in pages]


def _text_values(n: int) -> list[str | None]:
    """Repetitive text (so FSST builds a real table) with nulls, '' and non-ASCII."""
    words = ["alpha", "beta", "gamma", "délta", "ωmega", "日本語", "emoji 🎉"]
    values: list[str | None] = []
    for i in range(n):
        if i % 17 == 0:
            values.append(None)
        elif i % 11 == 0:
            values.append("")
        else:
            values.append(f"{words[i % 7]}-{i}-{words[(i * 3) % 7]} lorem ipsum")
    return values


# --------------------------------------------------------------------------
# Files written by pylance
# --------------------------------------------------------------------------


def test_compressed_strings_with_nulls_and_unicode(tmp_path: Path) -> None:
    array = pa.array(_text_values(5000), pa.string())
    (encoding,) = _roundtrip(tmp_path / "a.lance", array)
    table = parse_symbol_table(encoding.fsst.symbol_table)
    assert len(encoding.fsst.symbol_table) == FSST_SYMBOL_TABLE_SIZE
    assert table.compressed and table.num_symbols > 0


def test_small_page_is_stored_uncompressed(tmp_path: Path) -> None:
    # Under 32 KiB the reference keeps the bytes verbatim behind the header.
    array = pa.array(["héllo", None, "", "wörld", "\u00ff\u00fe"], pa.string())
    (encoding,) = _roundtrip(tmp_path / "a.lance", array)
    assert not parse_symbol_table(encoding.fsst.symbol_table).compressed


def test_escaped_ff_bytes(tmp_path: Path) -> None:
    # The reference trains its table on a ~16 KiB random sample, so bytes that
    # are this rare almost never get a symbol and are written as 255, 0xFF.
    values = [f"record {i} some text".encode() for i in range(40000)]
    values[123] += b"\xff\xff\xff"
    values[30001] = b"\xff" + values[30001]
    path = tmp_path / "a.lance"
    (encoding,) = _roundtrip(path, pa.array(values, pa.binary()))
    ((_, buffers),) = _column_pages(path, 0)
    compressed = buffers[_flat_buffer(encoding.fsst.binary.binary.bytes)]
    table = parse_symbol_table(encoding.fsst.symbol_table)
    ff_is_symbol = bool(np.any((table.lengths[:255] == 1) & (table.expansions[:255, 0] == 255)))
    assert ff_is_symbol or b"\xff\xff" * 3 in compressed


def test_random_binary_uses_escapes(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    values = [
        None
        if i % 23 == 0
        else rng.integers(0, 256, int(rng.integers(0, 40))).astype(np.uint8).tobytes()
        for i in range(3000)
    ]
    (encoding,) = _roundtrip(tmp_path / "a.lance", pa.array(values, pa.binary()))
    assert parse_symbol_table(encoding.fsst.symbol_table).compressed


def test_each_page_has_its_own_table(tmp_path: Path) -> None:
    array = pa.array(_text_values(20000), pa.string())
    encodings = _roundtrip(tmp_path / "a.lance", array, max_page_bytes=64 * 1024)
    assert len(encodings) > 1
    assert all(e.WhichOneof("array_encoding") == "fsst" for e in encodings)


def test_strings_inside_list(tmp_path: Path) -> None:
    item = pa.field("item", pa.string(), metadata=FSST_META)
    rows = [[v, None, ""] for v in _text_values(3000)]
    table = pa.table({"l": pa.array(rows, pa.list_(item))})
    path = tmp_path / "a.lance"
    with lance_file.LanceFileWriter(str(path), table.schema, version="2.0") as w:
        w.write_batch(table)
    # Column 0 holds the list offsets, column 1 the flattened items.
    decoded: list[bytes | None] = []
    for encoding, buffers in _column_pages(path, 1):
        decoded.extend(_decode_fsst_page(encoding, buffers))
    expected = [v for row in rows for v in row]
    assert decoded == _as_bytes(expected)


# --------------------------------------------------------------------------
# Hand-built tables and streams
# --------------------------------------------------------------------------


def _table_bytes(symbols: list[bytes], *, compressed: bool = True) -> bytes:
    """Serialize a symbol table the way the reference writer does."""
    header = (0x46535354 << 32) | (int(compressed) << 24) | len(symbols)
    words = b"".join(s.ljust(8, b"\0") for s in symbols)
    lens = bytes(len(s) for s in symbols)
    return (header.to_bytes(8, "little") + words + lens).ljust(FSST_SYMBOL_TABLE_SIZE, b"\0")


def _decode(table: bytes, values: list[bytes]) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    offsets = np.cumsum([0] + [len(v) for v in values], dtype=np.int64)
    data = np.frombuffer(b"".join(values), dtype=np.uint8)
    return fsst_decompress(table, data, offsets)


def _split(offsets: NDArray[np.int64], data: NDArray[np.uint8]) -> list[bytes]:
    raw = data.tobytes()
    return [raw[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]


SYMBOLS = [b"he", b"llo", b"\xff", b" world!!", b"x"]


def _slow_decode(symbols: list[bytes], value: bytes) -> bytes:
    """Byte-at-a-time reference decoder for the property test."""
    out, i = bytearray(), 0
    while i < len(value):
        if value[i] == 255:
            out.append(value[i + 1])
            i += 2
        else:
            out += symbols[value[i]]
            i += 1
    return bytes(out)


def test_escape_runs_and_value_boundaries() -> None:
    values = [
        b"\x00\x01\xff\xff",  # he llo <literal ff>
        b"\xff\xff\xff\x41",  # <literal ff> <literal A>
        b"",
        b"\xff\x00\x02\x03",  # <literal 00> <sym ff> " world!!"
        b"\xff\xff\xff\xff\xff\xff",  # three literal ff
    ]
    offsets, data = _decode(_table_bytes(SYMBOLS), values)
    assert _split(offsets, data) == [
        b"hello\xff",
        b"\xffA",
        b"",
        b"\x00\xff world!!",
        b"\xff\xff\xff",
    ]
    assert offsets.dtype == np.int64 and offsets[0] == 0


def test_matches_slow_decoder_on_random_streams() -> None:
    rng = np.random.default_rng(3)
    symbols = [
        rng.integers(0, 256, int(rng.integers(1, 9))).astype(np.uint8).tobytes() for _ in range(200)
    ]
    values = []
    for _ in range(500):
        parts = []
        for _ in range(int(rng.integers(0, 12))):
            if rng.random() < 0.3:
                parts.append(bytes([255, int(rng.choice([255, 0, int(rng.integers(0, 256))]))]))
            else:
                parts.append(bytes([int(rng.integers(0, 200))]))
        values.append(b"".join(parts))
    offsets, data = _decode(_table_bytes(symbols), values)
    assert _split(offsets, data) == [_slow_decode(symbols, v) for v in values]


def test_offsets_not_starting_at_zero() -> None:
    data = np.frombuffer(b"\x04\x00\x01\x04", dtype=np.uint8)
    offsets, out = fsst_decompress(_table_bytes(SYMBOLS), data, np.array([1, 2, 3]))
    assert offsets.tolist() == [0, 2, 5] and out.tobytes() == b"hello"


def test_uncompressed_table_copies_bytes() -> None:
    data = np.frombuffer(b"abc\xffdef", dtype=np.uint8)
    offsets, out = fsst_decompress(
        _table_bytes([], compressed=False),
        data,
        np.array([0, 3, 3, 7], dtype=np.uint64),
    )
    assert _split(offsets, out) == [b"abc", b"", b"\xffdef"]


def test_empty_input() -> None:
    table = _table_bytes(SYMBOLS)
    empty = np.zeros(0, dtype=np.uint8)
    offsets, out = fsst_decompress(table, empty, np.zeros(4, dtype=np.int32))
    assert offsets.tolist() == [0, 0, 0, 0] and out.size == 0
    offsets, out = fsst_decompress(table, empty, np.zeros(0, dtype=np.int32))
    assert offsets.tolist() == [0] and out.size == 0


@pytest.mark.parametrize(
    ("table", "match"),
    [
        (b"\x00" * 4, "too short"),
        (b"\x00" * FSST_SYMBOL_TABLE_SIZE, "magic"),
        (_table_bytes(SYMBOLS)[:20], "needs"),
        (_table_bytes([b""]), "length 0"),
    ],
)
def test_corrupt_symbol_table(table: bytes, match: str) -> None:
    with pytest.raises(CorruptFileError, match=match):
        parse_symbol_table(table)


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ([b"\x00\x05"], "missing symbol"),
        ([b"\x00\xfe"], "missing symbol"),
        ([b"\x00\xff", b"\x00"], "no payload"),  # escape cut off by the value end
        ([b"\xff\xff\xff"], "no payload"),
    ],
)
def test_corrupt_stream(values: list[bytes], match: str) -> None:
    with pytest.raises(CorruptFileError, match=match):
        _decode(_table_bytes(SYMBOLS), values)


@pytest.mark.parametrize("one_pass", [True, False])
def test_corrupt_value_in_a_later_part(monkeypatch: pytest.MonkeyPatch, one_pass: bool) -> None:
    """Expanded in parts on threads, a damaged value past the first part is named
    by its own byte."""
    from lancelet.file.codecs import fsst

    monkeypatch.setattr(fsst, "PART_MIN_BYTES", 1)
    monkeypatch.setattr(fsst, "WORKERS", 3)
    if not one_pass:
        monkeypatch.setattr(fsst, "ONE_PASS_MAX_BYTES", 0)
    values = [b"\x00\x01"] * 40 + [b"\x00\x05"] + [b"\x01"] * 40
    with pytest.raises(CorruptFileError, match="missing symbol"):
        _decode(_table_bytes(SYMBOLS), values)


@pytest.mark.parametrize("offsets", [[0, 3, 2], [0, 9], [-1, 2]])
def test_bad_offsets(offsets: list[int]) -> None:
    data = np.frombuffer(b"\x00\x01\x00", dtype=np.uint8)
    with pytest.raises(CorruptFileError, match="offsets"):
        fsst_decompress(_table_bytes(SYMBOLS), data, np.array(offsets))


def _random_values(rng: np.random.Generator, escape_share: float) -> list[bytes]:
    values = []
    for _ in range(400):
        parts = []
        for _ in range(int(rng.integers(0, 10))):
            if rng.random() < escape_share:
                # Runs of escaped 255s and escapes at value starts and ends.
                parts.append(b"\xff\xff" * int(rng.integers(1, 4)))
            else:
                parts.append(bytes([int(rng.integers(0, len(SYMBOLS)))]))
        values.append(b"".join(parts))
    return values


def test_escape_heavy_streams_match_slow_decoder() -> None:
    values = _random_values(np.random.default_rng(11), escape_share=0.6)
    offsets, data = _decode(_table_bytes(SYMBOLS), values)
    assert _split(offsets, data) == [_slow_decode(SYMBOLS, v) for v in values]


def test_payload_bytes_may_exceed_the_symbol_count() -> None:
    # 5 symbols: 0xfe is only valid as an escaped literal.
    offsets, data = _decode(_table_bytes(SYMBOLS), [b"\xff\xfe\x00", b"\xff\x07"])
    assert _split(offsets, data) == [b"\xfehe", b"\x07"]


def test_expansion_with_64_bit_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outputs too big for 32-bit offsets expand through 64-bit ones: same bytes."""
    from lancelet.file.codecs import fsst

    values = _random_values(np.random.default_rng(12), escape_share=0.2)
    expected = [_slow_decode(SYMBOLS, v) for v in values]
    monkeypatch.setattr(fsst, "_INT32_LIMIT", 0)
    offsets, data = _decode(_table_bytes(SYMBOLS), values)
    assert offsets.dtype == np.int64
    assert _split(offsets, data) == expected
