"""The HNSW construction loop of one graph, written once for two runners: numba
compiles :func:`build_graph` (the ``fast`` extra; :mod:`lancelet.file.codecs.jit`),
and without numba (or with ``LANCELET_JIT=0``) the same functions run as Python.
Both give the same graph: every distance is summed in the same fixed order (see
:func:`distances`), and the heaps order entries by (distance, node), so no choice
depends on how a heap is laid out.

The algorithm is the standard one as pylance builds its graphs (the spec snapshot's
``lance-index/src/vector/hnsw/builder.rs``): nodes are inserted in order; a node
descends greedily from the entry point through the levels above its own, then on
each of its levels runs a beam search of ``ef_construction`` and keeps ``m`` of
the candidates: those the neighbour-selection heuristic keeps (nearest first; a
candidate only when it is nearer to the node than to every neighbour kept before
it), then, to fill the list, those it passed over, nearest first (pylance 14 fills
its lists so: measured on its graphs, whose upper-level lists always hold ``m``
and whose level-0 lists hold ``m`` to ``2m``).  Each kept neighbour links back when
the new node is nearer than its last listed neighbour (or its list is not full); a
list grown past its limit (``2m`` on level 0, ``m`` above) is cut back the same way.

Neighbour lists live in one (rows, 2m+1) table: row ``node`` is the node's level 0,
row ``n + slot[node] + level - 1`` its list on an upper level.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from lancelet.file.codecs import jit

F = TypeVar("F", bound=Callable[..., Any])

# Distances are summed in this many interleaved lanes (vectors are zero-padded to a
# multiple of it), then the lanes in order: an order numpy reproduces exactly.
LANES = 8
# Whether the functions below can be compiled: numba is imported (to register them)
# only when the kernels are on as this module is imported (it is imported only to
# build a graph).
COMPILABLE = jit.enabled()


def _jitable(fn: F) -> F:
    """``fn`` as it is in Python, also callable from compiled code."""
    if not COMPILABLE:
        return fn
    from numba.extending import register_jitable

    registered: F = register_jitable(fn)
    return registered


def distances(
    vectors: np.ndarray, query: int, ids: np.ndarray, count: int, dot: bool, out: np.ndarray
) -> None:
    """Distances from node ``query`` to the nodes ``ids[:count]`` into ``out[:count]``:
    squared l2, or ``1 - x·y`` when ``dot``.  Each lane sums the terms of dimensions
    lane, lane + LANES, ... in turn (float32), then the lanes are added in turn."""
    chosen = vectors[ids[:count]]
    origin = vectors[query]
    terms = chosen * origin if dot else (chosen - origin) * (chosen - origin)
    lanes = terms.reshape(count, -1, LANES)
    partial = np.cumsum(lanes, axis=1, dtype=np.float32)[:, -1, :]
    total = np.cumsum(partial, axis=1, dtype=np.float32)[:, -1]
    out[:count] = np.float32(1.0) - total if dot else total


def _distances_compiled(
    vectors: np.ndarray, query: int, ids: np.ndarray, count: int, dot: bool, out: np.ndarray
) -> None:
    """:func:`distances` as loops, for numba (same order of every addition; the
    eight lanes are separate scalars so that LLVM keeps them in one vector register)."""
    width = vectors.shape[1]
    origin = vectors[query]
    for i in range(count):
        row = vectors[ids[i]]
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = np.float32(0.0)
        for base in range(0, width, LANES):
            if dot:
                t0 = row[base] * origin[base]
                t1 = row[base + 1] * origin[base + 1]
                t2 = row[base + 2] * origin[base + 2]
                t3 = row[base + 3] * origin[base + 3]
                t4 = row[base + 4] * origin[base + 4]
                t5 = row[base + 5] * origin[base + 5]
                t6 = row[base + 6] * origin[base + 6]
                t7 = row[base + 7] * origin[base + 7]
            else:
                t0 = (row[base] - origin[base]) * (row[base] - origin[base])
                t1 = (row[base + 1] - origin[base + 1]) * (row[base + 1] - origin[base + 1])
                t2 = (row[base + 2] - origin[base + 2]) * (row[base + 2] - origin[base + 2])
                t3 = (row[base + 3] - origin[base + 3]) * (row[base + 3] - origin[base + 3])
                t4 = (row[base + 4] - origin[base + 4]) * (row[base + 4] - origin[base + 4])
                t5 = (row[base + 5] - origin[base + 5]) * (row[base + 5] - origin[base + 5])
                t6 = (row[base + 6] - origin[base + 6]) * (row[base + 6] - origin[base + 6])
                t7 = (row[base + 7] - origin[base + 7]) * (row[base + 7] - origin[base + 7])
            a0 += t0
            a1 += t1
            a2 += t2
            a3 += t3
            a4 += t4
            a5 += t5
            a6 += t6
            a7 += t7
        total = ((((((a0 + a1) + a2) + a3) + a4) + a5) + a6) + a7
        out[i] = np.float32(1.0) - total if dot else total


if COMPILABLE:
    from numba.extending import overload

    # numba wants the typing function's parameters (annotations too) to be the
    # implementation's.
    @overload(distances)
    def _distances_overload(
        vectors: np.ndarray, query: int, ids: np.ndarray, count: int, dot: bool, out: np.ndarray
    ) -> None:
        return _distances_compiled  # type: ignore[return-value]


@_jitable
def _before(d1: float, i1: int, d2: float, i2: int) -> bool:
    return d1 < d2 or (d1 == d2 and i1 < i2)


@_jitable
def heap_push(
    keys: np.ndarray, nodes: np.ndarray, size: int, key: float, node: int, top_max: bool
) -> int:
    """Push onto the heap in ``keys[:size]``/``nodes[:size]`` (the largest (key,
    node) on top when ``top_max``, else the smallest); the new size."""
    at = size
    keys[at] = key
    nodes[at] = node
    while at > 0:
        parent = (at - 1) // 2
        if top_max:
            above = _before(keys[parent], nodes[parent], keys[at], nodes[at])
        else:
            above = _before(keys[at], nodes[at], keys[parent], nodes[parent])
        if not above:
            break
        keys[at], keys[parent] = keys[parent], keys[at]
        nodes[at], nodes[parent] = nodes[parent], nodes[at]
        at = parent
    return size + 1


@_jitable
def heap_pop(keys: np.ndarray, nodes: np.ndarray, size: int, top_max: bool) -> int:
    """Pop the top, which ends up at ``keys[size - 1]``/``nodes[size - 1]``; the new
    size."""
    last = size - 1
    keys[0], keys[last] = keys[last], keys[0]
    nodes[0], nodes[last] = nodes[last], nodes[0]
    at = 0
    while True:
        best = at
        for child in (2 * at + 1, 2 * at + 2):
            if child < last:
                if top_max:
                    better = _before(keys[best], nodes[best], keys[child], nodes[child])
                else:
                    better = _before(keys[child], nodes[child], keys[best], nodes[best])
                if better:
                    best = child
        if best == at:
            return last
        keys[at], keys[best] = keys[best], keys[at]
        nodes[at], nodes[best] = nodes[best], nodes[at]
        at = best


@_jitable
def _row(node: int, level: int, count: int, slots: np.ndarray) -> int:
    if level == 0:
        return node
    return int(count + slots[node] + level - 1)


@_jitable
def _greedy(
    vectors: np.ndarray,
    query: int,
    dot: bool,
    start: int,
    start_distance: float,
    level: int,
    slots: np.ndarray,
    ids: np.ndarray,
    counts: np.ndarray,
    buffer_ids: np.ndarray,
    buffer_distances: np.ndarray,
) -> tuple[int, float]:
    """Move to the nearest neighbour on ``level`` while one is strictly nearer."""
    current, closest = start, start_distance
    total = len(slots)
    while True:
        row = _row(current, level, total, slots)
        listed = counts[row]
        if listed == 0:
            return current, closest
        buffer_ids[:listed] = ids[row, :listed]
        distances(vectors, query, buffer_ids, listed, dot, buffer_distances)
        following = -1
        for j in range(listed):
            if buffer_distances[j] < closest:
                closest = buffer_distances[j]
                following = buffer_ids[j]
        if following < 0:
            return current, closest
        current = following


@_jitable
def _beam(
    vectors: np.ndarray,
    query: int,
    dot: bool,
    start: int,
    start_distance: float,
    level: int,
    ef: int,
    slots: np.ndarray,
    ids: np.ndarray,
    counts: np.ndarray,
    visited: np.ndarray,
    stamp: int,
    heaps: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    buffer_ids: np.ndarray,
    buffer_distances: np.ndarray,
    found_distances: np.ndarray,
    found_ids: np.ndarray,
) -> int:
    """The ``ef`` nearest nodes reached on ``level`` from ``start``, nearest first,
    into ``found_*``; their count."""
    candidate_keys, candidate_nodes, result_keys, result_nodes = heaps
    total = len(slots)
    visited[start] = stamp
    candidates = heap_push(candidate_keys, candidate_nodes, 0, start_distance, start, False)
    results = heap_push(result_keys, result_nodes, 0, start_distance, start, True)
    while candidates > 0:
        candidates = heap_pop(candidate_keys, candidate_nodes, candidates, False)
        current, current_distance = candidate_nodes[candidates], candidate_keys[candidates]
        furthest = result_keys[0]
        if results == ef and current_distance > furthest:
            break
        row = _row(current, level, total, slots)
        fresh = 0
        for j in range(counts[row]):
            neighbour = ids[row, j]
            if visited[neighbour] != stamp:
                visited[neighbour] = stamp
                buffer_ids[fresh] = neighbour
                fresh += 1
        if fresh == 0:
            continue
        distances(vectors, query, buffer_ids, fresh, dot, buffer_distances)
        for j in range(fresh):
            distance, neighbour = buffer_distances[j], buffer_ids[j]
            if results < ef or distance <= furthest:
                if results < ef:
                    results = heap_push(
                        result_keys, result_nodes, results, distance, neighbour, True
                    )
                elif _before(distance, neighbour, result_keys[0], result_nodes[0]):
                    results = heap_pop(result_keys, result_nodes, results, True)
                    results = heap_push(
                        result_keys, result_nodes, results, distance, neighbour, True
                    )
                candidates = heap_push(
                    candidate_keys, candidate_nodes, candidates, distance, neighbour, False
                )
    count = results
    while results > 0:
        results = heap_pop(result_keys, result_nodes, results, True)
        found_distances[results] = result_keys[results]
        found_ids[results] = result_nodes[results]
    return count


@_jitable
def _select(
    vectors: np.ndarray,
    dot: bool,
    sorted_distances: np.ndarray,
    sorted_ids: np.ndarray,
    count: int,
    limit: int,
    row: int,
    ids: np.ndarray,
    neighbour_distances: np.ndarray,
    counts: np.ndarray,
    pair: np.ndarray,
    pair_distance: np.ndarray,
) -> None:
    """Row ``row``'s list: all the candidates (in their order) when there are no
    more than ``limit``; otherwise those the heuristic keeps (nearest first), then,
    while fewer than ``limit``, those it passed over (nearest first), as pylance 14
    fills its lists (measured: its upper-level lists always hold ``m``)."""
    kept = 0
    chosen = np.zeros(count, dtype=np.bool_)
    for a in range(count):
        if kept >= limit:
            break
        candidate, distance = sorted_ids[a], sorted_distances[a]
        diverse = True
        if count > limit:
            for b in range(kept):
                pair[0] = ids[row, b]
                distances(vectors, candidate, pair, 1, dot, pair_distance)
                if not distance < pair_distance[0]:
                    diverse = False
                    break
        if diverse:
            ids[row, kept] = candidate
            neighbour_distances[row, kept] = distance
            chosen[a] = True
            kept += 1
    for a in range(count):
        if kept >= limit:
            break
        if not chosen[a]:
            ids[row, kept] = sorted_ids[a]
            neighbour_distances[row, kept] = sorted_distances[a]
            kept += 1
    counts[row] = kept


@_jitable
def _prune(
    vectors: np.ndarray,
    dot: bool,
    row: int,
    limit: int,
    ids: np.ndarray,
    neighbour_distances: np.ndarray,
    counts: np.ndarray,
    pair: np.ndarray,
    pair_distance: np.ndarray,
) -> None:
    """Row ``row`` (one over its limit) cut back by the heuristic."""
    listed = counts[row]
    order = np.argsort(neighbour_distances[row, :listed], kind="mergesort")
    sorted_distances = neighbour_distances[row, :listed][order]
    sorted_ids = ids[row, :listed][order]
    _select(
        vectors,
        dot,
        sorted_distances,
        sorted_ids,
        listed,
        limit,
        row,
        ids,
        neighbour_distances,
        counts,
        pair,
        pair_distance,
    )


def build_graph(
    vectors: np.ndarray,
    dot: bool,
    levels: np.ndarray,
    slots: np.ndarray,
    m: int,
    ef: int,
    ids: np.ndarray,
    neighbour_distances: np.ndarray,
    counts: np.ndarray,
) -> int:
    """Insert nodes 1.. of ``vectors`` ((n, LANES * k) float32) into the graph of
    node 0, filling ``ids``/``neighbour_distances``/``counts`` (rows as the module
    says, 2m+1 columns, counts zero); the entry point."""
    total = len(levels)
    width = ids.shape[1]
    visited = np.zeros(total, dtype=np.int64)
    heaps = (
        np.empty(total + 1, dtype=np.float32),
        np.empty(total + 1, dtype=np.int64),
        np.empty(ef + 2, dtype=np.float32),
        np.empty(ef + 2, dtype=np.int64),
    )
    buffer_ids = np.empty(width + 1, dtype=np.int64)
    buffer_distances = np.empty(width + 1, dtype=np.float32)
    found_distances = np.empty(ef + 2, dtype=np.float32)
    found_ids = np.empty(ef + 2, dtype=np.int64)
    pair = np.empty(1, dtype=np.int64)
    pair_distance = np.empty(1, dtype=np.float32)
    entry, top, stamp = 0, levels[0] if total else 0, 0
    for node in range(1, total):
        own = levels[node]
        pair[0] = entry
        distances(vectors, node, pair, 1, dot, pair_distance)
        nearest, nearest_distance = entry, pair_distance[0]
        for level in range(top, own, -1):
            nearest, nearest_distance = _greedy(
                vectors, node, dot, nearest, nearest_distance, level, slots, ids, counts,
                buffer_ids, buffer_distances,
            )  # fmt: skip
        for level in range(min(own, top), -1, -1):
            stamp += 1
            found = _beam(
                vectors, node, dot, nearest, nearest_distance, level, ef, slots, ids, counts,
                visited, stamp, heaps, buffer_ids, buffer_distances, found_distances, found_ids,
            )  # fmt: skip
            # A node picks m neighbours; lists grow to 2m on level 0 (m above) by
            # the links of later nodes.
            limit = 2 * m if level == 0 else m
            row = _row(node, level, total, slots)
            _select(
                vectors, dot, found_distances, found_ids, found, m, row, ids,
                neighbour_distances, counts, pair, pair_distance,
            )  # fmt: skip
            nearest, nearest_distance = found_ids[0], found_distances[0]
            for j in range(counts[row]):
                _link(
                    vectors, dot, node, ids[row, j], neighbour_distances[row, j], level,
                    limit, slots, ids, neighbour_distances, counts, pair, pair_distance,
                )  # fmt: skip
        if own > top:
            entry, top = node, own
    return entry


@_jitable
def _link(
    vectors: np.ndarray,
    dot: bool,
    node: int,
    neighbour: int,
    distance: float,
    level: int,
    limit: int,
    slots: np.ndarray,
    ids: np.ndarray,
    neighbour_distances: np.ndarray,
    counts: np.ndarray,
    pair: np.ndarray,
    pair_distance: np.ndarray,
) -> None:
    """``node`` joins ``neighbour``'s list when nearer than its last listed (or the
    list is not full); a list then over its limit is pruned."""
    row = _row(neighbour, level, len(slots), slots)
    listed = counts[row]
    if listed >= limit and not distance < neighbour_distances[row, listed - 1]:
        return
    ids[row, listed] = node
    neighbour_distances[row, listed] = distance
    counts[row] = listed + 1
    if listed + 1 > limit:
        _prune(vectors, dot, row, limit, ids, neighbour_distances, counts, pair, pair_distance)
