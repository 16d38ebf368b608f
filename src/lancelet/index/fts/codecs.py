"""The integer codecs of pylance 14's INVERTED index files
(``docs/fts/inverted-index-format.md`` §5, §6), vectorized over whole arrays.

* BitPacker4x blocks of 128 unsigned 32-bit values: value ``i`` goes to lane ``i % 4``
  at slot ``i // 4``; each lane's 32 values are packed least significant bit first
  into ``width`` 32-bit words, and word ``k`` of lane ``j`` is the little-endian u32
  at byte ``(4 * k + j) * 4``.  A block of width ``w`` takes ``16 * w`` bytes.
* Unsigned LEB128 varints.
* Impacts: the Pareto frontier of (term frequency, quantized document length) pairs.
"""

from __future__ import annotations

import numpy as np

from lancelet.errors import CorruptIndexError

BLOCK = 128
LANES = 4
_SLOTS = BLOCK // LANES
# Blocks unpacked or packed at once: bounds the bit matrices to a few tens of MiB.
_CHUNK_BLOCKS = 4096
_U32_MAX = int(np.iinfo(np.uint32).max)
_FREQ_BITS = 32  # term frequencies are u32


def bit_width(values: np.ndarray) -> np.ndarray:
    """The number of bits of each value's binary form (0 for 0), as uint8."""
    values = np.asarray(values, dtype=np.uint64)
    widths = np.zeros(values.shape, dtype=np.uint8)
    rest = values.copy()
    for step in (32, 16, 8, 4, 2, 1):
        big = rest >= (np.uint64(1) << np.uint64(step))
        widths[big] += step
        rest[big] >>= np.uint64(step)
    widths[rest > 0] += 1
    return widths


def pack_blocks(values: np.ndarray, width: int) -> np.ndarray:
    """BitPacker4x bytes of blocks of 128 values (shape (n, 128), each below
    ``2**width``): shape (n, 16 * width) uint8."""
    values = np.asarray(values, dtype=np.uint32).reshape(-1, BLOCK)
    out = np.empty((len(values), 16 * width), dtype=np.uint8)
    if width == 0:
        return out
    shifts = np.arange(width, dtype=np.uint32)
    for start in range(0, len(values), _CHUNK_BLOCKS):
        chunk = values[start : start + _CHUNK_BLOCKS]
        # (blocks, slot, lane, bit) -> lane-major bit streams, slot after slot.
        bits = ((chunk.reshape(-1, _SLOTS, LANES)[..., None] >> shifts) & 1).astype(np.uint8)
        streams = bits.transpose(0, 2, 1, 3).reshape(len(chunk), LANES, _SLOTS * width)
        lane_bytes = np.packbits(streams, axis=-1, bitorder="little")
        words = lane_bytes.reshape(len(chunk), LANES, width, 4).transpose(0, 2, 1, 3)
        out[start : start + len(chunk)] = words.reshape(len(chunk), 16 * width)
    return out


def unpack_blocks(data: np.ndarray, width: int) -> np.ndarray:
    """The values of BitPacker4x blocks (shape (n, 16 * width) uint8): (n, 128) uint32."""
    data = np.asarray(data, dtype=np.uint8)
    # Width 0: no bytes, so the block count comes from the shape (n, 0).
    data = data.reshape(len(data) if data.ndim == 2 else -1, 16 * width)
    out = np.zeros((len(data), BLOCK), dtype=np.uint32)
    if width == 0:
        return out
    weights = np.left_shift(np.uint32(1), np.arange(width, dtype=np.uint32))
    for start in range(0, len(data), _CHUNK_BLOCKS):
        chunk = data[start : start + _CHUNK_BLOCKS]
        lanes = chunk.reshape(len(chunk), width, LANES, 4).transpose(0, 2, 1, 3)
        bits = np.unpackbits(
            lanes.reshape(len(chunk), LANES, 4 * width), axis=-1, bitorder="little"
        )
        slots = bits.reshape(len(chunk), LANES, _SLOTS, width).astype(np.uint32)
        values = (slots * weights).sum(axis=-1, dtype=np.uint32)
        out[start : start + len(chunk)] = values.transpose(0, 2, 1).reshape(len(chunk), BLOCK)
    return out


