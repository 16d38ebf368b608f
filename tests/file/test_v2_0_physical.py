"""Physical 2.0 encodings: bit packing, buffer compression, constant, FSB, packed struct.

Files written by pylance are parsed here with nothing but ``struct`` and the
generated protobuf modules, so these tests check the decoders against the
reference's bytes without depending on lancelet's own file reader.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import zstandard

from lancelet.errors import CorruptFileError, UnsupportedEncodingError
from lancelet.file.codecs.bitpacking import (
    bitpacked_size,
    bits_needed,
    decode_bitpacked,
    decode_bitpacked_for_non_neg,
    encode_bitpacked,
    encode_bitpacked_for_non_neg,
    fastlanes_size,
)
from lancelet.file.codecs.general import compress_buffer, decompress_buffer
from lancelet.file.v2_0.constant import decode_constant, encode_constant
from lancelet.file.v2_0.fixed_size_binary import (
    decode_fixed_size_binary,
)
from lancelet.file.v2_0.packed_struct import (
    arrow_byte_width,
    decode_packed_struct,
    pack_struct_rows,
    split_packed_struct,
)

lance_file = pytest.importorskip("lance.file")


# --- protobuf modules (one place to change if their home moves) ---------------------


def _proto(name: str) -> ModuleType:
    return importlib.import_module(f"lancelet._proto.{name}")


file2_pb2 = _proto("file2_pb2")
enc_pb2 = _proto("encodings_v2_0_pb2")


# --- a minimal independent 2.0 file walker ------------------------------------------

Page = tuple[Any, int, list[bytes]]  # (ArrayEncoding, num_rows, page buffers)


def write_lance(path: Path, table: pa.Table, version: str = "2.0", **kw: Any) -> bytes:
    with lance_file.LanceFileWriter(str(path), table.schema, version=version, **kw) as w:
        w.write_batch(table)
    return path.read_bytes()


def column_pages(data: bytes, column: int) -> Iterator[Page]:
    _cm0, cmo, _gbo, _ngb, ncols, major, minor, magic = struct.unpack("<QQQIIHH4s", data[-40:])
    assert magic == b"LANC"
    assert (major, minor) in ((0, 3), (2, 0))
    assert column < ncols
    pos, size = struct.unpack_from("<QQ", data, cmo + 16 * column)
    meta = file2_pb2.ColumnMetadata()
    meta.ParseFromString(data[pos : pos + size])
    for page in meta.pages:
        wrapped = page.encoding.direct.encoding
        any_msg = _proto_any()
        any_msg.ParseFromString(wrapped)
        encoding = enc_pb2.ArrayEncoding()
        assert any_msg.Unpack(encoding)
        bufs = [
            data[o : o + s] for o, s in zip(page.buffer_offsets, page.buffer_sizes, strict=True)
        ]
        yield encoding, page.length, bufs


def _proto_any() -> Any:
    from google.protobuf import any_pb2

    return any_pb2.Any()


def encoding_kinds(encoding: Any) -> set[str]:
    """Every ArrayEncoding variant used anywhere in an encoding tree."""
    kinds: set[str] = set()

    def walk(msg: Any) -> None:
        if msg.DESCRIPTOR.full_name.endswith(".ArrayEncoding"):
            kinds.add(msg.WhichOneof("array_encoding"))
        for field, value in msg.ListFields():
            if field.message_type is None:
                continue
            items = value if field.is_repeated else [value]
            for item in items:
                walk(item)

    walk(encoding)
    return kinds


def find_flat_with_compression(encoding: Any) -> Any:
    assert encoding.WhichOneof("array_encoding") == "binary"
    flat = encoding.binary.bytes.flat
    assert flat.bits_per_value == 8
    return flat


def string_bytes(values: Sequence[str | None]) -> bytes:
    return b"".join(v.encode() for v in values if v is not None)


# --- what pylance 2.0 emits by default ------------------------------------------------


def test_default_writer_never_emits_the_physical_extras(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 5000
    table = pa.table(
        {
            "small_u8": pa.array(rng.integers(0, 5, n), pa.uint8()),
            "neg_i32": pa.array(rng.integers(-7, 7, n), pa.int32()),
            "nulls": pa.array([None if i % 3 else i % 11 for i in range(n)], pa.int64()),
            "const": pa.array([7] * n, pa.int64()),
            "fsb": pa.array([bytes([i % 256, 1, 2]) for i in range(n)], pa.binary(3)),
            "same_len": pa.array([f"{i % 10000:04d}" for i in range(n)]),
        }
    )
    data = write_lance(tmp_path / "d.lance", table)
    extras = {"bitpacked", "bitpacked_for_non_neg", "constant", "fixed_size_binary"}
    for col in range(table.num_columns):
        for encoding, _, _ in column_pages(data, col):
            assert not encoding_kinds(encoding) & extras
    # fixed_size_binary columns are plain Flat with 8 * width bits per value.
    (encoding, _, _) = next(column_pages(data, 4))
    assert encoding.nullable.no_nulls.values.flat.bits_per_value == 24


# --- Flat + Compression, against pylance --------------------------------------------


def _compressed_table(md: dict[str, str], values: Sequence[str | None]) -> pa.Table:
    field = pa.field("s", pa.string(), metadata=md)
    return pa.table([pa.array(values, pa.string())], schema=pa.schema([field]))


STRINGS = [f"value-{i}-" + "x" * (i % 7) if i % 5 else None for i in range(3000)]


@pytest.mark.parametrize(
    ("md", "scheme", "level"),
    [
        ({"lance-encoding:compression": "zstd"}, "zstd", None),
        (
            {
                "lance-encoding:compression": "zstd",
                "lance-encoding:compression-level": "9",
            },
            "zstd",
            9,
        ),
        ({"lance-encoding:compression": "lz4"}, "lz4", None),
        ({"lance-encoding:compression": "none"}, "none", None),
    ],
)
def test_pylance_compressed_binary_bytes(
    tmp_path: Path, md: dict[str, str], scheme: str, level: int | None
) -> None:
    data = write_lance(tmp_path / "c.lance", _compressed_table(md, STRINGS))
    [(encoding, _, bufs)] = list(column_pages(data, 0))
    flat = find_flat_with_compression(encoding)
    assert flat.HasField("compression")
    assert flat.compression.scheme == scheme
    assert (flat.compression.level if flat.compression.HasField("level") else None) == level
    expected = string_bytes(STRINGS)
    raw = bufs[flat.buffer.buffer_index]
    assert decompress_buffer(scheme, raw) == expected
    assert decompress_buffer(scheme, raw, expected_size=len(expected)) == expected
    if scheme == "zstd":
        assert struct.unpack_from("<Q", raw)[0] == len(expected)
        assert raw[8:12] == b"\x28\xb5\x2f\xfd"
    if scheme == "lz4":
        assert struct.unpack_from("<I", raw)[0] == len(expected)


def test_unknown_scheme_metadata_is_ignored_by_pylance(tmp_path: Path) -> None:
    md = {"lance-encoding:compression": "snappy"}
    data = write_lance(tmp_path / "c.lance", _compressed_table(md, ["x", "y"]))
    [(encoding, _, _)] = list(column_pages(data, 0))
    assert not find_flat_with_compression(encoding).HasField("compression")


@pytest.mark.parametrize("scheme", ["zstd", "lz4"])
@pytest.mark.parametrize("values", [["", "", None], [None, None]])
def test_pylance_compressed_empty_buffer(
    tmp_path: Path, scheme: str, values: list[str | None]
) -> None:
    md = {"lance-encoding:compression": scheme}
    data = write_lance(tmp_path / "e.lance", _compressed_table(md, values))
    [(encoding, _, bufs)] = list(column_pages(data, 0))
    flat = find_flat_with_compression(encoding)
    raw = bufs[flat.buffer.buffer_index]
    assert len(raw) == (17 if scheme == "zstd" else 5)  # prefix + empty frame/block
    assert decompress_buffer(scheme, raw, expected_size=0) == b""


def test_pylance_zstd_multi_page(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    values = [str(i) * int(rng.integers(1, 40)) for i in range(60000)]
    md = {"lance-encoding:compression": "zstd"}
    data = write_lance(tmp_path / "m.lance", _compressed_table(md, values), max_page_bytes=1 << 18)
    pages = list(column_pages(data, 0))
    assert len(pages) > 2
    out = []
    for encoding, _, bufs in pages:
        flat = find_flat_with_compression(encoding)
        out.append(decompress_buffer("zstd", bufs[flat.buffer.buffer_index]))
    assert b"".join(out) == string_bytes(values)


# --- compression: framing and corrupt input ----------------------------------------

PAYLOAD = b"lancelet " * 500 + bytes(range(256))


@pytest.mark.parametrize("scheme", ["zstd", "lz4", "none"])
@pytest.mark.parametrize("level", [None, 1, 19])
def test_compress_roundtrip(scheme: str, level: int | None) -> None:
    packed = compress_buffer(scheme, PAYLOAD, level)
    assert decompress_buffer(scheme, packed) == PAYLOAD
    assert decompress_buffer(scheme, memoryview(packed)) == PAYLOAD
    if scheme != "none":
        assert len(packed) < len(PAYLOAD)


def test_zstd_bare_frame_legacy_layout() -> None:
    frame = zstandard.ZstdCompressor().compress(PAYLOAD)  # declares its size
    assert decompress_buffer("zstd", frame) == PAYLOAD
    stream = zstandard.ZstdCompressor(write_content_size=False).compress(PAYLOAD)
    assert decompress_buffer("zstd", stream, expected_size=len(PAYLOAD)) == PAYLOAD
    with pytest.raises(UnsupportedEncodingError, match="expected_size"):
        decompress_buffer("zstd", stream)
    assert decompress_buffer("zstd", b"") == b""


@pytest.mark.parametrize("scheme", ["fsst", "snappy", "", "ZSTD"])
def test_unknown_schemes(scheme: str) -> None:
    with pytest.raises(UnsupportedEncodingError, match="scheme"):
        decompress_buffer(scheme, b"abc")
    with pytest.raises(UnsupportedEncodingError):
        compress_buffer(scheme, b"abc")


@pytest.mark.parametrize("scheme", ["zstd", "lz4"])
def test_corrupt_compressed_buffers(scheme: str) -> None:
    packed = compress_buffer(scheme, PAYLOAD)
    prefix = 8 if scheme == "zstd" else 4
    with pytest.raises(CorruptFileError):
        decompress_buffer(scheme, packed[:-3])  # truncated
    with pytest.raises(CorruptFileError, match="expected"):
        decompress_buffer(scheme, packed, expected_size=len(PAYLOAD) + 1)
    fmt = "<Q" if scheme == "zstd" else "<I"
    huge = struct.pack(fmt, 2**31) + packed[prefix:]
    with pytest.raises(CorruptFileError, match="claims"):
        decompress_buffer(scheme, huge)
    lying = struct.pack(fmt, len(PAYLOAD) - 1) + packed[prefix:]
    with pytest.raises(CorruptFileError):
        decompress_buffer(scheme, lying)


def test_lz4_too_short_and_none_size_check() -> None:
    with pytest.raises(CorruptFileError, match="prefix"):
        decompress_buffer("lz4", b"\x01\x00")
    with pytest.raises(CorruptFileError):
        decompress_buffer("none", b"abc", expected_size=4)


# --- Bitpacked: against a bit-by-bit reference packer --------------------------------


def reference_pack(values: np.ndarray, bits: int) -> bytes:
    """Stream bit k = bit k % 8 of byte k // 8, each value's low bit first."""
    stream: list[int] = []
    for v in values.astype(np.uint64).tolist():
        stream.extend((int(v) >> i) & 1 for i in range(bits))
    stream.extend([0] * (-len(stream) % 8))
    return bytes(
        sum(bit << j for j, bit in enumerate(stream[i : i + 8])) for i in range(0, len(stream), 8)
    )


