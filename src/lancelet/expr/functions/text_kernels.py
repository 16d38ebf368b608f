"""numpy kernels for the string functions pyarrow has no kernel for: ``ascii`` (the first
character's code point), ``chr`` (a code point's character), ``to_hex`` and
``translate``.  Each works on whole arrays: UTF-8 is decoded and encoded with array
arithmetic on the byte buffers, never value by value.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.errors import FilterEvaluationError

__all__ = ["ascii_codes", "chr_strings", "hex_strings", "translate_strings"]

_CONTINUATION_MASK = 0x3F


def _buffers(strings: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The byte data and the (length + 1) offsets of a string array."""
    width = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    _, offset_buffer, data_buffer = strings.buffers()
    offsets = np.frombuffer(offset_buffer, dtype=width)[
        strings.offset : strings.offset + len(strings) + 1
    ].astype(np.int64)
    data = (
        np.frombuffer(data_buffer, dtype=np.uint8)
        if data_buffer is not None
        else np.zeros(0, np.uint8)
    )
    return data, offsets


def _validity(array: pa.Array) -> np.ndarray | None:
    if not array.null_count:
        return None
    mask: np.ndarray = array.is_null().to_numpy(zero_copy_only=False)
    return mask


def ascii_codes(strings: pa.Array) -> pa.Array:
    """The code point of each string's first character (0 for ''), as int32."""
    data, offsets = _buffers(strings)
    starts, lengths = offsets[:-1], np.diff(offsets)
    padded = np.concatenate([data, np.zeros(4, np.uint8)]).astype(np.int64)
    first = np.where(lengths > 0, padded[starts], 0)
    width = np.select([first < 0x80, first < 0xE0, first < 0xF0], [1, 2, 3], 4)
    lead_bits = np.select([width == 1, width == 2, width == 3], [first, first & 0x1F, first & 0xF])
    code = np.where(width == 4, first & 0x7, lead_bits)
    for k in (1, 2, 3):
        more = width > k
        code = np.where(more, (code << 6) | (padded[starts + k] & _CONTINUATION_MASK), code)
    code = np.where(lengths > 0, code, 0)
    return pa.array(code.astype(np.int32), pa.int32(), mask=_validity(strings))


def _encode(codes: np.ndarray, mask: np.ndarray | None) -> pa.Array:
    """UTF-8 strings of one code point each (valid code points only)."""
    codes = np.where(mask, 0, codes) if mask is not None else codes
    width = np.select([codes < 0x80, codes < 0x800, codes < 0x10000], [1, 2, 3], 4)
    if mask is not None:
        width = np.where(mask, 0, width)
    offsets = np.zeros(len(codes) + 1, np.int64)
    np.cumsum(width, out=offsets[1:])
    out = np.zeros(int(offsets[-1]), np.uint8)
    starts = offsets[:-1]
    lead_marker = np.select([width == 2, width == 3, width == 4], [0xC0, 0xE0, 0xF0], 0)
    lead_bits = np.select([width == 1, width == 2, width == 3], [0x7F, 0x1F, 0x0F], 0x07)
    for k in range(4):
        # Byte k of a width-w character carries the bits from 6 * (w - 1 - k) up.
        present = width > k
        bits = codes >> (6 * np.maximum(width - 1 - k, 0))
        byte = (bits & lead_bits) | lead_marker if k == 0 else (bits & 0x3F) | 0x80
        out[starts[present] + k] = byte[present]
    validity = None if mask is None else pa.array(~mask).buffers()[1]
    return pa.StringArray.from_buffers(
        len(codes),
        pa.py_buffer(offsets.astype(np.int32)),
        pa.py_buffer(out.tobytes()),
        validity,
        int(mask.sum()) if mask is not None else 0,
    )


def chr_strings(codes: pa.Array) -> pa.Array:
    """The character of each code point; an invalid code point fails, as in pylance."""
    mask = _validity(codes)
    values = np.asarray(codes.fill_null(0), dtype=np.int64)
    valid = mask if mask is not None else np.zeros(len(values), bool)
    bad = ~valid & ((values < 0) | (values > 0x10FFFF) | ((values >= 0xD800) & (values < 0xE000)))
    if bad.any():
        raise FilterEvaluationError(f"invalid Unicode scalar value: {int(values[np.argmax(bad)])}")
    return _encode(values, mask)


