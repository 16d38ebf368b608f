"""Spark's pushed filters as predicate trees (lancelet.spark.filters.to_predicate).

The Arrow expression translation (``to_expression``) is checked against Spark itself
in test_pushdown.py; here the tree, evaluated by lancelet.expr.arrow, must select the
rows that expression selects, and be made only for filters that expression takes.
"""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pyspark.sql import datasource as sds

from lancelet.expr import And, Equals, IsIn, IsNull, LikePrefix, Not, Or, Range
from lancelet.expr.arrow import evaluate, to_arrow
from lancelet.spark.filters import to_expression, to_predicate
from tests.expr.grammar import COLUMNS, NEG_NAN, STRUCT_FIELDS, column_names, tables

SCHEMA = pa.schema(
    [
        ("i8", pa.int8()),
        ("f", pa.float32()),
        ("s", pa.string()),
        ("pt", pa.struct([("x", pa.int32())])),
        ("a.b", pa.int32()),
    ]
)


def _i8(v: int) -> pa.Scalar:
    return pa.scalar(v, pa.int8())


_NEG_INF = pa.scalar(-math.inf, pa.float32())
_HALF = pa.scalar(0.5, pa.float32())


@pytest.mark.parametrize(
    ("spark_filter", "tree"),
    [
        (sds.EqualTo(("i8",), 5), Equals("i8", _i8(5))),
        (sds.EqualNullSafe(("i8",), None), IsNull("i8")),
        (sds.EqualNullSafe(("i8",), 5), And((Not(IsNull("i8")), Equals("i8", _i8(5))))),
        (sds.GreaterThan(("i8",), 5), Range("i8", low=_i8(5), low_inclusive=False)),
        (sds.LessThanOrEqual(("i8",), 5), Range("i8", high=_i8(5))),
        (sds.In(("i8",), (1, 1)), IsIn("i8", pa.array([1], pa.int8()))),
        (sds.IsNotNull(("pt", "x")), Not(IsNull("pt.x"))),
        (sds.StringStartsWith(("s",), "a%"), LikePrefix("s", "a%")),
        (sds.Not(sds.EqualTo(("i8",), 5)), Not(Equals("i8", _i8(5)))),
        # Spark: every NaN is above every number.
        (
            sds.GreaterThan(("f",), 0.5),
            Or(
                (
                    Range("f", low=_HALF, low_inclusive=False),
                    Range("f", high=_NEG_INF, high_inclusive=False),
                )
            ),
        ),
        (sds.LessThan(("f",), 0.5), Range("f", low=_NEG_INF, high=_HALF, high_inclusive=False)),
        # Left to Spark: inexact literals, NaN, NULL, names with dots, other filters.
        (sds.GreaterThan(("i8",), 1000), None),
        (sds.EqualTo(("f",), 0.1), None),
        (sds.EqualTo(("f",), math.nan), None),
        (sds.EqualTo(("i8",), None), None),
        (sds.In(("i8",), (1, None)), None),
        (sds.In(("i8",), ()), None),
        (sds.EqualTo(("a.b",), 1), None),
        (sds.StringEndsWith(("s",), "a"), None),
        (sds.StringStartsWith(("i8",), "a"), None),
        (sds.Not(sds.StringContains(("s",), "a")), None),
    ],
)
def test_shapes(spark_filter: sds.Filter, tree: object) -> None:
    assert to_predicate(spark_filter, SCHEMA) == tree


# --- random filters over random tables -----------------------------------------------

_VALUES: list[Any] = [
    None, 0, 1, -1, 5, 127, 128, 1000, 2**63, -(2**63), 0.0, -0.0, 0.5, 0.1, 1.5, math.inf,
    -math.inf, math.nan, NEG_NAN, 3.4e38, "", "a", "ab", "a%", "é",
    datetime.date(2020, 1, 1), datetime.datetime(2020, 1, 1), datetime.datetime(1970, 1, 1),
    decimal.Decimal("1.50"), decimal.Decimal("2"), True, False,
]  # fmt: skip