def varint_lengths(values: np.ndarray) -> np.ndarray:
    """How many bytes each value's LEB128 form takes (int64)."""
    return np.maximum((bit_width(values).astype(np.int64) + 6) // 7, 1)


def encode_varints(values: np.ndarray) -> np.ndarray:
    """The unsigned LEB128 bytes of ``values``, one after the other (uint8)."""
    values = np.asarray(values, dtype=np.uint64).ravel()
    lengths = varint_lengths(values)
    owners = np.repeat(np.arange(len(values)), lengths)
    ends = np.cumsum(lengths)
    ranks = np.arange(len(owners), dtype=np.int64) - np.repeat(ends - lengths, lengths)
    groups = (values[owners] >> (ranks.astype(np.uint64) * np.uint64(7))) & np.uint64(0x7F)
    more = np.ones(len(owners), dtype=bool)
    more[ends - 1] = False
    encoded: np.ndarray = (groups | (more.astype(np.uint64) << np.uint64(7))).astype(np.uint8)
    return encoded


def decode_varints(data: np.ndarray, count: int | None = None, where: str = "") -> np.ndarray:
    """The first ``count`` (all when None) unsigned LEB128 values in ``data`` (uint64).
    Raises CorruptIndexError if they run past the bytes or overflow 64 bits."""
    data = np.asarray(data, dtype=np.uint8).ravel()
    ends = np.flatnonzero(data < 0x80)
    if count is None:
        count = len(ends)
    if len(ends) < count:
        raise CorruptIndexError(f"{where}: {count} varints expected, {len(ends)} found")
    if count == 0:
        return np.zeros(0, dtype=np.uint64)
    ends = ends[:count]
    used = data[: ends[-1] + 1]
    starts = np.r_[0, ends[:-1] + 1]
    lengths = ends - starts + 1
    if lengths.max() > 10:
        raise CorruptIndexError(f"{where}: a varint is longer than 10 bytes")
    ranks = np.arange(len(used), dtype=np.int64) - np.repeat(starts, lengths)
    parts = (used & 0x7F).astype(np.uint64) << (ranks.astype(np.uint64) * np.uint64(7))
    values: np.ndarray = np.add.reduceat(parts, starts)
    return values


def varint_span(data: np.ndarray, count: int, where: str = "") -> int:
    """How many bytes the first ``count`` varints of ``data`` take."""
    if count == 0:
        return 0
    ends = np.flatnonzero(np.asarray(data, dtype=np.uint8) < 0x80)
    if len(ends) < count:
        raise CorruptIndexError(f"{where}: {count} varints expected, {len(ends)} found")
    return int(ends[count - 1]) + 1


def quantize_lengths(lengths: np.ndarray) -> np.ndarray:
    """Document lengths as impacts store them: below 16 as they are, above that 8
    buckets per power of two (``8 * (k - 2) + ((n >> (k - 3)) & 7)``, k = floor(log2 n))."""
    lengths = np.asarray(lengths, dtype=np.uint64)
    k = bit_width(lengths).astype(np.int64) - 1
    big = lengths >= 16
    shift = np.where(big, k - 3, 0).astype(np.uint64)
    buckets = 8 * (k - 2) + ((lengths >> shift) & np.uint64(7)).astype(np.int64)
    return np.where(big, buckets, lengths.astype(np.int64)).astype(np.uint32)


def frontier(freqs: np.ndarray, norms: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, ...]:
    """The Pareto frontier of each group's (freq, norm) pairs: for each norm the highest
    freq, kept only if it beats every pair with a smaller norm.  ``groups`` must be
    ascending.  Returns (group, freq, norm) of the kept pairs, by group then norm."""
    if len(groups) and int(groups.max()) < 1 << 24 and int(norms.max()) < 256:
        # One 64-bit key: group, norm, then freq descending (one sort, not three).
        key = (
            (groups.astype(np.uint64) << np.uint64(_FREQ_BITS + 8))
            | (norms.astype(np.uint64) << np.uint64(_FREQ_BITS))
            | (np.uint64(_U32_MAX) - freqs.astype(np.uint64))
        )
        order = np.argsort(key, kind="stable")  # runs: groups come ascending
    else:
        order = np.lexsort((-freqs.astype(np.int64), norms, groups))
    g, f, q = groups[order], freqs[order], norms[order]
    first = np.r_[True, (g[1:] != g[:-1]) | (q[1:] != q[:-1])]
    g, f, q = g[first], f[first], q[first]
    # Running maximum of freq within each group, over norms ascending.
    starts = np.r_[True, g[1:] != g[:-1]]
    best_before = np.zeros(len(f), dtype=np.int64)
    if len(f):
        offset = g.astype(np.int64) * (1 << 33)
        running = np.maximum.accumulate(f.astype(np.int64) + offset) - offset
        best_before[1:] = running[:-1]
        best_before[starts] = -1
    keep = f.astype(np.int64) > best_before
    return g[keep], f[keep], q[keep]


def encode_impacts(
    last_docs: np.ndarray, groups: np.ndarray, freqs: np.ndarray, norms: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Impact entries, one per group of frontier pairs: varint last doc, varint pair
    count, then per pair the freq step (minus one, shifted left, low bit set when the
    norm step is not 1) and the norm step when it is not 1.  ``groups`` (ascending)
    numbers the entries 0..len(last_docs)-1 and gives each at least one pair.
    Returns the entries' bytes and their int64 offsets (len(last_docs) + 1)."""
    counts = np.bincount(groups, minlength=len(last_docs))
    starts = np.r_[True, groups[1:] != groups[:-1]] if len(groups) else np.zeros(0, bool)
    prev_f = np.r_[0, freqs[:-1]].astype(np.int64)
    prev_q = np.r_[0, norms[:-1]].astype(np.int64)
    prev_f[starts] = 0
    prev_q[starts] = 0
    fd = freqs.astype(np.int64) - prev_f - 1
    nd = norms.astype(np.int64) - prev_q
    long = nd != 1
    heads = (fd << 1) | long
    # Per pair: head, then the norm step if long; per entry: last doc, pair count.
    present = np.stack([np.ones_like(long), long], 1).ravel()
    steps = np.stack([heads, nd], axis=1).ravel()[present]
    step_owner = np.repeat(groups, 1 + long.astype(np.int64))
    entry = np.arange(len(last_docs))
    values = np.concatenate([np.stack([last_docs, counts], 1).ravel(), steps]).astype(np.uint64)
    owners = np.concatenate([np.repeat(entry, 2), step_owner])
    order = np.argsort(owners, kind="stable")
    values, owners = values[order], owners[order]
    sizes = np.bincount(owners, weights=varint_lengths(values), minlength=len(last_docs))
    offsets = np.r_[0, np.cumsum(sizes.astype(np.int64))]
    return encode_varints(values), offsets


def decode_impact(data: bytes, where: str = "") -> tuple[int, np.ndarray, np.ndarray]:
    """(last doc, freqs, norms) of one impact entry."""
    raw = np.frombuffer(data, dtype=np.uint8)
    head = decode_varints(raw, 2, where)
    values = decode_varints(raw[varint_span(raw, 2, where) :], None, where)
    freqs, norms, i, f, q = [], [], 0, 0, 0
    for _ in range(int(head[1])):  # a few pairs per entry
        if i >= len(values):
            raise CorruptIndexError(f"{where}: an impact entry ends early")
        step = int(values[i])
        i += 1
        if step & 1:
            if i >= len(values):
                raise CorruptIndexError(f"{where}: an impact entry ends early")
            q += int(values[i])
            i += 1
        else:
            q += 1
        f += (step >> 1) + 1
        freqs.append(f)
        norms.append(q)
    return int(head[0]), np.array(freqs, np.uint32), np.array(norms, np.uint32)
