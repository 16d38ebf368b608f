"""nearest= through a pylance-built IVF_FLAT / IVF_PQ / IVF_RQ index: the same rows in the same
order as pylance 14, with distances within float32 rounding, for explicit nprobes
and refine_factor, with filters (prefilter on and off), deleted rows, a fragment
appended after the index and fast_search."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lancelet as ll
from lancelet.errors import UnsupportedVectorIndexError
from tests.vector_checks import assert_same_neighbours, distance_atol

ROWS = 1500
APPENDED = 300

CASES = [
    ("IVF_FLAT", "l2", 16, 8, {}),
    ("IVF_FLAT", "cosine", 16, 4, {}),
    ("IVF_PQ", "l2", 16, 8, {"num_sub_vectors": 4}),
    ("IVF_PQ", "cosine", 32, 8, {"num_sub_vectors": 8}),
    ("IVF_PQ", "dot", 32, 4, {"num_sub_vectors": 8}),
    ("IVF_RQ", "l2", 32, 8, {"num_bits": 1}),
    ("IVF_RQ", "cosine", 64, 8, {}),  # pylance's default: 5 bits per dimension
    ("IVF_RQ", "l2", 40, 4, {"num_bits": 9}),
    ("IVF_RQ", "dot", 48, 4, {}),
]


@dataclass(frozen=True)
class Indexed:
    uri: str
    vectors: np.ndarray  # every row written, by id
    metric: str


def _table(vectors: np.ndarray, start: int) -> pa.Table:
    dimension = vectors.shape[1]
    return pa.table(
        {
            "id": np.arange(start, start + len(vectors)),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dimension),
        }
    )


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def indexed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    """pylance's index on three fragments, rows deleted after it, one fragment
    appended after it (unindexed)."""
    kind, metric, dimension, partitions, params = request.param
    rng = np.random.default_rng(dimension + partitions)
    centres = rng.normal(0, 3, (16, dimension))
    chosen = centres[rng.integers(0, 16, ROWS + APPENDED)]
    vectors = (chosen + rng.normal(0, 1, chosen.shape)).astype(np.float32)
    uri = str(tmp_path_factory.mktemp("nearest-index") / "ds")
    dataset = lance.write_dataset(_table(vectors[:ROWS], 0), uri, max_rows_per_file=500)
    dataset.create_index("vec", index_type=kind, metric=metric, num_partitions=partitions, **params)
    dataset.delete("id % 11 = 3")
    lance.write_dataset(_table(vectors[ROWS:], ROWS), uri, mode="append")
    return Indexed(uri, vectors, metric)


def _query(indexed: Indexed, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = indexed.vectors[rng.integers(0, len(indexed.vectors))]
    return np.asarray(base + rng.normal(0, 1.5, base.shape), dtype=np.float32)


def _same(uri: str, theirs: dict[str, Any] | None = None, **kwargs: Any) -> pa.Table:
    """lancelet's answer to ``kwargs`` against pylance's (to ``theirs`` when given:
    where lancelet's default means pylance's explicit setting)."""
    want = lance.dataset(uri).to_table(**(kwargs if theirs is None else theirs))
    got = ll.dataset(uri).to_table(**kwargs)
    assert got.schema == want.schema
    # Within 1e-5, or a few float32 ulps of the largest query-row norm product.
    found, expected = got["_distance"].to_numpy(), want["_distance"].to_numpy()
    spec = (kwargs if theirs is None else theirs)["nearest"]
    atol = distance_atol(np.asarray(spec["q"]), _vectors(uri, spec["column"]))
    np.testing.assert_allclose(found, expected, rtol=1e-6, atol=atol)
    # The same rows in the same order, up to rows whose distances are equal within
    # that rounding (either order; either one where k cuts between them).
    queries = got["query_index"].to_numpy() if "query_index" in got.column_names else None
    ids, expected_ids = got["_rowid"].to_numpy(), want["_rowid"].to_numpy()
    for number in [None] if queries is None else np.unique(queries).tolist():
        mine = slice(None) if queries is None else queries == number
        assert_same_neighbours(ids[mine], found[mine], expected_ids[mine], rtol=1e-6, atol=atol)
    # A row both return carries the same id in both.
    their_ids = dict(zip(want["_rowid"].to_pylist(), want["id"].to_pylist(), strict=True))
    pairs = zip(got["_rowid"].to_pylist(), got["id"].to_pylist(), strict=True)
    assert all(their_ids.get(row, id_) == id_ for row, id_ in pairs)
    return want


def _vectors(uri: str, column: str) -> np.ndarray:
    """Every row's vector, a row of floats each."""
    values = lance.dataset(uri).to_table(columns=[column])[column].combine_chunks()
    return values.flatten().to_numpy().reshape(len(values), -1)


