"""Training IVF centroids by k-means, and assigning vectors to them, as pylance 14
builds an IVF index (measured; see ``docs/vector-index-format.md``).

* ``l2`` (and ``cosine``, whose vectors the caller has made unit vectors first):
  Lloyd's k-means — each vector joins its nearest centroid by squared Euclidean
  distance, each centroid moves to the mean of its vectors.  The loss is the sum of
  the squared distances.
* ``dot``: spherical k-means — each vector joins the centroid of largest ``c·x``,
  each centroid is the *unit* mean of its vectors (pylance's dot centroids are unit
  vectors; with unit centroids the largest product is also the nearest by l2).  The
  loss is ``-Σ c·x``, which is negative as pylance's is.

Training starts from ``k`` distinct random vectors of the sample.  A centroid left
with no vectors restarts at the vector farthest from its own centroid (which takes
it from its cluster), so every partition keeps at least one training vector.
Distances come from one BLAS matrix product per block of vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lancelet.errors import ArgumentError

L2 = "l2"
DOT = "dot"
# Vectors per block of the distance product: bounds the (block, k) temporaries.
_BLOCK_ROWS = 1 << 14
# Stop when an iteration improves the loss by less than this share of it.
_TOLERANCE = 1e-4


@dataclass(frozen=True)
class Trained:
    # (k, dimension) float32
    centroids: np.ndarray
    loss: float


def sample_rows(rows: int, wanted: int, rng: np.random.Generator) -> np.ndarray:
    """Positions of ``wanted`` rows drawn without replacement (all rows, in order,
    when there are no more than that), ascending."""
    if rows <= wanted:
        return np.arange(rows)
    return np.sort(rng.choice(rows, size=wanted, replace=False))


def train(
    vectors: np.ndarray, k: int, metric: str, max_iterations: int, rng: np.random.Generator
) -> Trained:
    """``k`` centroids of ``vectors`` ((n, d) float32, n >= k) by ``metric`` (l2 or
    dot), after at most ``max_iterations`` rounds (0: the random start)."""
    if metric not in (L2, DOT):
        raise ArgumentError(f"k-means by {metric!r}: lancelet trains by l2 or dot")
    if not 0 < k <= len(vectors):
        raise ArgumentError(f"cannot train {k} centroids from {len(vectors)} vectors")
    data = np.ascontiguousarray(vectors, dtype=np.float32)
    centroids = data[rng.choice(len(data), size=k, replace=False)].copy()
    if metric == DOT:
        centroids = _unit(centroids)
    previous = np.inf
    for _ in range(max_iterations):
        members, scores = assign_scored(data, centroids, metric)
        loss = _loss(scores, metric)
        centroids = _updated(data, members, scores, centroids, metric)
        if abs(previous - loss) <= _TOLERANCE * abs(loss):
            break
        previous = loss
    _, scores = assign_scored(data, centroids, metric)
    return Trained(centroids.astype(np.float32), _loss(scores, metric))


def assign(vectors: np.ndarray, centroids: np.ndarray, metric: str) -> np.ndarray:
    """The partition (int64) of each vector: its nearest centroid by l2, or its
    centroid of largest product for dot."""
    members, _ = assign_scored(vectors, centroids, metric)
    return members


def assign_scored(
    vectors: np.ndarray, centroids: np.ndarray, metric: str
) -> tuple[np.ndarray, np.ndarray]:
    """(partition of each vector, its score): the squared l2 distance to the
    centroid, or for dot the product with it."""
    members = np.empty(len(vectors), dtype=np.int64)
    scores = np.empty(len(vectors), dtype=np.float64)
    centroid_norms = np.einsum("ij,ij->i", centroids, centroids)
    for start in range(0, len(vectors), _BLOCK_ROWS):  # one step per block
        block = vectors[start : start + _BLOCK_ROWS]
        products = block @ centroids.T
        if metric == DOT:
            best = np.argmax(products, axis=1)
            score = products[np.arange(len(block)), best]
        else:
            # |x|² is the same for every centroid: rank by |c|² - 2 c·x.
            partial = centroid_norms[None, :] - 2 * products
            best = np.argmin(partial, axis=1)
            norms = np.einsum("ij,ij->i", block, block)
            score = np.maximum(partial[np.arange(len(block)), best] + norms, 0)
        members[start : start + len(block)] = best
        scores[start : start + len(block)] = score
    return members, scores


def _loss(scores: np.ndarray, metric: str) -> float:
    total = float(scores.sum(dtype=np.float64))
    return -total if metric == DOT else total


def _updated(
    data: np.ndarray,
    members: np.ndarray,
    scores: np.ndarray,
    centroids: np.ndarray,
    metric: str,
) -> np.ndarray:
    """The centroids moved to their members' means; empty ones restarted."""
    k = len(centroids)
    counts = np.bincount(members, minlength=k)
    filled = counts > 0
    grouped = data[np.argsort(members, kind="stable")].astype(np.float64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    moved = centroids.astype(np.float64).copy()
    moved[filled] = np.add.reduceat(grouped, starts[filled], axis=0) / counts[filled, None]
    # Far from its centroid: largest l2 distance, or smallest product for dot.
    badness = -scores if metric == DOT else scores.copy()
    for empty in np.flatnonzero(~filled).tolist():  # one step per empty cluster (rare)
        farthest = int(np.argmax(badness))
        moved[empty] = data[farthest]
        badness[farthest] = -np.inf
    out = moved.astype(np.float32)
    return _unit(out) if metric == DOT else out


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` (float32) divided by their norms, bit for bit as pylance normalizes
    them for a cosine index: the squares summed in float32 in dimension order, the
    square root in float32 (a zero vector gives NaN, as it does in pylance)."""
    squares = np.zeros(len(vectors), dtype=np.float32)
    for column in vectors.T:  # one step per dimension: keeps pylance's summation order
        squares += column * column
    with np.errstate(all="ignore"):
        out: np.ndarray = vectors / np.sqrt(squares)[:, None]
    return out


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        out: np.ndarray = np.where(norms > 0, vectors / norms, vectors)
    return out.astype(np.float32)
