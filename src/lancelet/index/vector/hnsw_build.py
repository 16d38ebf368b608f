"""Building one HNSW graph (an IVF_HNSW_* partition's, or ``lance.util.HNSW``'s) as
pylance 14 builds and stores it (``docs/vector-index-format.md``, "HNSW sub-index").

Each node's top level is the one pylance 14 gives it: ``floor(-ln(u) / ln(m))``,
at most ``max_level - 1`` (so a node reaches level ``l`` with probability
``m^-l``), where node ``i``'s ``u`` is the ``i``-th float32 of one fixed sequence,
the same for every graph (:func:`pylance_levels`).  The entry point, the first
node of the highest level, is placed first and the others are inserted in order
(:mod:`lancelet.index.vector.hnsw_kernels`, compiled by numba when the kernels
are on).  The graph is returned level by
level, each level listing its nodes in node order with their neighbours (nearest
first once a list was pruned, in the order they joined before) and the distances to
them, as ``index.idx`` stores them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any

import numpy as np

from lancelet.errors import ArgumentError
from lancelet.file.codecs import jit

# pylance 14's defaults (``create_index`` and the details it records).
DEFAULT_M = 20
DEFAULT_EF_CONSTRUCTION = 150
DEFAULT_MAX_LEVEL = 7
PREFETCH_DISTANCE = 2

# Lanes of the distance sums (hnsw_kernels.LANES, which this module does not import).
_LANES = 8


@cache
def _kernels() -> ModuleType:
    """The construction loop's module, imported at the first graph built (it
    imports numba when the kernels are on)."""
    return importlib.import_module("lancelet.index.vector.hnsw_kernels")


@cache
def _compiled() -> Callable[..., Any]:
    compiled: Callable[..., Any] = jit.kernel(_kernels().build_graph)
    return compiled


@dataclass(frozen=True)
class HnswParams:
    m: int = DEFAULT_M
    ef_construction: int = DEFAULT_EF_CONSTRUCTION
    max_level: int = DEFAULT_MAX_LEVEL

    def check(self, where: str) -> None:
        for option, value, least in (
            ("m", self.m, 2),
            ("ef_construction", self.ef_construction, 1),
            ("max_level", self.max_level, 1),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ArgumentError(
                    f"{where}: {option} must be an integer >= {least}, got {value!r}"
                )
        if self.max_level > 0xFFFF:
            raise ArgumentError(f"{where}: max_level must be at most 65535, got {self.max_level}")

    def metadata(self) -> dict[str, int]:
        """The ``params`` of a ``lance:hnsw`` entry."""
        return {
            "max_level": self.max_level,
            "m": self.m,
            "ef_construction": self.ef_construction,
            "prefetch_distance": PREFETCH_DISTANCE,
        }


@dataclass(frozen=True)
class GraphLevel:
    # The level's nodes, ascending (uint32), and their neighbour lists (CSR).
    nodes: np.ndarray
    offsets: np.ndarray
    neighbours: np.ndarray
    distances: np.ndarray


@dataclass(frozen=True)
class Graph:
    entry_point: int
    # ``max_level`` levels, level 0 (every node) first.
    levels: tuple[GraphLevel, ...]

    @property
    def level_offsets(self) -> list[int]:
        """Where each level starts among the graph's rows, and where the last ends."""
        sizes = [len(level.nodes) for level in self.levels]
        return [0, *np.cumsum(sizes, dtype=np.int64).tolist()]


def pylance_levels(count: int, params: HnswParams) -> np.ndarray:
    """The top level (int64) of each of ``count`` nodes, as pylance 14 draws them.

    pylance seeds rand's ``SmallRng`` (xoshiro256++) with ``seed_from_u64(42)`` for
    every graph and draws one ``f32`` per node, node 0 first; the level is
    ``(-u.ln() * (1 / (m as f32).ln())) as u16`` in float32, capped.  (Matched on
    all 100,000 levels of a pylance graph.)  Each graph shares the sequence's
    start, so the level structure, and with it recall at small ``ef``, is
    pylance's: independent draws gave recall@10 from 0.911 to 0.922 at ``ef`` 15 on
    one 100,000-node graph, pylance's sequence 0.920."""
    uniform = _uniforms(count)
    scale = np.float32(1.0) / np.log(np.float32(params.m))
    with np.errstate(divide="ignore"):  # u = 0: an infinite level, capped
        drawn = (-np.log(uniform)) * scale
    levels: np.ndarray = np.minimum(drawn, np.float32(params.max_level - 1)).astype(np.int64)
    return levels


