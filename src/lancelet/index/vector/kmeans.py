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

Training starts from ``k`` distinct vectors of the sample chosen by greedy
k-means++ (or at random, as PQ code words are).  A centroid left
with no vectors restarts at the vector farthest from its own centroid (which takes
it from its cluster), so every partition keeps at least one training vector.
Distances come from one BLAS matrix product per block of vectors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
from threadpoolctl import ThreadpoolController

from lancelet.errors import ArgumentError
from lancelet.file import parallel

L2 = "l2"
DOT = "dot"
# Products per block of the distance product (16 MiB of float32), and the bounds
# of its rows.
_BLOCK_VALUES = 1 << 22
_MIN_BLOCK_ROWS = 1 << 10
_MAX_BLOCK_ROWS = 1 << 14
# Stop when an iteration improves the loss by less than this share of it.
_TOLERANCE = 1e-4
_SEEDING_ROWS_PER_CENTROID = 64
# Relative gap between the two nearest centroids below which float32 products
# cannot tell them apart.
_TIE_TOLERANCE = 1e-5


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
    vectors: np.ndarray,
    k: int,
    metric: str,
    max_iterations: int,
    rng: np.random.Generator,
    plus_plus: bool = True,
) -> Trained:
    """``k`` centroids of ``vectors`` ((n, d) float32, n >= k) by ``metric`` (l2 or
    dot), after at most ``max_iterations`` rounds (0: the start), starting from
    k-means++ seeds (or, without ``plus_plus``, from distinct random vectors)."""
    if metric not in (L2, DOT):
        raise ArgumentError(f"k-means by {metric!r}: lancelet trains by l2 or dot")
    if not 0 < k <= len(vectors):
        raise ArgumentError(f"cannot train {k} centroids from {len(vectors)} vectors")
    data = np.ascontiguousarray(vectors, dtype=np.float32)
    if plus_plus:
        # Seeding is quadratic in k; a random subset of 64 rows per centroid seeds as
        # well as the whole sample (measured).
        subset = sample_rows(len(data), _SEEDING_ROWS_PER_CENTROID * k, rng)
        centroids = data[subset[_seeds(data[subset], k, rng)]]
    else:
        centroids = data[rng.choice(len(data), size=k, replace=False)]
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


def _seeds(data: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Positions of ``k`` distinct starting centroids by greedy k-means++: each next
    one is, of a few candidates drawn with probability proportional to their squared
    l2 distance from the nearest centroid so far, the one that leaves the smallest
    sum of those distances.  (Uniformly random starts leave some centroids splitting
    one cluster while others share two: on a 100,000-vector Gaussian mixture the
    clustering's loss was a third above pylance's, and PQ recall 0.02 lower.)"""
    rows = len(data)
    trials = 2 + int(np.log(k))
    norms = np.einsum("ij,ij->i", data, data)
    chosen = np.empty(k, dtype=np.int64)
    chosen[0] = rng.integers(rows)
    closest = _distances(data, norms, chosen[:1])[0]
    for i in range(1, k):  # one step per centroid: one product with the candidates
        total = float(closest.sum(dtype=np.float64))
        if total <= 0:  # every row equals a chosen one: take any other row
            left = np.setdiff1d(np.arange(rows), chosen[:i])
            chosen[i] = left[rng.integers(len(left))]
            closest = np.minimum(closest, _distances(data, norms, chosen[i : i + 1])[0])
            continue
        cumulative = np.cumsum(closest, dtype=np.float64)
        draws = np.searchsorted(cumulative, rng.random(trials) * total)
        candidates = np.minimum(draws, rows - 1)
        after = np.minimum(closest[None, :], _distances(data, norms, candidates))
        best = int(np.argmin(after.sum(axis=1, dtype=np.float64)))
        chosen[i] = candidates[best]
        closest = after[best]
    return chosen


def _distances(data: np.ndarray, norms: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """(len(positions), rows) float32 squared l2 distances from those rows (>= 0;
    float32 is enough to weigh the seeding draws, and one row per candidate keeps
    the reductions over rows contiguous)."""
    picked = data[positions]
    out: np.ndarray = picked @ data.T
    out *= -2
    out += norms[positions][:, None]
    out += norms[None, :]
    np.maximum(out, 0, out=out)
    out[np.arange(len(positions)), positions] = 0
    return out


def assign(vectors: np.ndarray, centroids: np.ndarray, metric: str) -> np.ndarray:
    """The partition (int64) of each vector: its nearest centroid by l2, or its
    centroid of largest product for dot.  Near ties by l2 are settled by the exact
    distance, as pylance's direct distances settle them (the product form
    ``|x|² + |c|² - 2 x·c`` loses digits when the two nearest are equally far)."""
    members, _ = assign_scored(vectors, centroids, metric, settle_ties=True)
    return members


def assign_scored(
    vectors: np.ndarray, centroids: np.ndarray, metric: str, settle_ties: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(partition of each vector, its score): the squared l2 distance to the
    centroid, or for dot the product with it."""
    members = np.empty(len(vectors), dtype=np.int64)
    scores = np.empty(len(vectors), dtype=np.float64)
    centroid_norms = np.einsum("ij,ij->i", centroids, centroids)
    # |x|² is the same for every centroid: l2 ranks by |c|² - 2 c·x.
    factors = np.ascontiguousarray((centroids if metric == DOT else -2 * centroids).T)
    step = _block_rows(len(centroids))

    def assign_block(start: int) -> None:
        block = vectors[start : start + step]
        products = block @ factors
        rows = np.arange(len(block))
        if metric == DOT:
            best = np.argmax(products, axis=1)
            score = products[rows, best]
        else:
            products += centroid_norms
            best = np.argmin(products, axis=1)
            norms = np.einsum("ij,ij->i", block, block)
            score = np.maximum(products[rows, best] + norms, 0)
            if settle_ties and len(centroids) > 1:
                _settle_near_ties(block, centroids, products, norms, best)
        members[start : start + len(block)] = best
        scores[start : start + len(block)] = score

    _each_block(assign_block, list(range(0, len(vectors), step)))
    return members, scores