def _pool(column: str) -> list[Any]:
    pool = COLUMNS[STRUCT_FIELDS.get(column, column)][1]
    return [*pool, *_VALUES]


_COMPARISONS = [
    sds.EqualTo,
    sds.EqualNullSafe,
    sds.GreaterThan,
    sds.GreaterThanOrEqual,
    sds.LessThan,
    sds.LessThanOrEqual,
]
_STRINGS = [sds.StringStartsWith, sds.StringEndsWith, sds.StringContains]


@st.composite
def spark_filters(draw: st.DrawFn, table: pa.Table, depth: int = 2) -> sds.Filter:
    if depth and draw(st.integers(0, 4)) == 0:
        return sds.Not(draw(spark_filters(table, depth - 1)))
    column = draw(st.sampled_from(column_names(table)))
    attribute = tuple(column.split("."))
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return draw(st.sampled_from([sds.IsNull, sds.IsNotNull]))(attribute)
    if kind == 1:
        values = draw(st.lists(st.sampled_from(_pool(column)), max_size=5))
        return sds.In(attribute, tuple(values))
    if kind == 2:
        text = draw(st.sampled_from(["", "a", "ab", "a%", "é", "A"]))
        return draw(st.sampled_from(_STRINGS))(attribute, text)
    value = draw(st.sampled_from(_pool(column)))
    return draw(st.sampled_from(_COMPARISONS))(attribute, value)


def _rows(table: pa.Table, expression: Any) -> list[int]:
    selected: list[int] = table.filter(expression).column("_row").to_pylist()
    return selected


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_tree_selects_what_the_expression_selects(data: st.DataObject) -> None:
    table = data.draw(tables())
    spark_filter = data.draw(spark_filters(table))
    expression = to_expression(spark_filter, table.schema)
    tree = to_predicate(spark_filter, table.schema)
    event("pushed as a tree" if tree is not None else "left to Spark")
    if tree is None:
        return
    # Nothing the Arrow translation leaves to Spark is pushed as a tree.
    assert expression is not None, (spark_filter, tree)
    assert _rows(table, to_arrow(tree, table.schema)) == _rows(table, expression), (
        spark_filter,
        tree,
    )
    # The kernels run at once (how a task filters its slices) select the same rows.
    mask = evaluate(tree, table)
    if isinstance(mask, pa.Array | pa.ChunkedArray):
        assert _rows(table, mask) == _rows(table, expression), (spark_filter, tree)


# --- the Arrow expression translation, where the property test found it wrong ---------


def test_expression_leaves_a_literal_arrow_cannot_compare_to_spark() -> None:
    # Binding uint64 2**63 against decimal(10, 2) raised OverflowError.
    schema = pa.schema([("dec", pa.decimal128(10, 2))])
    assert to_expression(sds.EqualTo(("dec",), 2**63), schema) is None
    assert to_expression(sds.In(("dec",), (2**63,)), schema) is None


@pytest.mark.parametrize(
    ("sql", "spark_filter"),
    [
        ("x IN (0.0D)", sds.In(("x",), (0.0,))),
        ("x IN (-0.0D, 1.0D)", sds.In(("x",), (-0.0, 1.0))),
        ("x = -0.0D", sds.EqualTo(("x",), -0.0)),
    ],
)
def test_float_in_matches_both_zeros_as_spark_does(
    spark: Any, sql: str, spark_filter: sds.Filter
) -> None:
    values = [-0.0, 0.0, 1.0, math.nan]
    table = pa.table({"_row": list(range(len(values))), "x": pa.array(values, pa.float64())})
    frame = spark.createDataFrame(table.to_pandas())
    frame.createOrReplaceTempView("zeros")
    expected = sorted(r["_row"] for r in spark.sql(f"SELECT _row FROM zeros WHERE {sql}").collect())
    expression = to_expression(spark_filter, table.schema)
    assert expression is not None
    assert _rows(table, expression) == expected
    tree = to_predicate(spark_filter, table.schema)
    assert tree is not None
    assert _rows(table, to_arrow(tree, table.schema)) == expected
