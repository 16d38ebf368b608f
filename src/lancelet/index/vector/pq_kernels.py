"""The PQ distance lookup of a partition's rows as a loop numba compiles (the
``fast`` extra; :mod:`lancelet.file.codecs.jit`): each row's table entries are
gathered and summed in numpy's pairwise order for a float32 sum of at most 128
values (eight running sums over whole blocks of eight, added as ((0+1)+(2+3)) +
((4+5)+(6+7)), then the rest in turn; fewer than eight values in turn from zero),
so the distances equal ``table[s, codes].sum(axis=1, dtype=float32)`` bit for bit
without the (rows, sub-vectors) temporary."""

from __future__ import annotations

import numpy as np

# The most sub-vectors the loop sums as numpy does (numpy splits longer sums).
MAX_SUB_VECTORS = 128
_LANES = 8


def lookup_sums(table: np.ndarray, codes: np.ndarray, out: np.ndarray) -> None:
    """``out[r]`` = the sum over s of ``table[s, codes[r, s]]``; ``table`` is
    (sub-vectors, code words) float32, ``codes`` (rows, sub-vectors) uint8."""
    rows, count = codes.shape
    values = np.empty(count, dtype=np.float32)
    whole = count - count % _LANES
    for row in range(rows):
        for s in range(count):
            values[s] = table[s, codes[row, s]]
        if count < _LANES:
            total = np.float32(0.0)
            for s in range(count):
                total += values[s]
            out[row] = total
            continue
        r0, r1, r2, r3 = values[0], values[1], values[2], values[3]
        r4, r5, r6, r7 = values[4], values[5], values[6], values[7]
        for base in range(_LANES, whole, _LANES):
            r0 += values[base]
            r1 += values[base + 1]
            r2 += values[base + 2]
            r3 += values[base + 3]
            r4 += values[base + 4]
            r5 += values[base + 5]
            r6 += values[base + 6]
            r7 += values[base + 7]
        total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        for s in range(whole, count):
            total += values[s]
        out[row] = total


def distance_table(
    residual: np.ndarray,
    columns: np.ndarray,
    norms: np.ndarray,
    dot: bool,
    out: np.ndarray,
    products: np.ndarray,
) -> None:
    """``PqStorage.table`` in float64 with the same additions: for each sub-vector
    s and code word k, ``p = r·b`` summed over the sub-dimension in turn, then
    ``max((|r|² + (-2p)) + |b|², 0)`` rounded to float32, or ``-p`` for dot (where
    ``residual`` is the query itself).  ``columns`` is the codebook as (sub-vectors,
    sub-dimension, code words) float64, ``norms`` its (sub-vectors, code words)
    squared lengths, ``products`` a scratch row of code words."""
    sub_vectors, sub_dimension, words = columns.shape
    for s in range(sub_vectors):
        squared = 0.0
        for j in range(sub_dimension):
            squared += residual[s, j] * residual[s, j]
        first = residual[s, 0]
        for k in range(words):
            products[k] = first * columns[s, 0, k]
        for j in range(1, sub_dimension):
            value = residual[s, j]
            for k in range(words):
                products[k] += value * columns[s, j, k]
        for k in range(words):
            if dot:
                out[s, k] = np.float32(-products[k])
            else:
                distance = (squared + (-2.0 * products[k])) + norms[s, k]
                out[s, k] = np.float32(distance if distance > 0 else 0.0)
