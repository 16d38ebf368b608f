"""Distances to multivectors (a row holding a list of vectors), as pylance 14
measures them in a search without an index (measured):

* a row's distance to a query (itself one or more vectors) is the sum, over the
  query's vectors, of each one's smallest distance to the row's vectors;
* a row vector whose distance is NaN (a NaN in it) is passed over by that
  smallest, but under cosine a row holding a zero vector is at distance NaN (never
  returned), as is a row all of whose vectors are NaN.

Null elements and null vectors in a row count as zeros (pylance reads them so);
empty and null rows are never returned (the caller leaves them out).
"""

from __future__ import annotations

import numpy as np

from lancelet.index.vector.distance import COSINE, pairwise


def multivector_distances(
    metric: str, vectors: np.ndarray, starts: np.ndarray, queries: np.ndarray
) -> np.ndarray:
    """The float64 distance from the multivector query ``queries`` (m x d) to each
    row, whose vectors are ``vectors[starts[i]:starts[i + 1]]`` (all rows non-empty):
    one matrix product for every pair of vectors, then a reduction per row."""
    pairs = pairwise(metric, vectors, queries)
    with np.errstate(invalid="ignore"):
        # fmin passes over NaN: a NaN vector is never a row's nearest.
        smallest = np.fmin.reduceat(pairs, starts, axis=1)
        distances: np.ndarray = smallest.sum(axis=0)
    if metric == COSINE:
        zero = ~np.any(vectors != 0, axis=1)
        distances[np.logical_or.reduceat(zero, starts)] = np.nan
    return distances
