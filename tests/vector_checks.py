"""Comparing nearest-neighbour answers with pylance's where float32 rounding may
order near-equal distances differently."""

from __future__ import annotations

import itertools

import numpy as np


def distance_atol(queries: np.ndarray, vectors: np.ndarray) -> float:
    """The absolute tolerance for float32 distances summed in another order than
    pylance's: 1e-5, or a few ulps of the largest product of a query's and a row's
    norms, which bounds the terms a dot product sums (one near zero is the
    difference of terms that large: 5.23 came out 1.5e-5 apart, the query's
    distances reaching -501)."""
    norms = np.linalg.norm(np.asarray(vectors, dtype=np.float64), axis=-1)
    largest = float(np.nanmax(norms, initial=0.0))
    query = float(np.linalg.norm(np.asarray(queries, dtype=np.float64), axis=-1).max())
    return max(1e-5, 4e-7 * query * largest)


def assert_same_neighbours(
    ids: np.ndarray, found: np.ndarray, expected_ids: np.ndarray, rtol: float, atol: float
) -> None:
    """The same rows in the same order, except that rows whose distances are equal
    within the float32 tolerance (the summation order differs from pylance's by a
    few ulps) may come in either order, and the last such group, cut by k, may
    hold either of its rows."""
    assert len(ids) == len(expected_ids)
    if np.array_equal(ids, expected_ids):
        return
    # Groups of consecutive distances within tolerance of their group's first.
    starts = [0]
    for i in range(1, len(found)):  # one step per returned row (k is small)
        if not np.isclose(found[i], found[starts[-1]], rtol=rtol, atol=atol):
            starts.append(i)
    bounds = [*starts, len(found)]
    for number, (low, high) in enumerate(itertools.pairwise(bounds)):
        mine, theirs = set(ids[low:high].tolist()), set(expected_ids[low:high].tolist())
        last = number == len(starts) - 1
        assert last or mine == theirs, f"rows {low}..{high}: {mine} != {theirs}"
