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
from lancelet.file.v2_1.write import bitpack, encodings
from lancelet.file.v2_1.write.chunks import I64, Chunked

U16 = NDArray[np.uint16]


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


def compress(levels: U16, counts: I64) -> tuple[Chunked, pb.CompressiveEncoding]:
    """The page's levels as chunks, and their encoding."""
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
