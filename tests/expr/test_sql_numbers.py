"""DataFusion's math functions in lancelet, compared with pylance: values (bit for bit,
NaN and -0.0 included), result types and NULLs, in projections and filters."""

from __future__ import annotations

import decimal
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.expr.pylance_sql import (
    Pair,
    assert_refused,
    assert_same_filter,
    assert_same_projection,
    edge_table,
    project,
    same,
    write_pair,
)

_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Pair:
    return write_pair(edge_table(), Path(tmp_path_factory.mktemp("numbers")))


_UNARY = [
    "sqrt",
    "exp",
    "ln",
    "log10",
    "log2",
    "log",
    "signum",
    "isnan",
    "iszero",
    "sin",
    "cos",
    "tan",
    "cot",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "degrees",
    "radians",
]

EXPRESSIONS = [
    *(f"{name}({column})" for name in _UNARY for column in ("f", "f32", "i", "i8", "u", "dec")),
    # round: halves away from zero; decimals keep their precision with fewer places.
    "round(f)",
    "round(f32)",
    "round(i)",
    "round(u)",
    "round(dec)",
    "round(f, 1)",
    "round(f, 2)",
    "round(f, -1)",
    "round(f32, 1)",
    "round(dec, 1)",
    "round(dec, -1)",
    "round(dec, 5)",
    "round(i, -1)",
    "round(f, i8)",
    "round(id, i8)",
    "round(f, NULL)",
    "trunc(f)",
    "trunc(f32)",
    "trunc(i)",
    "trunc(dec)",
    "trunc(f, 1)",
    "trunc(f, -1)",
    "trunc(f32, 1)",
    "trunc(dec, 1)",
    "coalesce(floor(f))",
    "coalesce(ceil(f32))",
    "coalesce(floor(i8))",
    "coalesce(floor(u))",
    "coalesce(floor(dec))",
    "coalesce(ceil(dec))",
    "power(f, 2)",
    "power(i, 2)",
    "power(i8, 2)",
    "power(f32, 2)",
    "power(2, i)",
    "power(i, -1)",
    "power(id, -1)",
    "power(id, 63)",
    "power(i, 0.5)",
    "power(f32, f32)",
    "power(i, i8)",
    "power(u, 2)",
    "pow(f, 0.5)",
    "log(2, f)",
    "log(f, 2)",
    "log(2, f32)",
    "atan2(f, 2)",
    "atan2(f32, f32)",
    "atan2(f32, 2)",
    "atan2(i, i8)",
    "nanvl(f, 0)",
    "nanvl(f, i)",
    "nanvl(i, 0)",
    "nanvl(f32, 1)",
    "gcd(i, 6)",
    "gcd(i8, i8)",
    "gcd(id, -4)",
    "lcm(i, 6)",
    "lcm(id, 0)",
    "factorial(id)",
    "factorial(i8)",
    "factorial(u)",
    "nanvl(f, pi())",
    # DataFusion's rewrites, which hold on NULL and NaN rows too.
    "power(f, 1)",
    "power(i, 1)",
    "power(10, log(10, f))",
    "power(10, log(f))",
    "log(10, power(10, f))",
    "log(power(10, f))",
]


@pytest.mark.parametrize("sql", EXPRESSIONS)
def test_matches_pylance(sql: str, pair: Pair) -> None:
    assert_same_projection(pair, sql)
    assert_same_filter(pair, f"({sql}) IS NULL")


FILTERS = [
    "power(f, 0) = 1",
    "power(i, 0.0) = 1",
    "log(f, f) = 1",
    "log(f, 1) = 0",
    "log(1, f) IS NULL",
    "isnan(f)",
    "NOT iszero(f)",
    "round(f) = 2",
    "round(dec, 1) > 1.2",
    "trunc(f) < 0",
    "signum(i) = -1",
    "power(i8, 2) > 100",
    "sqrt(f) > 1",
    "gcd(id, 4) = 2",
    "coalesce(floor(f)) = 1",
]


@pytest.mark.parametrize("sql", FILTERS)
def test_filters_match_pylance(sql: str, pair: Pair) -> None:
    assert_same_filter(pair, sql)


REFUSED = [
    ("power(dec, 2)", "decimals"),
    ("cbrt(f)", "lancelet does not implement SQL function 'cbrt'"),
    ("round(dec, i8)", "literal"),
    ("sqrt(s)", "takes numbers"),
    ("factorial(f)", "takes an integer"),
    ("gcd(f, 2)", "takes integers"),
    ("coalesce(dec, f)", "floats with decimals"),
]


@pytest.mark.parametrize(("sql", "message"), REFUSED)
def test_refused(sql: str, message: str, pair: Pair) -> None:
    assert_refused(pair, sql, message)


