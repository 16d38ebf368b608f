"""Mini-block chunk metadata words parsed into each chunk's size, offset, value count
and first value, checked against a direct reading of the format's rule: the low 4
bits give log2 of the chunk's value count (the last chunk's is what remains of the
page's items), the rest the chunk's size in 8-byte words, minus one."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.errors import CorruptFileError
from lancelet.file.v2_1.read.chunk_meta import FEW_CHUNKS, chunk_table

Table = tuple[list[int], list[int], list[int], list[int]]


def _expected(words: list[int], items: int, buffer_len: int) -> Table | None:
    """(sizes, offsets, counts, starts), or None where the words are damaged."""
    sizes = [((w >> 4) + 1) * 8 for w in words]
    counts = [2 ** (w & 0xF) for w in words]
    if sum(sizes) != buffer_len or (not words and items):
        return None
    if not words:
        return [], [], [], []
    if any(w & 0xF == 0 for w in words[:-1]):
        return None
    last = items - sum(counts[:-1])
    if last < 0 or (words[-1] & 0xF and counts[-1] != last):
        return None
    counts[-1] = last
    offsets = [sum(sizes[:i]) for i in range(len(words))]
    starts = [sum(counts[:i]) for i in range(len(words))]
    return sizes, offsets, counts, starts


@st.composite
def _pages(draw: st.DrawFn) -> tuple[bytes, int, int, int]:
    wide = draw(st.booleans())
    most = 0xFFFFFFFF if wide else 0xFFFF
    # Both sides of the few-chunks path, and words a writer makes (log2 counts of 1..12).
    number = draw(st.integers(0, FEW_CHUNKS + 8))
    words = draw(
        st.lists(
            st.one_of(st.integers(0, most), st.integers(1, 12).map(lambda k: (5 << 4) | k)),
            min_size=number,
            max_size=number,
        )
    )
    sizes = sum(((w >> 4) + 1) * 8 for w in words)
    counts = sum(2 ** (w & 0xF) for w in words[:-1])
    last = 2 ** (words[-1] & 0xF) if words else 0
    items = draw(st.sampled_from([counts + last, counts + 1, counts, max(counts - 1, 0)]))
    buffer_len = draw(st.sampled_from([sizes, sizes + 8]))
    meta = struct.pack(f"<{len(words)}{'I' if wide else 'H'}", *words)
    return meta, 4 if wide else 2, items, buffer_len


@settings(max_examples=300, deadline=None)
@given(page=_pages())
def test_chunk_tables_follow_the_format(page: tuple[bytes, int, int, int]) -> None:
    meta, word, items, buffer_len = page
    words = list(struct.unpack(f"<{len(meta) // word}{'I' if word == 4 else 'H'}", meta))
    expected = _expected(words, items, buffer_len)
    if expected is None:
        with pytest.raises(CorruptFileError):
            chunk_table(meta, word, items, buffer_len)
        return
    table = chunk_table(meta, word, items, buffer_len)
    got = (
        table.sizes.tolist(),
        table.offsets.tolist(),
        table.counts.tolist(),
        table.starts.tolist(),
    )
    assert got == expected
    assert all(a.dtype == np.int64 and not a.flags.writeable for a in table[:4])
    assert table.fewest == (min(table.counts.tolist()) if words else 0)


def test_metadata_of_part_of_a_word_is_refused() -> None:
    with pytest.raises(CorruptFileError, match="not whole words"):
        chunk_table(b"\x00\x00\x00", 2, 1, 8)