@pytest.mark.parametrize("width", [8, 16, 32, 64])
def test_bitpacked_every_bit_width(width: int) -> None:
    rng = np.random.default_rng(width)
    dtype = np.dtype(f"<u{width // 8}")
    for bits in range(1, width + 1):
        n = int(rng.integers(0, 30))
        values = rng.integers(0, 2**63, n, dtype=np.uint64) * 2 + 1
        values = (values & np.uint64((1 << bits) - 1)).astype(dtype)
        packed = reference_pack(values, bits)
        assert len(packed) == bitpacked_size(n, bits)
        decoded = decode_bitpacked(packed, bits, width, False, n)
        assert decoded.dtype == dtype
        np.testing.assert_array_equal(decoded, values)
        assert encode_bitpacked(values, bits) == packed


def test_bitpacked_known_bytes() -> None:
    # 3-bit values 1..7, 0 laid LSB-first: stream bits 0-2 hold 1, 3-5 hold 2, ...
    packed = bytes([0b11010001, 0b01011000, 0b00011111])
    values = np.array([1, 2, 3, 4, 5, 6, 7, 0], np.uint8)
    assert reference_pack(values, 3) == packed
    np.testing.assert_array_equal(decode_bitpacked(packed, 3, 8, False, 8), values)


@pytest.mark.parametrize("width", [8, 16, 32, 64])
def test_bitpacked_signed(width: int) -> None:
    info = np.iinfo(np.dtype(f"i{width // 8}"))
    values = np.array([info.min, -1, 0, 1, info.max, -(2**5), 2**5 - 1, 3], dtype=info.dtype)
    bits, signed = bits_needed(values)
    assert (bits, signed) == (width, True)
    small = np.array([-8, -1, 0, 7, 3, -5], dtype=info.dtype)
    bits, signed = bits_needed(small)
    assert (bits, signed) == (4, True)
    packed = encode_bitpacked(small, bits)
    assert packed == reference_pack(small.view(f"u{width // 8}"), bits)
    decoded = decode_bitpacked(packed, bits, width, True, len(small))
    assert decoded.dtype == info.dtype
    np.testing.assert_array_equal(decoded, small)
    wide = decode_bitpacked(encode_bitpacked(values, width), width, width, True, 8)
    np.testing.assert_array_equal(wide, values)


