"""Cutting variable-width values into mini-block chunks, as compiled loops; same
output as ``v2_1.write.miniblock._variable_counts`` and ``variable_chunks``."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from lancelet.file.codecs.jit import kernel

U8 = NDArray[np.uint8]
I64 = NDArray[np.int64]
AnyInt = NDArray[np.unsignedinteger[Any]]


@kernel
def variable_counts(offsets: I64, width: int, aim: int, max_values: int) -> I64:
    """Values per chunk: the most values, a power of two from 2 to ``max_values``,
    whose offsets and bytes fit in ``aim`` bytes; the rest in one last chunk once it
    fits."""
    total = len(offsets) - 1
    counts = np.empty(total, dtype=np.int64)
    chunks = 0
    start = 0
    while start < total:
        # Values [start, j) cost offsets[j] - offsets[start] + (j - start + 1) * width.
        limit = offsets[start] + aim - width
        j = start + 1
        cap = start + max_values + 2  # past max_values the answer no longer changes
        while j <= total and j < cap and offsets[j] + (j - start) * width <= limit:
            j += 1
        fits = j - 1 - start
        remaining = total - start
        if fits >= remaining and remaining <= max_values:
            taken = remaining
        else:
            power = 1
            while power * 2 <= fits:
                power *= 2
            taken = min(max(power, 2), max_values, remaining)
        counts[chunks] = taken
        chunks += 1
        start += taken
    return counts[:chunks]


@kernel
def variable_chunks(offsets: I64, data: U8, counts: I64, width: int, pad: int) -> tuple[U8, I64]:
    """Per chunk: its values' offsets (``width`` bytes, little endian, relative to
    the chunk, the first just past the offsets), their bytes, padding to ``width``."""
    sizes = np.empty(len(counts), dtype=np.int64)
    first = 0
    for c in range(len(counts)):
        n = counts[c]
        size = (n + 1) * width + offsets[first + n] - offsets[first]
        sizes[c] = size + (-size) % width
        first += n
    out = np.full(sizes.sum(), pad, dtype=np.uint8)
    at = 0
    first = 0
    for c in range(len(counts)):
        n = counts[c]
        head = (n + 1) * width
        base = offsets[first]
        for k in range(n + 1):
            value = offsets[first + k] - base + head
            for b in range(width):
                out[at + k * width + b] = (value >> (8 * b)) & 0xFF
        end = offsets[first + n]
        out[at + head : at + head + end - base] = data[base:end]
        at += sizes[c]
        first += n
    return out, sizes


@kernel
def value_offsets(data: U8, starts: I64, counts: I64, sizes: I64, width: int, out: I64) -> int:
    """Read back from mini-block chunks (``counts[c] + 1`` offsets of ``width`` bytes,
    little endian, at ``data[starts[c]:]``, then the bytes; the chunk ``sizes[c]``
    long): ``out`` gets the offsets of every value with the chunks' bytes back to
    back, from 0 (``out`` holds the counts' sum plus one).  Returns -1, or the first
    chunk whose offsets do not start right after themselves, decrease or pass its
    end.  The caller checks that each chunk's offsets lie in ``data``."""
    out[0] = 0
    total = 0
    k = 0
    for c in range(starts.shape[0]):
        at, count = starts[c], counts[c]
        previous = 0
        for j in range(count + 1):
            offset = 0
            for b in range(width):
                offset |= np.int64(data[at + j * width + b]) << (8 * b)
            if j == 0:
                if offset != (count + 1) * width:
                    return c
            elif offset < previous:
                return c
            else:
                total += offset - previous
                k += 1
                out[k] = total
            previous = offset
        if previous > sizes[c]:
            return c
    return -1


@kernel
def copy_ranges(base: U8, starts: I64, lengths: I64, out: U8) -> int:
    """``base[starts[i] : starts[i] + lengths[i]]`` back to back into ``out`` (which
    holds the lengths' sum).  Returns -1, or the first range not inside ``base``
    (nothing is read from it)."""
    at = 0
    size = base.shape[0]
    for i in range(starts.shape[0]):
        start, length = starts[i], lengths[i]
        if start < 0 or length < 0 or start + length > size or at + length > out.shape[0]:
            return i
        for b in range(length):
            out[at + b] = base[start + b]
        at += length
    return -1


@kernel
def select_values(
    data: U8, words: AnyInt, starts: I64, counts: I64, sizes: I64, index: I64, out: I64
) -> tuple[U8, int]:
    """The values ``index`` (any order) of mini-block chunks laid out as
    :func:`value_offsets` reads them, ``words`` being ``data`` as offsets (its whole
    words: ``data`` viewed as 32- or 64-bit unsigned integers) and ``starts`` and
    ``sizes`` in bytes, each start a whole number of words: ``out``
    (``len(index) + 1``) gets their offsets from 0, and their bytes are returned,
    with -1; or, with nothing copied, the first chunk whose offsets do not start
    right after themselves, decrease or pass its end or ``data`` (every chunk's
    offsets are checked, picked or not), or the number of chunks when an index lies
    past their values.  The caller checks that each chunk's offsets lie in ``data``."""
    chunks = starts.shape[0]
    width = words.itemsize
    empty = np.zeros(0, dtype=np.uint8)
    # firsts[c]: the values before chunk c; at[c]: its first offset's word.
    firsts = np.empty(chunks + 1, dtype=np.int64)
    at = np.empty(chunks, dtype=np.int64)
    total = 0
    for c in range(chunks):
        first, count = starts[c] // width, counts[c]
        previous = np.int64(words[first])
        if previous != (count + 1) * width:
            return empty, c
        for j in range(1, count + 1):
            offset = np.int64(words[first + j])
            if offset < previous:
                return empty, c
            previous = offset
        if previous > sizes[c] or starts[c] + previous > data.shape[0]:
            return empty, c
        firsts[c] = total
        at[c] = first
        total += count
    firsts[chunks] = total
    # Each picked value's chunk: walked forward while the index ascends (a take's
    # does), found by bisection when it steps back.
    chunk_of = np.empty(index.shape[0], dtype=np.int64)
    out[0] = 0
    c = 0
    for i in range(index.shape[0]):
        v = index[i]
        if v < 0 or v >= total:
            return empty, chunks
        if v < firsts[c]:
            c = np.searchsorted(firsts, v, side="right") - 1
        while v >= firsts[c + 1]:
            c += 1
        chunk_of[i] = c
        word = at[c] + v - firsts[c]
        out[i + 1] = out[i] + np.int64(words[word + 1]) - np.int64(words[word])
    picked = np.empty(out[index.shape[0]], dtype=np.uint8)
    i = 0
    while i < index.shape[0]:
        # A run of values one after another in one chunk is copied at once.
        c, first = chunk_of[i], i
        while i + 1 < index.shape[0] and index[i + 1] == index[i] + 1 and chunk_of[i + 1] == c:
            i += 1
        begin = starts[c] + np.int64(words[at[c] + index[first] - firsts[c]])
        size = out[i + 1] - out[first]
        picked[out[first] : out[first] + size] = data[begin : begin + size]
        i += 1
    return picked, -1
