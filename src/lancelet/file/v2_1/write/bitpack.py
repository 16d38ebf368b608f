"""FastLanes bit packing as the 2.1 mini-block layout stores it.

*Inline* bitpacking (values): every chunk is 1024 values (the last zero-padded),
stored as one word of the uncompressed width holding the chunk's bit width, then
the chunk packed at that width.  *Out-of-line* bitpacking (repetition and
definition levels, and a 2.2 page's dictionary of more than 1024 integers): one bit
width for the whole page (in the encoding), each mini-block chunk's levels (or the
dictionary) packed in blocks of 1024; a chunk's last partial block
is zero-padded and packed when that is smaller than storing it raw, and stored
raw otherwise (the reader tells the two apart by the buffer's length).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lancelet.file.codecs.bitpacking import _pack_chunks
from lancelet.file.v2_1.write.chunks import Chunked, gather, scatter

BLOCK = 1024
U8 = NDArray[np.uint8]
I64 = NDArray[np.int64]
UInt = NDArray[np.unsignedinteger]


def bit_lengths(values: UInt) -> I64:
    """Bits needed by each (unsigned) value: the binary exponent of its float64 (a few
    numpy calls however wide the values, where a step per bit cost ~0.3 ms even for
    one 64-bit value)."""
    exps = np.frexp(values.astype(np.float64))[1].astype(np.int64)
    # A value above 2**53 may round up to the next power of two: one bit too many.
    over = exps > 53
    if over.any():
        shifts = (exps[over] - 1).astype(values.dtype)
        exps[over] -= (values[over] >> shifts) == 0
    return exps


def block_widths(values: UInt) -> I64:
    """The bit width of each 1024-value block (the last one may be partial)."""
    blocks = -(-len(values) // BLOCK)
    padded = np.zeros(blocks * BLOCK, dtype=values.dtype)
    padded[: len(values)] = values
    ors = np.bitwise_or.reduce(padded.reshape(blocks, BLOCK), axis=1)
    return bit_lengths(ors)


def _pack_rows(blocks: UInt, widths: I64) -> list[tuple[NDArray[np.bool_], U8]]:
    """Pack each 1024-value row at its own width: (which rows, their bytes) per width."""
    out = []
    for width in np.unique(widths):
        rows = widths == width
        if width == 0:
            packed = np.zeros((int(rows.sum()), 0), dtype=np.uint8)
        else:
            words = _pack_chunks(blocks[rows], int(width))
            packed = words.reshape(words.shape[0], -1).view(np.uint8)
        out.append((rows, packed))
    return out


def inline_size(values: UInt) -> int:
    """Bytes inline bitpacking takes for ``values``."""
    word = values.dtype.itemsize
    widths = block_widths(values)
    return int(len(widths) * word + (widths * BLOCK // 8).sum())


def inline_chunks(values: UInt) -> Chunked:
    """One chunk per 1024 values: the width word, then the packed block."""
    count = -(-len(values) // BLOCK)
    padded = np.zeros(count * BLOCK, dtype=values.dtype)
    padded[: len(values)] = values
    return inline_rows(padded.reshape(count, BLOCK))


def inline_rows(blocks: UInt) -> Chunked:
    """Each row of 1024 values (zero-padded) as its width word and packed block."""
    word = blocks.dtype.itemsize
    count = blocks.shape[0]
    widths = bit_lengths(np.bitwise_or.reduce(blocks, axis=1))
    sizes = (word + widths * (BLOCK // 8)).astype(np.int64)
    header = widths.astype(blocks.dtype).view(np.uint8).reshape(count, word)
    groups = _pack_rows(blocks, widths)
    if len(groups) == 1:  # one width: every row is the same size, side by side
        return Chunked(np.concatenate([header, groups[0][1]], axis=1).reshape(-1), sizes)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    out = np.zeros(int(sizes.sum()), dtype=np.uint8)
    out[(starts[:, None] + np.arange(word)).reshape(-1)] = header.reshape(-1)
    for rows, packed in groups:
        if packed.shape[1]:
            dest = starts[rows][:, None] + word + np.arange(packed.shape[1])
            out[dest.reshape(-1)] = packed.reshape(-1)
    return Chunked(out, sizes)


def out_of_line_chunks(values: UInt, counts: I64, width: int) -> Chunked:
    """Each chunk's ``counts[i]`` values (levels, or a dictionary's items) packed at
    ``width`` bits of their type's (see module doc)."""
    word = values.dtype.itemsize
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    full = counts // BLOCK
    rem = counts % BLOCK
    pack_tail = (rem > 0) & (width * (BLOCK - rem) < (8 * word - width) * rem)
    raw_tail = (rem > 0) & ~pack_tail
    packed_blocks = full + pack_tail
    num_blocks = int(packed_blocks.sum())
    owner = np.repeat(np.arange(len(counts)), packed_blocks)
    block_no = np.arange(num_blocks) - np.repeat(np.cumsum(packed_blocks) - packed_blocks,
                                                 packed_blocks)  # fmt: skip
    src = starts[owner] + block_no * BLOCK
    take = np.minimum(BLOCK, counts[owner] - block_no * BLOCK)
    blocks = np.zeros((num_blocks, BLOCK), dtype=values.dtype)
    mask = np.arange(BLOCK)[None, :] < take[:, None]
    index = src[:, None] + np.arange(BLOCK)[None, :]
    blocks[mask] = values[index[mask]]
    block_bytes = width * BLOCK // 8
    packed = np.zeros((0, block_bytes), dtype=np.uint8)
    if num_blocks:  # none when every chunk holds under a block, its tail stored raw
        packed = _pack_chunks(blocks, width).reshape(num_blocks, -1).view(np.uint8)
    tail_bytes = np.where(raw_tail, word * rem, 0)
    sizes = packed_blocks * block_bytes + tail_bytes
    out_starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    out = np.zeros(int(sizes.sum()), dtype=np.uint8)
    dest = out_starts[owner] + block_no * block_bytes
    out[(dest[:, None] + np.arange(block_bytes)).reshape(-1)] = packed.reshape(-1)
    tails = np.flatnonzero(raw_tail)
    if len(tails):
        src_starts = word * (starts[tails] + full[tails] * BLOCK)
        raw = gather(values.view(np.uint8), src_starts, tail_bytes[tails])
        dest_starts = out_starts[tails] + packed_blocks[tails] * block_bytes
        scatter(out, dest_starts, Chunked(raw, tail_bytes[tails]))
    return Chunked(out, sizes.astype(np.int64))