def test_bits_needed_matches_reference_rule() -> None:
    assert bits_needed(np.array([0, 0], np.uint32)) == (1, False)
    assert bits_needed(np.array([255], np.uint8)) == (8, False)
    assert bits_needed(np.array([-1], np.int8)) == (1, True)
    assert bits_needed(np.array([5, 6], np.int64)) == (3, False)
    assert bits_needed(np.array([], np.int64)) == (1, False)


def test_bitpacked_corrupt_input() -> None:
    with pytest.raises(CorruptFileError, match="needed"):
        decode_bitpacked(b"\x00" * 3, 5, 32, False, 5)
    with pytest.raises(CorruptFileError, match="compressed_bits"):
        decode_bitpacked(b"\x00" * 100, 65, 64, False, 5)
    with pytest.raises(CorruptFileError, match="compressed_bits"):
        decode_bitpacked(b"\x00" * 100, 9, 8, False, 5)
    with pytest.raises(UnsupportedEncodingError, match="uncompressed"):
        decode_bitpacked(b"\x00" * 100, 3, 24, False, 5)
    with pytest.raises(CorruptFileError, match="needed"):
        decode_bitpacked(b"", 64, 64, False, 2**40)  # refuses before allocating
    assert decode_bitpacked(b"", 0, 16, False, 4).tolist() == [0, 0, 0, 0]


