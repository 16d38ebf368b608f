"""Nearest-neighbour scans without a vector index (exact, flat search), checked
against pylance's answers on the same datasets."""

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
from lancelet.dataset.read import nearest_scanner
from lancelet.errors import VectorQueryError, VectorQueryTypeError

TOLERANCE = 1e-5


def _vectors(values: np.ndarray) -> pa.Array:
    return pa.FixedSizeListArray.from_arrays(pa.array(values.ravel()), values.shape[1])


def _table(vectors: np.ndarray) -> pa.Table:
    n = len(vectors)
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "vec": _vectors(vectors),
            "tag": pa.array([f"t{i % 3}" for i in range(n)]),
        }
    )


def _write(table: pa.Table, path: Path, writer: str, **kwargs: Any) -> str:
    uri = str(path)
    (lance if writer == "pylance" else ll).write_dataset(table, uri, **kwargs)
    return uri


def _tolerance(distances: np.ndarray) -> np.ndarray:
    return TOLERANCE * np.maximum(1.0, np.abs(distances))


def assert_same_hits(got: pa.Table, want: pa.Table) -> None:
    """Same columns and rows, distances within 1e-5 (relative above 1); rows whose
    distances pylance and lancelet round a hair apart may swap only among near-ties."""
    assert got.schema == want.schema
    assert got.num_rows == want.num_rows
    if "_distance" not in want.column_names:
        assert got.equals(want)
        return
    gd, wd = got["_distance"].to_numpy(), want["_distance"].to_numpy()
    assert np.all(np.abs(gd - wd) <= _tolerance(wd)), (gd, wd)
    if "_rowid" not in want.column_names:
        return
    gid, wid = got["_rowid"].to_numpy(), want["_rowid"].to_numpy()
    if np.array_equal(gid, wid):
        assert got.drop_columns(["_distance"]).equals(want.drop_columns(["_distance"]))
        return
    for i in np.flatnonzero(gid != wid):
        # The row pylance put elsewhere (or left out at the k-th place) is a near-tie.
        at = np.flatnonzero(wid == gid[i])
        other = wd[at[0]] if len(at) else wd[-1]
        assert abs(other - wd[i]) <= 2 * _tolerance(np.array([wd[i]]))[0], (gid, wid, gd, wd)


def _both(uri: str, **kwargs: Any) -> tuple[pa.Table, pa.Table]:
    return ll.dataset(uri).to_table(**kwargs), lance.dataset(uri).to_table(**kwargs)


@st.composite
def _searches(draw: st.DrawFn) -> dict[str, Any]:
    metric = draw(st.sampled_from(["l2", "cosine", "dot", "L2", "euclidean"]))
    # In one dimension every cosine distance is 0 or 2 in theory, and float32 rounding
    # alone orders those ties in pylance: no oracle.
    dim = draw(st.integers(2 if metric == "cosine" else 1, 9))
    return {
        "n": draw(st.integers(1, 60)),
        "dim": dim,
        "seed": draw(st.integers(0, 2**32 - 1)),
        "metric": metric,
        "k": draw(st.integers(1, 70)),
        "filter": draw(st.sampled_from([None, "id % 3 = 1", "id > 10", "tag = 't2'"])),
        "prefilter": draw(st.sampled_from([None, False, True])),
        "delete": draw(st.sampled_from([None, "id % 4 = 0", "id < 5"])),
        "rows_per_file": draw(st.sampled_from([7, 1000])),
        "writer": draw(st.sampled_from(["pylance", "lancelet"])),
        "stable": draw(st.booleans()),
        "duplicates": draw(st.booleans()),
        "dtype": draw(st.sampled_from([np.float32, np.float16, np.float64])),
        "batch": draw(st.integers(1, 3)),
        "slice": draw(st.sampled_from([{}, {"limit": 3}, {"offset": 2, "limit": 4}])),
    }


