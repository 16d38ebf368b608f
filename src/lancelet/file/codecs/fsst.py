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
per-byte Python loop.  With numba installed the expansion is one compiled loop
instead (:mod:`lancelet.file.codecs.jit`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from lancelet.errors import CorruptFileError
from lancelet.file.codecs import jit
from lancelet.file.codecs.kernels import fsst as kernels
from lancelet.file.parallel import WORKERS, map_columns, serial

__all__ = [
    "FSST_SYMBOL_TABLE_SIZE",
    "FsstSymbolTable",
    "fsst_decompress",
    "fsst_decompress_pages",
    "parse_symbol_table",
]

FSST_SYMBOL_TABLE_SIZE = 8 + 256 * 8 + 256
"""Size of the symbol table blob the reference writer stores in every page."""

_MAGIC = 0x46535354
_ESCAPE = 255
_MAX_SYMBOL_LEN = 8
_HEADER_SIZE = 8
# Pages of at least twice this many compressed bytes expand in parts, on the decode
# threads.
PART_MIN_BYTES = 2 << 20
# The most room expanding in one pass reserves (untouched room is address space only).
ONE_PASS_MAX_BYTES = 1 << 30


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

    def as_arrow(self, large: bool) -> pa.Array:
        """The 512 rows as a binary array (``large``: with 64-bit offsets)."""
        key = "_large" if large else "_small"
        found = self.__dict__.get(key)
        if found is None:
            dtype = np.int64 if large else np.int32
            offsets = np.zeros(len(self.lengths) + 1, dtype=dtype)
            np.cumsum(self.lengths, out=offsets[1:])
            used = np.arange(_MAX_SYMBOL_LEN) < self.lengths[:, None]
            data = np.ascontiguousarray(self.expansions[used])
            kind = pa.large_binary() if large else pa.binary()
            found = pa.Array.from_buffers(
                kind, len(self.lengths), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
            )
            # Frozen, yet worth keeping: every page decode of a column reuses it.
            self.__dict__[key] = found
        return found


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
    if jit.enabled():
        return _compiled_expand(data, rel, table)
    rows = _expansion_rows(data, rel, table)
    return _expand(rows, rel, table)


def fsst_decompress_pages(
    tables: Sequence[FsstSymbolTable],
    compressed: NDArray[np.uint8],
    offsets: NDArray[np.integer],
    counts: Sequence[int],
) -> tuple[NDArray[np.int64], NDArray[np.uint8]] | None:
    """:func:`fsst_decompress` of several pages' values at once: ``counts[k]`` values
    after the pages before it are page ``k``'s, expanded with ``tables[k]``, all in one
    compiled pass (a compaction's hundred small pages of a text column cost one call,
    not a hundred).  None when it cannot be done so (no compiled kernels, a page
    stored uncompressed, more room than one pass reserves): expand page by page.
    Errors do not name the page."""
    if not jit.enabled() or not tables or not all(t.compressed for t in tables):
        return None
    data, rel = _slice_values(np.asarray(compressed), np.asarray(offsets))
    per_page = np.asarray(counts, dtype=np.int64)
    if len(per_page) != len(tables) or int(per_page.sum()) != len(rel) - 1:
        raise CorruptFileError("the FSST pages hold other counts of values than given")
    return _expand_pages(data, rel, tables, np.cumsum(per_page))


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
) -> NDArray[np.uint16]:
    """Map each compressed byte to the row of ``table.expansions`` it emits.

    Escapes map to row 255 (length 0) and their payload bytes to 256 + byte.  Escape
    bytes are rare, so everything about them works on their positions only.
    """
    rows = data.astype(np.uint16)
    ff = np.flatnonzero(data == _ESCAPE)
    escapes = _find_escapes(ff, rel, data.size)
    payloads = escapes + 1
    dangling = _is_value_start(payloads, rel, data.size)
    if bool(dangling.any()):
        raise _dangling(int(escapes[np.argmax(dangling)]))
    rows[payloads] += 256
    _check_codes(data, escapes, payloads, table)
    return rows


