"""Byte stream split (the ``ByteStreamSplit`` compressive encoding of files 2.1 and later).

A chunk of ``n`` values of ``w`` bytes is stored as ``w`` streams of ``n`` bytes: stream
``j`` holds byte ``j`` (little endian) of every value, in value order.  Every mini-block
chunk is split on its own, so a chunk's buffer is exactly ``n * w`` bytes.  The
transform does not shrink anything; writers pair it with general compression
(pylance: field metadata ``lance-encoding:compression`` plus ``lance-encoding:bss``),
whose framing the caller removes first.

Both directions are batched over chunks: chunks of one size (all but the last, as a
writer cuts them) are transposed together as one 3-D array.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from lancelet.errors import UnsupportedEncodingError
from lancelet.file.codecs._chunks import Bytes, IntArray, as_bytes, check_fixed_chunks, ints

__all__ = ["decode_bss_chunks", "encode_bss_chunks"]

VALUE_BITS: Final = (32, 64)


def _value_bytes(bits_per_value: int, what: str) -> int:
    if bits_per_value not in VALUE_BITS:
        raise UnsupportedEncodingError(
            f"{what}: byte-stream-split values of {bits_per_value} bits "
            f"(lancelet reads {', '.join(map(str, VALUE_BITS))})"
        )
    return bits_per_value // 8


def decode_bss_chunks(
    data: Bytes,
    starts: npt.ArrayLike,
    sizes: npt.ArrayLike,
    counts: npt.ArrayLike,
    bits_per_value: int,
    *,
    what: str,
) -> npt.NDArray[np.unsignedinteger]:
    """Undo the split of many chunks at once.

    Chunk ``i`` is ``data[starts[i]:][:sizes[i]]`` and holds ``counts[i]`` values; its
    size must be exactly ``counts[i] * bits_per_value / 8``.  Returns every chunk's
    values, concatenated, as unsigned integers of ``bits_per_value`` bits.
    """
    width = _value_bytes(bits_per_value, what)
    raw = as_bytes(data)
    c_starts = ints("chunk starts", starts, None, what)
    c_sizes = ints("chunk sizes", sizes, c_starts.size, what)
    c_counts = ints("value counts", counts, c_starts.size, what)
    check_fixed_chunks(raw, c_starts, c_sizes, c_counts, width, "byte-stream-split values", what)
    out = np.empty(int(c_sizes.sum()), dtype=np.uint8)
    out_starts = np.cumsum(c_sizes) - c_sizes
    for count in np.unique(c_counts):
        group = np.flatnonzero(c_counts == count)
        span = int(count) * width
        if span == 0:
            continue
        cols = np.arange(span, dtype=np.int64)
        streams = raw[c_starts[group, None] + cols].reshape(group.size, width, int(count))
        out[out_starts[group, None] + cols] = streams.transpose(0, 2, 1).reshape(group.size, -1)
    return out.view(f"<u{width}")


def encode_bss_chunks(
    values: npt.NDArray[np.generic], counts: Sequence[int] | IntArray
) -> tuple[bytes, IntArray]:
    """Split ``values`` (4 or 8-byte items) into chunks of ``counts`` values each.

    Returns the concatenated chunk buffers and each chunk's size in bytes.
    """
    width = values.dtype.itemsize
    _value_bytes(width * 8, "byte-stream-split encoder")
    sizes = np.asarray(counts, dtype=np.int64)
    if sizes.ndim != 1 or (sizes.size and int(sizes.min()) <= 0) or int(sizes.sum()) != values.size:
        raise ValueError("chunk counts must be positive and add up to the number of values")
    raw = np.ascontiguousarray(values).reshape(-1).view(np.uint8)
    out = np.empty(raw.size, dtype=np.uint8)
    starts = (np.cumsum(sizes) - sizes) * width
    for count in np.unique(sizes):
        group = np.flatnonzero(sizes == count)
        cols = np.arange(int(count) * width, dtype=np.int64)
        rows = raw[starts[group, None] + cols].reshape(group.size, int(count), width)
        out[starts[group, None] + cols] = rows.transpose(0, 2, 1).reshape(group.size, -1)
    return out.tobytes(), sizes * width
