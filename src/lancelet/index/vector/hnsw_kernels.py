"""The HNSW construction loop of one graph, written once for two runners: numba
compiles :func:`build_graph` (the ``fast`` extra; :mod:`lancelet.file.codecs.jit`),
and without numba (or with ``LANCELET_JIT=0``) the same functions run as Python.
Both give the same graph: every distance is summed in the same fixed order (see
:func:`distances`), and the heaps order entries by (distance, node), so no choice
depends on how a heap is laid out.

The algorithm is the standard one as pylance builds its graphs (the spec snapshot's
``lance-index/src/vector/hnsw/builder.rs``, with pylance 14's differences): the
entry point, the first node of the highest level, is placed first; the other nodes
are inserted in order; a node
descends greedily from the entry point through the levels above its own, then on
each of its levels runs a beam search of ``ef_construction`` and keeps ``m`` of
the candidates: those the neighbour-selection heuristic keeps (nearest first; a
candidate only when it is nearer to the node than to every neighbour kept before
it), then, to fill the list, those it passed over, nearest first (pylance 14 fills
its lists so: measured on its graphs, whose upper-level lists always hold ``m``
and whose level-0 lists hold ``m`` to ``2m``).  Each kept neighbour takes the new
node into its list; a list grown past its limit (``2m`` on level 0, ``m`` above) is
cut back the same way.  With pylance's levels this reproduces the graphs pylance
builds on one thread (``RAYON_NUM_THREADS=1``) list for list.

Neighbour lists live in one (rows, 2m+1) table: row ``node`` is the node's level 0,
row ``n + slot[node] + level - 1`` its list on an upper level.

Most distances (about 2,300 of 2,600 per node at m = 20, ef_construction = 150)
were the heuristic's, between two members of a full list being cut back, and the
same pairs come up each time the list is cut back again.  So each row keeps, for
each two members p and q, the heuristic's verdict once measured (whether p is
nearer the row's owner than to q; one byte, in a (rows, 2m+1, 2m+1) table indexed
by the slot a member keeps while in the list), and a node joining a list brings
the distances its own search measured to the members.  Distances are symmetric
bit for bit (``(x - y)²`` and ``x·y`` do not depend on the order), so one
measurement settles both verdicts of a pair, and every verdict is the one the
distance computed anew gives: the graph is the same (about 340 distances a node).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from lancelet.file.codecs import jit

F = TypeVar("F", bound=Callable[..., Any])
# Scratch of the neighbour selection: a pair (ids, distance), which candidates were
# kept, a list sorted by distance (distances, ids), the slot each sorted entry had
# in its row (-1: none) and the slot each entry of the new list keeps.
Work = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
# What is known: the verdicts between a row's members by their slots (rows, width,
# width; none when too large to keep), the latest search's distance to each node
# and which node that search inserted, a scratch of taken slots, and each list
# entry's slot (rows, width).  A member keeps its slot while in the list, so a list
# cut back moves no verdict.
Cache = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]

# Distances are summed in this many interleaved lanes (vectors are zero-padded to a
# multiple of it), then the lanes in order: an order numpy reproduces exactly.
LANES = 8
# Whether the functions below can be compiled: numba is imported (to register them)
# only when the kernels are on as this module is imported (it is imported only to
# build a graph).
COMPILABLE = jit.enabled()
# The most a graph's table of verdicts may take (1.7 KB a row at m = 20: graphs of
# up to about 150,000 nodes, so every IVF_HNSW_* partition; a larger graph
# measures every pair).
PAIR_CACHE_BYTES = 256 << 20
# What a row's table says of two members p and q: not known yet, or whether p is
# nearer the row's owner than q (the heuristic's test).
_UNKNOWN, _NEARER, _FARTHER = 0, 1, 2


def _jitable(fn: F) -> F:
    """``fn`` as it is in Python, also callable from compiled code."""
    if not COMPILABLE:
        return fn
    from numba.extending import register_jitable

    registered: F = register_jitable(fn)
    return registered


def _inlined(fn: F) -> F:
    """:func:`_jitable`, inlined where compiled code calls it (numba leaves calls
    to small functions taking many arrays as calls: the heuristic's test as a call
    was measured 25% slower)."""
    if not COMPILABLE:
        return fn
    from numba.extending import register_jitable

    registered: F = register_jitable(inline="always")(fn)
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


def pair_distance(vectors: np.ndarray, first: int, second: int, dot: bool) -> float:
    """The distance between nodes ``first`` and ``second``, as :func:`distances`
    sums it (the same either way round)."""
    out = np.empty(1, dtype=np.float32)
    distances(vectors, first, np.array([second]), 1, dot, out)
    return float(out[0])


def _lane_distance_typing(typing_context: Any, vectors: Any, a: Any, b: Any, dot: Any) -> Any:
    """numba's typing and LLVM code of ``_lane_distance(vectors, a, b, dot)``: the
    distance between rows ``a`` and ``b`` of a C-contiguous (n, LANES * k) float32
    array, as :func:`distances` sums it.  The lanes are one LLVM vector of LANES
    floats (numba's loops leave such sums scalar, about five times slower); the
    operations carry no fast-math flags, so nothing is fused or reordered."""
    from llvmlite import ir
    from numba.core import cgutils, types

    if not (
        isinstance(vectors, types.Array)
        and vectors.ndim == 2
        and vectors.dtype == types.float32
        and vectors.layout == "C"
    ):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        array = context.make_array(signature.args[0])(context, builder, args[0])
        rows = [context.cast(builder, args[i], signature.args[i], types.intp) for i in (1, 2)]
        is_dot = context.cast(builder, args[3], signature.args[3], types.boolean)
        width = cgutils.unpack_tuple(builder, array.shape, 2)[1]  # type: ignore[no-untyped-call]
        lane_vector = ir.VectorType(ir.FloatType(), LANES)
        starts = [builder.gep(array.data, [builder.mul(row, width)]) for row in rows]
        zeros = ir.Constant(lane_vector, [0.0] * LANES)
        total = cgutils.alloca_once_value(builder, zeros)  # type: ignore[no-untyped-call]
        blocks = builder.udiv(width, ir.Constant(width.type, LANES))
        with cgutils.for_range(builder, blocks) as loop:
            offset = builder.mul(loop.index, ir.Constant(width.type, LANES))
            x, y = (
                builder.load(
                    builder.bitcast(builder.gep(start, [offset]), lane_vector.as_pointer()),
                    align=4,
                )
                for start in starts
            )
            difference = builder.fsub(x, y)
            term = builder.select(is_dot, builder.fmul(x, y), builder.fmul(difference, difference))
            builder.store(builder.fadd(builder.load(total), term), total)
        lanes = builder.load(total)
        summed = builder.extract_element(lanes, ir.Constant(ir.IntType(32), 0))
        for lane in range(1, LANES):
            element = builder.extract_element(lanes, ir.Constant(ir.IntType(32), lane))
            summed = builder.fadd(summed, element)
        one = ir.Constant(ir.FloatType(), 1.0)
        return builder.select(is_dot, builder.fsub(one, summed), summed)

    return types.float32(vectors, a, b, dot), codegen


def _distances_compiled(
    vectors: np.ndarray, query: int, ids: np.ndarray, count: int, dot: bool, out: np.ndarray
) -> None:
    """:func:`distances` for numba (the same additions in the same order)."""
    for i in range(count):
        out[i] = _lane_distance(vectors, ids[i], query, dot)


def _pair_distance_compiled(vectors: np.ndarray, first: int, second: int, dot: bool) -> float:
    """:func:`pair_distance` for numba."""
    return _lane_distance(vectors, second, first, dot)


if COMPILABLE:
    from numba.extending import intrinsic, overload

    _lane_distance: Callable[..., float] = intrinsic(_lane_distance_typing)

    # numba wants the typing function's parameters (annotations too) to be the
    # implementation's.
    @overload(distances)
    def _distances_overload(
        vectors: np.ndarray, query: int, ids: np.ndarray, count: int, dot: bool, out: np.ndarray
    ) -> None:
        return _distances_compiled  # type: ignore[return-value]

    @overload(pair_distance, inline="always")
    def _pair_distance_overload(vectors: np.ndarray, first: int, second: int, dot: bool) -> float:
        return _pair_distance_compiled  # type: ignore[return-value]


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
def _remember(
    query: int, nodes: np.ndarray, measured: np.ndarray, count: int, cache: Cache
) -> None:
    """Note the distances from ``query`` to ``nodes[:count]`` (``measured``)."""
    known_distances, known_for = cache[1], cache[2]
    for j in range(count):
        known_distances[nodes[j]] = measured[j]
        known_for[nodes[j]] = query


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
    cache: Cache,
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
        _remember(query, buffer_ids, buffer_distances, listed, cache)
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
    cache: Cache,
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
        _remember(query, buffer_ids, buffer_distances, fresh, cache)
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
    count: int,
    limit: int,
    row: int,
    ids: np.ndarray,
    neighbour_distances: np.ndarray,
    counts: np.ndarray,
    work: Work,
    cache: Cache,
) -> None:
    """Row ``row``'s list from the ``count`` candidates sorted in ``work``: all of
    them (in their order) when there are no more than ``limit``; otherwise those
    the heuristic keeps (nearest first), then, while fewer than ``limit``, those it
    passed over (nearest first), as pylance 14 fills its lists (measured: its
    upper-level lists always hold ``m``)."""
    chosen, sorted_distances, sorted_ids = work[2], work[3], work[4]
    sorted_slots, final_slots, verdicts = work[5], work[6], cache[0]
    kept = 0
    chosen[:count] = False
    for a in range(count):
        if kept >= limit:
            break
        candidate, distance = sorted_ids[a], sorted_distances[a]
        diverse = True
        if count > limit:
            for b in range(kept):
                nearer = _nearer_to_owner(
                    vectors, dot, candidate, distance, ids[row, b], neighbour_distances[row, b],
                    row, sorted_slots[a], final_slots[b], verdicts,
                )  # fmt: skip
                if not nearer:
                    diverse = False
                    break
        if diverse:
            _place(row, kept, a, ids, neighbour_distances, sorted_ids, sorted_distances,
                   sorted_slots, final_slots)  # fmt: skip
            chosen[a] = True
            kept += 1
    for a in range(count):
        if kept >= limit:
            break
        if not chosen[a]:
            _place(row, kept, a, ids, neighbour_distances, sorted_ids, sorted_distances,
                   sorted_slots, final_slots)  # fmt: skip
            kept += 1
    counts[row] = kept
    _keep_slots(row, kept, final_slots, cache)


@_inlined
def _place(
    row: int,
    at: int,
    a: int,
    ids: np.ndarray,
    neighbour_distances: np.ndarray,
    sorted_ids: np.ndarray,
    sorted_distances: np.ndarray,
    sorted_slots: np.ndarray,
    final_slots: np.ndarray,
) -> None:
    """Sorted candidate ``a`` becomes entry ``at`` of row ``row``'s list."""
    ids[row, at] = sorted_ids[a]
    neighbour_distances[row, at] = sorted_distances[a]
    final_slots[at] = sorted_slots[a]


@_inlined
def _nearer_to_owner(
    vectors: np.ndarray,
    dot: bool,
    first: int,
    first_distance: float,
    second: int,
    second_distance: float,
    row: int,
    first_slot: int,
    second_slot: int,
    verdicts: np.ndarray,
) -> bool:
    """Whether ``first`` (at ``first_distance`` from row ``row``'s owner) is nearer
    the owner than to ``second`` (at ``second_distance``), both members of the row
    in those slots (-1: not a member): cached, or measured and cached both ways."""
    cached = row < len(verdicts) and first_slot >= 0 and second_slot >= 0
    if cached:
        verdict = verdicts[row, first_slot, second_slot]
        if verdict != _UNKNOWN:
            return bool(verdict == _NEARER)
    between = pair_distance(vectors, first, second, dot)
    if cached:
        verdicts[row, first_slot, second_slot] = _verdict(first_distance, between)
        verdicts[row, second_slot, first_slot] = _verdict(second_distance, between)
    return bool(first_distance < between)


@_jitable
def _verdict(distance: float, between: float) -> int:
    return _NEARER if distance < between else _FARTHER


@_jitable
def _keep_slots(row: int, count: int, final_slots: np.ndarray, cache: Cache) -> None:
    """Where row ``row``'s new list finds its members' cached verdicts: entry ``i``
    keeps its slot ``final_slots[i]``; a new list (slots -1) takes slots 0, 1, ...
    with nothing known."""
    verdicts, slot_of = cache[0], cache[4]
    if row >= len(verdicts) or count == 0:
        return
    if final_slots[0] >= 0:
        slot_of[row, :count] = final_slots[:count]
        return
    for i in range(count):
        slot_of[row, i] = i
    verdicts[row, :count, :count] = _UNKNOWN


@_jitable
def _prune(
    vectors: np.ndarray,
    dot: bool,
    row: int,
    limit: int,
    ids: np.ndarray,
    neighbour_distances: np.ndarray,
    counts: np.ndarray,
    work: Work,
    cache: Cache,
) -> None:
    """Row ``row`` (one over its limit) cut back by the heuristic."""
    listed = counts[row]
    sorted_distances, sorted_ids, sorted_slots = work[3], work[4], work[5]
    cached = row < len(cache[0])
    # A stable insertion sort by distance: the lists are short and mostly in order.
    for a in range(listed):
        distance, neighbour = neighbour_distances[row, a], ids[row, a]
        at = a
        while at > 0 and sorted_distances[at - 1] > distance:
            sorted_distances[at] = sorted_distances[at - 1]
            sorted_ids[at] = sorted_ids[at - 1]
            sorted_slots[at] = sorted_slots[at - 1]
            at -= 1
        sorted_distances[at] = distance
        sorted_ids[at] = neighbour
        sorted_slots[at] = cache[4][row, a] if cached else -1
    _select(vectors, dot, listed, limit, row, ids, neighbour_distances, counts, work, cache)


@_jitable
def _scratch(total: int, rows: int, width: int, ef: int) -> tuple[Work, Cache]:
    """The selection's scratch and the distance cache of a graph of ``total`` nodes
    and ``rows`` lists: the pair table only when it takes no more than
    ``PAIR_CACHE_BYTES`` (else every pair is computed when needed)."""
    longest = max(ef + 2, width + 1)
    work = (
        np.empty(1, dtype=np.int64),
        np.empty(1, dtype=np.float32),
        np.empty(longest, dtype=np.bool_),
        np.empty(longest, dtype=np.float32),
        np.empty(longest, dtype=np.int64),
        np.empty(longest, dtype=np.int64),
        np.empty(longest, dtype=np.int64),
    )
    cached_rows = rows if rows * width * width <= PAIR_CACHE_BYTES else 0
    cache = (
        np.zeros((cached_rows, width, width), dtype=np.uint8),
        np.empty(total, dtype=np.float32),
        np.full(total, -1, dtype=np.int64),
        np.empty(width, dtype=np.bool_),
        np.empty((cached_rows, width), dtype=np.int64),
    )
    return work, cache


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
    """Insert the nodes of ``vectors`` ((n, LANES * k) float32), in order, into the
    graph of the entry point (the first node of the highest level), filling
    ``ids``/``neighbour_distances``/``counts`` (rows as the module says, 2m+1
    columns, counts zero); the entry point."""
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
    work, cache = _scratch(total, len(ids), width, ef)
    pair, pair_distance = work[0], work[1]
    # pylance starts every insertion at the first node of the highest level, which
    # is placed first and never inserted itself.
    entry = int(np.argmax(levels))
    top, stamp = levels[entry], 0
    for node in range(total):
        if node == entry:
            continue
        own = levels[node]
        pair[0] = entry
        distances(vectors, node, pair, 1, dot, pair_distance)
        _remember(node, pair, pair_distance, 1, cache)
        nearest, nearest_distance = entry, pair_distance[0]
        for level in range(top, own, -1):
            nearest, nearest_distance = _greedy(
                vectors, node, dot, nearest, nearest_distance, level, slots, ids, counts,
                buffer_ids, buffer_distances, cache,
            )  # fmt: skip
        for level in range(min(own, top), -1, -1):
            stamp += 1
            found = _beam(
                vectors, node, dot, nearest, nearest_distance, level, ef, slots, ids, counts,
                visited, stamp, heaps, buffer_ids, buffer_distances, work[3], work[4], cache,
            )  # fmt: skip
            nearest, nearest_distance = work[4][0], work[3][0]
            _join(
                vectors, dot, node, found, level, m, slots, ids, neighbour_distances, counts,
                work, cache,
            )  # fmt: skip
    return entry


@_jitable
def _join(
    vectors: np.ndarray,
    dot: bool,
    node: int,
    found: int,
    level: int,
    m: int,
    slots: np.ndarray,
    ids: np.ndarray,
    neighbour_distances: np.ndarray,
    counts: np.ndarray,
    work: Work,
    cache: Cache,
) -> None:
    """``node`` takes its list on ``level`` from the ``found`` nearest nodes its
    search found (sorted in ``work``), and each of them takes ``node``."""
    # A node picks m neighbours; lists grow to 2m on level 0 (m above) by the links
    # of later nodes.
    limit = 2 * m if level == 0 else m
    row = _row(node, level, len(slots), slots)
    work[5][:found] = -1  # none is a member of the new list yet
    _select(vectors, dot, found, m, row, ids, neighbour_distances, counts, work, cache)
    for j in range(counts[row]):
        _link(
            vectors, dot, node, ids[row, j], neighbour_distances[row, j], level,
            limit, slots, ids, neighbour_distances, counts, work, cache,
        )  # fmt: skip


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
    work: Work,
    cache: Cache,
) -> None:
    """``node`` joins ``neighbour``'s list, which is pruned when that takes it over
    its limit.  pylance 14 checks no cut-off first (the 2025 snapshot's "nearer
    than the last listed"): a far node the heuristic keeps displaces a near one it
    does not, which keeps more long links on the upper levels."""
    row = _row(neighbour, level, len(slots), slots)
    listed = counts[row]
    ids[row, listed] = node
    neighbour_distances[row, listed] = distance
    counts[row] = listed + 1
    _verdicts_of_newcomer(node, distance, row, listed, ids, neighbour_distances, cache)
    if listed + 1 > limit:
        _prune(vectors, dot, row, limit, ids, neighbour_distances, counts, work, cache)


@_jitable
def _verdicts_of_newcomer(
    node: int,
    distance: float,
    row: int,
    at: int,
    ids: np.ndarray,
    neighbour_distances: np.ndarray,
    cache: Cache,
) -> None:
    """``node`` (at ``distance`` from the row's owner) joined row ``row`` as entry
    ``at``: a free slot, and the verdicts its search's distances to the members
    settle (unknown for the others)."""
    verdicts, known_distances, known_for, taken, slot_of = cache
    if row >= len(verdicts):
        return
    taken[:] = False
    for j in range(at):
        taken[slot_of[row, j]] = True
    slot = 0
    while taken[slot]:
        slot += 1
    slot_of[row, at] = slot
    for j in range(at):
        member, member_slot = ids[row, j], slot_of[row, j]
        if known_for[member] == node:
            between = known_distances[member]
            verdicts[row, slot, member_slot] = _verdict(distance, between)
            verdicts[row, member_slot, slot] = _verdict(neighbour_distances[row, j], between)
        else:
            verdicts[row, slot, member_slot] = _UNKNOWN
            verdicts[row, member_slot, slot] = _UNKNOWN
