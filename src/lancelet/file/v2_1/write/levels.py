"""Repetition and definition levels cut along a mini-block page's chunks.

A chunk holds the levels of its values, plus those of null or empty lists before
its last value; entries without an item after the last value of a chunk go to
the next chunk (the last chunk takes the rest).  Levels are compressed as the
reference does for a page of ``u16`` levels: stored flat when bit packing cannot
pay, packed inline (a width per chunk) when the page holds at most 1024 levels,
and packed out of line (one width for the page) otherwise.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.file.codecs.rle import encode_rle_chunks, rle_entry_count
from lancelet.file.v2_1.write import bitpack, encodings
from lancelet.file.v2_1.write.chunks import I64, Chunked, gather, scatter

U16 = NDArray[np.uint16]
_RLE_HEADER = 8  # the u64 size of the run values that starts a run-length chunk


def level_counts(visible: NDArray[np.bool_] | None, value_counts: I64, total: int) -> I64:
    """Levels per chunk, given the values per chunk."""
    if len(value_counts) == 0:
        return np.zeros(0, dtype=np.int64)
    if visible is None:
        ends = np.cumsum(value_counts)
    else:
        positions = np.flatnonzero(visible)
        ends = positions[np.cumsum(value_counts) - 1] + 1
    ends = ends.astype(np.int64)
    ends[-1] = total
    return np.diff(np.concatenate(([0], ends))).astype(np.int64)


def raw_chunks(levels: U16, counts: I64) -> Chunked:
    return Chunked(np.ascontiguousarray(levels, dtype="<u2").view(np.uint8), counts * 2)


def compress(
    levels: U16, counts: I64, allow_rle: bool = False
) -> tuple[Chunked, pb.CompressiveEncoding]:
    """The page's levels as chunks, and their encoding.  From format 2.2 each chunk's
    levels may instead be run-length encoded (``u64`` size of the run values, the run
    values, the 8-bit run lengths) when pylance's estimate of that is smaller: the size
    word and three bytes per run (runs cut at 255) against the bit-packed (or flat)
    page, so a few levels stay flat."""
    if allow_rle and len(levels):
        runs = rle_entry_count(levels, [len(levels)])
        if _RLE_HEADER + 3 * runs < _packed_estimate(levels):
            return _rle(levels, counts), encodings.rle(16)
    return _packed(levels, counts)


def _packed_estimate(levels: U16) -> int:
    total = len(levels)
    widest = int(levels.max(initial=0)).bit_length()
    if total <= bitpack.BLOCK and bitpack.BLOCK * widest // 8 >= 2 * total:
        return 2 * total  # flat
    blocks = -(-total // bitpack.BLOCK)
    return blocks * bitpack.BLOCK * widest // 8


def _rle(levels: U16, counts: I64) -> Chunked:
    encoded = encode_rle_chunks(levels, counts)
    sizes = 8 + encoded.value_sizes + encoded.length_sizes
    values = np.frombuffer(encoded.values, np.uint8)
    lengths = np.frombuffer(encoded.lengths, np.uint8)
    value_starts = np.concatenate(([0], np.cumsum(encoded.value_sizes)[:-1])).astype(np.int64)
    length_starts = np.concatenate(([0], np.cumsum(encoded.length_sizes)[:-1])).astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    out = np.zeros(int(sizes.sum()), dtype=np.uint8)
    header = encoded.value_sizes.astype("<u8").view(np.uint8).reshape(-1, 8)
    out[(starts[:, None] + np.arange(8)).reshape(-1)] = header.reshape(-1)
    scatter(out, starts + 8, Chunked(gather(values, value_starts, encoded.value_sizes),
                                     encoded.value_sizes.astype(np.int64)))  # fmt: skip
    scatter(out, starts + 8 + encoded.value_sizes,
            Chunked(gather(lengths, length_starts, encoded.length_sizes),
                    encoded.length_sizes.astype(np.int64)))  # fmt: skip
    return Chunked(out, sizes.astype(np.int64))


def _packed(levels: U16, counts: I64) -> tuple[Chunked, pb.CompressiveEncoding]:
    total = len(levels)
    widest = int(bitpack.bit_lengths(np.asarray([levels.max(initial=0)], np.uint16))[0])
    if total <= bitpack.BLOCK:
        if widest == 0 or bitpack.BLOCK * widest // 8 >= 2 * total:
            return raw_chunks(levels, counts), encodings.flat(16)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        rows = np.zeros((len(counts), bitpack.BLOCK), dtype=np.uint16)
        mask = np.arange(bitpack.BLOCK)[None, :] < counts[:, None]
        index = starts[:, None] + np.arange(bitpack.BLOCK)[None, :]
        rows[mask] = levels[index[mask]]
        return bitpack.inline_rows(rows), encodings.inline_bitpacking(16)
    chunked = bitpack.out_of_line_chunks(levels, counts, widest)
    return chunked, encodings.out_of_line_bitpacking(16, widest)
