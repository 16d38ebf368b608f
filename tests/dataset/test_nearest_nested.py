"""nearest= and vector indices on a vector column inside a struct (``data.embedding``),
against pylance: exact search, a pylance-built index read by lancelet (same rows in
the same order for explicit nprobes and refine_factor, with a prefilter and a
fragment appended after the index), a lancelet-built index pylance lists and
queries, and the same errors for columns that are not vectors."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from tests.vector_checks import assert_same_neighbours

DIMENSION = 16
COLUMN = "data.embedding"


def _table(rows: int, start: int, seed: int) -> pa.Table:
    vectors = np.random.default_rng(seed).standard_normal((rows, DIMENSION), np.float32)
    embedding = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMENSION)
    labels = pa.array([f"label_{i}" for i in range(start, start + rows)])
    # Every 50th struct is null: its vector is never a neighbour.
    nulls = pa.array(np.arange(rows) % 50 == 7)
    data = pa.StructArray.from_arrays([embedding, labels], names=["embedding", "label"], mask=nulls)
    return pa.table({"id": np.arange(start, start + rows), "data": data})


def _query(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)


def _search(dataset: Any, **scan: Any) -> tuple[np.ndarray, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = dataset.to_table(columns=["id"], with_row_id=True, **scan)
    return table["id"].to_numpy(), table["_distance"].to_numpy()


def _assert_same(path: str, **scan: Any) -> None:
    want_ids, want = _search(lance.dataset(path), **scan)
    got_ids, got = _search(ll.dataset(path), **scan)
    assert len(got_ids) == len(want_ids)
    assert_same_neighbours(got_ids, got, want_ids, 1e-5, 1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module", params=["IVF_FLAT", "IVF_PQ"])
def pylance_indexed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> str:
    path = str(tmp_path_factory.mktemp("nested") / "ds")
    dataset = lance.write_dataset(_table(600, 0, 0), path, max_rows_per_file=300)
    extra = {"num_sub_vectors": 4} if request.param == "IVF_PQ" else {}
    dataset.create_index(COLUMN, index_type=request.param, num_partitions=4, **extra)
    return path


def test_exact_search_matches_pylance(tmp_path: Path) -> None:
    path = str(tmp_path / "flat")
    lance.write_dataset(_table(300, 0, 1), path)
    for seed in range(5):
        nearest = {"column": COLUMN, "q": _query(seed), "k": 10}
        _assert_same(path, nearest=nearest)
        _assert_same(path, nearest=nearest, filter="id % 3 = 0", prefilter=True)


@pytest.mark.parametrize("tuning", [{"nprobes": 2}, {"nprobes": 3, "refine_factor": 2}])
def test_pylance_index_answers_as_pylance(pylance_indexed: str, tuning: dict[str, Any]) -> None:
    for seed in range(10):
        nearest = {"column": COLUMN, "q": _query(seed), "k": 10, **tuning}
        _assert_same(pylance_indexed, nearest=nearest)
        _assert_same(pylance_indexed, nearest=nearest, filter="id % 2 = 0", prefilter=True)
    plan = ll.dataset(pylance_indexed).scanner(nearest={"column": COLUMN, "q": _query(0)})
    assert "ANNSubIndex: name=data.embedding_idx" in plan.explain_plan()


def test_appended_fragment_is_searched_exactly(tmp_path: Path) -> None:
    path = str(tmp_path / "appended")
    dataset = lance.write_dataset(_table(600, 0, 2), path)
    dataset.create_index(COLUMN, index_type="IVF_PQ", num_partitions=4, num_sub_vectors=4)
    lance.write_dataset(_table(100, 600, 3), path, mode="append")
    for seed in range(5):
        _assert_same(path, nearest={"column": COLUMN, "q": _query(seed), "k": 10, "nprobes": 2})


@pytest.mark.local_files(
    "pylance reads the index files on local disk; its null struct rows need format 2.1"
)
def test_lancelet_index_is_read_by_pylance(tmp_path: Path) -> None:
    path = str(tmp_path / "ours")
    ll.write_dataset(_table(600, 0, 4), path)
    ll.dataset(path).create_index(COLUMN, index_type="IVF_FLAT", num_partitions=4)
    theirs = lance.dataset(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert [i["fields"] for i in theirs.list_indices()] == [[COLUMN]]
    for seed in range(5):
        _assert_same(path, nearest={"column": COLUMN, "q": _query(seed), "k": 10, "nprobes": 2})


@pytest.mark.parametrize(
    ("column", "error"), [("data", TypeError), ("data.label", TypeError), ("data.nope", ValueError)]
)
def test_columns_that_are_not_vectors(tmp_path: Path, column: str, error: type[Exception]) -> None:
    path = str(tmp_path / "bad")
    lance.write_dataset(_table(60, 0, 5), path)
    for lib in (lance, ll):
        with pytest.raises(error):
            lib.dataset(path).to_table(nearest={"column": column, "q": _query(0)})
