"""Packed structs: pylance's fixed (mini-block) and variable (full-zip) rows, round trips,
damage."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lancelet.errors import CorruptFileError, UnsupportedEncodingError
from lancelet.file.codecs.packed import (
    FixedField,
    VariableColumn,
    VariableField,
    decode_packed_rows,
    decode_variable_packed,
    encode_packed_rows,
    encode_variable_packed,
)
from tests.file.v2_1.page_bytes import miniblock_chunks, pages, write

WHAT = "test.lance: column 0 (s) page 0"


def _packed_table(struct_type: pa.StructType, rows: list[object]) -> pa.Table:
    field = pa.field("s", struct_type, metadata={"lance-encoding:packed": "true"})
    return pa.table({"s": pa.array(rows, struct_type)}, schema=pa.schema([field]))


def test_fixed_rows_from_pylance(tmp_path: Path) -> None:
    struct_type = pa.struct([("a", pa.int32()), ("b", pa.float64()), ("c", pa.uint8())])
    rows = [{"a": i * 3, "b": i / 4, "c": i % 251} for i in range(3000)]
    _, columns = pages(write(tmp_path / "p.lance", _packed_table(struct_type, rows)))
    (page,) = columns[0]
    layout = page.layout.mini_block_layout
    packed = layout.value_compression.packed_struct
    assert list(packed.bits_per_value) == [32, 64, 8]
    chunks = miniblock_chunks(layout, page.buffers[0], page.buffers[1])
    assert len(chunks) > 1
    starts = [c.buffers[0][0] for c in chunks]
    sizes = [c.buffers[0][1] for c in chunks]
    counts = [c.count for c in chunks]
    a, b, c = decode_packed_rows(
        page.buffers[1], starts, sizes, counts, packed.bits_per_value, what=WHAT
    )
    assert a.shape == (3000, 4) and b.shape == (3000, 8) and c.shape == (3000, 1)
    assert np.ascontiguousarray(a).view("<i4").ravel().tolist() == [r["a"] for r in rows]
    assert np.ascontiguousarray(b).view("<f8").ravel().tolist() == [r["b"] for r in rows]
    assert c.ravel().tolist() == [r["c"] for r in rows]
    want = b"".join(page.buffers[1][s : s + n] for s, n in zip(starts, sizes, strict=True))
    assert encode_packed_rows([a.copy().view("<i4").ravel(), b, c]) == want


def _full_zip_rows(page_buffers: list[bytes], num_rows: int) -> tuple[list[int], bytes, list[bool]]:
    """Row offsets, bytes and validity of a def-only full-zip page (loop on purpose: an
    independent reading of the zipped layout)."""
    data, rep_index = page_buffers
    width = len(rep_index) // (num_rows + 1)
    starts = [
        int.from_bytes(rep_index[i * width : (i + 1) * width], "little")
        for i in range(num_rows + 1)
    ]
    offsets, body, valid = [0], b"", []
    for row in range(num_rows):
        at = starts[row]
        valid.append(data[at] == 0)
        if data[at] == 0:
            (size,) = struct.unpack_from("<I", data, at + 1)
            body += data[at + 5 : at + 5 + size]
        offsets.append(len(body))
    return offsets, body, valid


def test_variable_rows_from_pylance(tmp_path: Path) -> None:
    struct_type = pa.struct([("a", pa.int32()), ("s", pa.string()), ("b", pa.binary())])
    rows: list[object] = [
        None if i % 7 == 3 else {"a": i, "s": "x" * (i % 13), "b": bytes([i % 256]) * (i % 5)}
        for i in range(200)
    ]
    _, columns = pages(write(tmp_path / "v.lance", _packed_table(struct_type, rows)))
    (page,) = columns[0]
    fields_pb = page.layout.full_zip_layout.value_compression.variable_packed_struct.fields
    layouts = [f.WhichOneof("layout") for f in fields_pb]
    assert layouts == ["bits_per_value", "bits_per_length", "bits_per_length"]
    offsets, body, valid = _full_zip_rows(page.buffers, 200)
    fields = [FixedField(4), VariableField(4), VariableField(4)]
    a, s, b = decode_variable_packed(body, offsets, fields, valid=np.array(valid), what=WHAT)
    assert (
        isinstance(a, np.ndarray)
        and isinstance(s, VariableColumn)
        and isinstance(b, VariableColumn)
    )
    live = [r for r in rows if r is not None]
    assert a[np.array(valid)].copy().view("<i4").ravel().tolist() == [r["a"] for r in live]  # type: ignore[index]
    strings = [s.data[s.offsets[i] : s.offsets[i + 1]].tobytes() for i in range(200)]
    assert [x for x, v in zip(strings, valid, strict=True) if v] == [r["s"].encode() for r in live]  # type: ignore[index]
    assert all(x == b"" for x, v in zip(strings, valid, strict=True) if not v)
    # Encoding the live rows gives pylance's row bytes back.
    keep = np.array(valid)
    offsets_out, data_out = encode_variable_packed([a[keep], _compact(s, keep), _compact(b, keep)])
    assert data_out == body
    assert np.diff(offsets_out).tolist() == np.diff(offsets)[keep].tolist()


def _compact(column: VariableColumn, keep: np.ndarray) -> VariableColumn:
    lengths = np.diff(column.offsets)[keep]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    parts = [column.data[column.offsets[i] : column.offsets[i + 1]] for i in np.flatnonzero(keep)]
    data = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
    return VariableColumn(offsets.astype(np.int64), data)


def test_variable_round_trip_with_eight_byte_prefixes() -> None:
    fixed = np.arange(5, dtype="<u2")
    words = VariableColumn(np.array([0, 3, 3, 10, 11, 11]), np.frombuffer(b"abcdefghijk", np.uint8))
    offsets, data = encode_variable_packed([words, fixed], prefix=8)
    back = decode_variable_packed(data, offsets, [VariableField(8), FixedField(2)], what=WHAT)
    column, raw = back
    assert isinstance(column, VariableColumn) and isinstance(raw, np.ndarray)
    assert column.offsets.tolist() == words.offsets.tolist()
    assert column.data.tobytes() == b"abcdefghijk"
    assert raw.copy().view("<u2").ravel().tolist() == [0, 1, 2, 3, 4]


ROW = struct.pack("<iI", 7, 2) + b"hi"
FIELDS = [FixedField(4), VariableField(4)]


def test_length_prefix_past_the_row_is_corrupt() -> None:
    bad = struct.pack("<iI", 7, 3) + b"hi"
    with pytest.raises(CorruptFileError, match=r"test.lance.*field 1 value runs past its row"):
        decode_variable_packed(bad, [0, len(bad)], FIELDS, what=WHAT)
    huge = struct.pack("<iQ", 7, 2**63 + 1) + b"hi"
    with pytest.raises(CorruptFileError, match="runs past its row"):
        decode_variable_packed(huge, [0, len(huge)], [FixedField(4), VariableField(8)], what=WHAT)


def test_short_and_long_rows_are_corrupt() -> None:
    with pytest.raises(CorruptFileError, match="field 0 runs past its row"):
        decode_variable_packed(ROW[:3], [0, 3], FIELDS, what=WHAT)
    with pytest.raises(CorruptFileError, match="bytes past their last field"):
        decode_variable_packed(ROW + b"!", [0, len(ROW) + 1], FIELDS, what=WHAT)


def test_null_row_with_bytes_is_corrupt() -> None:
    with pytest.raises(CorruptFileError, match="null packed struct row holds bytes"):
        decode_variable_packed(ROW, [0, len(ROW)], FIELDS, valid=np.array([False]), what=WHAT)


def test_row_offsets_past_the_data_are_corrupt() -> None:
    with pytest.raises(CorruptFileError, match="row offsets"):
        decode_variable_packed(ROW, [0, len(ROW) + 8], FIELDS, what=WHAT)
    with pytest.raises(CorruptFileError, match="row offsets"):
        decode_variable_packed(ROW, [4, 0], FIELDS, what=WHAT)


def test_fixed_chunk_size_must_match_rows() -> None:
    with pytest.raises(CorruptFileError, match="2 rows of 12 bytes need 24"):
        decode_packed_rows(bytes(30), [0], [30], [2], [32, 64], what=WHAT)
    with pytest.raises(UnsupportedEncodingError, match="field of 1 bits"):
        decode_packed_rows(bytes(8), [0], [8], [1], [1, 63], what=WHAT)
