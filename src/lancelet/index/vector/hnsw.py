"""The HNSW graph of one IVF partition (IVF_HNSW_*), read from ``index.idx``, and
pylance 14's search of it, reproduced step for step (see
``docs/vector-index-format.md``).

A partition's rows in ``index.idx`` are its levels one after another
(``level_offsets`` in its ``lance:hnsw`` entry, relative to the partition's first
row): each row is a node's ``__vector_id`` (its position in the partition's
``auxiliary.idx`` rows), its ``__neighbors`` at that level, in the stored order, and
their ``_distance``.  Level 0 holds every node.

The search starts at the entry point and walks greedily down the upper levels to
level 1, then runs a best-first search of ``ef`` on level 0 from where it arrived;
nodes that may not come back (a prefilter or deletions) are walked through but not
kept.  When fewer than a tenth of
the partition's nodes may come back, every allowed node is scored instead.  The
heaps are Rust's ``BinaryHeap``, reproduced so that equally distant nodes come back
in pylance's order; the graph walk is sequential by nature, one Python step per
node scored (the distances themselves are computed beforehand, vectorized).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.errors import CorruptIndexError, UnsupportedVectorIndexError
from lancelet.index.vector.rust_heap import MaxHeap, order_keys


class TiedCutError(UnsupportedVectorIndexError):
    """Rows at the same index distance straddle the cut to k: pylance's heaps choose
    among them in an order lancelet does not reproduce in every case, so it
    refuses rather than answer with other rows."""


@dataclass(frozen=True)
class Level:
    # Row of each node in this level (-1: not in it), over all the partition's nodes.
    row_of: np.ndarray
    # Neighbours of the level's rows, CSR: starts has one entry per row plus one.
    starts: np.ndarray
    neighbours: np.ndarray

    def of(self, node: int) -> list[int]:
        row = int(self.row_of[node])
        if row < 0:
            return []
        return self.neighbours[self.starts[row] : self.starts[row + 1]].tolist()  # type: ignore[no-any-return]


@dataclass(frozen=True)
class HnswGraph:
    entry_point: int
    # Level 0 first; as many as the stored ``max_level``.
    levels: list[Level]
    # The build parameters its ``lance:hnsw`` entry records (``m``, ...).
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return len(self.levels[0].row_of) if self.levels else 0

    def search(
        self, distances: np.ndarray, k: int, ef: int, allowed: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """The nearest nodes (positions in the partition) and their distances,
        nearest first, at most ``k``, and the distance of equally distant nodes
        straddling the cut to ``k`` (infinity: none), where pylance's choice among
        them is not reproduced.  ``distances``: float32, from the query to every
        node; ``allowed``: which nodes may come back (None: all)."""
        tied = np.inf
        if self.num_nodes == 0:
            return np.empty(0, np.int64), np.empty(0, np.float32), tied
        keys = order_keys(distances)
        may = None if allowed is None else allowed.tolist()
        remaining = self.num_nodes if allowed is None else int(np.count_nonzero(allowed))
        if remaining < self.num_nodes * 10 // 100:
            found = _heap_scan(keys, may, k)
        else:
            walked = self._walk(keys, may, ef)
            if len(walked) > k and walked[k - 1][0] == walked[k][0]:
                tied = float(distances[walked[k][1]])
            found = walked[:k]
        nodes = np.array([node for _, node in found], dtype=np.int64)
        return nodes, distances[nodes].astype(np.float32), tied

    def _walk(self, keys: list[int], may: list[bool] | None, ef: int) -> list[tuple[int, int]]:
        current = self.entry_point
        for level in reversed(self.levels[1:]):
            current = _greedy(level, current, keys)
        return _beam(self.levels[0], current, keys, may, ef)


def _greedy(level: Level, start: int, keys: list[int]) -> int:
    """Move to a strictly nearer neighbour as long as there is one; the nearest of
    a node's neighbours (the first of equals) is the next node."""
    current, closest = start, keys[start]
    while True:
        following = None
        for neighbour in level.of(current):
            if keys[neighbour] < closest:
                closest, following = keys[neighbour], neighbour
        if following is None:
            return current
        current = following


def _beam(
    bottom: Level, start: int, keys: list[int], may: list[bool] | None, ef: int
) -> list[tuple[int, int]]:
    """pylance's ``beam_search``: candidates in a min-heap (negated keys), the best
    ``ef`` allowed nodes in a max-heap; returns them sorted ascending."""
    visited = {start}
    candidates = MaxHeap()
    candidates.push((-keys[start], start))
    results = MaxHeap()
    if may is None or may[start]:
        results.push((keys[start], start))
    while len(candidates):
        negated, current = candidates.pop()
        furthest = results.peek()[0] if len(results) else None
        if furthest is not None and -negated > furthest and len(results) == ef:
            break
        fresh = [n for n in bottom.of(current) if n not in visited]
        for neighbour in fresh:
            visited.add(neighbour)
            key = keys[neighbour]
            if may is None or may[neighbour]:
                if len(results) < ef:
                    results.push((key, neighbour))
                elif key < results.peek()[0]:
                    results.pop()
                    results.push((key, neighbour))
            # Every unvisited neighbour becomes a candidate, however far (measured:
            # pruning the far ones, as the 2025 source does, misses pylance's rows).
            candidates.push((-key, neighbour))
    return results.into_sorted()


