"""The extra code bits of a multi-bit IVF_RQ index (``num_bits`` above 1; pylance
14's default is 5) and how pylance 14 scores and skips rows with them (see
``docs/vector-index-format.md``).

Besides its sign bit, each rotated dimension keeps ``num_bits - 1`` "ex" bits, an
unsigned code per dimension.  pylance's estimate of a row is

    ((2**ex * ip + <R q, ex code>) + (0.5 - 2**ex) * sum(R q)) * ex_scale + ex_add + |q - c|²

with ``ip`` the binary inner product of the sign bits (byte-quantized in whole
blocks of 32 rows, as for one bit).  The product ``<R q, ex code>`` is summed as
pylance's AVX-512 kernel sums it: the dimensions in runs of 16, each run fused
multiply-added into one of two 16-lane accumulators, the accumulators added and
their lanes halved pairwise.

pylance does not score every row: it keeps a heap of the best ``k *
refine_factor`` rows over the probed partitions in probe order and skips a row
whose lower bound, ``(ip - sum(R q) / 2) * scale + add + |q - c|² - error *
|q - c|``, is not below the worst row kept once the heap is full.  The bound can
exceed the row's estimate, so the skipped rows change the answer; lancelet
replays the same scan (:func:`scored`).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

EX_CODE_COLUMN = "__blocked_ex_codes"
EX_ADD_COLUMN = "__add_factors_ex"
EX_SCALE_COLUMN = "__scale_factors_ex"
ERROR_COLUMN = "__error_factors"
# Widths (``num_bits - 1``) whose kernel lancelet reproduces: pylance 14 adds
# 2- and 6-bit codes in another order, not established (num_bits 3 and 7).
EX_BITS = (1, 3, 4, 5, 7, 8)
BLOCK_DIMENSIONS = 64
_RUN = 16
# Rows replayed per step: rows whose bound is not below the heap's worst row at
# the step's start are skipped without looking at them one by one.
_STEP = 256


@dataclass(frozen=True)
class ExCodes:
    bits: int
    # (rows, dimension rounded up to 64) uint8 code per dimension, natural order.
    values: np.ndarray
    add: np.ndarray  # (rows,) float32
    scale: np.ndarray  # (rows,) float32
    error: np.ndarray  # (rows,) float32

    def scaled(
        self, rotated: np.ndarray, total: np.float32, inner: np.ndarray, rows: slice
    ) -> np.ndarray:
        """The scaled part of the rows' multi-bit estimates (before ``add``);
        ``rotated`` is the rotated query, ``total`` its sum, ``inner`` the rows'
        binary inner products."""
        padded = np.zeros(self.values.shape[1], dtype=np.float32)
        padded[: len(rotated)] = rotated
        products = inner_products(padded, self.values[rows], self.bits)
        weight = np.float32(1 << self.bits)
        bias = -(weight - np.float32(0.5))
        full = (weight * inner + products) + bias * total
        scaled: np.ndarray = full * self.scale[rows]
        return scaled


def padded_length(dimension: int) -> int:
    return -(-dimension // BLOCK_DIMENSIONS) * BLOCK_DIMENSIONS


def code_bytes(dimension: int, bits: int) -> int:
    return padded_length(dimension) * bits // 8


def unpack(codes: np.ndarray, bits: int, padded: int) -> np.ndarray:
    """(rows, bytes) codes in pylance's blocked layout -> (rows, padded) values.

    Per 64 dimensions: 1 bit: bit i of the little-endian word is dimension i;
    3 bits: a 2-bit plane (byte b holds dimensions b, b+16, b+32, b+48 in bit
    pairs) and a top-bit plane; 4 bits: byte 8j+b holds dimension 16j+b (low
    nibble) and 16j+8+b (high); 5 bits: a nibble plane (byte b: b and b+16;
    byte 16+b: b+32 and b+48) and a top-bit plane; 7 bits: three 16-byte runs
    keep dimensions 16k+b in their low 6 bits and 2 bits of 48+b in their top
    bits, then a top-bit plane; 8 bits: one byte per dimension.  A top-bit plane
    is a little-endian word whose bit 8(b%8) + 2k + b//8 belongs to dimension
    16k+b."""
    rows = codes.shape[0]
    block_bytes = BLOCK_DIMENSIONS * bits // 8
    out = np.empty((rows, padded), dtype=np.uint8)
    for block in range(padded // BLOCK_DIMENSIONS):  # one step per 64 dimensions
        raw = codes[:, block * block_bytes : (block + 1) * block_bytes]
        out[:, block * 64 : (block + 1) * 64] = _unpack_block(raw, bits)
    return out


def _unpack_block(raw: np.ndarray, bits: int) -> np.ndarray:
    values = np.zeros((raw.shape[0], BLOCK_DIMENSIONS), dtype=np.uint8)
    if bits == 1:
        values[:] = np.unpackbits(raw, axis=1, bitorder="little")
    elif bits == 3:
        for run in range(4):
            values[:, 16 * run : 16 * run + 16] = (raw[:, :16] >> (2 * run)) & 0b11
    elif bits == 4:
        for unit in range(4):
            pair = raw[:, 8 * unit : 8 * unit + 8]
            values[:, 16 * unit : 16 * unit + 8] = pair & 0x0F
            values[:, 16 * unit + 8 : 16 * unit + 16] = pair >> 4
    elif bits == 5:
        for run in range(4):
            half = raw[:, 16 * (run // 2) : 16 * (run // 2) + 16]
            values[:, 16 * run : 16 * run + 16] = (half >> (4 * (run % 2))) & 0x0F
    elif bits == 7:
        for run in range(3):
            values[:, 16 * run : 16 * run + 16] = raw[:, 16 * run : 16 * run + 16] & 0x3F
        values[:, 48:] = (raw[:, :16] >> 6) | ((raw[:, 16:32] >> 6) << 2)
        values[:, 48:] |= (raw[:, 32:48] >> 6) << 4
    else:
        values[:] = raw
    top = {3: (16, 2), 5: (32, 4), 7: (48, 6)}.get(bits)
    if top is not None:
        start, bit = top
        plane = np.unpackbits(raw[:, start : start + 8], axis=1, bitorder="little")
        runs, lanes = np.divmod(np.arange(BLOCK_DIMENSIONS), _RUN)
        values |= plane[:, 8 * (lanes % 8) + 2 * runs + lanes // 8] << bit
    return values


def inner_products(query: np.ndarray, values: np.ndarray, bits: int) -> np.ndarray:
    """Each row's ``<query, values>`` summed as pylance's AVX-512 kernel sums it.

    Run t (dimensions 16t..16t+15) goes into accumulator (g + r) % 2, where g is
    its group and r its run within the group (groups of one run for 1-, 4- and
    8-bit codes, of four runs otherwise).  A fused multiply-add rounds once: the
    product of a code (at most 8 bits) and a float32 is exact in float64, and so
    is the sum unless the two differ in scale by about 2**29 (then float64 rounds
    first, which could in principle move the float32 result by one unit)."""
    rows = values.shape[0]
    runs_per_group = 1 if bits in (1, 4, 8) else 4
    accumulators = np.zeros((2, rows, _RUN), dtype=np.float32)
    for run in range(values.shape[1] // _RUN):  # one step per 16 dimensions
        group, within = divmod(run, runs_per_group)
        target = (group + within) % 2
        part = slice(_RUN * run, _RUN * (run + 1))
        product = values[:, part].astype(np.float64) * query[part].astype(np.float64)
        summed = accumulators[target].astype(np.float64) + product
        accumulators[target] = summed.astype(np.float32)
    lanes = accumulators[0] + accumulators[1]
    while lanes.shape[1] > 1:  # 16 -> 8 -> 4 -> 2 -> 1 lanes
        half = lanes.shape[1] // 2
        lanes = lanes[:, :half] + lanes[:, half:]
    total: np.ndarray = lanes[:, 0]
    return total


def scored(estimates: np.ndarray, bounds: np.ndarray, keep: int) -> np.ndarray:
    """Which rows (in scan order) pylance scores: the first ``keep`` fill its
    heap; a later row is scored when its bound is below the worst estimate the
    heap holds, and replaces that row when its estimate is below it."""
    count = len(estimates)
    chosen = np.zeros(count, dtype=bool)
    first = min(keep, count)
    chosen[:first] = True
    # Negated estimates: heapq keeps a min-heap, pylance a max-heap.
    heap = [-value for value in estimates[:first].tolist()]
    heapq.heapify(heap)
    for start in range(first, count, _STEP):  # one step per block of rows
        stop = min(start + _STEP, count)
        worst = -heap[0]
        # The worst row kept only improves, so a bound not below it now stays so.
        survivors = start + np.flatnonzero(bounds[start:stop] < worst)
        for row in survivors.tolist():  # only the rows whose bound beats the heap
            worst = -heap[0]
            if float(bounds[row]) >= worst:
                continue
            chosen[row] = True
            value = float(estimates[row])
            if value < worst:
                heapq.heapreplace(heap, -value)
    return chosen
