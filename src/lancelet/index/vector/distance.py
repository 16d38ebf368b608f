"""Distances between vectors and query vectors, with pylance's definitions.

pylance's metrics, as measured on pylance 14 (``_distance`` is float32):

* ``l2`` (also ``euclidean``): the *squared* Euclidean distance, ``sum((x - q)**2)``;
* ``cosine``: ``1 - x.q / (|x| |q|)`` (NaN, so never returned, for a zero vector);
* ``dot``: ``1 - x.q``;
* ``hamming``: the number of differing bits of two ``uint8`` vectors.

A search first *screens* a batch of vectors with one matrix product per batch (BLAS,
in the vectors' own precision), which also bounds each distance's rounding error; the
few rows that can still be among the nearest are then measured *exactly* (float64,
term by term), so that equal vectors are at distance 0 and ties are true ties, as
they are in pylance's direct computation.
"""

from __future__ import annotations

import numpy as np

L2 = "l2"
COSINE = "cosine"
DOT = "dot"
HAMMING = "hamming"

# pylance's metric names, matched without regard to case.
_NAMES = {"l2": L2, "euclidean": L2, "cosine": COSINE, "dot": DOT, "hamming": HAMMING}


def metric_named(name: str) -> str | None:
    """The metric ``name`` names (any case), or None if none."""
    return _NAMES.get(name.lower())


def compute_dtype(element: np.dtype) -> np.dtype:
    """The precision a batch is screened in: float16 vectors as float32 (numpy has no
    fast float16 product), others as they are."""
    if element == np.float16:
        return np.dtype(np.float32)
    return element


def screen(metric: str, vectors: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distances from each query (rows of ``queries``, m x d) to each vector
    (rows of ``vectors``, n x d) as an m x n array, through one matrix product in
    the vectors' precision (exact for hamming); and per query a bound on their error:
    the classic bound of a d-term dot product's rounding, ``d u |x| |q|``, with room.
    The m x n array is the product's own, updated in place (no m x n temporaries)."""
    if metric == HAMMING:
        exact_distances = np.stack([_hamming(vectors, q) for q in queries])
        return np.asarray(exact_distances), np.zeros(len(queries))
    products, vector_norms = _products_to_distances(metric, vectors, queries)
    return products, _margins(metric, vectors, vector_norms, queries)


def _products_to_distances(
    metric: str, vectors: np.ndarray, queries: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    """The m x n distances from one matrix product, turned into the metric's in place
    (no m x n temporaries); and the vectors' squared norms (None for dot)."""
    with np.errstate(all="ignore"):
        products: np.ndarray = queries @ vectors.T
        if metric == DOT:
            np.subtract(1, products, out=products)
            return products, None
        vector_norms = np.einsum("ij,ij->i", vectors, vectors)
        query_norms = np.einsum("ij,ij->i", queries, queries)
        if metric == L2:
            products *= -2
            products += vector_norms[None, :]
            products += query_norms[:, None]
            np.maximum(products, 0, out=products)
        else:
            products /= np.sqrt(vector_norms)[None, :]
            products /= np.sqrt(query_norms)[:, None]
            np.subtract(1, products, out=products)
    return products, vector_norms


def _margins(
    metric: str, vectors: np.ndarray, vector_norms: np.ndarray | None, queries: np.ndarray
) -> np.ndarray:
    unit = float(np.finfo(vectors.dtype).eps)
    terms = (vectors.shape[1] + 4) * unit
    if metric == COSINE or not len(vectors):
        return np.full(len(queries), 4 * terms)
    with np.errstate(all="ignore"):
        if vector_norms is None:
            vector_norms = np.einsum("ij,ij->i", vectors, vectors)
        largest = float(np.max(vector_norms, initial=0.0))
        query_norms = np.einsum("ij,ij->i", queries, queries).astype(np.float64)
        if metric == DOT:
            return np.asarray(2 * terms * np.sqrt(largest * query_norms) + unit)
        return np.asarray(3 * terms * (largest + query_norms))


def exact(metric: str, vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The distances from ``query`` (one vector, or one per row of ``vectors``) to
    each of ``vectors``, term by term in float64 (what the screen's candidates are
    ranked by)."""
    if metric == HAMMING:
        return _hamming(vectors, query).astype(np.float64)
    x = vectors.astype(np.float64)
    q = query.astype(np.float64)
    with np.errstate(all="ignore"):
        if metric == L2:
            out: np.ndarray = np.square(x - q).sum(axis=1)
            return out
        products = (x * q).sum(axis=1)
        if metric == DOT:
            return np.asarray(1 - products)
        scale = np.sqrt(np.square(x).sum(axis=1)) * np.sqrt(np.square(q).sum(axis=-1))
        return np.asarray(1 - products / scale)


def _hamming(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.bitwise_count(np.bitwise_xor(vectors, query)).sum(axis=1, dtype=np.int64)
    return out


def pairwise(metric: str, vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """The distances from each query (m x d) to each vector (n x d) as an m x n
    float64 array, through one float64 matrix product (hamming: counted exactly)."""
    if metric == HAMMING:
        counts = [_hamming(vectors, q) for q in queries]
        return np.asarray(np.stack(counts).astype(np.float64)).reshape(len(queries), -1)
    products, _ = _products_to_distances(
        metric, vectors.astype(np.float64), queries.astype(np.float64)
    )
    return products