def heap_best(
    distances: np.ndarray, k: int, allowed: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best allowed rows of a partition without a graph (IVF_SQ), as
    pylance's flat sub-index keeps them: (positions, distances), nearest first.

    Unless equal distances straddle the k-th place, those are simply the k nearest
    (vectorized); otherwise the heap decides which of the equals stay, so it is
    replayed row by row."""
    candidates = np.arange(len(distances)) if allowed is None else np.flatnonzero(allowed)
    found = distances[candidates].astype(np.float32)
    if len(found) > k:
        bound = np.partition(found, k - 1)[k - 1]
        if np.count_nonzero(found <= bound) > k:
            may = None if allowed is None else allowed.tolist()
            kept = _heap_scan(order_keys(distances), may, k)
            nodes = np.array([node for _, node in kept], dtype=np.int64)
            return nodes, distances[nodes].astype(np.float32)
        candidates, found = candidates[found <= bound], found[found <= bound]
    order = np.argsort(found, kind="stable")
    return candidates[order].astype(np.int64), found[order]


def _heap_scan(keys: list[int], may: list[bool] | None, k: int) -> list[tuple[int, int]]:
    """The k best allowed nodes, visited in node order through a max-heap (a node
    replaces the top only when strictly nearer), sorted as the heap sorts."""
    heap = MaxHeap()
    for node, key in enumerate(keys):
        if may is not None and not may[node]:
            continue
        if len(heap) < k:
            heap.push((key, node))
        elif key < heap.peek()[0]:
            heap.pop()
            heap.push((key, node))
    return heap.into_sorted()


def read_graphs(
    path: str,
    table: pa.Table,
    entries: list[Any],
    offsets: np.ndarray,
    lengths: np.ndarray,
    nodes: np.ndarray,
) -> list[HnswGraph]:
    """Each partition's graph from ``index.idx``'s rows (``table``), its
    ``lance:hnsw`` entries (JSON text) and IVF offsets/lengths; ``nodes`` is each
    partition's row count in ``auxiliary.idx``."""
    if not isinstance(entries, list) or len(entries) != len(offsets):
        raise CorruptIndexError(f"{path}: 'lance:hnsw' does not list one graph per partition")
    ids = _column(path, table, "__vector_id", pa.uint32()).to_numpy().astype(np.int64)
    listed = _column(path, table, "__neighbors", pa.list_(pa.uint32()))
    starts = listed.offsets.to_numpy().astype(np.int64)
    neighbours = listed.values.to_numpy().astype(np.int64)
    graphs = []
    for number, entry in enumerate(entries):  # one step per partition
        metadata = _entry(path, entry, int(lengths[number]))
        base = int(offsets[number])
        levels = []
        for low, high in itertools.pairwise(metadata["level_offsets"]):  # per level
            level_ids = ids[base + low : base + high]
            row_of = np.full(int(nodes[number]), -1, dtype=np.int64)
            if len(level_ids) and (level_ids.min() < 0 or level_ids.max() >= len(row_of)):
                raise CorruptIndexError(f"{path}: partition {number} names nodes it lacks")
            row_of[level_ids] = np.arange(len(level_ids))
            edges = starts[base + low : base + high + 1]
            found = neighbours[edges[0] : edges[-1]]
            if len(found) and found.max() >= len(row_of):
                raise CorruptIndexError(f"{path}: partition {number} links nodes it lacks")
            levels.append(Level(row_of, edges - edges[0], found))
        level_rows = np.diff(metadata["level_offsets"][:2])
        if levels and (level_rows[0] != nodes[number] or np.any(levels[0].row_of < 0)):
            raise CorruptIndexError(
                f"{path}: partition {number}'s level 0 does not hold each of its nodes once"
            )
        entry = int(metadata["entry_point"])
        if nodes[number] and not 0 <= entry < nodes[number]:
            raise CorruptIndexError(f"{path}: partition {number}'s entry point is not a node")
        params = metadata.get("params")
        graphs.append(HnswGraph(entry, levels, params if isinstance(params, dict) else {}))
    return graphs


def _entry(path: str, entry: Any, rows: int) -> dict[str, Any]:
    try:
        metadata = json.loads(entry)
        level_offsets = [int(o) for o in metadata["level_offsets"]]
        int(metadata["entry_point"])
    except (TypeError, ValueError, KeyError) as exc:
        raise CorruptIndexError(f"{path}: a 'lance:hnsw' entry cannot be read: {exc}") from exc
    if level_offsets and (
        level_offsets[0] != 0 or level_offsets[-1] != rows or level_offsets != sorted(level_offsets)
    ):
        raise CorruptIndexError(f"{path}: the HNSW levels {level_offsets} do not tile {rows} rows")
    return dict(metadata)


def _column(path: str, table: pa.Table, name: str, dtype: pa.DataType) -> Any:
    if name not in table.column_names or table.column(name).type != dtype:
        raise CorruptIndexError(f"{path}: the graph has no {dtype} column {name!r}")
    return table.column(name).combine_chunks()
