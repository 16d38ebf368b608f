"""Sets of row addresses (or offsets) as sorted, duplicate-free numpy arrays.

numpy 2's ``unique`` and ``union1d`` hash their input and are tens of times slower
than sorting it on the million-row answers a bitmap index gives, so the index
layer builds its sets with these instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def unique(values: np.ndarray) -> np.ndarray:
    """``values`` sorted, each once (returned as is when already so)."""
    # The method, not np.all: a third of the cost on the short arrays of deletion files.
    if len(values) < 2 or bool((values[1:] > values[:-1]).all()):
        return values
    ordered: np.ndarray = np.sort(values)
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def union(parts: Sequence[np.ndarray], dtype: type[np.generic] = np.uint64) -> np.ndarray:
    """Every value of any of ``parts``, sorted, each once."""
    if not parts:
        return np.empty(0, dtype=dtype)
    if len(parts) == 1:
        return unique(parts[0])
    return unique(np.concatenate(parts))


def intersection(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Values in both sorted, duplicate-free arrays."""
    return np.intersect1d(a, b, assume_unique=True)
