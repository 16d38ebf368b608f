"""HNSW graph construction (``index/vector/hnsw_build.py``): the compiled kernel and
the Python fallback build the same graph; the levels are pylance's;
the graph finds the exact neighbours; ``lance.util.HNSW`` writes the file pylance's
does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lancelet
from lancelet.errors import ArgumentError
from lancelet.file import LanceFileReader
from lancelet.file.codecs import jit
from lancelet.index.vector import hnsw_build, hnsw_kernels
from lancelet.index.vector.hnsw import HnswGraph, Level


def _vectors(seed: int, rows: int, dimension: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(rows, dimension)).astype(np.float32)


def _same(first: hnsw_build.Graph, second: hnsw_build.Graph) -> bool:
    if first.entry_point != second.entry_point or len(first.levels) != len(second.levels):
        return False
    return all(
        np.array_equal(a.nodes, b.nodes)
        and np.array_equal(a.offsets, b.offsets)
        and np.array_equal(a.neighbours, b.neighbours)
        and np.array_equal(a.distances, b.distances)
        for a, b in zip(first.levels, second.levels, strict=True)
    )


@pytest.mark.skipif(not jit.enabled(), reason="numba missing or LANCELET_JIT=0")
@settings(max_examples=6, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(2, 160),
    dimension=st.integers(1, 20),
    m=st.integers(2, 8),
    ef=st.integers(1, 24),
    dot=st.booleans(),
)
def test_the_kernel_and_the_fallback_build_the_same_graph(
    seed: int,
    rows: int,
    dimension: int,
    m: int,
    ef: int,
    dot: bool,
) -> None:
    vectors = _vectors(seed, rows, dimension)
    params = hnsw_build.HnswParams(m, ef, 5)
    compiled = hnsw_build.build(vectors, dot, params)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(jit.ENV_VAR, "0")
        plain = hnsw_build.build(vectors, dot, params)
    assert _same(compiled, plain)


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(2, 120), dot=st.booleans())
def test_graphs_too_large_for_the_verdict_table_are_the_same(
    seed: int, rows: int, dot: bool
) -> None:
    # Each row's cached verdicts must give what measuring every pair gives; a graph
    # over PAIR_CACHE_BYTES measures every pair (checked in Python: the compiled
    # kernel fixes the bound when it compiles).  A few repeated rows make ties.
    vectors = _vectors(seed, rows, 6)
    vectors[rows // 2 :: 7] = vectors[0]
    params = hnsw_build.HnswParams(3, 10, 4)
    cached = hnsw_build.build(vectors, dot, params)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(jit.ENV_VAR, "0")
        patch.setattr(hnsw_kernels, "PAIR_CACHE_BYTES", 0)
        measured = hnsw_build.build(vectors, dot, params)
    assert _same(cached, measured)


def test_the_kernel_lanes_are_the_padding() -> None:
    assert hnsw_build._LANES == hnsw_kernels.LANES


def test_distances_sum_as_documented() -> None:
    vectors = np.zeros((3, 16), np.float32)
    vectors[1] = np.arange(16)
    vectors[2] = 1.0
    out = np.empty(2, np.float32)
    hnsw_kernels.distances(vectors, 0, np.array([1, 2]), 2, False, out)
    np.testing.assert_array_equal(out, [np.sum(np.arange(16.0) ** 2), 16.0])
    hnsw_kernels.distances(vectors, 2, np.array([1, 2]), 2, True, out)
    np.testing.assert_array_equal(out, [1 - np.sum(np.arange(16.0)), 1 - 16.0])


def test_levels_follow_pylances_distribution() -> None:
    """A node reaches level l with probability m^-l, below max_level."""
    params = hnsw_build.HnswParams(m=4, max_level=3)
    levels = hnsw_build.pylance_levels(200_000, params)
    assert levels.min() == 0 and levels.max() == 2
    for level, expected in ((1, 1 / 4), (2, 1 / 16)):
        assert abs(np.mean(levels >= level) - expected) < 0.005


def test_levels_are_pylances_sequence() -> None:
    """The first nodes above level 0 of pylance 14's graphs (m = 20), whatever the
    data; every graph's levels are a prefix of one sequence."""
    params = hnsw_build.HnswParams()
    levels = hnsw_build.pylance_levels(1000, params)
    assert np.flatnonzero(levels)[:6].tolist() == [44, 69, 76, 84, 102, 147]
    assert np.flatnonzero(levels == 2)[0] == 364
    np.testing.assert_array_equal(hnsw_build.pylance_levels(400, params), levels[:400])


