"""Properties of the predicate tree of random SQL filters over random tables.

* ``test_tree_selects_what_the_filter_selects``: the tree evaluated by Arrow selects
  the rows the SQL filter selects (or both refuse the filter alike).
* ``test_leaves_are_sound``: a leaf's own fields (column, value, bounds, prefix),
  read by a plain-Python reference, select the rows its SQL selects; an index that
  answers the leaf from those fields answers the SQL.
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from lancelet.errors import FilterError
from lancelet.expr import (
    INDEX_QUERIES,
    And,
    Equals,
    HasAll,
    HasAny,
    IsIn,
    IsNull,
    LikePrefix,
    Not,
    Or,
    Predicate,
    Range,
)
from lancelet.expr.arrow import to_arrow
from lancelet.expr.filter import parse_filter
from lancelet.expr.from_sql import predicate_tree
from tests.expr.grammar import filter_sql, leaf_sql, tables

_SETTINGS = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _rows(table: pa.Table, expression: pc.Expression) -> list[int]:
    selected: list[int] = table.filter(expression).column("_row").to_pylist()
    return selected


@_SETTINGS
@given(st.data())
def test_tree_selects_what_the_filter_selects(data: st.DataObject) -> None:
    table = data.draw(tables(lists=True))
    sql = data.draw(filter_sql(table))
    try:
        expected = _rows(table, parse_filter(sql, table.schema))
    except FilterError as e:
        event("refused")
        with pytest.raises(FilterError) as raised:
            predicate_tree(sql, table.schema)
        assert str(raised.value) == str(e)
        return
    except pa.ArrowInvalid as e:
        # e.g. i32 = u64 with a u64 value beyond int64: Arrow refuses the common type.
        with pytest.raises(pa.ArrowInvalid, match=re.escape(str(e))):
            _rows(table, to_arrow(predicate_tree(sql, table.schema), table.schema))
        return
    tree = predicate_tree(sql, table.schema)
    for kind in _leaf_kinds(tree):
        event(f"holds a leaf: {kind}")
    assert _rows(table, to_arrow(tree, table.schema)) == expected, tree


def _leaf_kinds(tree: Predicate) -> set[str]:
    if isinstance(tree, (And, Or)):
        return set().union(*(_leaf_kinds(child) for child in tree.children))
    if isinstance(tree, Not):
        return _leaf_kinds(tree.child)
    return {type(tree).__name__}


# --- an independent reference for each leaf --------------------------------------------


def _column(table: pa.Table, column: str) -> list[Any]:
    path = column.split(".")
    array: Any = table.column(path[0]).combine_chunks()
    for name in path[1:]:
        # A null struct's fields are null.
        array = pc.if_else(array.is_valid(), array.field(name), None)
    values: list[Any] = array.to_pylist()
    return values


def _key(value: Any) -> Any:
    """Floats in IEEE 754's total order, zeros equal: -NaN, numbers, NaN."""
    if isinstance(value, float):
        if math.isnan(value):
            return (2, 0.0) if math.copysign(1.0, value) > 0 else (0, 0.0)
        return (1, value)
    return value


def _bits(value: Any) -> Any:
    """Floats as their bits (list membership tells -0.0 from 0.0 and NaNs apart)."""
    return struct.pack("<d", value) if isinstance(value, float) else value


def _leaf_rows(table: pa.Table, leaf: Any) -> list[int]:
    values = _column(table, leaf.column)
    if isinstance(leaf, HasAny | HasAll):
        wanted = {_bits(v) for v in leaf.values.to_pylist()}
        held = [None if v is None else {_bits(item) for item in v} for v in values]
        test = (lambda h: bool(h & wanted)) if isinstance(leaf, HasAny) else wanted.issubset
        hits = [h is not None and test(h) for h in held]
    elif isinstance(leaf, IsNull):
        hits = [v is None for v in values]
    elif isinstance(leaf, Equals):
        hits = [v is not None and v == leaf.value.as_py() for v in values]
    elif isinstance(leaf, IsIn):
        wanted = leaf.values.to_pylist()
        hits = [v is not None and any(v == w for w in wanted) for v in values]
    elif isinstance(leaf, LikePrefix):
        hits = [v is not None and v.startswith(leaf.prefix) for v in values]
    else:
        assert isinstance(leaf, Range)
        hits = [v is not None and _in_range(_key(v), leaf) for v in values]
    return [i for i, hit in enumerate(hits) if hit]


def _in_range(key: Any, leaf: Range) -> bool:
    if leaf.low is not None:
        low = _key(leaf.low.as_py())
        if key < low or (key == low and not leaf.low_inclusive):
            return False
    if leaf.high is not None:
        high = _key(leaf.high.as_py())
        if key > high or (key == high and not leaf.high_inclusive):
            return False
    return True


@_SETTINGS
@given(st.data())
def test_leaves_are_sound(data: st.DataObject) -> None:
    table = data.draw(tables(lists=True))
    sql = data.draw(leaf_sql(table, negations=False))
    try:
        expected = _rows(table, parse_filter(sql, table.schema))
    except (FilterError, pa.ArrowInvalid):
        return
    tree = predicate_tree(sql, table.schema)
    event(f"tree: {type(tree).__name__}")
    if isinstance(tree, INDEX_QUERIES):
        column_type = table.schema.field(tree.column.split(".")[0]).type
        assert column_type is not None
        assert _leaf_rows(table, tree) == expected, (sql, tree)
