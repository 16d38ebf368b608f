"""Nearest-neighbour scans of multivector columns (a list of vectors per row),
checked against pylance's answers on the same datasets: a row's distance is the sum,
over the query's vectors, of each one's smallest distance to the row's vectors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancelet as ll
from lancelet.errors import VectorQueryError
from tests.dataset.test_nearest import assert_same_hits

_ELEMENTS = {
    np.float16: pa.float16(),
    np.float32: pa.float32(),
    np.float64: pa.float64(),
    np.uint8: pa.uint8(),
}


def _row(rng: np.random.Generator, dim: int, dtype: type, length: int) -> list[Any] | None:
    """A row of ``length`` vectors; now and then a null row, a null or zero vector,
    or a null element (pylance reads those as zeros)."""
    if rng.random() < 0.08:
        return None
    if dtype is np.uint8:
        values: list[Any] = rng.integers(0, 256, (length, dim)).tolist()
    else:
        values = rng.standard_normal((length, dim)).astype(dtype).tolist()
    for vector in range(length):
        roll = rng.random()
        if roll < 0.05:
            values[vector] = None
        elif roll < 0.1:
            values[vector] = [0] * dim
        elif roll < 0.15:
            values[vector][int(rng.integers(dim))] = None
    return values


@st.composite
def _searches(draw: st.DrawFn) -> dict[str, Any]:
    dtype = draw(st.sampled_from([np.float32, np.float16, np.float64, np.uint8]))
    metrics = ["hamming"] if dtype is np.uint8 else ["l2", "cosine", "dot"]
    return {
        "n": draw(st.integers(1, 40)),
        "dim": draw(st.integers(2, 6)),
        "seed": draw(st.integers(0, 2**32 - 1)),
        "dtype": dtype,
        "metric": draw(st.sampled_from(metrics)),
        "queries": draw(st.integers(1, 3)),
        "flat_query": draw(st.booleans()),
        "k": draw(st.integers(1, 45)),
        "filter": draw(st.sampled_from([None, "id % 3 = 1", "id > 10"])),
        "prefilter": draw(st.booleans()),
        "rows_per_file": draw(st.sampled_from([7, 1000])),
        "writer": draw(st.sampled_from(["pylance", "lancelet"])),
    }


@settings(
    max_examples=int(os.environ.get("NEAREST_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=_searches())
def test_multivector_search_matches_pylance(
    tmp_path_factory: pytest.TempPathFactory, case: dict[str, Any]
) -> None:
    rng = np.random.default_rng(case["seed"])
    dim, dtype = case["dim"], case["dtype"]
    lengths = rng.integers(0, 5, case["n"])
    rows = [_row(rng, dim, dtype, int(length)) for length in lengths]
    column = pa.array(rows, pa.list_(pa.list_(_ELEMENTS[dtype], dim)))
    table = pa.table({"id": pa.array(range(case["n"]), pa.int64()), "mv": column})
    uri = str(tmp_path_factory.mktemp("mv") / "ds")
    writer = lance if case["writer"] == "pylance" else ll
    writer.write_dataset(table, uri, max_rows_per_file=case["rows_per_file"])
    if dtype is np.uint8:
        q: Any = rng.integers(0, 256, (case["queries"], dim)).astype(np.float32)
    else:
        q = rng.standard_normal((case["queries"], dim)).astype(np.float32)
    if case["flat_query"] and case["queries"] == 1:
        q = q[0]
    scan = {
        "nearest": {"column": "mv", "q": q, "k": case["k"], "metric": case["metric"]},
        "filter": case["filter"],
        "prefilter": case["prefilter"],
        "with_row_id": True,
    }
    got = ll.dataset(uri).to_table(**scan)
    want = lance.dataset(uri).to_table(**scan)
    assert_same_hits(got, want)


def test_a_zero_vector_under_cosine_leaves_its_row_out(tmp_path: Path) -> None:
    """pylance passes over a NaN vector in a row, but not a zero one (cosine)."""
    nan = float("nan")
    rows = [[[1.0, 2.0], [0.0, 0.0]], [[nan, nan], [1.0, 3.0]], [[0.0, 0.0]], [[2.0, 1.0]]]
    uri = str(tmp_path / "ds")
    column = pa.array(rows, pa.list_(pa.list_(pa.float32(), 2)))
    lance.write_dataset(pa.table({"id": range(4), "mv": column}), uri)
    for metric in ("cosine", "l2", "dot"):
        nearest = {"column": "mv", "q": [[1.0, 2.0], [0.5, -1.0]], "metric": metric}
        scan = {"nearest": nearest, "columns": ["id", "_distance"], "with_row_id": True}
        assert_same_hits(ll.dataset(uri).to_table(**scan), lance.dataset(uri).to_table(**scan))
    cosine = nearest | {"metric": "cosine"}
    assert sorted(lance.dataset(uri).to_table(nearest=cosine)["id"].to_pylist()) == [1, 3]


def test_a_multivector_query_of_the_wrong_size_is_refused(tmp_path: Path) -> None:
    column = pa.array([[[1.0, 2.0], [3.0, 4.0]]], pa.list_(pa.list_(pa.float32(), 2)))
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"mv": column}), uri)
    for q in ([[1.0, 2.0, 3.0]], [1.0, 2.0, 3.0]):
        with pytest.raises(ValueError):
            lance.dataset(uri).to_table(nearest={"column": "mv", "q": q})
        with pytest.raises(VectorQueryError, match="does not match index column size 2"):
            ll.dataset(uri).to_table(nearest={"column": "mv", "q": q})
