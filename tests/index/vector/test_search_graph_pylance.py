"""HNSW indices: the reader's graph search answers as pylance's for explicit ``ef``
(and the default ``ef``), over one or several partitions, with and without refine."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.errors import ArgumentError
from lancelet.index.vector.hnsw import TiedCutError
from tests.index.vector._built import Built, pylance_nearest, tie_at_cut
from tests.vector_checks import assert_same_neighbours

queries = st.integers(0, 2**32 - 1)


def _graph_only(built: Built) -> None:
    if "HNSW" not in built.index_type:
        pytest.skip("not a graph index")


def _query(built: Built, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = built.vectors[rng.integers(0, len(built.vectors))]
    return np.asarray(base + rng.normal(0, 1.5, base.shape), dtype=np.float32)


@settings(max_examples=20, deadline=None)
@given(
    seed=queries,
    k=st.integers(1, 30),
    probes=st.integers(1, 4),
    refine=st.sampled_from([None, 1, 3]),
    extra=st.sampled_from([None, 0, 1, 7, 40]),
)
def test_graph_search_with_ef(
    built: Built, seed: int, k: int, probes: int, refine: int | None, extra: int | None
) -> None:
    _graph_only(built)
    index = built.open()
    probes = min(probes, index.num_partitions)
    query = _query(built, seed)
    ef = None if extra is None else k * (refine or 1) + extra
    nearest = {"k": k, "nprobes": probes, "refine_factor": refine}
    if ef is not None:
        nearest["ef"] = ef
    expected_ids, expected = pylance_nearest(built, query, **nearest)
    try:
        ids, found = index.search(query, k, probes, refine, vectors=built.lookup, ef=ef)
    except TiedCutError:
        # Refused only where pylance's index distances tie at the cut.
        assert tie_at_cut(built, query, k * (refine or 1), probes, ef)
        return
    np.testing.assert_allclose(found, expected, rtol=5e-7, atol=1e-5)
    # Rows whose distances are equal within float32 rounding may swap (see
    # tests/vector_checks.py).
    assert_same_neighbours(ids, found, expected_ids, rtol=5e-7, atol=1e-5)


def test_ef_below_k_is_refused(built: Built) -> None:
    _graph_only(built)
    index = built.open()
    with pytest.raises(ArgumentError, match="ef"):
        index.search(_query(built, 0), 10, 1, ef=9)
    with pytest.raises(ArgumentError, match="ef"):
        index.search(_query(built, 0), 5, 1, refine_factor=2, vectors=built.lookup, ef=9)