# --- BitpackedForNonNeg (FastLanes) -------------------------------------------------

FL_ORDER = [0, 4, 2, 6, 1, 5, 3, 7]


def reference_fastlanes(values: np.ndarray, bits: int) -> bytes:
    """Per-value FastLanes packer written from the layout description."""
    width = values.dtype.itemsize * 8
    lanes = 1024 // width
    padded = np.zeros(-(-len(values) // 1024) * 1024, np.uint64)
    padded[: len(values)] = values
    out = bytearray()
    for chunk in padded.reshape(-1, 1024).tolist():
        words = [0] * (bits * lanes)
        for lane in range(lanes):
            for row in range(width):
                v = chunk[FL_ORDER[row // 8] * 16 + (row % 8) * 128 + lane]
                for b in range(bits):
                    pos = row * bits + b
                    word = (pos // width) * lanes + lane
                    words[word] |= ((v >> b) & 1) << (pos % width)
        out += np.array(words, dtype=values.dtype).tobytes()
    return bytes(out)


@pytest.mark.parametrize(("width", "bits"), [(8, 3), (16, 11), (32, 1), (32, 17), (64, 33)])
def test_fastlanes_against_reference_layout(width: int, bits: int) -> None:
    rng = np.random.default_rng(bits)
    dtype = np.dtype(f"<u{width // 8}")
    values = rng.integers(0, 2**bits, 1500, dtype=np.uint64).astype(dtype)
    packed = reference_fastlanes(values, bits)
    assert len(packed) == fastlanes_size(1500, bits) == 2 * 128 * bits
    np.testing.assert_array_equal(decode_bitpacked_for_non_neg(packed, bits, width, 1500), values)
    assert encode_bitpacked_for_non_neg(values, bits) == packed


@pytest.mark.parametrize("width", [8, 16, 32, 64])
def test_fastlanes_roundtrip_all_widths(width: int) -> None:
    rng = np.random.default_rng(width)
    dtype = np.dtype(f"<u{width // 8}")
    for bits in range(1, width + 1):
        n = int(rng.integers(0, 2100))
        values = (rng.integers(0, 2**63, n, dtype=np.uint64) * 2 + 1) & np.uint64((1 << bits) - 1)
        values = values.astype(dtype)
        packed = encode_bitpacked_for_non_neg(values, bits)
        assert len(packed) == fastlanes_size(n, bits)
        np.testing.assert_array_equal(decode_bitpacked_for_non_neg(packed, bits, width, n), values)


@pytest.mark.parametrize(("dtype", "bits"), [("u1", 5), ("u2", 9), ("u4", 11), ("u8", 13)])
def test_fastlanes_layout_matches_pylance_2_1_packer(tmp_path: Path, dtype: str, bits: int) -> None:
    """pylance writes no 2.0 BitpackedForNonNeg, but its 2.1 inline bit packing uses
    the same packer: a chunk is the bit width as one word followed by the packed
    words.  Find that chunk in a 2.1 file and decode it."""
    rng = np.random.default_rng(bits)
    values = rng.integers(0, 2**bits, 1024).astype(dtype)
    values[0] = 2**bits - 1
    table = pa.table({"x": values})
    data = write_lance(tmp_path / "b.lance", table, version="2.1")
    width = np.dtype(dtype).itemsize * 8
    header = np.array([bits], dtype).tobytes()
    size = 128 * bits
    found = []
    at = data.find(header)
    while at >= 0:
        body = data[at + len(header) : at + len(header) + size]
        if len(body) == size and np.array_equal(
            decode_bitpacked_for_non_neg(body, bits, width, 1024), values
        ):
            found.append(at)
        at = data.find(header, at + 1)
    assert found


def test_fastlanes_corrupt_input() -> None:
    with pytest.raises(CorruptFileError, match="needed"):
        decode_bitpacked_for_non_neg(b"\x00" * (128 * 3 - 1), 3, 32, 10)
    with pytest.raises(CorruptFileError, match="compressed_bits"):
        decode_bitpacked_for_non_neg(b"\x00" * 10000, 40, 32, 10)
    with pytest.raises(UnsupportedEncodingError):
        decode_bitpacked_for_non_neg(b"\x00" * 10000, 3, 12, 10)
    with pytest.raises(CorruptFileError, match="negative"):
        decode_bitpacked_for_non_neg(b"", 3, 32, -1)


# --- Constant and FixedSizeBinary ----------------------------------------------------


def test_constant() -> None:
    out = decode_constant(struct.pack("<q", -7), np.int64, 5)
    assert out.dtype == np.int64
    assert out.tolist() == [-7] * 5
    assert decode_constant(b"\x00\x00\xc0\x3f", "<f4", 2).tolist() == [1.5, 1.5]
    assert decode_constant(b"ab", "V2", 3).tobytes() == b"ababab"
    with pytest.raises(CorruptFileError, match="needs 8"):
        decode_constant(b"\x01\x02", np.int64, 5)
    assert encode_constant(np.array([3, 3, 3], np.int32)) == struct.pack("<i", 3)
    assert encode_constant(np.array([3, 4], np.int32)) is None
    assert encode_constant(np.array([], np.int32)) is None


@pytest.mark.parametrize("offset_bits", [32, 64])
def test_fixed_size_binary(offset_bits: int) -> None:
    data = b"abcdefghijkl" + b"junk"
    offsets, values = decode_fixed_size_binary(data, 4, 3, offset_bits)
    assert offsets.dtype == np.dtype(f"int{offset_bits}")
    assert offsets.tolist() == [0, 4, 8, 12]
    arr_type = pa.string() if offset_bits == 32 else pa.large_string()
    arr = pa.Array.from_buffers(
        arr_type, 3, [None, pa.py_buffer(offsets), pa.py_buffer(bytes(values))]
    )
    assert arr.to_pylist() == ["abcd", "efgh", "ijkl"]
    with pytest.raises(CorruptFileError, match="need 20"):
        decode_fixed_size_binary(data, 4, 5)
    with pytest.raises(CorruptFileError):
        decode_fixed_size_binary(data, 0, 5)


# --- PackedStruct, against pylance ----------------------------------------------------

PACKED_CASES: dict[str, pa.Array] = {
    "mixed": pa.StructArray.from_arrays(
        [
            pa.array([1, -2, 3, 4, 5], pa.int32()),
            pa.array([1.5, 2.5, 3.5, -4.5, 5.5], pa.float64()),
            pa.array([10, 20, 30, 40, 255], pa.uint8()),
        ],
        names=["a", "b", "c"],
    ),
    "fsl": pa.StructArray.from_arrays(
        [
            pa.array([[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]], pa.list_(pa.int32(), 2)),
            pa.array([1, 2, 3, 4, 5], pa.int64()),
        ],
        names=["v", "k"],
    ),
    "fsb": pa.StructArray.from_arrays(
        [
            pa.array([b"ab", b"cd", b"ef", b"gh", b"ij"], pa.binary(2)),
            pa.array([1, 2, 3, 4, 5], pa.int16()),
        ],
        names=["v", "k"],
    ),
    "nested": pa.StructArray.from_arrays(
        [
            pa.StructArray.from_arrays([pa.array([1, 2, 3, 4, 5], pa.int8())], ["x"]),
            pa.array([1, 2, 3, 4, 5], pa.int16()),
        ],
        names=["v", "k"],
    ),
}


@pytest.mark.parametrize("case", sorted(PACKED_CASES))
@pytest.mark.parametrize("key", ["lance-encoding:packed", "packed"])
def test_pylance_packed_struct(tmp_path: Path, case: str, key: str) -> None:
    arr = PACKED_CASES[case]
    schema = pa.schema([pa.field("p", arr.type, metadata={key: "true"})])
    data = write_lance(tmp_path / "p.lance", pa.table([arr], schema=schema))
    [(encoding, rows, bufs)] = list(column_pages(data, 0))
    assert encoding.WhichOneof("array_encoding") == "packed_struct"
    assert len(encoding.packed_struct.inner) == arr.type.num_fields
    buf = bufs[encoding.packed_struct.buffer.buffer_index]
    assert len(buf) == rows * arrow_byte_width(arr.type)
    assert decode_packed_struct(buf, arr.type, rows).equals(arr)
    assert pack_struct_rows(
        split_packed_struct(buf, [arrow_byte_width(t.type) for t in arr.type], rows)
    ) == bytes(buf)


def test_pylance_blob_descriptions_are_packed(tmp_path: Path) -> None:
    blobs = pa.array([b"abc", None, b"", b"defgh", b"z"], pa.large_binary())
    field = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    data = write_lance(tmp_path / "b.lance", pa.table([blobs], schema=pa.schema([field])))
    [(encoding, rows, bufs)] = list(column_pages(data, 0))
    assert encoding.WhichOneof("array_encoding") == "packed_struct"
    desc_type = pa.struct([("position", pa.uint64()), ("size", pa.uint64())])
    desc = decode_packed_struct(bufs[0], desc_type, rows).to_pylist()
    got = []
    for d in desc:
        pos, size = d["position"], d["size"]
        # null -> (1, 0); empty -> (0, 0); otherwise an absolute file position.
        got.append(None if (pos, size) == (1, 0) else data[pos : pos + size])
    assert got == blobs.to_pylist()


@pytest.mark.parametrize(
    "child",
    [pa.array([True, False]), pa.array(["a", "b"]), pa.array([1, None], pa.int32())],
)
def test_pylance_refuses_packed_children(tmp_path: Path, child: pa.Array) -> None:
    arr = pa.StructArray.from_arrays([child, pa.array([1, 2], pa.int16())], ["v", "k"])
    schema = pa.schema([pa.field("p", arr.type, metadata={"lance-encoding:packed": "t"})])
    with pytest.raises(ValueError, match=r"(?i)packed|fixed-width|full-byte"):
        write_lance(tmp_path / "x.lance", pa.table([arr], schema=schema))


def test_packed_struct_corrupt_and_unsupported() -> None:
    with pytest.raises(CorruptFileError, match="need 26"):
        split_packed_struct(b"\x00" * 20, [4, 8, 1], 2)
    with pytest.raises(CorruptFileError):
        split_packed_struct(b"\x00" * 20, [0], 2)
    with pytest.raises(UnsupportedEncodingError):
        arrow_byte_width(pa.string())
    with pytest.raises(UnsupportedEncodingError):
        arrow_byte_width(pa.bool_())
    assert arrow_byte_width(pa.struct([("a", pa.list_(pa.float16(), 3))])) == 6


# --- speed: whole-buffer numpy, not per-value Python ---------------------------------


def test_large_decodes_are_vectorised() -> None:
    n = 1_000_003
    rng = np.random.default_rng(3)
    values = rng.integers(-(2**20), 2**20, n).astype(np.int64)
    packed = encode_bitpacked(values, 22)
    np.testing.assert_array_equal(decode_bitpacked(packed, 22, 64, True, n), values)
    unsigned = values.view(np.uint64) & np.uint64(2**22 - 1)
    fl = encode_bitpacked_for_non_neg(unsigned, 22)
    np.testing.assert_array_equal(decode_bitpacked_for_non_neg(fl, 22, 64, n), unsigned)