def _compiled_expand(
    data: NDArray[np.uint8], rel: NDArray[np.int64], table: FsstSymbolTable
) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    """The values expanded by the compiled kernels: on one thread in one pass, else
    sized, then written, each pass in parts of about equal bytes on the decode
    threads (the kernels release the GIL)."""
    data = np.ascontiguousarray(data)
    parts = _parts(rel, len(data))
    # Sizing first costs a third more CPU: for two parts, more than their threads win
    # back while the other cores decode other columns or serve other work.
    if len(parts) <= 2 or serial():
        fused = _expand_in_one_pass(data, rel, table)
        if fused is not None:
            return fused

    def sizes(part: tuple[int, int]) -> tuple[NDArray[np.int64], int, int]:
        a, b = part
        return kernels.expanded_sizes(data, rel[a : b + 1], table.lengths, table.num_symbols)

    counted = map_columns(sizes, parts)
    for _, error, pos in counted:
        if error == kernels.DANGLING_ESCAPE:
            raise _dangling(pos)
        if error == kernels.MISSING_SYMBOL:
            raise _missing(int(data[pos]), pos, table)
    offsets = np.empty(len(rel), np.int64)
    offsets[0] = 0
    base = 0
    starts = []
    for (a, b), (part_offsets, _, _) in zip(parts, counted, strict=True):
        offsets[a + 1 : b + 1] = part_offsets[1:] + base
        starts.append(base)
        base += int(part_offsets[-1])
    out = np.empty(base // 8 + 1, np.uint64)
    words = _symbol_words(table)

    def write(k: int) -> tuple[int, int, int, int]:
        begin, end = int(rel[parts[k][0]]), int(rel[parts[k][1]])
        edges = kernels.expand_into(data, begin, end, words, table.lengths, out, starts[k])
        return int(edges[0]), int(edges[1]), int(edges[2]), int(edges[3])

    shared: dict[int, int] = {}
    for head_at, head, tail_at, tail in map_columns(write, range(len(parts))):
        for at, word in ((head_at, head), (tail_at, tail)):
            if at >= 0:
                shared[at] = shared.get(at, 0) | word  # each part's bytes, the rest zero
    for at, word in shared.items():
        out[at] = word
    return offsets, out.view(np.uint8)[:base]


def _expand_in_one_pass(
    data: NDArray[np.uint8], rel: NDArray[np.int64], table: FsstSymbolTable
) -> tuple[NDArray[np.int64], NDArray[np.uint8]] | None:
    """The values expanded as they are sized, into room for every code at its longest
    (untouched beyond what they fill, so never resident), or None when that room
    would pass :data:`ONE_PASS_MAX_BYTES`.  Sizing in a pass of its own costs a third
    more; parts on threads would each need their own room, and moving them together
    would keep a second copy of all but the first resident."""
    return _expand_pages(data, rel, [table], np.array([len(rel) - 1], dtype=np.int64))


def _expand_pages(
    data: NDArray[np.uint8],
    rel: NDArray[np.int64],
    tables: Sequence[FsstSymbolTable],
    ends: NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.uint8]] | None:
    """The values of pages expanded in one compiled pass (page ``k``'s values end at
    ``ends[k]`` and expand with ``tables[k]``), or None when the room for every code
    at its longest would pass :data:`ONE_PASS_MAX_BYTES`."""
    longest = [max(int(t.lengths[: t.num_symbols].max(initial=1)), 1) for t in tables]
    if len(tables) == 1:  # most calls: a page's values, without the stacking below
        room = int(rel[-1] - rel[0]) * longest[0]
        symbols = _symbol_words(tables[0]).view(np.uint8).reshape(1, -1, 8)
        lengths = tables[0].lengths.reshape(1, -1)
    else:
        firsts = np.concatenate(([0], ends[:-1]))
        room = int(((rel[ends] - rel[firsts]) * np.array(longest)).sum())
        symbols = np.stack([_symbol_words(t).view(np.uint8).reshape(-1, 8) for t in tables])
        lengths = np.stack([t.lengths for t in tables])
    if room > ONE_PASS_MAX_BYTES:
        return None
    out = np.empty(room + 8, np.uint8)  # the last symbol stored whole
    limits = np.array([t.num_symbols for t in tables], dtype=np.int64)
    offsets, error, pos = kernels.expand_pages(data, rel, ends, symbols, lengths, limits, out)
    if error == kernels.DANGLING_ESCAPE:
        raise _dangling(pos)
    if error == kernels.MISSING_SYMBOL:
        page = int(np.searchsorted(rel[ends], pos, side="right"))
        raise _missing(int(data[pos]), pos, tables[page])
    return offsets, out[: int(offsets[-1])]