filters = st.sampled_from([None, "id % 3 = 0", "id < 700", "id >= 1400"])


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(1, 40),
    nprobes=st.integers(1, 10),
    refine=st.sampled_from([None, 1, 2, 5]),
    filter=filters,
    prefilter=st.booleans(),
    fast_search=st.booleans(),
)
def test_index_search_matches_pylance(
    indexed: Indexed,
    seed: int,
    k: int,
    nprobes: int,
    refine: int | None,
    filter: str | None,
    prefilter: bool,
    fast_search: bool,
) -> None:
    nearest = {"column": "vec", "q": _query(indexed, seed), "k": k, "nprobes": nprobes}
    if refine is not None:
        nearest["refine_factor"] = refine
    if seed % 2:
        nearest["metric"] = indexed.metric
    table = _same(
        indexed.uri,
        columns=["id"],
        nearest=nearest,
        filter=filter,
        prefilter=prefilter,
        fast_search=fast_search,
        with_row_id=True,
    )
    deleted = [i for i in table["id"].to_pylist() if i % 11 == 3 and i < ROWS]
    assert not deleted


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 20))
def test_batch_queries_and_every_partition(indexed: Indexed, seed: int, k: int) -> None:
    queries = np.stack([_query(indexed, seed + i) for i in range(3)])
    nearest = {"column": "vec", "q": queries, "k": k, "nprobes": 3, "refine_factor": 2}
    _same(indexed.uri, columns=["id"], nearest=nearest, with_row_id=True)
    every = {"column": "vec", "q": queries[0], "k": k, "search_effort": 1.0}
    _same(indexed.uri, columns=["id"], nearest=every, with_row_id=True)


def _recall(found: pa.Table, exact: pa.Table) -> float:
    return len(set(found["id"].to_pylist()) & set(exact["id"].to_pylist())) / len(exact)


def test_default_probing_recalls_as_much_as_pylance(indexed: Indexed) -> None:
    """Without nprobes lancelet probes pylance's automatic count (or more): over
    many queries its recall against the exact answer is at least pylance's."""
    ours, theirs = ll.dataset(indexed.uri), lance.dataset(indexed.uri)
    mine, pylance_recall = [], []
    for seed in range(30):
        for k in (1, 10, 50):
            nearest = {"column": "vec", "q": _query(indexed, seed), "k": k}
            exact = theirs.to_table(columns=["id"], nearest={**nearest, "use_index": False})
            mine.append(_recall(ours.to_table(columns=["id"], nearest=nearest), exact))
            pylance_recall.append(_recall(theirs.to_table(columns=["id"], nearest=nearest), exact))
    assert np.mean(mine) >= np.mean(pylance_recall) - 1e-9


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 20), bound=st.integers(1, 3))
def test_probing_bounds_as_pylance(indexed: Indexed, seed: int, k: int, bound: int) -> None:
    """minimum_nprobes = maximum_nprobes fixes the count: pylance's answer."""
    nearest = {"column": "vec", "q": _query(indexed, seed), "k": k}
    nearest |= {"minimum_nprobes": bound, "maximum_nprobes": bound}
    _same(indexed.uri, columns=["id"], nearest=nearest, with_row_id=True)


def test_nprobes_with_bounds_is_refused(indexed: Indexed) -> None:
    nearest = {"column": "vec", "q": _query(indexed, 1), "nprobes": 2, "minimum_nprobes": 2}
    with pytest.raises(UnsupportedVectorIndexError, match="nprobes alone"):
        ll.dataset(indexed.uri).to_table(nearest=nearest)


def test_index_types_lancelet_does_not_read_are_refused_by_name(tmp_path: Path) -> None:
    vectors = np.random.default_rng(3).normal(0, 1, (600, 16)).astype(np.float32)
    uri = str(tmp_path / "sq")
    lance.write_dataset(_table(vectors, 0), uri).create_index(
        "vec", index_type="IVF_SQ", num_partitions=2, name="vec_sq", metric="dot"
    )
    nearest = {"column": "vec", "q": vectors[0], "k": 3, "nprobes": 2}
    with pytest.raises(UnsupportedVectorIndexError, match="index 'vec_sq'"):
        ll.dataset(uri).to_table(nearest=nearest)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 20), chosen=st.sampled_from([[1], [0, 3]]))
def test_fragment_scan_with_prefilter(
    indexed: Indexed, seed: int, k: int, chosen: list[int]
) -> None:
    """With prefilter=True pylance searches only the fragments given (fragment 3 is
    the one appended after the index), through the index where it covers them."""
    nearest = {"column": "vec", "q": _query(indexed, seed), "k": k, "nprobes": 2}
    asked = {"columns": ["id"], "nearest": nearest, "prefilter": True, "with_row_id": True}
    theirs, ours = lance.dataset(indexed.uri), ll.dataset(indexed.uri)
    want = theirs.scanner(fragments=[theirs.get_fragment(f) for f in chosen], **asked).to_table()
    got = ours.scanner(fragments=[ours.get_fragment(f) for f in chosen], **asked).to_table()
    found, expected = got["_distance"].to_numpy(), want["_distance"].to_numpy()
    atol = distance_atol(np.asarray(nearest["q"]), indexed.vectors)
    np.testing.assert_allclose(found, expected, rtol=1e-6, atol=atol)
    # Rows a few float32 ulps apart may come in either order (one seed put two rows
    # 4e-8 apart at k, which pylance and lancelet rounded apart).
    ids, expected_ids = got["_rowid"].to_numpy(), want["_rowid"].to_numpy()
    assert_same_neighbours(ids, found, expected_ids, rtol=1e-6, atol=atol)
