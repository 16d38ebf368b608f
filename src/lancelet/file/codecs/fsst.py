"""FSST string decompression, shared by every file version.

The encodings that use FSST store the symbol table in their protobuf message and
the compressed values as ordinary variable-width data.

Serialized symbol table (always 2312 bytes when written by the reference):

* bytes 0..8: little-endian u64 header.  Bits 32..63 hold the magic
  ``0x46535354`` ("FSST"); bit 24 says whether the data really is compressed
  (the reference leaves pages under 32 KiB as plain bytes); bits 16..23 and
  8..15 are encoder bookkeeping (suffix limit, terminator) that a decoder
  ignores; bits 0..7 give ``n``, the number of symbols.
* ``n`` little-endian u64 words: symbol ``i`` is the first ``len[i]`` bytes of
  word ``i`` in memory order.
* ``n`` bytes: ``len[i]``, each in 1..8.
* zero padding up to 2312 bytes.

Compressed stream: each byte is a code.  Code 255 is an escape whose next byte
is copied literally; any other code ``c`` expands to symbol ``c``.  Every value
is compressed on its own, so an escape never straddles two values.

Everything here works on whole buffers with numpy; there is no per-value or
per-byte Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lancelet.errors import CorruptFileError

__all__ = [
    "FSST_SYMBOL_TABLE_SIZE",
    "FsstSymbolTable",
    "fsst_decompress",
    "parse_symbol_table",
]

FSST_SYMBOL_TABLE_SIZE = 8 + 256 * 8 + 256
"""Size of the symbol table blob the reference writer stores in every page."""

_MAGIC = 0x46535354
_ESCAPE = 255
_MAX_SYMBOL_LEN = 8
_HEADER_SIZE = 8


@dataclass(frozen=True)
class FsstSymbolTable:
    """A parsed symbol table, laid out for table-lookup decoding.

    ``expansions`` has 512 rows of 8 bytes: row ``c`` (< 256) is the expansion
    of code ``c`` and row ``256 + b`` is the literal byte ``b`` (what an escape
    payload emits).  ``lengths`` gives how many bytes of each row are used;
    it is 0 for codes that name no symbol, so they can be detected as corrupt.
    """

    compressed: bool
    num_symbols: int
    expansions: NDArray[np.uint8]
    lengths: NDArray[np.int64]


def parse_symbol_table(raw: bytes) -> FsstSymbolTable:
    """Parse the serialized FSST symbol table stored in an ``Fsst`` encoding."""
    if len(raw) < _HEADER_SIZE:
        raise CorruptFileError(
            f"FSST symbol table is {len(raw)} bytes, too short for its 8-byte header"
        )
    header = int.from_bytes(raw[:_HEADER_SIZE], "little")
    if header >> 32 != _MAGIC:
        raise CorruptFileError(f"FSST symbol table has bad magic (header 0x{header:016x})")
    compressed = bool((header >> 24) & 1)
    num_symbols = header & 0xFF
    needed = _HEADER_SIZE + num_symbols * (_MAX_SYMBOL_LEN + 1)
    if len(raw) < needed:
        raise CorruptFileError(
            f"FSST symbol table declares {num_symbols} symbols and needs {needed} bytes, "
            f"but only {len(raw)} are present"
        )
    return _build_table(raw, compressed, num_symbols)


def _build_table(raw: bytes, compressed: bool, num_symbols: int) -> FsstSymbolTable:
    words_end = _HEADER_SIZE + num_symbols * _MAX_SYMBOL_LEN
    symbols = np.frombuffer(
        raw, dtype=np.uint8, count=words_end - _HEADER_SIZE, offset=_HEADER_SIZE
    )
    lens = np.frombuffer(raw, dtype=np.uint8, count=num_symbols, offset=words_end)
    bad = np.flatnonzero((lens < 1) | (lens > _MAX_SYMBOL_LEN))
    if bad.size:
        first = int(bad[0])
        raise CorruptFileError(
            f"FSST symbol {first} has length {int(lens[first])}, expected 1..{_MAX_SYMBOL_LEN}"
        )
    expansions = np.zeros((512, _MAX_SYMBOL_LEN), dtype=np.uint8)
    expansions[:num_symbols] = symbols.reshape(num_symbols, _MAX_SYMBOL_LEN)
    expansions[256:, 0] = np.arange(256, dtype=np.uint8)
    lengths = np.zeros(512, dtype=np.int64)
    lengths[:num_symbols] = lens
    # At most 255 symbols fit the 8-bit count, so code 255 never names one: it
    # is the escape, emits nothing itself, and its payload uses a 256+ row.
    lengths[256:] = 1
    return FsstSymbolTable(compressed, num_symbols, expansions, lengths)


def fsst_decompress(
    symbol_table: bytes | FsstSymbolTable,
    compressed: NDArray[np.uint8],
    offsets: NDArray[np.integer],
) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    """Expand FSST-compressed values.

    ``offsets`` has one more entry than there are values; value ``i`` is
    ``compressed[offsets[i]:offsets[i + 1]]``.  The result is ``(offsets,
    data)`` for the decompressed values, with offsets starting at 0, ready to
    become an Arrow (large) string or binary array.  Nulls are not special:
    the reference stores them as empty values.
    """
    table = (
        symbol_table
        if isinstance(symbol_table, FsstSymbolTable)
        else parse_symbol_table(symbol_table)
    )
    data, rel = _slice_values(np.asarray(compressed), np.asarray(offsets))
    if not table.compressed:
        # Small pages are stored verbatim behind a "not compressed" header.
        return rel, data.copy()
    if data.size == 0:
        return rel, np.zeros(0, dtype=np.uint8)
    rows = _expansion_rows(data, rel, table)
    return _expand(rows, rel, table)


def _slice_values(
    compressed: NDArray[np.uint8], offsets: NDArray[np.integer]
) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """Validate offsets and return the covered bytes plus offsets rebased to 0."""
    if compressed.ndim != 1 or compressed.dtype != np.uint8:
        raise TypeError("compressed must be a 1-D uint8 array")
    if offsets.ndim != 1 or not np.issubdtype(offsets.dtype, np.integer):
        raise TypeError("offsets must be a 1-D integer array")
    if offsets.size == 0:
        return compressed[:0], np.zeros(1, dtype=np.int64)
    offs = offsets.astype(np.int64)
    start, end = int(offs[0]), int(offs[-1])
    if start < 0 or end > compressed.size or bool(np.any(np.diff(offs) < 0)):
        raise CorruptFileError(
            f"FSST value offsets must be non-decreasing within 0..{compressed.size}, "
            f"got range {start}..{end}"
        )
    return compressed[start:end], offs - start


def _expansion_rows(
    data: NDArray[np.uint8], rel: NDArray[np.int64], table: FsstSymbolTable
) -> NDArray[np.int64]:
    """Map each compressed byte to the row of ``table.expansions`` it emits.

    Escapes map to row 255 (length 0) and their payload bytes to 256 + byte.
    """
    n = data.size
    value_start = np.zeros(n, dtype=bool)
    starts = rel[:-1]
    value_start[starts[starts < n]] = True
    is_escape = _find_escapes(data, value_start)
    # A payload is the byte right after an escape, inside the same value.
    after_escape = np.zeros(n, dtype=bool)
    after_escape[1:] = is_escape[:-1]
    dangling = is_escape & np.append(value_start[1:], True)
    if bool(dangling.any()):
        pos = int(np.flatnonzero(dangling)[0])
        raise CorruptFileError(f"FSST escape at compressed byte {pos} has no payload byte")
    rows = data.astype(np.int64)
    rows[after_escape] += 256
    _check_codes(rows, is_escape, table)
    return rows


def _find_escapes(data: NDArray[np.uint8], value_start: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """Mark the 255 bytes that act as escapes (not as escaped payloads).

    A run of 255 bytes always begins at a code position: the byte before it is
    a non-255 code or a payload, and either is followed by a code.  Inside the
    run escapes and payloads alternate, so the escapes are the even positions
    counted from the run start.  Runs restart at value starts because each
    value is decoded on its own.
    """
    n = data.size
    idx = np.arange(n, dtype=np.int64)
    is_ff = data == _ESCAPE
    prev_ff = np.zeros(n, dtype=bool)
    prev_ff[1:] = is_ff[:-1]
    run_start = is_ff & (~prev_ff | value_start)
    last_start = np.maximum.accumulate(np.where(run_start, idx, 0))
    escapes: NDArray[np.bool_] = is_ff & ((idx - last_start) % 2 == 0)
    return escapes


def _check_codes(
    rows: NDArray[np.int64], is_escape: NDArray[np.bool_], table: FsstSymbolTable
) -> None:
    """Reject codes that name a symbol the table does not define."""
    missing = (table.lengths[rows] == 0) & ~is_escape
    if bool(missing.any()):
        pos = int(np.flatnonzero(missing)[0])
        raise CorruptFileError(
            f"FSST code {int(rows[pos])} at compressed byte {pos} refers to a missing symbol "
            f"(the table has {table.num_symbols})"
        )


def _expand(
    rows: NDArray[np.int64], rel: NDArray[np.int64], table: FsstSymbolTable
) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    """Emit every row's bytes in order and map value offsets to output offsets."""
    out_len = table.lengths[rows]
    cum = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(out_len, out=cum[1:])
    total = int(cum[-1])
    # Every code writes its full 8-byte expansion at its output position, last byte
    # first: a byte past a symbol's end lands on a later symbol's byte of a smaller
    # index, which is written after it, so only the real bytes survive.
    words = np.take(table.expansions, rows, axis=0)
    buffer = np.empty(total + _MAX_SYMBOL_LEN, dtype=np.uint8)
    starts = cum[:-1]
    for k in range(_MAX_SYMBOL_LEN - 1, -1, -1):
        buffer[starts + k] = words[:, k]
    out: NDArray[np.uint8] = buffer[:total]
    return cum[rel], out
