"""Vector indices on multivector columns (a list of vectors per row): lancelet does
not implement them, so it refuses to build one and to search through one pylance
built (pylance scores each query vector's index candidates by XTR), rather than
answering per query vector; ``use_index=False`` searches exactly, as pylance does."""

from __future__ import annotations

import warnings
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import UnsupportedVectorIndexError
from tests.dataset.test_nearest import assert_same_hits

DIMENSION = 16


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> str:
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((300, 3, DIMENSION)).astype(np.float32).tolist()
    vector_type = pa.list_(pa.list_(pa.float32(), DIMENSION))
    table = pa.table({"id": np.arange(300), "vector": pa.array(rows, vector_type)})
    path = str(tmp_path_factory.mktemp("multivector") / "ds")
    dataset = lance.write_dataset(table, path)
    dataset.create_index(
        "vector", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=4, metric="cosine"
    )
    return path


def _query() -> np.ndarray:
    return np.random.default_rng(1).standard_normal((2, DIMENSION)).astype(np.float32)


def test_a_pylance_multivector_index_is_not_searched(indexed: str) -> None:
    nearest = {"column": "vector", "q": _query(), "k": 5, "nprobes": 2}
    with pytest.raises(UnsupportedVectorIndexError, match="multivector"):
        ll.dataset(indexed).to_table(nearest=nearest)


def test_use_index_false_searches_exactly_as_pylance(indexed: str) -> None:
    nearest = {"column": "vector", "q": _query(), "k": 5, "use_index": False}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = lance.dataset(indexed).to_table(nearest=nearest, columns=["id"], with_row_id=True)
    got = ll.dataset(indexed).to_table(nearest=nearest, columns=["id"], with_row_id=True)
    assert_same_hits(got, want)


def test_building_a_multivector_index_is_refused(indexed: str, tmp_path: Path) -> None:
    table = lance.dataset(indexed).to_table()
    ll.write_dataset(table, tmp_path / "ours")
    with pytest.raises(UnsupportedVectorIndexError, match="multivector"):
        ll.dataset(tmp_path / "ours").create_index(
            "vector", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=4, metric="cosine"
        )