def _parts(rel: NDArray[np.int64], size: int) -> list[tuple[int, int]]:
    """Value ranges of about equal compressed bytes, one per decode thread for big
    pages; a small page is one part."""
    count = len(rel) - 1
    wanted = max(1, min(WORKERS, size // PART_MIN_BYTES))
    targets = rel[0] + (int(rel[-1] - rel[0]) * np.arange(1, wanted)) // wanted
    cuts = [0, *np.searchsorted(rel, targets).tolist(), count]
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a] or [(0, count)]


def _symbol_words(table: FsstSymbolTable) -> NDArray[np.uint64]:
    """Each row of ``table`` as a little-endian word, its unused bytes zero."""
    found: NDArray[np.uint64] | None = table.__dict__.get("_words")
    if found is None:
        used = np.arange(8) < table.lengths[:, None]
        rows = np.where(used, table.expansions, 0).astype(np.uint8)
        found = np.ascontiguousarray(rows).view("<u8").ravel()
        found.setflags(write=False)
        # Frozen, yet worth keeping: every expansion with the table uses it.
        table.__dict__["_words"] = found
    return found


def _dangling(pos: int) -> CorruptFileError:
    return CorruptFileError(f"FSST escape at compressed byte {pos} has no payload byte")


def _missing(code: int, pos: int, table: FsstSymbolTable) -> CorruptFileError:
    return CorruptFileError(
        f"FSST code {code} at compressed byte {pos} refers to a missing symbol "
        f"(the table has {table.num_symbols})"
    )


def _is_value_start(
    positions: NDArray[np.int64], rel: NDArray[np.int64], n: int
) -> NDArray[np.bool_]:
    """Which ``positions`` begin a value, or lie past the last byte."""
    starts = rel[:-1]
    out: NDArray[np.bool_] = positions >= n
    if len(starts):
        k = np.searchsorted(starts, positions)
        found = starts[np.minimum(k, len(starts) - 1)] == positions
        out |= (k < len(starts)) & found
    return out


def _find_escapes(ff: NDArray[np.int64], rel: NDArray[np.int64], n: int) -> NDArray[np.int64]:
    """The positions among ``ff`` (the 255 bytes, ascending) that act as escapes.

    A run of 255 bytes always begins at a code position: the byte before it is
    a non-255 code or a payload, and either is followed by a code.  Inside the
    run escapes and payloads alternate, so the escapes are the even positions
    counted from the run start.  Runs restart at value starts because each
    value is decoded on its own.
    """
    if ff.size == 0:
        return ff
    run_start = np.ones(ff.size, dtype=bool)
    run_start[1:] = ff[1:] != ff[:-1] + 1
    run_start |= _is_value_start(ff, rel, n)
    first = ff[run_start][np.cumsum(run_start) - 1]
    escapes: NDArray[np.int64] = ff[(ff - first) % 2 == 0]
    return escapes


def _check_codes(
    data: NDArray[np.uint8],
    escapes: NDArray[np.int64],
    payloads: NDArray[np.int64],
    table: FsstSymbolTable,
) -> None:
    """Reject codes that name a symbol the table does not define.

    Codes at or above the symbol count name no symbol; only escapes and their
    payloads may hold such bytes.
    """
    high = np.flatnonzero(data >= table.num_symbols)
    if high.size == 0:
        return
    allowed = np.concatenate([escapes, payloads])
    missing = high[~np.isin(high, allowed)]
    if missing.size:
        pos = int(missing[0])
        raise _missing(int(data[pos]), pos, table)


_INT32_LIMIT = 2**31 - 1


def _expand(
    rows: NDArray[np.uint16], rel: NDArray[np.int64], table: FsstSymbolTable
) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
    """Emit every row's bytes in order and map value offsets to output offsets.

    The 512 expansions form a small binary array; taking it at ``rows`` is the
    expansion, done by Arrow's take kernel in one pass (offsets and bytes).
    """
    large = rows.size * _MAX_SYMBOL_LEN > _INT32_LIMIT
    expanded = table.as_arrow(large).take(pa.array(rows))
    bufs = expanded.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32)
    offsets = offsets[expanded.offset : expanded.offset + rows.size + 1]
    total = int(offsets[-1]) - int(offsets[0])
    base = int(offsets[0])
    out: NDArray[np.uint8] = np.frombuffer(bufs[2], dtype=np.uint8)[base : base + total]
    if len(out) != total:
        raise CorruptFileError("FSST expansion produced fewer bytes than its offsets name")
    return offsets[rel].astype(np.int64) - base, out