_MASK = (1 << 64) - 1


def _uniforms(count: int) -> np.ndarray:
    """The first ``count`` float32s in [0, 1) of rand's ``SmallRng`` seeded from 42:
    the top 24 bits of each ``next_u32`` (the high half of ``next_u64``) over 2^24.
    Sequential, so a loop (about a second per million nodes, once per build)."""
    state = _splitmix_seed(42)
    words = np.empty(count, dtype=np.uint64)
    s0, s1, s2, s3 = state
    for i in range(count):
        total = (s0 + s3) & _MASK
        words[i] = ((((total << 23) | (total >> 41)) & _MASK) + s0) & _MASK
        shifted = (s1 << 17) & _MASK
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= shifted
        s3 = ((s3 << 45) | (s3 >> 19)) & _MASK
    mantissas = (words >> np.uint64(40)).astype(np.float32)
    uniform: np.ndarray = mantissas * np.float32(2.0**-24)
    return uniform


def _splitmix_seed(seed: int) -> tuple[int, int, int, int]:
    """xoshiro256's ``seed_from_u64``: four words of SplitMix64 from ``seed``."""
    words = []
    for _ in range(4):
        seed = (seed + 0x9E3779B97F4A7C15) & _MASK
        mixed = ((seed ^ (seed >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        mixed = ((mixed ^ (mixed >> 27)) * 0x94D049BB133111EB) & _MASK
        words.append(mixed ^ (mixed >> 31))
    return words[0], words[1], words[2], words[3]


def build(vectors: np.ndarray, dot: bool, params: HnswParams) -> Graph:
    """The graph of ``vectors`` ((n, d) float32) under squared l2, or ``1 - x·y``
    when ``dot`` (cosine graphs are dot graphs of unit vectors)."""
    return build_on_levels(vectors, dot, params, pylance_levels(len(vectors), params))


def build_on_levels(
    vectors: np.ndarray, dot: bool, params: HnswParams, levels: np.ndarray
) -> Graph:
    """:func:`build` with each node's top level given (:func:`pylance_levels`); the
    compiled loop releases the GIL, so graphs build in parallel on threads."""
    count = len(vectors)
    # slots[node]: where the node's upper-level rows start after the n level-0 rows.
    slots = np.concatenate([[0], np.cumsum(levels)])[:count].astype(np.int64)
    rows = count + int(levels.sum())
    width = 2 * params.m + 1
    ids = np.zeros((rows, width), dtype=np.int32)
    distances = np.zeros((rows, width), dtype=np.float32)
    counts = np.zeros(rows, dtype=np.int64)
    entry = 0
    if count > 1:
        padded = _padded(vectors)
        kernels = _kernels()
        run = _compiled() if kernels.COMPILABLE and jit.enabled() else kernels.build_graph
        entry = int(
            run(
                padded, dot, levels, slots, params.m, params.ef_construction, ids, distances, counts
            )
        )
    graph_levels = tuple(
        _level(level, levels, slots, ids, distances, counts) for level in range(params.max_level)
    )
    return Graph(entry, graph_levels)


def _padded(vectors: np.ndarray) -> np.ndarray:
    """The vectors, float32, with zeros appended up to a multiple of the lane count."""
    count, dimension = vectors.shape
    lanes = _LANES
    width = -(-dimension // lanes) * lanes
    out = np.zeros((count, width), dtype=np.float32)
    out[:, :dimension] = vectors
    return out


def _level(
    level: int,
    levels: np.ndarray,
    slots: np.ndarray,
    ids: np.ndarray,
    distances: np.ndarray,
    counts: np.ndarray,
) -> GraphLevel:
    nodes = np.flatnonzero(levels >= level)
    rows = nodes if level == 0 else len(levels) + slots[nodes] + level - 1
    listed = counts[rows]
    mask = np.arange(ids.shape[1])[None, :] < listed[:, None]
    offsets = np.concatenate([[0], np.cumsum(listed)]).astype(np.int32)
    return GraphLevel(
        nodes.astype(np.uint32),
        offsets,
        ids[rows][mask].astype(np.uint32),
        distances[rows][mask],
    )
