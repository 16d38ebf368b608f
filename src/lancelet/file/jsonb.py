"""The binary JSON (JSONB) Lance stores a JSON column as (``lance.json``).

Each value is one document: a 4-byte big-endian container header (its kind in
the top bits, its number of items below) and 4-byte entries (a kind and a byte
length) ahead of the items' bytes.  An object's keys come sorted (by bytes)
before its values; a lone scalar is a scalar container of one entry.  Numbers are
a tag byte then the smallest big-endian integer that holds them, or a float64.

:func:`encode` and :func:`decode` parse and print one document at a time, and are
the reference; with numba, whole columns go through compiled kernels
(:mod:`.codecs.kernels.jsonb_parse`, :mod:`.codecs.kernels.jsonb`) that give the same
bytes and text, and hand the column back to the reference where they cannot.
"""

from __future__ import annotations

import itertools
import json
import math
import struct
from json.encoder import encode_basestring as _quoted  # json.dumps(ensure_ascii=False)
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import CorruptFileError, InvalidJSONError, UnsupportedEncodingError
from lancelet.file.codecs import jit
from lancelet.file.codecs.kernels.jsonb import (
    GROW,
    OK,
    TEXT_PER_BYTE,
    new_stack,
    print_docs,
    ryu_tables,
)
from lancelet.file.codecs.kernels.jsonb_parse import encode_docs
from lancelet.file.parallel import WORKERS, map_columns

_ARRAY, _OBJECT, _SCALAR = 0x80000000, 0x40000000, 0x20000000
_NULL, _STRING, _NUMBER, _FALSE, _TRUE, _CONTAINER = (k << 28 for k in range(6))
_KIND, _LENGTH = 0x70000000, 0x0FFFFFFF
_ZERO, _NAN, _INF, _NEG_INF, _INT, _UINT, _FLOAT = 0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60
_WIDTHS = ((1, "b", "B"), (2, "h", "H"), (4, "i", "I"), (8, "q", "Q"))
# Columns of fewer bytes than this go through the reference: the compiled kernels take
# seconds to compile at their first use after an install (the parser about half a
# minute on a busy machine), far more than a small column costs one document at a time.
COMPILED_MIN_BYTES = 1 << 20
# Columns of at least twice this many bytes print in parts, on the decode threads.
PART_MIN_BYTES = 4 << 20


def _compiled(column: pa.Array) -> bool:
    return jit.enabled() and column.nbytes >= COMPILED_MIN_BYTES


def encode_column(texts: pa.Array) -> pa.Array:
    """JSON text (strings) to JSONB (``large_binary``); nulls stay null."""
    if _compiled(texts):
        encoded = _encode_compiled(texts)
        if encoded is not None:
            return encoded
    docs = [None if t is None else encode(t) for t in texts.to_pylist()]
    return pa.array(docs, type=pa.large_binary())