def _reader_graph(graph: hnsw_build.Graph, count: int) -> HnswGraph:
    levels = []
    for level in graph.levels:
        row_of = np.full(count, -1, np.int64)
        row_of[level.nodes.astype(np.int64)] = np.arange(len(level.nodes))
        levels.append(
            Level(row_of, level.offsets.astype(np.int64), level.neighbours.astype(np.int64))
        )
    return HnswGraph(graph.entry_point, levels)


@pytest.mark.parametrize("dot", [False, True])
def test_the_graph_finds_the_exact_neighbours(dot: bool) -> None:
    """Searched as pylance searches (the reader's walk), the graph's answers are
    the exact ones for nearly all queries."""
    vectors = _vectors(3, 3000, 16)
    if dot:
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    graph = hnsw_build.build(vectors, dot, hnsw_build.HnswParams())
    searched = _reader_graph(graph, len(vectors))
    queries = _vectors(4, 50, 16)
    hits = 0
    for query in queries:  # one step per query
        values = vectors.astype(np.float64)
        exact = 1 - values @ query if dot else ((values - query) ** 2).sum(axis=1)
        found, _, _ = searched.search(exact.astype(np.float32), 10, 40, None)
        hits += len(set(found.tolist()) & set(np.argsort(exact)[:10].tolist()))
    assert hits / (10 * len(queries)) >= 0.97


@pytest.mark.local_files("pylance and lancelet write graph files on disk")
def test_util_hnsw_writes_the_file_pylance_writes(tmp_path: Path) -> None:
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(_vectors(5, 500, 8).ravel()), 8)
    files = []
    for module in (lancelet, lance):
        graph = module.util.HNSW.build(iter([vectors.slice(0, 200), vectors.slice(200)]), m=10)
        assert graph.vectors().equals(vectors)
        path = tmp_path / f"{module.__name__}.idx"
        graph.to_lance_file(str(path))
        files.append(LanceFileReader(str(path)))
    ours, theirs = files
    assert ours.schema.remove_metadata() == theirs.schema.remove_metadata()
    assert ours.metadata().num_rows >= 500
    entries = [json.loads(f.schema.metadata[b"lance:hnsw"]) for f in files]
    # The same levels (pylance's sequence), so the same entry point and level sizes.
    assert entries[0] == entries[1]
    table = ours.read_all().to_table()
    assert table.num_rows == entries[0]["level_offsets"][-1]


def test_util_hnsw_refuses_what_it_cannot_build() -> None:
    with pytest.raises(ArgumentError, match="m must be"):
        lancelet.util.HNSW.build(
            iter([pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2.0], pa.float32()), 2)]), m=1
        )
    with pytest.raises(NotImplementedError, match="float32"):
        lancelet.util.HNSW.build(iter([pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2.0]), 2)]))


_PYLANCE_GRAPH = """
import sys
import lance
import numpy as np
import pyarrow as pa
vectors = np.load(sys.argv[1])
column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1])
graph = lance.util.HNSW.build(iter([column]), m=10, ef_construction=50)
graph.to_lance_file(sys.argv[2])
"""


@pytest.mark.local_files("pylance writes its graph file on disk")
def test_the_graph_is_pylances_single_threaded_graph(tmp_path: Path) -> None:
    """Built on one thread (``RAYON_NUM_THREADS=1``, in a fresh process: the pool
    is made once), pylance's graph is lancelet's list for list: the same levels and
    entry point, every insertion starting from it, and reverse links taken without
    a cut-off (the lists are pruned instead)."""
    rng = np.random.default_rng(0)
    centres = rng.normal(0, 1, (20, 16))
    vectors = centres[rng.integers(0, 20, 2000)] + rng.normal(0, 0.3, (2000, 16))
    vectors = vectors.astype(np.float32)
    np.save(tmp_path / "vectors.npy", vectors)
    theirs_path = tmp_path / "lance.idx"
    env = {**os.environ, "RAYON_NUM_THREADS": "1"}
    command = [
        sys.executable,
        "-c",
        _PYLANCE_GRAPH,
        str(tmp_path / "vectors.npy"),
        str(theirs_path),
    ]
    subprocess.run(command, check=True, env=env)
    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 16)
    ours_path = tmp_path / "lancelet.idx"
    lancelet.util.HNSW.build(iter([column]), m=10, ef_construction=50).to_lance_file(str(ours_path))
    ours, theirs = (LanceFileReader(str(p)) for p in (ours_path, theirs_path))
    assert ours.schema.metadata[b"lance:hnsw"] == theirs.schema.metadata[b"lance:hnsw"]
    tables = [f.read_all().to_table() for f in (ours, theirs)]
    for name in ("__vector_id", "__neighbors"):
        assert tables[0].column(name).to_pylist() == tables[1].column(name).to_pylist()
