"""FastLanes bit packing as a compiled loop; same output as
``bitpacking._pack_chunks``."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lancelet.file.codecs.jit import kernel

UInt = NDArray[np.unsignedinteger]
Positions = NDArray[np.intp]


@kernel
def pack(chunks: UInt, bits: int, positions: Positions, words: UInt) -> None:
    """Pack ``chunks`` (chunks, 1024) into ``words`` (chunks, bits, lanes), zeroed by
    the caller: value row ``r`` of lane ``l`` is ``chunks[:, positions[r, l]]``.

    Values are handled as 64-bit words; storing into a narrower ``words`` drops the
    bits above its width, which the next word receives."""
    width, lanes = positions.shape
    mask = (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
    for c in range(chunks.shape[0]):
        for row in range(width):
            word = row * bits // width
            shift = row * bits % width
            spill = shift + bits > width
            for lane in range(lanes):
                value = np.uint64(chunks[c, positions[row, lane]]) & mask
                words[c, word, lane] |= value << np.uint64(shift)
                if spill:
                    words[c, word + 1, lane] |= value >> np.uint64(width - shift)


@kernel
def unpack_inline(
    words: UInt,
    starts: NDArray[np.int64],
    sizes: NDArray[np.int64],
    counts: NDArray[np.int64],
    positions: Positions,
    out: UInt,
) -> int:
    """Inline bit-packed chunks of ``words`` (the chunks' word width, little-endian)
    into ``out``, back to back: the chunk at ``words[starts[c]:][:sizes[c]]`` is its bit
    count (one word) then 1024 values FastLanes-packed at that count; its first
    ``counts[c]`` values are kept (value row ``r`` of lane ``l`` is value
    ``positions[r, l]``).  Each value is one or two word loads.

    Returns -1, or the first chunk whose words do not hold what it says (nothing is
    read outside ``words`` then); the caller reports it.  ``out`` holds the counts' sum."""
    width = words.itemsize * 8
    lanes = 1024 // width
    at = 0
    for c in range(starts.shape[0]):
        start, size, count = starts[c], sizes[c], counts[c]
        if count < 0 or count > 1024 or size < 1 or start < 0:
            return c
        if start + size > words.shape[0]:
            return c
        bits = np.uint64(words[start])
        if bits > np.uint64(width) or size != 1 + 1024 * np.int64(bits) // width:
            return c
        nbits = np.int64(bits)
        if nbits == 0:
            for i in range(count):
                out[at + i] = 0
            at += count
            continue
        mask = np.uint64(0xFFFFFFFFFFFFFFFF)
        if nbits < 64:
            mask = (np.uint64(1) << np.uint64(nbits)) - np.uint64(1)
        data = start + 1
        for row in range(width):
            word = row * nbits // width
            shift = np.uint64(row * nbits % width)
            spill = shift + np.uint64(nbits) > np.uint64(width)
            low = data + word * lanes
            for lane in range(lanes):
                p = positions[row, lane]
                if p >= count:
                    continue
                value = np.uint64(words[low + lane]) >> shift
                if spill:
                    upper = np.uint64(words[low + lanes + lane])
                    value |= upper << (np.uint64(width) - shift)
                out[at + p] = value & mask
        at += count
    return -1


@kernel
def unpack_inline_selected(
    words: UInt,
    starts: NDArray[np.int64],
    sizes: NDArray[np.int64],
    counts: NDArray[np.int64],
    chunks: NDArray[np.int64],
    offsets: NDArray[np.int64],
    value_word: NDArray[np.int64],
    value_row: NDArray[np.int64],
    out: UInt,
) -> int:
    """Only some values of inline bit-packed chunks laid out as for
    :func:`unpack_inline`: value ``k`` of ``out`` is value ``offsets[k]`` of chunk
    ``chunks[k]``.  Value ``v`` of a chunk is in row ``value_row[v]`` of its lane, whose
    words start ``value_word[v]`` words into the packed values.  Every chunk is checked
    as the whole decode checks it; returns -1, or the first chunk found wrong."""
    width = words.itemsize * 8
    lanes = 1024 // width
    for c in range(starts.shape[0]):
        start, size, count = starts[c], sizes[c], counts[c]
        if count < 0 or count > 1024 or size < 1 or start < 0 or start + size > words.shape[0]:
            return c
        bits = np.int64(words[start])
        if bits < 0 or bits > width or size != 1 + 1024 * bits // width:
            return c
    for k in range(chunks.shape[0]):
        c, v = chunks[k], offsets[k]
        if c < 0 or c >= starts.shape[0] or v < 0 or v >= counts[c]:
            return int(starts.shape[0])
        start = starts[c]
        nbits = np.int64(words[start])
        if nbits == 0:
            out[k] = 0
            continue
        row = value_row[v]
        word = row * nbits // width
        shift = np.uint64(row * nbits % width)
        low = start + 1 + word * lanes + value_word[v]
        value = np.uint64(words[low]) >> shift
        if shift + np.uint64(nbits) > np.uint64(width):
            value |= np.uint64(words[low + lanes]) << (np.uint64(width) - shift)
        if nbits < 64:
            value &= (np.uint64(1) << np.uint64(nbits)) - np.uint64(1)
        out[k] = value
    return -1