def _each_block(work: Callable[[int], None], starts: list[int]) -> None:
    """Run ``work`` on every block, on the decode pool's threads when there are
    several.  Each block's product then runs on one BLAS thread: several blocks at
    once keep every core busy through the product *and* the argmin and gathers
    that follow it, which OpenBLAS's own threads leave to one core (the k-means
    of a PQ codebook ran 1.7 times faster on two cores)."""
    if parallel.WORKERS < 2 or len(starts) < 2:
        for start in starts:  # one step per block
            work(start)
        return
    with _blas().limit(limits=1, user_api="blas"):
        parallel.map_columns(work, starts)


@cache
def _blas() -> ThreadpoolController:
    return ThreadpoolController()


def _settle_near_ties(
    block: np.ndarray,
    centroids: np.ndarray,
    partial: np.ndarray,
    norms: np.ndarray,
    best: np.ndarray,
) -> None:
    """Reassign, by float64 distances, the rows of ``block`` whose two nearest
    centroids (``partial``: |c|² - 2 x·c) are within float32 rounding (rare)."""
    rows = np.arange(len(partial))
    nearest = partial[rows, best]
    # The second nearest: the row's minimum with its nearest set aside (one SIMD
    # reduction; a partition of every row costs several times more).
    partial[rows, best] = np.inf
    second = partial.min(axis=1)
    partial[rows, best] = nearest
    scale = norms + np.abs(nearest) + np.finfo(np.float32).tiny
    close = np.flatnonzero(second - nearest <= _TIE_TOLERANCE * scale)
    if len(close):
        picked = block[close].astype(np.float64)
        exact = ((picked[:, None, :] - centroids[None].astype(np.float64)) ** 2).sum(axis=2)
        best[close] = np.argmin(exact, axis=1)


def _block_rows(centroids: int) -> int:
    """Rows per block: bounds the (rows, centroids) temporaries while each matrix
    product stays large enough for BLAS (on a busy machine, OpenBLAS's threads make
    small products many times slower)."""
    return int(np.clip(_BLOCK_VALUES // max(centroids, 1), _MIN_BLOCK_ROWS, _MAX_BLOCK_ROWS))


def _sums(data: np.ndarray, members: np.ndarray, k: int) -> np.ndarray:
    """(k, d) float64: the sum of each cluster's vectors, one bincount per dimension
    (no sorted float64 copy of the data)."""
    sums = np.empty((k, data.shape[1]), dtype=np.float64)
    for dimension, column in enumerate(data.T):  # one step per dimension
        sums[:, dimension] = np.bincount(members, weights=column, minlength=k)
    return sums


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
    moved = centroids.astype(np.float64).copy()
    moved[filled] = _sums(data, members, k)[filled] / counts[filled, None]
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