def _encode_compiled(texts: pa.Array) -> pa.Array | None:
    """The column encoded by the compiled parser, or None where it gives up (invalid
    or unusual documents, which the reference encodes or refuses)."""
    texts = texts.cast(pa.large_string())
    try:
        texts.validate(full=True)  # the kernel copies string bytes as UTF-8
    except pa.ArrowInvalid:
        return None
    count = len(texts)
    _, offsets_buf, data_buf = texts.buffers()
    offsets = np.frombuffer(offsets_buf, np.int64, count + 1, texts.offset * 8)
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    valid = texts.is_valid().to_numpy(zero_copy_only=False)
    total = int(offsets[-1] - offsets[0])
    # Upper bounds, touched only as far as they are used: a float's text takes at
    # least three bytes ("1.5", "1e5"), an integer beyond 64 bits twenty.
    float_text = np.empty(total, np.uint8)
    float_ends = np.empty(total // 3 + 1, np.int64)
    float_is_int = np.empty(total // 3 + 1, np.bool_)
    doc_floats = np.empty(count + 1, np.int64)
    sizes = np.empty(count, np.int64)
    empty, none = np.zeros(0, np.uint8), np.zeros(1, np.int64)
    floats = (float_text, float_ends, float_is_int)
    args = (offsets, data, valid)
    bits = np.zeros(0, np.uint64)
    if encode_docs(*args, False, *floats, bits, doc_floats, sizes, empty, none) != OK:
        return None
    found = int(doc_floats[-1])
    if found:
        values = _parse_floats(float_text, float_ends[:found])
        if values is None:
            return None
        overflowed = ~np.isfinite(values)
        if (overflowed & float_is_int[:found]).any():
            return None  # float(int) raises OverflowError in the reference
        # An overflow to infinity is a one-byte tag, not a 9-byte float.
        short = np.concatenate(([0], np.cumsum(overflowed))).astype(np.int64)
        sizes -= 8 * (short[doc_floats[1:]] - short[doc_floats[:-1]])
        bits = values.view(np.uint64)
    out_at = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    out = np.empty(int(out_at[-1]), np.uint8)
    if encode_docs(*args, True, *floats, bits, doc_floats, sizes, out, out_at) != OK:
        return None
    nulls = None if texts.null_count == 0 else pa.py_buffer(np.packbits(valid, bitorder="little"))
    buffers = [nulls, pa.py_buffer(out_at), pa.py_buffer(out)]
    return pa.Array.from_buffers(pa.large_binary(), count, buffers, texts.null_count)


def _parse_floats(text: np.ndarray, ends: np.ndarray) -> np.ndarray | None:
    """Each number's text as the nearest double (Arrow's parser rounds correctly, as
    Python's ``float`` does; overflow gives infinity), or None if Arrow refuses one."""
    starts = np.concatenate(([0], ends)).astype(np.int64)
    used = text[: int(ends[-1])]
    strings = pa.Array.from_buffers(
        pa.large_string(), len(ends), [None, pa.py_buffer(starts), pa.py_buffer(used)]
    )
    try:
        doubles = pc.cast(strings, pa.float64())
    except pa.ArrowInvalid:
        return None
    values: np.ndarray = doubles.to_numpy()
    return values


def decode_column(docs: pa.Array) -> pa.Array:
    """JSONB to JSON text as Lance prints it (compact, keys sorted)."""
    if _compiled(docs):
        printed = _print_compiled(docs)
        if printed is not None:
            return printed
    texts = [None if d is None else decode(d) for d in docs.to_pylist()]
    return pa.array(texts, type=pa.string())


def _print_compiled(docs: pa.Array) -> pa.Array | None:
    """The column printed by the compiled walk, or None where it gives up (damaged
    or unusual documents, which the reference prints or refuses)."""
    docs = docs.cast(pa.large_binary())
    count = len(docs)
    _, offsets_buf, data_buf = docs.buffers()
    offsets = np.frombuffer(offsets_buf, np.int64, count + 1, docs.offset * 8)
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    valid = docs.is_valid().to_numpy(zero_copy_only=False)
    parts = _parts(offsets)
    sizes = np.diff(offsets)
    # Text is usually shorter than its JSONB (whose entries take four bytes an item):
    # room for all of a part, and for its largest document at its bound, grows rarely.
    rooms = [
        int(offsets[b] - offsets[a]) + TEXT_PER_BYTE * int(sizes[a:b].max(initial=0)) + 64
        for a, b in parts
    ]
    ends = np.cumsum(rooms).tolist()
    shared = np.empty(ends[-1], np.uint8)
    regions = [shared[end - room : end] for end, room in zip(ends, rooms, strict=True)]

    def run(k: int) -> tuple[np.ndarray, np.ndarray] | None:
        return _print_rows(offsets, data, valid, parts[k], regions[k])

    printed = map_columns(run, range(len(parts)))
    if any(p is None for p in printed):
        return None
    text, out_at = _joined(shared, regions, [p for p in printed if p is not None], parts)
    nulls = None if docs.null_count == 0 else pa.py_buffer(np.packbits(valid, bitorder="little"))
    result = pa.Array.from_buffers(
        pa.large_string(),
        count,
        [nulls, pa.py_buffer(out_at), pa.py_buffer(text)],
        docs.null_count,
    )
    # Strings must be UTF-8, as the reference insists; ASCII text (the usual case,
    # told by its largest byte, several times faster than Arrow's check) is.
    if text.size and int(text.max()) >= 0x80:
        try:
            result.validate(full=True)
        except pa.ArrowInvalid:
            return None
    return result.cast(pa.string())


def _parts(offsets: np.ndarray) -> list[tuple[int, int]]:
    """Row ranges of about equal bytes, one per decode thread for a big column (the
    walk releases the GIL); a small column is one part."""
    count = len(offsets) - 1
    total = int(offsets[-1] - offsets[0])
    wanted = max(1, min(WORKERS, total // PART_MIN_BYTES))
    targets = offsets[0] + total * np.arange(1, wanted) // wanted
    cuts = [0, *np.searchsorted(offsets, targets).tolist(), count]
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a] or [(0, count)]


def _print_rows(
    offsets: np.ndarray, data: np.ndarray, valid: np.ndarray, rows: tuple[int, int], out: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """Rows ``a..b`` printed into ``out`` (or a larger copy when they do not fit):
    the buffer and each row's text offsets, from 0; None where the walk gives up."""
    a, b = rows
    offs, live = offsets[a : b + 1], valid[a:b]
    out_at = np.empty(b - a + 1, np.int64)
    out_at[0] = 0
    tables = ryu_tables()
    stack = new_stack()
    status, first = print_docs(offs, data, live, 0, out, out_at, stack, *tables)
    while status == GROW:
        used = int(out_at[first])
        need = used + TEXT_PER_BYTE * int(offs[first + 1] - offs[first])
        grown = np.empty(max(2 * len(out), need), np.uint8)
        grown[:used] = out[:used]
        out = grown
        status, first = print_docs(offs, data, live, first, out, out_at, stack, *tables)
    return (out, out_at) if status == OK else None


def _joined(
    shared: np.ndarray,
    regions: list[np.ndarray],
    printed: list[tuple[np.ndarray, np.ndarray]],
    parts: list[tuple[int, int]],
) -> tuple[np.ndarray, np.ndarray]:
    """The parts' texts back to back, and every row's offsets.  Parts printed in their
    region of ``shared`` move down behind the one before (no second buffer)."""
    lengths = [int(at[-1]) for _, at in printed]
    out_at = np.empty(parts[-1][1] + 1, np.int64)
    out_at[0] = 0
    base = 0
    for (a, b), (_, at), length in zip(parts, printed, lengths, strict=True):
        out_at[a + 1 : b + 1] = at[1:] + base
        base += length
    if len(printed) == 1:
        return printed[0][0][:base], out_at
    if any(out is not region for (out, _), region in zip(printed, regions, strict=True)):
        pieces = [out[:n] for (out, _), n in zip(printed, lengths, strict=True)]
        return np.concatenate(pieces), out_at
    pos = 0
    for (out, _), n in zip(printed, lengths, strict=True):
        shared[pos : pos + n] = out[:n]  # a move down: numpy copies overlaps as memmove
        pos += n
    return shared[:pos], out_at


def encode(text: str) -> bytes:
    try:
        return encode_value(_DECODER.decode(text))
    except (ValueError, RecursionError) as exc:
        # Includes what Lance's own, laxer parser takes ('', '[1,]', "'a'", '01'):
        # refused rather than guessed at.
        raise InvalidJSONError(f"Failed to encode JSON: {exc}") from exc


def encode_value(value: Any) -> bytes:
    """The JSONB document of a parsed JSON value (``dict``, ``list``, ``str``, number,
    bool or ``None``)."""
    if isinstance(value, (dict, list)):
        return _container(value)
    entry, data = _item(value)
    return struct.pack(">II", _SCALAR, entry) + data


def to_text(value: Any) -> str:
    """A parsed JSON value printed as Lance prints it."""
    return decode(encode_value(value))


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f"duplicate object attribute {key!r}")
        seen.add(key)
    raise AssertionError("unreachable: some key repeats")


_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)


def _container(value: dict[str, Any] | list[Any]) -> bytes:
    if isinstance(value, list):
        items = [_item(v) for v in value]
        head = [_ARRAY | len(items)]
    else:
        keys = sorted((k.encode() for k in value), key=bytes)
        items = [(_STRING | len(k), k) for k in keys]
        items += [_item(value[k.decode()]) for k in keys]
        head = [_OBJECT | len(keys)]
    words = head + [entry for entry, _ in items]
    return struct.pack(f">{len(words)}I", *words) + b"".join(data for _, data in items)


def _item(value: Any) -> tuple[int, bytes]:
    if value is None:
        return _NULL, b""
    if value is True:
        return _TRUE, b""
    if value is False:
        return _FALSE, b""
    if isinstance(value, str):
        data = value.encode()
        return _STRING | len(data), data
    if isinstance(value, (int, float)):
        data = _number(value)
        return _NUMBER | len(data), data
    data = _container(value)
    return _CONTAINER | len(data), data


def _number(value: int | float) -> bytes:
    if isinstance(value, int) and value == 0:
        return bytes([_ZERO])
    if isinstance(value, float) and not math.isfinite(value):
        # NaN and the infinities (JSON has none; Lance takes them and prints null).
        return bytes([_NAN if math.isnan(value) else _INF if value > 0 else _NEG_INF])
    if isinstance(value, int) and -(1 << 63) <= value < (1 << 64):
        for width, i_code, u_code in _WIDTHS:
            bits = width * 8
            if value < 0 and value >= -(1 << (bits - 1)):
                return bytes([_INT]) + struct.pack(">" + i_code, value)
            if 0 < value < (1 << bits):
                return bytes([_UINT]) + struct.pack(">" + u_code, value)
    return bytes([_FLOAT]) + struct.pack(">d", float(value))


def decode(doc: bytes) -> str:
    try:
        (header,) = struct.unpack_from(">I", doc, 0)
        if header & 0xE0000000 == _SCALAR:
            (entry,) = struct.unpack_from(">I", doc, 4)
            return _print_item(entry, doc[8 : 8 + (entry & _LENGTH)])
        return _print_container(doc)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise CorruptFileError(f"damaged JSONB value: {exc}") from exc


def _print_container(doc: bytes) -> str:
    (header,) = struct.unpack_from(">I", doc, 0)
    count = header & _LENGTH
    kind = header & 0xE0000000
    slots = count * 2 if kind == _OBJECT else count
    entries = struct.unpack_from(f">{slots}I", doc, 4)
    pos = 4 + 4 * slots
    parts = []
    for entry in entries:
        end = pos + (entry & _LENGTH)
        parts.append(_print_item(entry, doc[pos:end]))
        pos = end
    if kind == _ARRAY:
        return "[" + ",".join(parts) + "]"
    if kind != _OBJECT:
        raise UnsupportedEncodingError(f"unknown container header {header:#x}")
    pairs = zip(parts[:count], parts[count:], strict=True)
    return "{" + ",".join(f"{k}:{v}" for k, v in pairs) + "}"


def _print_item(entry: int, data: bytes) -> str:
    kind = entry & _KIND
    if kind == _NULL:
        return "null"
    if kind == _TRUE:
        return "true"
    if kind == _FALSE:
        return "false"
    if kind == _STRING:
        return _quoted(data.decode())
    if kind == _NUMBER:
        return _print_number(data)
    if kind == _CONTAINER:
        return _print_container(data)
    raise UnsupportedEncodingError(f"unknown JSONB entry {entry:#x}")


def _print_number(data: bytes) -> str:
    tag = data[0]
    if tag == _ZERO:
        return "0"
    if tag in (_NAN, _INF, _NEG_INF):
        return "null"
    if tag in (_INT, _UINT):
        return str(int.from_bytes(data[1:], "big", signed=tag == _INT))
    if tag == _FLOAT:
        return format_float(struct.unpack(">d", data[1:9])[0])
    raise UnsupportedEncodingError(f"unknown JSONB number tag {tag:#x}")


def format_float(value: float) -> str:
    """A float as Lance prints one: Python's shortest digits, positional from 1e-5
    up to 1e16, else ``d.ddde-N`` / ``d.ddde+N``."""
    if not math.isfinite(value):
        return "null"
    text = repr(value)
    mantissa, _, exponent = text.partition("e")
    if not exponent:
        return text
    power = int(exponent)
    if power == -5:
        sign, digits = ("-", mantissa[1:]) if mantissa.startswith("-") else ("", mantissa)
        return f"{sign}0.0000{digits.replace('.', '')}"
    return f"{mantissa}e{'+' if power > 0 else '-'}{abs(power)}"
