"""The extra-bit codes of an IVF_RQ build as a loop numba compiles (the ``fast``
extra; :mod:`lancelet.file.codecs.jit`): imported only when the kernels are on, and
then it imports numba.  Without numba, ``ivf_rq_writer`` searches in numpy; both
find each row's best scale (they may part where two scales score within rounding
of each other)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

F = TypeVar("F", bound=Callable[..., Any])


def _jitable(fn: F) -> F:
    """``fn`` callable from compiled code (this module is imported only when the
    kernels are on, so numba is there)."""
    from numba.extending import register_jitable

    registered: F = register_jitable(fn)
    return registered


@_jitable
def _before(key: float, level: int, other_key: float, other_level: int) -> bool:
    return key < other_key or (key == other_key and level < other_level)


def best_magnitudes(
    absolute: np.ndarray, top: int, low: np.ndarray, high: np.ndarray, out: np.ndarray
) -> None:
    """``ivf_rq_writer.best_magnitudes`` row by row, into ``out``, over the scales
    ``low[row]`` to ``high[row]``: the steps ``j / |o_d|`` above the codes at
    ``low`` are merged from ``top`` lists (level j over the dimensions by
    decreasing ``|o_d|``) through a heap, so no row sorts all its steps."""
    rows, dimension = absolute.shape
    keys = np.empty(top, dtype=np.float64)
    lists = np.empty(top, dtype=np.int64)
    position = np.zeros(top + 1, dtype=np.int64)
    first = np.zeros(dimension, dtype=np.int64)
    for row in range(rows):
        values = absolute[row]
        order = np.argsort(-values)
        start, end = low[row], high[row]
        product = 0.0
        length = 0.0
        for d in range(dimension):
            code = min(int(np.floor(start * values[d])), top) if values[d] > 0 else 0
            if code < top and values[d] > 0 and (code + 1) / values[d] <= start:
                code += 1
            if code > 0 and code / values[d] > start:
                code -= 1
            first[d] = code
            product += (code + 0.5) * values[d]
            length += (code + 0.5) * (code + 0.5)
        best = product / np.sqrt(length)
        size = 0
        at = 0
        for level in range(top, 0, -1):
            # The first dimension (by decreasing value, so by decreasing code) not
            # yet at this level: no earlier than the level above's.
            while at < dimension and first[order[at]] >= level:
                at += 1
            position[level] = at
            if at < dimension and values[order[at]] > 0 and level / values[order[at]] <= end:
                size = _push(keys, lists, size, level / values[order[at]], level)
        chosen = 0.5 * (start + keys[0]) if size > 0 else start
        while size > 0:
            time, level = keys[0], lists[0]
            size = _pop(keys, lists, size)
            product += values[order[position[level]]]
            length += 2.0 * level
            position[level] += 1
            at = position[level]
            if at < dimension and values[order[at]] > 0 and level / values[order[at]] <= end:
                size = _push(keys, lists, size, level / values[order[at]], level)
            following = keys[0] if size > 0 else np.inf
            if following > time:  # every step at this time taken
                score = product / np.sqrt(length)
                if score > best:
                    best = score
                    chosen = 0.5 * (time + following) if following < np.inf else 2.0 * time
        for d in range(dimension):
            out[row, d] = min(int(np.floor(chosen * values[d])), top)


@_jitable
def _push(keys: np.ndarray, lists: np.ndarray, size: int, key: float, level: int) -> int:
    at = size
    keys[at], lists[at] = key, level
    while at > 0:
        parent = (at - 1) // 2
        if not (
            keys[at] < keys[parent] or (keys[at] == keys[parent] and lists[at] < lists[parent])
        ):
            break
        keys[at], keys[parent] = keys[parent], keys[at]
        lists[at], lists[parent] = lists[parent], lists[at]
        at = parent
    return size + 1


@_jitable
def _pop(keys: np.ndarray, lists: np.ndarray, size: int) -> int:
    last = size - 1
    keys[0], lists[0] = keys[last], lists[last]
    at = 0
    while True:
        smallest = at
        for child in (2 * at + 1, 2 * at + 2):
            if child < last and _before(keys[child], lists[child], keys[smallest], lists[smallest]):
                smallest = child
        if smallest == at:
            return last
        keys[at], keys[smallest] = keys[smallest], keys[at]
        lists[at], lists[smallest] = lists[smallest], lists[at]
        at = smallest