@settings(
    max_examples=int(os.environ.get("NEAREST_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=_searches())
def test_flat_search_matches_pylance(
    tmp_path_factory: pytest.TempPathFactory, case: dict[str, Any]
) -> None:
    rng = np.random.default_rng(case["seed"])
    values = rng.standard_normal((case["n"], case["dim"])).astype(case["dtype"])
    if case["duplicates"]:
        values[::3] = values[0]  # exact ties, broken by row id
    uri = _write(
        _table(values),
        tmp_path_factory.mktemp("nearest") / "ds",
        case["writer"],
        max_rows_per_file=case["rows_per_file"],
        enable_stable_row_ids=case["stable"],
    )
    if case["delete"]:
        lance.dataset(uri).delete(case["delete"])
    queries = rng.standard_normal((case["batch"], case["dim"])).astype(np.float32)
    if case["duplicates"]:
        queries[0] = values[0]
    q = queries[0] if case["batch"] == 1 else queries
    nearest = {"column": "vec", "q": q, "k": case["k"], "metric": case["metric"]}
    kwargs = dict(
        nearest=nearest,
        filter=case["filter"],
        prefilter=case["prefilter"],
        with_row_id=True,
        **case["slice"],
    )
    assert_same_hits(*_both(uri, **kwargs))


@pytest.fixture
def small(tmp_path: Path) -> str:
    values = np.random.default_rng(7).standard_normal((40, 4)).astype(np.float32)
    return _write(_table(values), tmp_path / "ds", "pylance", max_rows_per_file=15)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"columns": ["tag"]},
        {"columns": ["_distance", "tag"]},
        {"columns": ["tag", "_rowid"]},
        {"columns": ["_rowaddr", "id"], "with_row_id": True},
        {"columns": []},
        {"columns": {"x": "id * 2"}},
        {"columns": {"x": "id * 2", "d": "_distance"}},
        {"columns": ["id"], "disable_scoring_autoprojection": True},
        {"disable_scoring_autoprojection": True},
        {"columns": ["id", "_distance"], "disable_scoring_autoprojection": True},
        {"columns": ["id", "_rowoffset"]},
        {"with_row_id": True, "with_row_address": True},
        {"filter": "_distance < 3", "columns": ["id"]},
        {"filter": "id > 20", "prefilter": True, "limit": 2, "offset": 1},
        {"fast_search": True},
    ],
    ids=repr,
)
def test_columns_and_options_as_pylance(small: str, kwargs: dict[str, Any]) -> None:
    nearest = {"column": "vec", "q": [0.1, 0.2, -0.3, 0.4], "k": 6}
    assert_same_hits(*_both(small, nearest=nearest, **kwargs))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"columns": ["id"]},
        {"columns": ["id", "query_index"]},
        {"columns": ["id"], "filter": "id > 5"},
        {"columns": ["id"], "filter": "id > 5", "prefilter": True},
        {"columns": ["id"], "filter": "query_index = 1"},
        {"columns": ["id"], "limit": 4, "offset": 1},
        {"with_row_id": True},
    ],
    ids=repr,
)
def test_batch_search_as_pylance(small: str, kwargs: dict[str, Any]) -> None:
    queries = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    for q in (queries, queries.tolist(), queries[:1]):
        nearest = {"column": "vec", "q": q, "k": 3}
        assert_same_hits(*_both(small, nearest=nearest, **kwargs))


@pytest.mark.parametrize("bounds", [(0.0, 2.0), (2.0, None), (None, 2.0), (2.0, 2.0), (3.0, 1.0)])
@pytest.mark.parametrize("k", [1, 3, 40])
def test_distance_range_bounds_as_pylance(
    tmp_path: Path, bounds: tuple[float | None, float | None], k: int
) -> None:
    # Distances 0, 1, 2, 4 and 8 from the origin, with ties: lower <= d < upper,
    # applied before the k nearest are chosen.
    values = np.array([[0, 0], [1, 0], [0, 2**0.5], [2, 0], [-1, 1], [2, 2], [0, 1]], np.float32)
    uri = _write(_table(values), tmp_path / "ds", "pylance")
    nearest = {"column": "vec", "q": [0.0, 0.0], "k": k, "distance_range": bounds}
    assert_same_hits(*_both(uri, nearest=nearest, with_row_id=True))


def test_nan_null_and_zero_vectors_never_return(tmp_path: Path) -> None:
    vec = pa.array(
        [[0.0, 0.0], [1.0, 0.0], [float("nan"), 0.0], None, [0.5, 0.5], [-1.0, 0.0]],
        pa.list_(pa.float32(), 2),
    )
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": range(6), "vec": vec}), uri)
    for metric in ("l2", "cosine", "dot"):
        nearest = {"column": "vec", "q": [1.0, 0.0], "k": 10, "metric": metric}
        assert_same_hits(*_both(uri, nearest=nearest, with_row_id=True))


def test_hamming_on_uint8_vectors(tmp_path: Path) -> None:
    values = np.random.default_rng(1).integers(0, 256, (50, 6)).astype(np.uint8)
    uri = _write(_table(values), tmp_path / "ds", "pylance")
    for metric in (None, "hamming"):
        for q in ([1, 2, 3, 4, 5, 255], np.array([9, 8, 7, 6, 5, 4], np.uint8)):
            nearest = {"column": "vec", "q": q, "k": 7, "metric": metric}
            assert_same_hits(*_both(uri, nearest=nearest, with_row_id=True))


