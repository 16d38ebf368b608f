"""Packed structs: a struct's fields stored row by row (files 2.1 and later).

``PackedStruct`` (2.1, mini-block pages): every field has a fixed width of whole bytes,
and a row is the fields' bytes one after another (``bits_per_value`` lists each field's
width), so a chunk of ``n`` rows is ``n * row_width`` bytes.

``VariablePackedStruct`` (2.2, full-zip pages): fields may also be variable-width.  A row
is, field after field, either the field's fixed bytes or a little-endian length prefix
(4 or 8 bytes) followed by that many bytes; rows are located by offsets (the full-zip
value sizes).  A null struct row has no bytes at all.

Decoders return each field's raw bytes (fixed fields as an ``(rows, width)`` array,
variable ones as offsets plus bytes); turning them into Arrow arrays, and undoing any
per-field compression, is left to the page layout.  Loops run over fields, never rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from lancelet.errors import CorruptFileError, UnsupportedEncodingError
from lancelet.file.codecs._chunks import (
    Bytes,
    IntArray,
    as_bytes,
    check_fixed_chunks,
    gather_ranges,
    ints,
)

__all__ = [
    "FixedField",
    "VariableColumn",
    "VariableField",
    "decode_packed_rows",
    "decode_variable_packed",
    "encode_packed_rows",
    "encode_variable_packed",
]

PREFIX_BYTES: Final = (4, 8)


@dataclass(frozen=True)
class FixedField:
    """A field of ``width`` bytes in every row."""

    width: int


@dataclass(frozen=True)
class VariableField:
    """A field stored as a ``prefix``-byte length (4 or 8) and that many bytes."""

    prefix: int


@dataclass(frozen=True)
class VariableColumn:
    """The values of a variable field: ``data[offsets[i]:offsets[i + 1]]`` is row ``i``."""

    offsets: IntArray
    data: npt.NDArray[np.uint8]


def field_widths(bits_per_field: Sequence[int], what: str) -> list[int]:
    """Byte widths of a ``PackedStruct``'s fields, refusing sub-byte or empty fields."""
    if not bits_per_field:
        raise CorruptFileError(f"{what}: packed struct has no fields")
    bad = [b for b in bits_per_field if b <= 0 or b % 8]
    if bad:
        raise UnsupportedEncodingError(
            f"{what}: packed struct field of {bad[0]} bits (lancelet reads whole-byte fields)"
        )
    return [b // 8 for b in bits_per_field]


def decode_packed_rows(
    data: Bytes,
    starts: npt.ArrayLike,
    sizes: npt.ArrayLike,
    counts: npt.ArrayLike,
    bits_per_field: Sequence[int],
    *,
    what: str,
) -> list[npt.NDArray[np.uint8]]:
    """Split the rows of many chunks into per-field byte arrays.

    Chunk ``i`` is ``data[starts[i]:][:sizes[i]]`` holding ``counts[i]`` rows; its size
    must be exactly ``counts[i]`` rows.  Returns one ``(total rows, width)`` array per
    field.
    """
    widths = field_widths(bits_per_field, what)
    row = sum(widths)
    raw = as_bytes(data)
    c_starts = ints("chunk starts", starts, None, what)
    c_sizes = ints("chunk sizes", sizes, c_starts.size, what)
    c_counts = ints("row counts", counts, c_starts.size, what)
    check_fixed_chunks(raw, c_starts, c_sizes, c_counts, row, "packed struct rows", what)
    rows = raw[gather_ranges(c_starts, c_sizes)].reshape(-1, row)
    bounds = np.cumsum([0, *widths])
    return [rows[:, bounds[i] : bounds[i + 1]] for i in range(len(widths))]


def encode_packed_rows(fields: Sequence[npt.NDArray[np.generic]]) -> bytes:
    """Rows of the fields' bytes, one after another; each field is a 1-D array of
    fixed-width values or a 2-D ``(rows, width)`` array of bytes."""
    as_rows = [_byte_rows(f) for f in fields]
    if not as_rows or len({r.shape[0] for r in as_rows}) != 1:
        raise ValueError("packed struct fields must be given, with equal row counts")
    return np.concatenate(as_rows, axis=1).tobytes()


def _byte_rows(field: npt.NDArray[np.generic]) -> npt.NDArray[np.uint8]:
    arr = np.ascontiguousarray(field)
    if arr.ndim == 2 and arr.dtype == np.uint8:
        return arr
    if arr.ndim != 1:
        raise ValueError("a packed struct field is 1-D values or 2-D (rows, width) bytes")
    return arr.view(np.uint8).reshape(arr.size, arr.dtype.itemsize)


def _read_le(raw: npt.NDArray[np.uint8], at: IntArray, width: int) -> IntArray:
    """The ``width``-byte little-endian unsigned integers at ``at`` (as int64; an
    8-byte value of 2**63 or more becomes negative, which callers refuse)."""
    words = raw[at[:, None] + np.arange(width)]
    return np.ascontiguousarray(words).view(f"<u{width}").reshape(-1).astype(np.int64)


def decode_variable_packed(
    data: Bytes,
    row_offsets: npt.ArrayLike,
    fields: Sequence[FixedField | VariableField],
    *,
    valid: npt.NDArray[np.bool_] | None = None,
    what: str,
) -> list[npt.NDArray[np.uint8] | VariableColumn]:
    """Split ``VariablePackedStruct`` rows into their fields.

    Row ``i`` is ``data[row_offsets[i]:row_offsets[i + 1]]``; rows where ``valid`` is
    False (null structs) must be empty and decode to zero bytes / empty values.
    """
    raw = as_bytes(data)
    offsets = ints("row offsets", row_offsets, None, what)
    n = offsets.size - 1
    if n < 0 or bool(np.any(offsets[1:] < offsets[:-1])) or int(offsets[-1]) > raw.size:
        raise CorruptFileError(f"{what}: packed struct row offsets are not increasing in the data")
    lengths = offsets[1:] - offsets[:-1]
    live = np.ones(n, dtype=bool) if valid is None else np.asarray(valid, dtype=bool)
    if live.shape != (n,):
        raise ValueError(f"{what}: validity must have one entry per row")
    if bool(np.any(lengths[~live])):
        raise CorruptFileError(f"{what}: a null packed struct row holds bytes")
    rows = np.flatnonzero(live)
    cursor, end = offsets[rows], offsets[rows + 1]
    out: list[npt.NDArray[np.uint8] | VariableColumn] = []
    for index, field in enumerate(fields):
        label = f"{what}: packed struct field {index}"
        if isinstance(field, FixedField):
            _need(cursor + field.width > end, label, "runs past its row")
            values = np.zeros((n, field.width), dtype=np.uint8)
            values[rows] = raw[cursor[:, None] + np.arange(field.width)]
            out.append(values)
            cursor = cursor + field.width
        else:
            column, cursor = _variable_field(raw, cursor, end, field, rows, n, label)
            out.append(column)
    _need(cursor != end, what, "packed struct rows hold bytes past their last field")
    return out


def _need(bad: npt.NDArray[np.bool_], label: str, problem: str) -> None:
    if bool(bad.any()):
        raise CorruptFileError(f"{label} {problem} (row {int(np.argmax(bad))} of the valid rows)")


def _variable_field(
    raw: npt.NDArray[np.uint8],
    cursor: IntArray,
    end: IntArray,
    field: VariableField,
    rows: IntArray,
    n: int,
    label: str,
) -> tuple[VariableColumn, IntArray]:
    if field.prefix not in PREFIX_BYTES:
        raise UnsupportedEncodingError(f"{label}: length prefix of {field.prefix} bytes")
    _need(cursor + field.prefix > end, label, "length prefix runs past its row")
    sizes = _read_le(raw, cursor, field.prefix)
    starts = cursor + field.prefix
    _need((sizes < 0) | (sizes > end - starts), label, "value runs past its row")
    all_sizes = np.zeros(n, dtype=np.int64)
    all_sizes[rows] = sizes
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(all_sizes, out=offsets[1:])
    return VariableColumn(offsets, raw[gather_ranges(starts, sizes)]), starts + sizes


def encode_variable_packed(
    fields: Sequence[npt.NDArray[np.generic] | VariableColumn], *, prefix: int = 4
) -> tuple[IntArray, bytes]:
    """Rows of a ``VariablePackedStruct``: every fixed field's bytes, every variable
    field as a ``prefix``-byte length and its bytes.  Returns the row offsets (rows + 1)
    and the data; null rows are the caller's to drop (they hold no bytes)."""
    if prefix not in PREFIX_BYTES:
        raise ValueError("the length prefix is 4 or 8 bytes")
    parts = [f if isinstance(f, VariableColumn) else _byte_rows(f) for f in fields]
    rows = {p.offsets.size - 1 if isinstance(p, VariableColumn) else p.shape[0] for p in parts}
    if len(rows) != 1:
        raise ValueError("variable packed struct fields must be given, with equal row counts")
    n = rows.pop()
    sizes = np.stack([_row_sizes(p, n, prefix) for p in parts], axis=1)
    row_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes.sum(axis=1), out=row_offsets[1:])
    field_starts = row_offsets[:-1, None] + np.cumsum(sizes, axis=1) - sizes
    out = np.zeros(int(row_offsets[-1]), dtype=np.uint8)
    for index, part in enumerate(parts):
        at = field_starts[:, index]
        if not isinstance(part, VariableColumn):
            out[at[:, None] + np.arange(part.shape[1])] = part
            continue
        lengths = np.diff(part.offsets)
        out[at[:, None] + np.arange(prefix)] = (
            lengths.astype(f"<u{prefix}").view(np.uint8).reshape(n, prefix)
        )
        out[gather_ranges(at + prefix, lengths)] = part.data[
            gather_ranges(part.offsets[:-1], lengths)
        ]
    return row_offsets, out.tobytes()


def _row_sizes(part: npt.NDArray[np.uint8] | VariableColumn, n: int, prefix: int) -> IntArray:
    if isinstance(part, VariableColumn):
        return prefix + np.diff(part.offsets).astype(np.int64)
    return np.full(n, part.shape[1], dtype=np.int64)