def test_top_level_floor_is_accepted_where_pylance_refuses_it(pair: Pair) -> None:
    """pylance's planner takes FLOOR(..) (and CEIL, SUBSTRING, TRIM, EXTRACT) only inside
    another function call; lancelet takes them anywhere, with the same values."""
    assert_same_projection(pair, "coalesce(floor(f))")
    assert "not supported SQL in lance" in str(project(pair.theirs, "floor(f)").error)
    assert same(
        project(pair.ours, "floor(f)").values, project(pair.theirs, "coalesce(floor(f))").values
    )


# --- random numbers ----------------------------------------------------------------------

_FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-1e6, 1e6),
    st.integers(-10000, 10000).map(lambda n: n / 8),  # halves and quarters
    st.sampled_from([0.0, -0.0, 0.5, -0.5, 1.5, 2.5, 2.675, 1e300, -1e-300, 4503599627370497.0]),
)


@st.composite
def float_tables(draw: st.DrawFn) -> pa.Table:
    values = draw(st.lists(st.none() | _FLOATS, min_size=1, max_size=10))
    size = len(values)
    return pa.table(
        {
            "id": pa.array(range(size), pa.int64()),
            "x": pa.array(values, pa.float64()),
            "x32": pa.array(values, pa.float32()),
            "y": pa.array(
                draw(st.lists(st.none() | _FLOATS, min_size=size, max_size=size)), pa.float64()
            ),
            "n": pa.array(
                draw(
                    st.lists(
                        st.none() | st.integers(-(2**31), 2**31 - 1), min_size=size, max_size=size
                    )
                ),
                pa.int32(),
            ),
            "d": pa.array(
                draw(st.lists(st.integers(-8, 8), min_size=size, max_size=size)), pa.int8()
            ),
        }
    )


@_SETTINGS
@given(table=float_tables(), digits=st.integers(-12, 12))
def test_random_floats_match_pylance(
    table: pa.Table, digits: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    pair = write_pair(table, Path(tmp_path_factory.mktemp("random_floats")))
    calls = [
        *(f"{name}(x)" for name in _UNARY),
        *(f"{name}(x32)" for name in ("sqrt", "exp", "ln", "sin", "degrees", "radians", "cot")),
        "round(x)",
        "round(x32)",
        f"round(x, {digits})",
        f"round(x32, {digits})",
        "round(x, d)",
        "round(n, d)",
        "trunc(x)",
        "trunc(x32)",
        f"trunc(x, {digits})",
        "trunc(x, d)",
        "coalesce(floor(x))",
        "coalesce(ceil(x32))",
        "power(x, y)",
        "power(x, d)",
        "power(n, d)",
        "log(y, x)",
        "atan2(x, y)",
        "nanvl(x, y)",
        "signum(n)",
        "coalesce(x, n)",
        "nullif(x, y)",
        "greatest(x, y, n)",
        "least(x, y)",
    ]
    for sql in calls:
        assert_same_projection(pair, sql)


@_SETTINGS
@given(
    a=st.lists(
        st.none() | st.integers(-(2**63), 2**63 - 1) | st.integers(-30, 30), min_size=1, max_size=10
    ),
    b=st.lists(
        st.none() | st.integers(-(2**63), 2**63 - 1) | st.integers(-30, 30), min_size=1, max_size=10
    ),
)
def test_random_integers_match_pylance(
    a: list[int | None], b: list[int | None], tmp_path_factory: pytest.TempPathFactory
) -> None:
    size = min(len(a), len(b))
    table = pa.table(
        {
            "id": pa.array(range(size), pa.int64()),
            "a": pa.array(a[:size], pa.int64()),
            "b": pa.array(b[:size], pa.int64()),
        }
    )
    pair = write_pair(table, Path(tmp_path_factory.mktemp("random_integers")))
    for sql in (
        "gcd(a, b)",
        "lcm(a, b)",
        "factorial(b)",
        "round(a)",
        "coalesce(a, b)",
        "greatest(a, b)",
    ):
        assert_same_projection(pair, sql)


_DECIMALS = st.decimals(
    min_value=-999, max_value=999, places=3, allow_nan=False, allow_infinity=False
)


@_SETTINGS
@given(
    values=st.lists(st.none() | _DECIMALS, min_size=1, max_size=10),
    digits=st.integers(-4, 4),
)
def test_random_decimals_match_pylance(
    values: list[decimal.Decimal | None], digits: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    table = pa.table(
        {
            "id": pa.array(range(len(values)), pa.int64()),
            "m": pa.array(values, pa.decimal128(6, 3)),
        }
    )
    pair = write_pair(table, Path(tmp_path_factory.mktemp("random_decimals")))
    for sql in (
        "round(m)",
        f"round(m, {digits})",
        "trunc(m)",
        f"trunc(m, {digits})",
        "coalesce(floor(m))",
        "coalesce(ceil(m))",
        "sqrt(m)",
        "exp(m)",
        "signum(m)",
        "coalesce(m, 1)",
    ):
        assert_same_projection(pair, sql)
