"""Chunked buffers and the byte layout of a mini-block page.

A mini-block page stores its values in chunks of a power-of-two number of values
(the last chunk excepted).  Every chunk is ``u16 num_levels``, then the byte size
of each of its buffers (rep and def as ``u16``; value buffers as ``u16`` in 2.1,
``u32`` in 2.2), padding to 8 bytes, then each buffer padded to 8 bytes.  Chunk
metadata (page buffer 0) is one word per chunk, ``u16`` in 2.1 and ``u32`` in
2.2: ``(size_in_8_byte_words - 1) << 4 | log2(num_values)`` (0 for the last).

Everything here works on whole pages at once: a buffer kind is one byte array
holding every chunk's bytes back to back plus the size of each, and chunks are
laid out with index arithmetic rather than a loop per chunk.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from lancelet.errors import LanceFileError

U8 = NDArray[np.uint8]
I64 = NDArray[np.int64]

ALIGN = 8
FILL = 0xFE  # what the reference pads chunks with
MAX_CHUNK_VALUES_LOG = 15  # four bits of chunk metadata
_SMALL_CHUNK_LIMIT = 32 * 1024  # 12 bits of 8-byte words (format 2.1)
_LARGE_CHUNK_LIMIT = 1 << 31


@dataclass(frozen=True)
class Chunked:
    """One kind of buffer, cut into chunks: ``data`` holds them back to back."""

    data: U8
    sizes: I64

    @property
    def starts(self) -> I64:
        return np.concatenate(([0], np.cumsum(self.sizes)[:-1])).astype(np.int64)


# Runs this long or longer are copied a slice each (one memcpy per run beats building
# an index of 8 bytes per byte); shorter ones through one index array.
_SLICE_COPY_BYTES = 512


def _copy_runs(dest: U8, dest_starts: I64, src: U8, src_starts: I64, sizes: I64) -> None:
    total = int(sizes.sum())
    if total == 0:
        return
    if total >= _SLICE_COPY_BYTES * len(sizes):
        for d, s, n in zip(dest_starts.tolist(), src_starts.tolist(), sizes.tolist(), strict=True):
            dest[d : d + n] = src[s : s + n]
        return
    ramp = np.arange(total, dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    dest[np.repeat(dest_starts - starts, sizes) + ramp] = src[
        np.repeat(src_starts - starts, sizes) + ramp
    ]


def gather(src: U8, src_starts: I64, sizes: I64) -> U8:
    """The ``sizes[i]`` bytes at each ``src_starts[i]``, back to back."""
    out = np.empty(int(sizes.sum()), dtype=np.uint8)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    _copy_runs(out, starts, src, src_starts, sizes)
    return out


def scatter(out: U8, dest_starts: I64, chunked: Chunked) -> None:
    """Copy each chunk of ``chunked`` to ``out`` at its ``dest_starts``."""
    _copy_runs(out, dest_starts, chunked.data, chunked.starts, chunked.sizes)


def _padded(sizes: I64) -> I64:
    padded: I64 = (sizes + (ALIGN - 1)) // ALIGN * ALIGN
    return padded


@dataclass(frozen=True)
class SerializedPage:
    metadata: bytes
    # The chunks as laid out, not copied into bytes (a page of a text column holds
    # megabytes): the file's writer takes any buffer.
    data: pa.Buffer


def serialize(
    num_levels: I64,
    rep: Chunked | None,
    defs: Chunked | None,
    values: list[Chunked],
    log_counts: NDArray[np.integer],
    large: bool,
    where: str,
) -> SerializedPage:
    """Lay out the chunks of one mini-block page (buffers 0 and 1)."""
    count = len(log_counts)
    level_kinds = [c for c in (rep, defs) if c is not None]
    size_width = 4 if large else 2
    header = 2 + 2 * len(level_kinds) + size_width * len(values)
    header_padded = header + (-header % ALIGN)
    parts = [*level_kinds, *values]
    padded = [_padded(p.sizes) for p in parts]
    chunk_bytes = header_padded + (np.sum(padded, axis=0) if parts else np.zeros(count, np.int64))
    _check_sizes(chunk_bytes, level_kinds, values, large, where)
    starts = np.concatenate(([0], np.cumsum(chunk_bytes)[:-1])).astype(np.int64)
    out = np.full(int(chunk_bytes.sum()), FILL, dtype=np.uint8)

    head = np.zeros((count, header), dtype=np.uint8)
    head[:, 0:2] = np.asarray(num_levels, dtype="<u2").view(np.uint8).reshape(count, 2)
    col = 2
    for kind in level_kinds:
        head[:, col : col + 2] = kind.sizes.astype("<u2").view(np.uint8).reshape(count, 2)
        col += 2
    for buf in values:
        typed = buf.sizes.astype("<u4" if large else "<u2")
        head[:, col : col + size_width] = typed.view(np.uint8).reshape(count, size_width)
        col += size_width
    index = starts[:, None] + np.arange(header, dtype=np.int64)[None, :]
    out[index.reshape(-1)] = head.reshape(-1)

    offset = starts + header_padded
    for part, pad in zip(parts, padded, strict=True):
        scatter(out, offset, part)
        offset = offset + pad

    words = (chunk_bytes // ALIGN - 1) << 4 | np.asarray(log_counts, dtype=np.int64)
    meta = words.astype("<u4" if large else "<u2").tobytes()
    return SerializedPage(meta, pa.py_buffer(out))


def _check_sizes(
    chunk_bytes: I64, levels: list[Chunked], values: list[Chunked], large: bool, where: str
) -> None:
    limit = _LARGE_CHUNK_LIMIT if large else _SMALL_CHUNK_LIMIT
    if len(chunk_bytes) and int(chunk_bytes.max()) > limit:
        raise LanceFileError(
            f"{where}: a mini-block chunk of {int(chunk_bytes.max())} bytes exceeds the "
            f"{limit}-byte limit of this file version; use full-zip for such wide values"
        )
    small_limit = 0xFFFF
    for part in [*levels, *([] if large else values)]:
        if len(part.sizes) and int(part.sizes.max()) > small_limit:
            raise LanceFileError(
                f"{where}: a mini-block chunk buffer of {int(part.sizes.max())} bytes does "
                "not fit its 16-bit size"
            )


def repetition_index(rep_chunks: Chunked, max_rep: int) -> bytes:
    """Per chunk: rows that finish in it and the items left over after its last
    finished row (as the reference counts them), as u64 pairs."""
    count = len(rep_chunks.sizes)
    levels = rep_chunks.data.view("<u2")
    n_levels = rep_chunks.sizes // 2
    starts = np.concatenate(([0], np.cumsum(n_levels)[:-1])).astype(np.int64)
    is_row = (levels == max_rep).astype(np.int64)
    cum = np.concatenate(([0], np.cumsum(is_row)))
    ends = starts + n_levels
    rows = cum[ends] - cum[starts] - is_row[starts]  # a row start at position 0 is not counted
    positions = np.flatnonzero(is_row)
    # last row start in each chunk (or -1): searchsorted over chunk ends
    last_idx = np.searchsorted(positions, ends, side="left") - 1
    last_pos = np.where(last_idx >= 0, positions[np.maximum(last_idx, 0)], -1)
    has_start = last_pos >= starts
    leftovers = np.where(has_start, ends - last_pos, n_levels)
    first_is_row = is_row[np.minimum(starts, len(is_row) - 1)].astype(bool)
    # A chunk that starts a row completes the previous chunk's leftovers.
    completes = np.zeros(count, dtype=bool)
    completes[:-1] = first_is_row[1:] & (leftovers[:-1] != 0)
    rows = rows + completes
    leftovers = np.where(completes, 0, leftovers)
    if count:
        rows[-1] += 1
        leftovers[-1] = 0
    return np.stack([rows, leftovers], axis=1).astype("<u8").tobytes()