def hex_strings(numbers: pa.Array) -> pa.Array:
    """Each integer in lower-case hexadecimal, negative ones as 64-bit two's complement."""
    mask = _validity(numbers)
    values = np.asarray(numbers.fill_null(0), dtype=np.int64).view(np.uint64)
    nibbles = np.stack(
        [(values >> np.uint64(4 * (15 - k))) & np.uint64(0xF) for k in range(16)], axis=1
    ).astype(np.uint8)
    # Digits before the first non-zero one are dropped (zero keeps its last digit).
    significant = np.maximum.accumulate(nibbles != 0, axis=1)
    significant[:, -1] = True
    if mask is not None:
        significant[mask] = False
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)[nibbles]
    out = digits[significant]
    offsets = np.zeros(len(values) + 1, np.int32)
    np.cumsum(significant.sum(axis=1), out=offsets[1:])
    validity = None if mask is None else pa.array(~mask).buffers()[1]
    return pa.StringArray.from_buffers(
        len(values),
        pa.py_buffer(offsets),
        pa.py_buffer(out.tobytes()),
        validity,
        int(mask.sum()) if mask is not None else 0,
    )


def _code_points(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The code points of valid UTF-8 ``data``, and the byte position each starts at."""
    starts = np.flatnonzero((data & 0xC0) != 0x80)
    padded = np.concatenate([data, np.zeros(4, np.uint8)]).astype(np.int64)
    first = padded[starts]
    width = np.select([first < 0x80, first < 0xE0, first < 0xF0], [1, 2, 3], 4)
    code = np.select(
        [width == 1, width == 2, width == 3], [first, first & 0x1F, first & 0xF], first & 0x7
    )
    for k in (1, 2, 3):
        code = np.where(width > k, (code << 6) | (padded[starts + k] & 0x3F), code)
    return code, starts


def translate_strings(strings: pa.Array, source: str, target: str) -> pa.Array:
    """``translate``: each character of ``source`` in the strings replaced by the one at
    the same place in ``target``, or removed when ``target`` is shorter; the first
    occurrence of a character in ``source`` decides."""
    data, offsets = _buffers(strings)
    base = int(offsets[0])
    data = data[base : int(offsets[-1])]
    offsets = offsets - base
    codes, starts = _code_points(data)
    mapping: dict[int, int] = {}
    for position, char in enumerate(source):
        mapping.setdefault(ord(char), ord(target[position]) if position < len(target) else -1)
    keys = np.array(sorted(mapping), dtype=np.int64)
    values = np.array([mapping[k] for k in sorted(mapping)], dtype=np.int64)
    place = np.clip(np.searchsorted(keys, codes), 0, max(len(keys) - 1, 0))
    hit = (keys[place] == codes) if len(keys) else np.zeros(len(codes), bool)
    mapped = np.where(hit, values[place] if len(keys) else codes, codes)
    keep = mapped >= 0
    # The string each character belongs to, to count the kept ones per string.
    owner = np.searchsorted(offsets, starts, side="right") - 1
    counts = np.bincount(owner[keep], minlength=len(strings))
    encoded = _encode(mapped[keep], None)
    chars = _buffers(encoded)
    char_offsets = np.zeros(len(strings) + 1, np.int64)
    np.cumsum(counts, out=char_offsets[1:])
    byte_offsets = chars[1][char_offsets]
    return _from_parts(strings, chars[0], byte_offsets)


def _from_parts(like: pa.Array, data: np.ndarray, offsets: np.ndarray) -> Any:
    mask = _validity(like)
    validity = None if mask is None else pa.array(~mask).buffers()[1]
    cls = pa.LargeStringArray if pa.types.is_large_string(like.type) else pa.StringArray
    width = np.int64 if cls is pa.LargeStringArray else np.int32
    return cls.from_buffers(
        len(like),
        pa.py_buffer(offsets.astype(width)),
        pa.py_buffer(data.tobytes()),
        validity,
        like.null_count,
    )
