"""Clustering binary vectors by hamming distance (k-modes), as pylance 14 trains
the IVF centroids of a ``uint8`` column indexed with metric ``hamming``.

A vector is ``B`` bytes, ``8 B`` bits (bit ``i`` of byte ``j`` is bit ``8 j + i``,
least significant first).  Each vector joins the centroid of fewest differing
bits (the first such centroid on a tie, as pylance's ``argmin``); each centroid
becomes the bitwise majority of its vectors (a bit is set when more than half of
them set it), so centroids are binary vectors too.  A centroid left with no vectors
restarts at a vector drawn at random.  The loss is the sum of the distances.

Distances come from one matrix product per block of vectors over their unpacked
bits: ``|x ^ c| = |x| + |c| - 2 x·c`` (exact in float32 below 2**24 bits).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lancelet.errors import ArgumentError

_BLOCK_ROWS = 1 << 13


@dataclass(frozen=True)
class Trained:
    # (k, B) uint8
    centroids: np.ndarray
    loss: float


def train(vectors: np.ndarray, k: int, max_iterations: int, rng: np.random.Generator) -> Trained:
    """``k`` binary centroids of ``vectors`` ((n, B) uint8, n >= k) after at most
    ``max_iterations`` rounds, starting from ``k`` distinct rows drawn at random."""
    if not 0 < k <= len(vectors):
        raise ArgumentError(f"cannot train {k} centroids from {len(vectors)} vectors")
    bits = _bits(vectors)
    centroids = vectors[np.sort(rng.choice(len(vectors), size=k, replace=False))]
    previous = np.inf
    for _ in range(max_iterations):
        members, distances = _nearest(bits, _bits(centroids))
        loss = float(distances.sum())
        centroids = _majority(vectors, bits, members, k, rng)
        if loss >= previous:
            break
        previous = loss
    _, distances = _nearest(bits, _bits(centroids))
    return Trained(centroids, float(distances.sum()))


def assign(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """The partition (int64) of each vector: its centroid of fewest differing bits."""
    members, _ = _nearest(_bits(vectors), _bits(centroids))
    return members


def distances(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The number of bits in which each row of ``vectors`` differs from ``query``."""
    counted: np.ndarray = np.bitwise_count(np.bitwise_xor(vectors, query)).sum(axis=-1)
    return counted.astype(np.float32)


def _bits(vectors: np.ndarray) -> np.ndarray:
    """(n, 8 B) float32 0/1, least significant bit of each byte first."""
    packed = np.ascontiguousarray(vectors, dtype=np.uint8)
    unpacked = np.unpackbits(packed, axis=1, bitorder="little")
    return unpacked.astype(np.float32)


def _nearest(bits: np.ndarray, centroid_bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    members = np.empty(len(bits), dtype=np.int64)
    found = np.empty(len(bits), dtype=np.float64)
    weights = centroid_bits.sum(axis=1)
    factors = np.ascontiguousarray(-2 * centroid_bits.T)
    for start in range(0, len(bits), _BLOCK_ROWS):  # one step per block of rows
        block = bits[start : start + _BLOCK_ROWS]
        counts = block @ factors + weights + block.sum(axis=1)[:, None]
        best = np.argmin(counts, axis=1)  # the first of equal counts
        members[start : start + len(block)] = best
        found[start : start + len(block)] = np.take_along_axis(counts, best[:, None], 1)[:, 0]
    return members, found


def _majority(
    vectors: np.ndarray,
    bits: np.ndarray,
    members: np.ndarray,
    k: int,
    rng: np.random.Generator,
) -> np.ndarray:
    counts = np.bincount(members, minlength=k)
    order = np.argsort(members, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    filled = counts > 0
    ones = np.zeros((k, bits.shape[1]), dtype=np.float64)
    ones[filled] = np.add.reduceat(bits[order], starts[filled], axis=0)
    majority = (2 * ones > counts[:, None]).astype(np.uint8)
    centroids = np.packbits(majority, axis=1, bitorder="little")
    empty = np.flatnonzero(~filled)
    if len(empty):  # rare: restart each at a random vector
        centroids[empty] = vectors[rng.integers(0, len(vectors), len(empty))]
    return centroids
