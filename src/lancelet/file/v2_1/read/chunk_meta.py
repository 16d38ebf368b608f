"""Mini-block chunk metadata: the words that size and count a page's chunks, and
each chunk's header, parsed and checked.

A page's chunk metadata holds a word per chunk (u16, or u32 with
``has_large_chunk``): the low 4 bits give log2 of the chunk's value count, except in
the last chunk, whose count is what remains of the page's items; the rest give the
chunk's size in 8-byte words, minus one.  A chunk starts with its header: u16 level
count and level buffer sizes, then a size per value buffer, padded to 8 bytes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from lancelet.errors import CorruptFileError
from lancelet.file.memo import Memo
from lancelet.file.v2_1.read.values import I64, U8

__all__ = ["ALIGN", "FEW_CHUNKS", "ChunkTable", "chunk_table", "header_words", "pad"]

ALIGN = 8
# A take whose rows span at most this many chunks of a page without lists reads them
# one chunk at a time (``MiniBlockPage._take_few``); a page of at most this many
# chunks has its metadata parsed with Python ints.
FEW_CHUNKS = 16


def pad(sizes: I64) -> I64:
    return (sizes + (ALIGN - 1)) // ALIGN * ALIGN


def header_words(data: U8, starts: I64, small: int, big: int, nbuf: int) -> tuple[I64, I64]:
    """Each chunk's header: ``small`` u16 words (level count, level buffer sizes),
    then ``nbuf`` value buffer sizes of ``big`` bytes, as (chunks, small) and
    (chunks, nbuf) arrays, gathered in one pass."""
    width = 2 * small + big * nbuf
    raw = data[starts[:, None] + np.arange(width, dtype=np.int64)]
    words = np.ascontiguousarray(raw[:, : 2 * small]).view("<u2").astype(np.int64)
    sizes = np.ascontiguousarray(raw[:, 2 * small :]).view(f"<u{big}").astype(np.int64)
    return words.reshape(len(starts), small), sizes.reshape(len(starts), nbuf)


class ChunkTable(NamedTuple):
    """Each chunk's size, offset, value count and first value (read-only arrays), and
    the fewest values a chunk holds (0 without chunks)."""

    sizes: I64
    offsets: I64
    counts: I64
    starts: I64
    fewest: int


# Chunk tables by what they follow from: the pages of a column in files written
# alike mostly hold the same chunks (a compaction opens a hundred such files).  The
# arrays are shared, so they are read-only.
_chunk_tables: Memo[ChunkTable] = Memo(4096)


def chunk_table(meta: bytes, word: int, items: int, buffer_len: int) -> ChunkTable:
    """Each chunk's size, offset, value count and first value (read-only arrays,
    shared by pages of the same metadata)."""
    key = (meta, word, items, buffer_len)
    return _chunk_tables.get(key, lambda: _chunk_table(*key))


def _chunk_table(meta: bytes, word: int, items: int, buffer_len: int) -> ChunkTable:
    """Each chunk's size, offset, value count and first value, from the chunk
    metadata words, checked against the page's items and chunk buffer."""
    if len(meta) % word:
        raise CorruptFileError(f"chunk metadata of {len(meta)} bytes is not whole words")
    words = np.frombuffer(meta, dtype=f"<u{word}")
    if len(words) <= FEW_CHUNKS:
        # A small page: Python ints cost less than the dozen numpy calls below.
        listed = words.tolist()
        sizes = np.array([((w >> 4) + 1) * ALIGN for w in listed], dtype=np.int64)
        logs = [w & 0xF for w in listed]
        counts = np.array([1 << log for log in logs], dtype=np.int64)
        gap = 0 in logs[:-1]
    else:
        wide = words.astype(np.int64)
        sizes = ((wide >> 4) + 1) * ALIGN
        counts = np.left_shift(np.int64(1), wide & 0xF)
        gap = bool(np.any((wide[:-1] & 0xF) == 0))
    offsets = np.cumsum(sizes) - sizes
    total = int(offsets[-1] + sizes[-1]) if len(sizes) else 0
    if total != buffer_len:
        raise CorruptFileError(
            f"chunk sizes add up to {total} bytes, the chunk buffer holds {buffer_len}"
        )
    if len(words) == 0:
        if items:
            raise CorruptFileError(f"no chunks for {items} items")
        return _read_only(sizes, offsets, counts, counts)
    if gap:
        raise CorruptFileError("a chunk other than the last has no value count")
    last = items - int(counts[:-1].sum())
    # The last chunk's count is written (a power of two) or left to the page's total.
    if last < 0 or (int(words[-1]) & 0xF and int(counts[-1]) != last):
        raise CorruptFileError(f"chunk value counts do not add up to the page's {items} items")
    counts[-1] = last
    return _read_only(sizes, offsets, counts, np.cumsum(counts) - counts)


def _read_only(sizes: I64, offsets: I64, counts: I64, starts: I64) -> ChunkTable:
    for array in (sizes, offsets, counts, starts):
        array.setflags(write=False)
    return ChunkTable(sizes, offsets, counts, starts, int(counts.min()) if len(counts) else 0)