def test_tensor_column(tmp_path: Path) -> None:
    values = np.random.default_rng(2).standard_normal((20, 3)).astype(np.float32)
    tensor = pa.FixedShapeTensorArray.from_numpy_ndarray(values)
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": range(20), "vec": tensor}), uri)
    nearest = {"column": "vec", "q": [1.0, 2.0, 3.0], "k": 4}
    assert_same_hits(*_both(uri, nearest=nearest, columns=["id"], with_row_id=True))
    # The query as an Arrow scalar: a tensor (extension) scalar, a list scalar.
    for q in (tensor[5], pa.scalar([1.0, 2.0, 3.0], pa.list_(pa.float32(), 3))):
        nearest = {"column": "vec", "q": q, "k": 4}
        assert_same_hits(*_both(uri, nearest=nearest, columns=["id"], with_row_id=True))


def test_many_batches_keep_a_running_top_k(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search over more rows than one read batch merges each batch's nearest."""
    monkeypatch.setattr(nearest_scanner, "SEARCH_BATCH", 64)
    values = np.random.default_rng(4).standard_normal((2000, 16)).astype(np.float32)
    values[1500] = values[3]  # a tie across batches
    uri = _write(_table(values), tmp_path / "ds", "lancelet", max_rows_per_file=700)
    for metric in ("l2", "cosine", "dot"):
        q = values[3] if metric == "l2" else values[10] + 0.01
        nearest = {"column": "vec", "q": q, "k": 25, "metric": metric}
        assert_same_hits(*_both(uri, nearest=nearest, with_row_id=True, columns=["id"]))


def test_scanner_to_batches_and_fragments(small: str) -> None:
    nearest = {"column": "vec", "q": [0.1, 0.2, -0.3, 0.4], "k": 5}
    ours, theirs = ll.dataset(small), lance.dataset(small)
    want = theirs.to_table(nearest=nearest, with_row_id=True)
    assert_same_hits(ours.scanner(nearest=nearest, with_row_id=True).to_table(), want)
    batches = list(ours.to_batches(nearest=nearest, with_row_id=True))
    assert_same_hits(pa.Table.from_batches(batches), want)
    assert ours.scanner(nearest=nearest, with_row_id=True).projected_schema == want.schema
    # pylance searches some fragments only under a prefilter, and refuses otherwise.
    with pytest.raises(ValueError, match="not supported for fragment scan"):
        theirs.scanner(nearest=nearest, fragments=[theirs.get_fragments()[1]]).to_table()
    with pytest.raises(VectorQueryError, match="not supported for fragment scan"):
        ours.scanner(nearest=nearest, fragments=[ours.get_fragments()[1]])
    for filter in (None, "id % 2 = 0"):
        asked = {"nearest": nearest, "prefilter": True, "filter": filter, "with_row_id": True}
        want = theirs.scanner(fragments=[theirs.get_fragments()[1]], **asked).to_table()
        got = ours.scanner(fragments=[ours.get_fragments()[1]], **asked).to_table()
        assert_same_hits(got, want)


def test_appended_fragment_is_searched(small: str) -> None:
    extra = np.full((3, 4), 0.1, np.float32)
    table = _table(extra).set_column(0, "id", pa.array([100, 101, 102], pa.int64()))
    ll.write_dataset(table, small, mode="append")
    nearest = {"column": "vec", "q": [0.1, 0.1, 0.1, 0.1], "k": 5}
    assert_same_hits(*_both(small, nearest=nearest, with_row_id=True))


def test_plans_are_readable(small: str) -> None:
    scanner = ll.dataset(small).scanner(
        nearest={"column": "vec", "q": [0.0] * 4, "k": 3}, filter="id > 3"
    )
    assert "KNNVectorDistance: metric=l2" in scanner.explain_plan()
    assert "output_rows" in scanner.analyze_plan()
    assert (
        scanner.count_rows()
        == lance.dataset(small)
        .scanner(nearest={"column": "vec", "q": [0.0] * 4, "k": 3}, filter="id > 3")
        .count_rows()
    )


BAD_QUERIES = [
    ({"column": "vec", "q": [1.0, 2.0, 3.0]}, ValueError, "size 3"),
    ({"column": "vec", "q": [1.0] * 4, "k": 0}, ValueError, "k must be > 0"),
    ({"column": "vec", "q": [1.0] * 4, "k": -1}, ValueError, "k must be > 0"),
    ({"column": "vec", "q": [1.0] * 4, "k": 2.5}, TypeError, "k must be an integer"),
    ({"column": "vec", "q": [1.0] * 4, "metric": "manhattan"}, ValueError, "manhattan"),
    ({"column": "vec", "q": [1.0] * 4, "metric": "hamming"}, ValueError, "hamming"),
    ({"column": "tag", "q": [1.0] * 4}, TypeError, "'tag' must be a vector column"),
    ({"column": "id", "q": [1.0] * 4}, TypeError, "'id' must be a vector column"),
    ({"column": "nope", "q": [1.0] * 4}, ValueError, "'nope' is not in the dataset"),
    ({"column": "vec", "q": [1.0] * 4, "distance_type": "l2"}, TypeError, "distance_type"),
    ({"column": "vec"}, TypeError, "'q'"),
    ({"q": [1.0] * 4}, TypeError, "'column'"),
    ({"column": "vec", "q": [1.0] * 4, "nprobes": 0}, ValueError, "nprobes"),
    ({"column": "vec", "q": [1.0] * 4, "refine_factor": 0}, ValueError, "refine_factor"),
    ({"column": "vec", "q": [1.0] * 4, "ef": 0}, ValueError, "ef"),
    ({"column": "vec", "q": [1.0] * 4, "distance_range": (1, 2, 3)}, ValueError, "distance_range"),
    ({"column": "vec", "q": [1.0] * 4, "use_index": "no"}, TypeError, "use_index"),
    ({"column": "vec", "q": [1.0] * 4, "approx_mode": "x"}, ValueError, "approx_mode"),
    ({"column": "vec", "q": [[1.0] * 4, [1.0] * 3]}, ValueError, "same length"),
    ({"column": "vec", "q": "abcd"}, TypeError, "q must be"),
    ({"column": "vec", "q": None}, TypeError, "q must be"),
]


@pytest.mark.parametrize(("nearest", "builtin", "message"), BAD_QUERIES, ids=repr)
def test_bad_queries_raise_pylances_builtin(
    small: str, nearest: dict[str, Any], builtin: type[Exception], message: str
) -> None:
    with pytest.raises(builtin):
        lance.dataset(small).to_table(nearest=nearest)
    with pytest.raises(builtin, match=message) as raised:
        ll.dataset(small).to_table(nearest=nearest)
    assert isinstance(raised.value, (VectorQueryError, VectorQueryTypeError))


def test_nan_in_the_query_is_refused(small: str) -> None:
    # pylance answers with no rows (every distance is NaN); lancelet says why.
    with pytest.raises(VectorQueryError, match="NaN"):
        ll.dataset(small).to_table(nearest={"column": "vec", "q": [np.nan, 1.0, 2.0, 3.0]})


def test_options_refused_with_nearest(small: str) -> None:
    ds = ll.dataset(small)
    nearest = {"column": "vec", "q": [1.0] * 4}
    with pytest.raises(ValueError, match="include_deleted_rows"):
        ds.to_table(nearest=nearest, with_row_id=True, include_deleted_rows=True)
    with pytest.raises(NotImplementedError, match="order_by"):
        ds.to_table(nearest=nearest, order_by=["id"])
    with pytest.raises(NotImplementedError, match="nearest"):
        ds.count_rows(nearest=nearest)


def test_a_small_index_is_probed_whole_by_default(tmp_path: Path) -> None:
    """pylance's automatic count (6 partitions for k <= 10) covers a 2-partition
    index: the default answer is pylance's; use_index=False searches exactly."""
    values = np.random.default_rng(5).standard_normal((300, 8)).astype(np.float32)
    uri = _write(_table(values), tmp_path / "ds", "pylance")
    lance.dataset(uri).create_index("vec", index_type="IVF_FLAT", num_partitions=2, name="vec_idx")
    assert_same_hits(*_both(uri, nearest={"column": "vec", "q": values[0]}, with_row_id=True))
    nearest = {"column": "vec", "q": values[0], "k": 5, "use_index": False}
    assert_same_hits(*_both(uri, nearest=nearest, with_row_id=True))


@pytest.mark.parametrize("window", [{"limit": 12}, {"limit": 12, "offset": 3}, {"offset": 4}])
def test_without_k_a_limit_is_how_many_are_found(small: str, window: dict[str, int]) -> None:
    """pylance: no k in nearest and a limit: the limit nearest rows (then offset)."""
    nearest = {"column": "vec", "q": [0.1, 0.2, -0.3, 0.4]}
    assert_same_hits(*_both(small, nearest=nearest, with_row_id=True, **window))


def test_deleted_rows_cannot_be_included(small: str) -> None:
    nearest = {"column": "vec", "q": [0.1, 0.2, -0.3, 0.4], "k": 3}
    for module in (ll, lance):
        with pytest.raises(ValueError, match="Cannot include deleted rows"):
            module.dataset(small).to_table(
                nearest=nearest, with_row_id=True, include_deleted_rows=True
            )
