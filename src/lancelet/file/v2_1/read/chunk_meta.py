"""Mini-block chunk metadata: the words that size and count a page's chunks, and
each chunk's header, parsed and checked.

A page's chunk metadata holds a word per chunk (u16, or u32 with
``has_large_chunk``): the low 4 bits give log2 of the chunk's value count, except in
the last chunk, whose count is what remains of the page's items; the rest give the
chunk's size in 8-byte words, minus one.  A chunk starts with its header: u16 level
count and level buffer sizes, then a size per value buffer, padded to 8 bytes.
"""

from __future__ import annotations

import struct
from itertools import accumulate
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
    count = len(meta) // word
    if count <= FEW_CHUNKS:
        return _few_chunks(
            struct.unpack(f"<{count}{'H' if word == 2 else 'I'}", meta), items, buffer_len
        )
    wide = np.frombuffer(meta, dtype=f"<u{word}").astype(np.int64)
    sizes = ((wide >> 4) + 1) * ALIGN
    counts = np.left_shift(np.int64(1), wide & 0xF)
    offsets = np.cumsum(sizes) - sizes
    _check_sizes(int(offsets[-1] + sizes[-1]), buffer_len)
    if bool(np.any((wide[:-1] & 0xF) == 0)):
        raise CorruptFileError(_NO_COUNT)
    counts[-1] = _last_count(items, int(counts[:-1].sum()), int(wide[-1]), int(counts[-1]))
    return _read_only(sizes, offsets, counts, np.cumsum(counts) - counts)


def _few_chunks(words: tuple[int, ...], items: int, buffer_len: int) -> ChunkTable:
    """:func:`_chunk_table` of a page of few chunks (most pages of a small file):
    Python ints and one array, where a cold process pays for each numpy call."""
    sizes = [((w >> 4) + 1) * ALIGN for w in words]
    counts = [1 << (w & 0xF) for w in words]
    _check_sizes(sum(sizes), buffer_len)
    if not words:
        if items:
            raise CorruptFileError(f"no chunks for {items} items")
        return _read_only(*np.zeros((4, 0), dtype=np.int64))
    if any(w & 0xF == 0 for w in words[:-1]):
        raise CorruptFileError(_NO_COUNT)
    counts[-1] = _last_count(items, sum(counts[:-1]), words[-1], counts[-1])
    offsets = list(accumulate(sizes[:-1], initial=0))
    starts = list(accumulate(counts[:-1], initial=0))
    table = np.array([sizes, offsets, counts, starts], dtype=np.int64)
    table.setflags(write=False)  # its rows, views of it, are read-only too
    return ChunkTable(table[0], table[1], table[2], table[3], min(counts))


_NO_COUNT = "a chunk other than the last has no value count"


def _check_sizes(total: int, buffer_len: int) -> None:
    if total != buffer_len:
        raise CorruptFileError(
            f"chunk sizes add up to {total} bytes, the chunk buffer holds {buffer_len}"
        )


def _last_count(items: int, before: int, last_word: int, written: int) -> int:
    """The last chunk's value count: written (a power of two) or left to the page's
    total, which the counts must add up to."""
    last = items - before
    if last < 0 or (last_word & 0xF and written != last):
        raise CorruptFileError(f"chunk value counts do not add up to the page's {items} items")
    return last


def _read_only(sizes: I64, offsets: I64, counts: I64, starts: I64) -> ChunkTable:
    for array in (sizes, offsets, counts, starts):
        array.setflags(write=False)
    return ChunkTable(sizes, offsets, counts, starts, int(counts.min()) if len(counts) else 0)
