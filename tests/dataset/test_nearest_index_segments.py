"""nearest= through a pylance-built vector index that maintenance changed: delta
segments from optimize_indices, a compaction that deferred its remap (Fragment
Reuse Index) or remapped in its commit, and stable row ids (with rows deleted and
compacted away).  lancelet must answer as pylance 14 does on the same dataset:
the same rows in the same order, distances within float32 rounding."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lancelet as ll
from tests.vector_checks import assert_same_neighbours

DIMENSION = 16


@dataclass(frozen=True)
class Case:
    uri: str
    vectors: np.ndarray


def _table(vectors: np.ndarray, start: int) -> pa.Table:
    return pa.table(
        {
            "id": np.arange(start, start + len(vectors)),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMENSION),
        }
    )


def _vectors(seed: int, rows: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 3, (16, DIMENSION))
    chosen = centres[rng.integers(0, 16, rows)]
    return (chosen + rng.normal(0, 1, chosen.shape)).astype(np.float32)


def _params(kind: str) -> dict[str, Any]:
    return {"num_sub_vectors": 4} if kind == "IVF_PQ" else {}


def _deltas(uri: str, kind: str, metric: str, stable: bool) -> np.ndarray:
    """An index of three segments (two deltas), rows deleted before and after, and
    an unindexed fragment."""
    vectors = _vectors(1, 5800)
    ds = lance.write_dataset(
        _table(vectors[:4000], 0), uri, max_rows_per_file=1000, enable_stable_row_ids=stable
    )
    ds.delete("id % 7 = 1")
    ds.create_index("vec", index_type=kind, metric=metric, num_partitions=8, **_params(kind))
    for start in (4000, 4600):
        lance.write_dataset(_table(vectors[start : start + 600], start), uri, mode="append")
        lance.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0)
    ds = lance.write_dataset(_table(vectors[5200:], 5200), uri, mode="append")
    ds.delete("id % 11 = 3")
    assert len(ds.describe_indices()[0].segments) == 3
    return vectors


def _compacted(uri: str, kind: str, metric: str, stable: bool, defer: bool) -> np.ndarray:
    """An index over rows that a compaction moved after some were deleted."""
    vectors = _vectors(2, 6000)
    ds = lance.write_dataset(
        _table(vectors, 0), uri, max_rows_per_file=500, enable_stable_row_ids=stable
    )
    ds.create_index("vec", index_type=kind, metric=metric, num_partitions=4, **_params(kind))
    ds.delete("id % 7 = 1")
    ds.optimize.compact_files(target_rows_per_fragment=2000, defer_index_remap=defer)
    return vectors


CASES = [
    ("deltas", "IVF_FLAT", "l2", False),
    ("deltas", "IVF_PQ", "cosine", False),
    ("deltas", "IVF_PQ", "l2", True),
    ("deltas", "IVF_FLAT", "dot", True),
    ("deferred", "IVF_PQ", "l2", False),
    ("deferred", "IVF_FLAT", "cosine", False),
    pytest.param(
        ("compacted", "IVF_PQ", "l2", True),
        # Measured (issue 28, open): after a compaction on stable row ids, pylance's
        # k * refine_factor candidates still count index rows whose rows were deleted
        # before the compaction, then drop them, so now and then it returns a farther
        # row than lancelet (whose candidates are live rows only).
        marks=pytest.mark.xfail(strict=False, reason="pylance's candidates count deleted rows"),
    ),
    ("compacted", "IVF_FLAT", "cosine", True),
]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: "-".join(map(str, c)))
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Case:
    shape, kind, metric, stable = request.param
    uri = str(tmp_path_factory.mktemp("segments") / "ds")
    if shape == "deltas":
        return Case(uri, _deltas(uri, kind, metric, stable))
    return Case(uri, _compacted(uri, kind, metric, stable, defer=shape == "deferred"))


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(1, 40),
    nprobes=st.integers(1, 8),
    refine=st.sampled_from([None, 1, 2, 5]),
    filter=st.sampled_from([None, "id % 3 = 0", "id >= 4300"]),
    prefilter=st.booleans(),
    fast_search=st.booleans(),
)
def test_search_matches_pylance(
    case: Case,
    seed: int,
    k: int,
    nprobes: int,
    refine: int | None,
    filter: str | None,
    prefilter: bool,
    fast_search: bool,
) -> None:
    rng = np.random.default_rng(seed)
    query = case.vectors[rng.integers(0, len(case.vectors))] + rng.normal(0, 1.5, DIMENSION)
    nearest: dict[str, Any] = {"column": "vec", "q": query.astype(np.float32), "k": k}
    nearest["nprobes"] = nprobes
    if refine is not None:
        nearest["refine_factor"] = refine
    keywords: dict[str, Any] = {
        "columns": ["id"],
        "nearest": nearest,
        "filter": filter,
        "prefilter": prefilter,
        "fast_search": fast_search,
        "with_row_id": True,
    }
    want = lance.dataset(case.uri).to_table(**keywords)
    got = ll.dataset(case.uri).to_table(**keywords)
    assert got.schema == want.schema
    found = got["_distance"].to_numpy()
    np.testing.assert_allclose(found, want["_distance"].to_numpy(), rtol=1e-6, atol=1e-5)
    # The same rows in the same order, up to rows whose distances are equal within
    # float32 rounding (tests/vector_checks.py); a row both return has one id.
    ids, expected = got["_rowid"].to_numpy(), want["_rowid"].to_numpy()
    assert_same_neighbours(ids, found, expected, rtol=1e-6, atol=1e-5)
    theirs = dict(zip(want["_rowid"].to_pylist(), want["id"].to_pylist(), strict=True))
    pairs = zip(got["_rowid"].to_pylist(), got["id"].to_pylist(), strict=True)
    assert all(theirs.get(row, id_) == id_ for row, id_ in pairs)
