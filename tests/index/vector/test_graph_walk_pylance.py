"""One large HNSW partition searched with a small ``ef``, where the graph search is
approximate: only pylance's exact walk (entry point, greedy descent, which
neighbours are queued, heap ties) finds the same rows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

from lancelet import io
from lancelet.index.vector import IvfIndex
from lancelet.index.vector.hnsw import TiedCutError

ROWS = 6000
DIMENSION = 16


@dataclass(frozen=True)
class Graph:
    uri: str
    index: IvfIndex


@pytest.fixture(
    scope="module",
    params=[
        ("IVF_HNSW_SQ", "l2", {}),
        ("IVF_HNSW_FLAT", "cosine", {}),
        ("IVF_HNSW_PQ", "dot", {"num_sub_vectors": 4}),
    ],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def graph(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Graph:
    kind, metric, params = request.param
    vectors = np.random.default_rng(11).normal(0, 1, (ROWS, DIMENSION)).astype(np.float32)
    table = pa.table(
        {
            "id": np.arange(ROWS),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMENSION),
        }
    )
    uri = str(tmp_path_factory.mktemp("graph-walk") / "ds")
    dataset = lance.write_dataset(table, uri)
    dataset.create_index("vec", index_type=kind, metric=metric, num_partitions=1, **params)
    (directory,) = (Path(uri) / "_indices").iterdir()
    return Graph(uri, IvfIndex.open(io.Place(io.FileIO(), str(directory))))


def _pylance(graph: Graph, query: np.ndarray, **nearest: Any) -> tuple[np.ndarray, np.ndarray]:
    table = lance.dataset(graph.uri).to_table(
        columns=["id"],
        nearest={"column": "vec", "q": query, "nprobes": 1, **nearest},
        with_row_id=True,
    )
    return table["_rowid"].to_numpy(), table["_distance"].to_numpy()


def test_small_ef_walks_as_pylance(graph: Graph) -> None:
    rng = np.random.default_rng(5)
    for _ in range(25):  # a query per step, each compared with pylance
        query = rng.normal(0, 1, DIMENSION).astype(np.float32)
        for k, ef in ((10, 10), (5, 7), (1, 1)):
            want_ids, want = _pylance(graph, query, k=k, ef=ef)
            try:
                ids, found = graph.index.search(query, k, 1, ef=ef)
            except TiedCutError:
                # Refused only where pylance's index distances tie at the cut.
                _, wider = _pylance(graph, query, k=k + 1, ef=max(ef, k + 1))
                assert np.any(wider[1:] == wider[:-1])
                continue
            np.testing.assert_array_equal(ids, want_ids)
            np.testing.assert_allclose(found, want, rtol=5e-7, atol=1e-5)


def test_small_ef_is_approximate(graph: Graph) -> None:
    """The fixture is hard enough: ef = k misses exact neighbours for some queries."""
    rng = np.random.default_rng(5)
    misses = 0
    for _ in range(25):  # a query per step
        query = rng.normal(0, 1, DIMENSION).astype(np.float32)
        try:
            exact, _ = graph.index.search(query, 10, 1, ef=ROWS)
        except TiedCutError:
            continue
        approximate, _ = graph.index.search(query, 10, 1, ef=10)
        misses += not np.array_equal(exact, approximate)
    assert misses > 0
