"""Lance's ``_cast_list_f16`` in lancelet's SQL, compared with pylance: values bit for
bit (rounding, overflow to infinity, NaN, -0.0), result types, NULLs and the
arguments pylance refuses; in a projection, a filter and a nearest scan."""

from __future__ import annotations

from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancelet
from tests.expr.pylance_sql import (
    Pair,
    assert_same_filter,
    assert_same_projection,
    project,
    same,
    write_pair,
)

_SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_EDGES = np.array([1.0, 2.5, 70000.0, np.nan, -1e-8, 3.14159, 65519.0, 6e-8], np.float32)


def _fsl(values: np.ndarray, size: int) -> pa.FixedSizeListArray:
    return pa.FixedSizeListArray.from_arrays(pa.array(values), size)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Pair:
    table = pa.table(
        {
            "id": pa.array([0, 1], pa.int64()),
            "fsl32": _fsl(_EDGES, 4),
            "fsl16": _fsl(_EDGES.astype(np.float16), 4),
            "fsl64": _fsl(_EDGES.astype(np.float64), 4),
            "l32": pa.array([[1.0, 2.0], None], pa.list_(pa.float32())),
            "ll32": pa.array([[1.0], [3.0]], pa.large_list(pa.float32())),
            "nulls": pa.array([[1.0, None], None], pa.list_(pa.float32(), 2)),
            "i": pa.array([1, 2], pa.int32()),
            "fi": _fsl(np.arange(4, dtype=np.int32), 2),
        }
    )
    with np.errstate(over="ignore"):
        return write_pair(table, Path(tmp_path_factory.mktemp("vectors")))


SQL = [
    "_cast_list_f16(fsl32)",
    "_cast_list_f16(fsl16)",
    "_CAST_LIST_F16(l32)",
    "_cast_list_f16(nulls)",
    # refused by pylance: other element types, large lists, non-lists, arity
    "_cast_list_f16(fsl64)",
    "_cast_list_f16(fi)",
    "_cast_list_f16(ll32)",
    "_cast_list_f16(i)",
    "_cast_list_f16(fsl32, fsl32)",
    "_cast_list_f16()",
    # unknown to pylance: the family has one member
    "_cast_list_f32(fsl32)",
]


@pytest.mark.parametrize("sql", SQL)
def test_projection_matches_pylance(pair: Pair, sql: str) -> None:
    assert_same_projection(pair, sql)


def test_filter_matches_pylance(pair: Pair) -> None:
    assert_same_filter(pair, "_cast_list_f16(l32) IS NOT NULL")


@_SETTINGS
@given(
    st.lists(
        st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=3, max_size=3 * 8
    ).filter(lambda v: len(v) % 3 == 0)
)
def test_rounding_matches_pylance(
    tmp_path_factory: pytest.TempPathFactory, values: list[float]
) -> None:
    table = pa.table({"v": _fsl(np.array(values, np.float32), 3)})
    pair = write_pair(table, Path(tmp_path_factory.mktemp("round")))
    theirs, ours = (
        project(pair.theirs, "_cast_list_f16(v)"),
        project(pair.ours, "_cast_list_f16(v)"),
    )
    assert ours.type == theirs.type
    assert same(ours.values, theirs.values)


def test_in_a_nearest_scan(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((64, 8)).astype(np.float32)
    table = pa.table({"vector": _fsl(vectors.ravel(), 8)})
    lance.write_dataset(table, tmp_path / "t")
    query = {"column": "vector", "q": vectors[5], "k": 5}
    columns = {"vec": "vector", "half": "_cast_list_f16(vector)"}
    want = lance.dataset(tmp_path / "t").to_table(nearest=query, columns=columns)
    got = lancelet.dataset(tmp_path / "t").to_table(nearest=query, columns=columns)
    assert got.schema == want.schema
    assert got.drop(["_distance"]).to_pylist() == want.drop(["_distance"]).to_pylist()
    np.testing.assert_allclose(got["_distance"].to_numpy(), want["_distance"].to_numpy(), 1e-5)
