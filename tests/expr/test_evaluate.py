"""The predicate tree evaluated at once (:func:`lancelet.expr.arrow.evaluate`), as the
scanner filters the rows an index bounded: it selects what the SQL filter selects,
on random filters over random tables with nulls."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from lancelet.errors import FilterError
from lancelet.expr import And, Equals, IsIn, IsNull, LikePrefix, Not, Opaque, Or, Range
from lancelet.expr.arrow import evaluate
from lancelet.expr.filter import parse_filter
from lancelet.expr.from_sql import predicate_tree
from tests.expr.grammar import filter_sql, leaf_sql, tables

_SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _selected(table: pa.Table, mask: object) -> list[int]:
    rows: list[int] = table.filter(mask).column("_row").to_pylist()
    return rows


@st.composite
def _leaves_combined(draw: st.DrawFn, table: pa.Table) -> str:
    """A few index-shaped conditions under AND, OR and NOT (what evaluate takes)."""
    parts = draw(st.lists(leaf_sql(table), min_size=1, max_size=3))
    sql = parts[0]
    for part in parts[1:]:
        sql = f"({sql}) {draw(st.sampled_from(['AND', 'OR']))} ({part})"
    return f"NOT ({sql})" if draw(st.booleans()) else sql


@_SETTINGS
@given(st.data())
def test_evaluation_selects_what_the_filter_selects(data: st.DataObject) -> None:
    table = data.draw(tables(lists=data.draw(st.booleans())))
    if data.draw(st.booleans()):
        sql = data.draw(filter_sql(table))
    else:
        sql = data.draw(_leaves_combined(table))
    try:
        expected = _selected(table, parse_filter(sql, table.schema))
    except (FilterError, pa.ArrowInvalid):
        event("refused")
        return
    mask = evaluate(predicate_tree(sql, table.schema), table)
    if mask is None:
        event("left to the expression")
        return
    event("evaluated")
    assert _selected(table, mask) == expected, sql


def _table() -> pa.Table:
    return pa.table(
        {
            "_row": pa.array(range(6)),
            "i": pa.array([1, None, 3, 4, 5, 3], pa.int32()),
            "s": pa.array(["a", "b", None, "d", "a", "b"]),
            "f": pa.array([0.0, -0.0, None, 1.5, float("nan"), 2.0]),
        }
    )


@pytest.mark.parametrize(
    ("tree", "rows"),
    [
        (Equals("i", pa.scalar(3, pa.int32())), [2, 5]),
        (Not(Equals("i", pa.scalar(3, pa.int32()))), [0, 3, 4]),
        (Range("i", pa.scalar(3, pa.int32()), False, pa.scalar(5, pa.int32()), True), [3, 4]),
        (Range("i"), [0, 2, 3, 4, 5]),
        (IsIn("s", pa.array(["a", "d"])), [0, 3, 4]),
        (IsIn("s", pa.array([], pa.string())), []),
        (IsNull("s"), [2]),
        (Equals("f", pa.scalar(0.0)), [0, 1]),  # -0.0 = 0.0
        (LikePrefix("s", "a"), [0, 4]),
        (Or((IsNull("i"), Equals("s", pa.scalar("d")))), [1, 3]),
        (And((Equals("s", pa.scalar("a")), Range("i", high=pa.scalar(2, pa.int32())))), [0]),
    ],
)
def test_leaves_and_logic(tree: object, rows: list[int]) -> None:
    table = _table()
    mask = evaluate(tree, table)  # type: ignore[arg-type]
    assert mask is not None
    assert _selected(table, mask) == rows


@pytest.mark.parametrize(
    "tree",
    [
        Opaque("i + 1 > 2"),
        Range("f", pa.scalar(0.0)),  # float ranges compare by an order key: left to Arrow
        Equals("f", pa.scalar(float("nan"))),
        Equals("i", pa.scalar(3, pa.int64())),  # not the column's type
        Equals("missing", pa.scalar(3, pa.int32())),
        Equals("s.x", pa.scalar("a")),
        And((Equals("i", pa.scalar(3, pa.int32())), Opaque("s = 'a'"))),
    ],
)
def test_what_it_leaves_to_the_expression(tree: object) -> None:
    assert evaluate(tree, _table()) is None  # type: ignore[arg-type]
