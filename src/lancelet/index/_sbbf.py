"""Split block Bloom filters as the reference builds them: XXH64 (seed 0) of a value's
bytes, the high 32 bits picking a 256-bit block, the low 32 bits times eight salts
picking one bit in each of the block's eight 32-bit words (little-endian).

Hashing is whole-array numpy: one pass per 32-byte stripe and per tail step, each
over every value still that long.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)
_SALTS = np.array(
    [
        0x47B6137B,
        0x44974D91,
        0x8824AD5B,
        0xA2B7289D,
        0x705495C7,
        0x2DF1424B,
        0x9EFC4947,
        0x5C6BFB31,
    ],
    dtype=np.uint32,
)
MIN_LOG2_BYTES = 5
MAX_LOG2_BYTES = 27


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    result: np.ndarray = (x << np.uint64(r)) | (x >> np.uint64(64 - r))
    return result


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    result: np.ndarray = _rotl(acc + lane * _P2, 31) * _P1
    return result


def _gather(data: np.ndarray, positions: np.ndarray, width: int) -> np.ndarray:
    """Little-endian unsigned integers of ``width`` bytes starting at ``positions``."""
    picked = data[positions[:, None] + np.arange(width)]
    kind = {8: "<u8", 4: "<u4"}[width]
    result: np.ndarray = np.ascontiguousarray(picked).view(kind).reshape(-1).astype(np.uint64)
    return result


def xxh64(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """XXH64 with seed 0 of each byte range ``data[start:start + length]``."""
    with np.errstate(over="ignore"):
        count = len(starts)
        lengths = lengths.astype(np.int64)
        position = starts.astype(np.int64).copy()
        hashes = np.full(count, _P5, dtype=np.uint64)
        long = np.flatnonzero(lengths >= 32)
        if len(long):
            hashes[long] = _stripes(data, position, lengths, long)
        hashes += lengths.astype(np.uint64)
        remaining = lengths - (lengths // 32) * 32
        hashes = _tail(data, position, remaining, hashes)
        hashes ^= hashes >> np.uint64(33)
        hashes *= _P2
        hashes ^= hashes >> np.uint64(29)
        hashes *= _P3
        hashes ^= hashes >> np.uint64(32)
        result: np.ndarray = hashes
        return result


def _stripes(
    data: np.ndarray, position: np.ndarray, lengths: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """The converged accumulator of each of ``rows``; advances ``position`` past them."""
    lanes = [
        np.full(len(rows), _P1 + _P2, np.uint64),
        np.full(len(rows), _P2, np.uint64),
        np.zeros(len(rows), np.uint64),
        np.full(len(rows), np.uint64(0) - _P1, np.uint64),
    ]
    stripes = lengths[rows] // 32
    for step in range(int(stripes.max())):
        active = np.flatnonzero(stripes > step)
        base = position[rows[active]] + 32 * step
        for j in range(4):
            lanes[j][active] = _round(lanes[j][active], _gather(data, base + 8 * j, 8))
    position[rows] += stripes * 32
    acc = _rotl(lanes[0], 1) + _rotl(lanes[1], 7) + _rotl(lanes[2], 12) + _rotl(lanes[3], 18)
    for lane in lanes:
        acc = ((acc ^ _round(np.zeros_like(lane), lane)) * _P1) + _P4
    result: np.ndarray = acc
    return result


def _tail(
    data: np.ndarray, position: np.ndarray, remaining: np.ndarray, hashes: np.ndarray
) -> np.ndarray:
    while True:
        rows = np.flatnonzero(remaining >= 8)
        if not len(rows):
            break
        lane = _round(np.zeros(len(rows), np.uint64), _gather(data, position[rows], 8))
        hashes[rows] = _rotl(hashes[rows] ^ lane, 27) * _P1 + _P4
        position[rows] += 8
        remaining[rows] -= 8
    rows = np.flatnonzero(remaining >= 4)
    if len(rows):
        word = _gather(data, position[rows], 4)
        hashes[rows] = _rotl(hashes[rows] ^ (word * _P1), 23) * _P2 + _P3
        position[rows] += 4
        remaining[rows] -= 4
    while True:
        rows = np.flatnonzero(remaining > 0)
        if not len(rows):
            break
        byte = data[position[rows]].astype(np.uint64)
        hashes[rows] = _rotl(hashes[rows] ^ (byte * _P5), 11) * _P1
        position[rows] += 1
        remaining[rows] -= 1
    return hashes


def hash_values(values: pa.Array) -> np.ndarray:
    """The hash of each non-null value's bytes (fixed-width values little-endian, as
    stored; strings and binaries as their bytes)."""
    values = values.drop_null()
    kind = values.type
    if pa.types.is_string(kind) or pa.types.is_binary(kind):
        return _hash_variable(values, np.int32)
    if pa.types.is_large_string(kind) or pa.types.is_large_binary(kind):
        return _hash_variable(values, np.int64)
    width = kind.bit_width // 8
    buffer = values.buffers()[1]
    raw = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(0, np.uint8)
    data = raw[values.offset * width : (values.offset + len(values)) * width]
    starts = np.arange(len(values), dtype=np.int64) * width
    return xxh64(data, starts, np.full(len(values), width, dtype=np.int64))


def _hash_variable(values: pa.Array, offset_type: type) -> np.ndarray:
    buffers = values.buffers()
    offsets = np.frombuffer(buffers[1], dtype=offset_type)[
        values.offset : values.offset + len(values) + 1
    ].astype(np.int64)
    data = (
        np.frombuffer(buffers[2], dtype=np.uint8)
        if buffers[2] is not None
        else np.zeros(0, np.uint8)
    )
    # Padding lets the 8-byte gathers run past a value's end without leaving the array.
    padded = np.concatenate([data, np.zeros(8, np.uint8)])
    return xxh64(padded, offsets[:-1], np.diff(offsets))


def _false_positive_rate(ndv: int, log2_bytes: int) -> float:
    bits = float(1 << log2_bytes) * 8.0
    if ndv == 0:
        return 0.0
    if ndv / bits > 2.0:
        return 1.0
    lam = 8.0 * 32.0 / (bits / ndv)
    log_lam = math.log(lam)
    total = 0.0
    for i in range(749, -1, -1):
        log_p = i * log_lam - lam - math.lgamma(i + 1)
        inner = 1.0 - (1.0 - 1.0 / 32.0) ** i
        log_inner = 8.0 * math.log(inner) if inner > 0 else -math.inf
        total += math.exp(log_p + log_inner)
    return min(total, 1.0)


def filter_bytes(ndv: int, fpp: float) -> int:
    """The size of a filter for ``ndv`` distinct values at false-positive rate ``fpp``."""
    low, high = 0, 64
    while high > low + 1:
        middle = (high + low) // 2
        if _false_positive_rate(ndv, middle) <= fpp:
            high = middle
        else:
            low = middle
    return 1 << min(max(high, MIN_LOG2_BYTES), MAX_LOG2_BYTES)


def _bit_positions(hashes: np.ndarray, blocks: np.ndarray | int) -> np.ndarray:
    """For each hash, the 8 bit positions it sets, counted from the filter's first byte
    (shape ``(len(hashes), 8)``)."""
    block = ((hashes >> np.uint64(32)) * np.asarray(blocks, np.uint64)) >> np.uint64(32)
    low = (hashes & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    with np.errstate(over="ignore"):
        bit = (low[:, None] * _SALTS[None, :]) >> np.uint32(27)
    word = np.arange(8, dtype=np.int64)[None, :]
    result: np.ndarray = block.astype(np.int64)[:, None] * 256 + word * 32 + bit.astype(np.int64)
    return result


def build_filter(hashes: np.ndarray, num_bytes: int) -> bytes:
    bits = np.zeros(num_bytes * 8, dtype=bool)
    bits[_bit_positions(hashes, num_bytes // 32).reshape(-1)] = True
    return bytes(np.packbits(bits, bitorder="little"))


def check_filters(
    data: np.ndarray, offsets: np.ndarray, sizes: np.ndarray, query_hash: np.uint64
) -> np.ndarray:
    """Whether each filter (``data[offsets[z]:offsets[z] + sizes[z]]``) may hold the
    value of ``query_hash``."""
    hashes = np.full(len(offsets), query_hash, dtype=np.uint64)
    positions = _bit_positions(hashes, sizes // 32)
    byte = offsets[:, None] + positions // 8
    hit = (data[byte] >> (positions % 8).astype(np.uint8)) & 1
    result: np.ndarray = np.all(hit == 1, axis=1)
    return result
