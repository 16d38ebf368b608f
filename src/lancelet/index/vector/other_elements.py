"""Distances over the vectors of indices on columns that are not float32, as
pylance 14 reports them (float32 ``_distance``): float64 vectors measured in
float64 and rounded once; uint8 vectors by hamming (differing bits).  float16
vectors are measured as float32 (exactly converted) by :mod:`float32_distance`.
"""

from __future__ import annotations

import numpy as np

from lancelet.index.vector import kmodes

HAMMING = "hamming"


def query_type(centroids: np.ndarray) -> np.dtype:
    """The type a query is searched in: the index's own for float64 and uint8
    (hamming), float32 otherwise."""
    if centroids.dtype in (np.float64, np.uint8):
        return centroids.dtype
    return np.dtype(np.float32)


def distances(vectors: np.ndarray, query: np.ndarray, metric: str) -> np.ndarray:
    """The float32 distances from ``query`` to each row of ``vectors`` (uint8 for
    hamming; float64 otherwise, unit vectors already for cosine)."""
    if metric == HAMMING:
        return kmodes.distances(vectors, np.asarray(query, dtype=np.uint8))
    x = np.asarray(vectors, dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    if metric == "l2":
        difference = x - q
        out = np.einsum("ij,ij->i", difference, difference)
    elif metric == "dot":
        out = 1.0 - x @ q
    else:
        with np.errstate(all="ignore"):
            out = 1.0 - (x @ q) / (np.linalg.norm(x, axis=1) * np.linalg.norm(q))
    return np.asarray(out, dtype=np.float32)


def unit(query: np.ndarray) -> np.ndarray:
    """A float64 query divided by its length (a zero query stays zero)."""
    norm = float(np.sqrt(np.sum(query * query)))
    return query / norm if norm > 0 else query
