"""Vector indices on multivector columns (a list of vectors per row, cosine only),
against pylance: a pylance-built index answers with pylance's rows and distances
(its XTR scoring of each query vector's candidates), with a prefilter and deleted
rows; a lancelet-built one is listed and searched by pylance with the same answers;
what lancelet does not do (refine, merging unindexed fragments) is refused, and
``use_index=False`` searches exactly as pylance does."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import UnsupportedVectorIndexError
from tests.dataset.test_nearest import assert_same_hits
from tests.vector_checks import assert_same_neighbours

DIMENSION = 16


def _table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 5, rows)
    vectors = [rng.standard_normal((n, DIMENSION)).astype(np.float32).tolist() for n in lengths]
    vector_type = pa.list_(pa.list_(pa.float32(), DIMENSION))
    return pa.table({"id": np.arange(rows), "vector": pa.array(vectors, vector_type)})


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("multivector") / "ds")
    dataset = lance.write_dataset(_table(400, 0), path, max_rows_per_file=200)
    dataset.create_index(
        "vector", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=4, metric="cosine"
    )
    lance.dataset(path).delete("id % 7 = 3")
    return path


def _queries(count: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(1)
    return [
        {
            "column": "vector",
            "q": rng.standard_normal((int(rng.integers(1, 5)), DIMENSION)),
            "k": int(rng.integers(1, 25)),
            "nprobes": int(rng.integers(1, 5)),
        }
        for _ in range(count)
    ]


def _both(path: str, **scan: Any) -> tuple[pa.Table, pa.Table]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = lance.dataset(path).to_table(columns=["id"], with_row_id=True, **scan)
    got = ll.dataset(path).to_table(columns=["id"], with_row_id=True, **scan)
    return got, want


def _assert_same(got: pa.Table, want: pa.Table) -> None:
    found, expected = got["_distance"].to_numpy(), want["_distance"].to_numpy()
    np.testing.assert_allclose(found, expected, 0, 1e-6)
    # Rows within float32 rounding of each other may come in either order (seen once
    # in CI: two rows 2.3321128 / 2.332113 swapped at the cut).
    ids, expected_ids = got["_rowid"].to_numpy(), want["_rowid"].to_numpy()
    assert_same_neighbours(ids, found, expected_ids, rtol=0, atol=1e-6)


def test_pylance_index_answers_as_pylance(indexed: str) -> None:
    for nearest in _queries(30):
        _assert_same(*_both(indexed, nearest=nearest))


def test_plan_shows_the_scoring_as_pylance(indexed: str) -> None:
    nearest = {**_queries(1)[0], "q": np.ones((3, DIMENSION))}
    want = lance.dataset(indexed).scanner(nearest=nearest).explain_plan()
    got = ll.dataset(indexed).scanner(nearest=nearest).explain_plan()
    for line in ("MultivectorScoring: k=", "ANNSubIndex: ", "ANNIvfPartition: "):
        steps = [s.strip() for s in want.splitlines() if s.strip().startswith(line)]
        assert [s.strip() for s in got.splitlines() if s.strip().startswith(line)] == steps


def test_prefilter_and_postfilter_as_pylance(indexed: str) -> None:
    for nearest in _queries(10):
        _assert_same(*_both(indexed, nearest=nearest, filter="id % 3 = 0", prefilter=True))
        _assert_same(*_both(indexed, nearest=nearest, filter="id % 3 = 0"))


def test_use_index_false_searches_exactly_as_pylance(indexed: str) -> None:
    for nearest in _queries(5):
        assert_same_hits(*_both(indexed, nearest={**nearest, "use_index": False}))


@pytest.mark.parametrize("index_type", ["IVF_PQ", "IVF_FLAT"])
def test_lancelet_index_is_searched_by_pylance(tmp_path: Path, index_type: str) -> None:
    path = str(tmp_path / "ours")
    ll.write_dataset(_table(400, 2), path)
    extra = {"num_sub_vectors": 4} if index_type == "IVF_PQ" else {}
    ll.dataset(path).create_index(
        "vector", index_type=index_type, num_partitions=4, metric="cosine", **extra
    )
    stats = lance.dataset(path).stats.index_stats("vector_idx")
    # every vector indexed under its row
    assert sum(p["size"] for p in stats["indices"][0]["partitions"]) == sum(
        len(v) for v in lance.dataset(path).to_table()["vector"].to_pylist()
    )
    for nearest in _queries(10):
        _assert_same(*_both(path, nearest=nearest))


@pytest.mark.parametrize("metric", ["l2", "dot"])
def test_only_cosine_builds_as_in_pylance(tmp_path: Path, metric: str) -> None:
    lance.write_dataset(_table(300, 3), tmp_path / "t")
    for lib in (lance, ll):
        with pytest.raises(RuntimeError, match="multivector type supports only cosine distance"):
            lib.dataset(tmp_path / "t").create_index(
                "vector", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=4, metric=metric
            )


def test_what_lancelet_does_not_do_is_refused(indexed: str, tmp_path: Path) -> None:
    nearest = {**_queries(1)[0], "refine_factor": 2}
    with pytest.raises(UnsupportedVectorIndexError, match="refine"):
        ll.dataset(indexed).to_table(nearest=nearest)
    path = str(tmp_path / "appended")
    dataset = lance.write_dataset(_table(300, 4), path)
    dataset.create_index(
        "vector", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=4, metric="cosine"
    )
    lance.write_dataset(_table(20, 5), path, mode="append")
    with pytest.raises(UnsupportedVectorIndexError, match="not indexed"):
        ll.dataset(path).to_table(nearest=_queries(1)[0])
    _assert_same(*_both(path, nearest=_queries(1)[0], fast_search=True))
