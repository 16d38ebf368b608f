"""The distances pylance 14 reports from its vector indices, as float32 and summed in
its order (see ``distance`` for the flat search's screening and exact measure).

``l2`` is the squared Euclidean distance, ``cosine`` is ``1 - cos(x, q)`` and
``dot`` is ``1 - x·q`` (pylance adds the 1, so a dot "distance" can be negative).
"""

from __future__ import annotations

import numpy as np

from lancelet.errors import ArgumentError
from lancelet.index.vector import other_elements

METRICS = ("l2", "cosine", "dot")
_LANES = 16


def check_metric(metric: str) -> str:
    name = metric.lower()
    if name not in METRICS:
        raise ArgumentError(f"vector index: unknown metric {metric!r}, expected one of {METRICS}")
    return name


def unit(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (a zero row stays zero)."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = vectors / norms
    return np.where(norms > 0, scaled, 0).astype(np.float32)


def sequential_sum(values: np.ndarray) -> np.float32:
    """float32 sum of a vector's values added in turn (Rust's ``iter().sum()``)."""
    running = np.add.accumulate(values.astype(np.float32, copy=False))
    total: np.float32 = running[-1] if len(running) else np.float32(0)
    return total


def to_centroids(centroids: np.ndarray, query: np.ndarray, metric: str) -> np.ndarray:
    """How far ``query`` is from each centroid, for choosing partitions to probe.

    The matrix product goes through BLAS; the rank is all that matters here.  A
    cosine index clusters unit vectors, so the unit query is compared by l2.
    """
    if metric == "hamming" or centroids.dtype == np.float64:
        # By l2 for cosine too (the query is a unit vector), as pylance ranks them: a
        # centroid of opposite clusters is short, and its cosine says nothing of
        # nearness (by cosine, lancelet once probed the farthest rows).
        return other_elements.distances(centroids, query, "l2" if metric == "cosine" else metric)
    products = centroids @ query
    if metric == "dot":
        return f32(np.float32(1) - products)
    squared = np.einsum("ij,ij->i", centroids, centroids)
    return f32(squared - 2 * products + np.dot(query, query))


def exact(vectors: np.ndarray, query: np.ndarray, metric: str) -> np.ndarray:
    """pylance's exact distance from ``query`` to each row of ``vectors`` (raw)."""
    if metric == "hamming" or vectors.dtype == np.float64:
        return other_elements.distances(vectors, query, metric)
    vectors = vectors.astype(np.float32, copy=False)
    # A float16 query is measured in float32 (its norm too).
    query = np.asarray(query, dtype=np.float32)
    if metric == "l2":
        difference = vectors - query
        return lane_sum(difference * difference)
    if metric == "dot":
        return f32(np.float32(1) - lane_sum(vectors * query))
    norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(query)
    with np.errstate(invalid="ignore", divide="ignore"):
        return f32(np.float32(1) - (vectors @ query) / norms)


def lane_sum(terms: np.ndarray) -> np.ndarray:
    """Row sums of float32 ``terms`` added in pylance's order, so that distances
    agree to the last bit: sixteen running lane sums over each whole block of 16
    columns, the lanes then added in turn, plus the leftover columns added in turn.
    (Below 16 columns pylance's order is not this one; the sums then differ in the
    last bits only.)"""
    rows, columns = terms.shape
    whole = columns - columns % _LANES
    lanes = np.zeros((rows, _LANES), dtype=np.float32)
    for start in range(0, whole, _LANES):  # one step per block of columns
        lanes += terms[:, start : start + _LANES]
    total = np.zeros(rows, dtype=np.float32)
    for lane in range(_LANES if whole else 0):
        total += lanes[:, lane]
    tail = np.zeros(rows, dtype=np.float32)
    for column in range(whole, columns):
        tail += terms[:, column]
    return total + tail


def f32(values: object) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)
