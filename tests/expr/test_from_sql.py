"""The shapes of filter that become index leaves, and those that stay Opaque."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest

from lancelet.errors import FilterError
from lancelet.expr import (
    And,
    Equals,
    HasAll,
    HasAny,
    IsIn,
    IsNull,
    LikePrefix,
    Not,
    Opaque,
    Or,
    Range,
)
from lancelet.expr.arrow import to_arrow
from lancelet.expr.from_sql import predicate_tree

SCHEMA = pa.schema(
    [
        ("i8", pa.int8()),
        ("Big", pa.int64()),
        ("f32", pa.float32()),
        ("s", pa.string()),
        ("d", pa.date32()),
        ("st", pa.struct([("a", pa.int32())])),
        ("a.b", pa.int32()),
        ("l", pa.list_(pa.int32())),
        ("tags", pa.large_list(pa.large_string())),
        ("fl", pa.list_(pa.float32())),
        ("u", pa.list_(pa.uint64())),
        ("st2", pa.struct([("tags", pa.list_(pa.string()))])),
    ]
)


def _i8(v: int) -> pa.Scalar:
    return pa.scalar(v, pa.int8())


@pytest.mark.parametrize(
    ("sql", "tree"),
    [
        ("i8 = 5", Equals("i8", _i8(5))),
        ("5 = i8", Equals("i8", _i8(5))),
        ("i8 = 2.0", Equals("i8", _i8(2))),
        ("i8 <> 5", Not(Equals("i8", _i8(5)))),
        ("5 < i8", Range("i8", low=_i8(5), low_inclusive=False)),
        ("i8 <= -3", Range("i8", high=_i8(-3))),
        ("i8 BETWEEN 3 AND 1", Range("i8", low=_i8(3), high=_i8(1))),
        ("i8 NOT BETWEEN 1 AND 2", Not(Range("i8", low=_i8(1), high=_i8(2)))),
        ("big IS NULL", IsNull("Big")),
        ("i8 IS NOT NULL", Not(IsNull("i8"))),
        ("s LIKE 'ab%'", LikePrefix("s", "ab")),
        ("s NOT LIKE '%'", Not(LikePrefix("s", ""))),
        ("d >= '2020-01-02'", Range("d", low=pa.scalar(datetime.date(2020, 1, 2)))),
        ("st.a = 3", Equals("st.a", pa.scalar(3, pa.int32()))),
        ("f32 < 0.1", Range("f32", high=pa.scalar(0.1, pa.float32()), high_inclusive=False)),
        (
            "(i8 = 1 AND i8 = 2 AND (i8 = 3)) OR NOT s LIKE 'a%'",
            Or(
                (
                    And((Equals("i8", _i8(1)), Equals("i8", _i8(2)), Equals("i8", _i8(3)))),
                    Not(LikePrefix("s", "a")),
                )
            ),
        ),
        # Opaque: literals the column's type does not hold exactly, NULLs, NaN...
        ("i8 > 1000", Opaque("i8 > 1000")),
        ("i8 = 1.5", Opaque("i8 = 1.5")),
        ("i8 = NULL", Opaque("i8 = NULL")),
        ("i8 IN (1, NULL)", Opaque("i8 IN (1, NULL)")),
        ("f32 < CAST('NaN' AS DOUBLE)", Opaque("f32 < CAST('NaN' AS DOUBLE)")),
        # ...wildcards and escapes in a LIKE prefix, ILIKE, ESCAPE...
        ("s LIKE 'a_%'", Opaque("s LIKE 'a_%'")),
        ("s LIKE 'a\\%%'", Opaque("s LIKE 'a\\%%'")),
        ("s ILIKE 'a%'", Opaque("s ILIKE 'a%'")),
        ("s LIKE 'a%' ESCAPE '!'", Opaque("s LIKE 'a%' ESCAPE '!'")),
        # ...columns compared with columns or computed values, dotted top-level names.
        ("i8 = big", Opaque("i8 = big")),
        ("i8 + 1 = 2", Opaque("i8 + 1 = 2")),
        ("`a.b` = 1", Opaque('"a.b" = 1')),
        ("i8 = 1 AND NULL", And((Equals("i8", _i8(1)), Opaque("NULL")))),
    ],
)
def test_shapes(sql: str, tree: object) -> None:
    assert predicate_tree(sql, SCHEMA) == tree


def test_in_list_deduplicated_in_the_column_type() -> None:
    tree = predicate_tree("i8 IN (3, 1, 3, 2.0)", SCHEMA)
    assert isinstance(tree, IsIn)
    assert tree.values.type == pa.int8()
    assert sorted(tree.values.to_pylist()) == [1, 2, 3]


def _i32s(*values: int) -> pa.Array:
    return pa.array(values, pa.int32())


def _tags(*values: str) -> pa.Array:
    return pa.array(values, pa.large_string())


def _f32s(*values: float) -> pa.Array:
    return pa.array(values, pa.float32())


@pytest.mark.parametrize(
    ("sql", "tree"),
    [
        ("array_has_any(l, [1, 2])", HasAny("l", _i32s(1, 2))),
        ("list_has_any(l, make_array(2, CAST(2 AS TINYINT), 1))", HasAny("l", _i32s(2, 1))),
        ("arrays_overlap(tags, ['a'])", HasAny("tags", _tags("a"))),
        ("array_has_all(tags, ['a', 'b'])", HasAll("tags", _tags("a", "b"))),
        ("list_has_all(l, [3])", HasAll("l", _i32s(3))),
        ("array_has(l, 3)", HasAny("l", _i32s(3))),
        ("array_contains(tags, 'x')", HasAny("tags", _tags("x"))),
        ("list_contains(l, -1)", HasAny("l", _i32s(-1))),
        ("array_has(st2.tags, 'x')", HasAny("st2.tags", pa.array(["x"]))),
        ("NOT array_has(l, 3)", Not(HasAny("l", _i32s(3)))),
        # integers the list cannot hold match nothing: left out of HasAny
        ("array_has_any(l, [1, 3000000000])", HasAny("l", _i32s(1))),
        ("array_has_any(fl, [CAST(0.5 AS FLOAT), 2])", HasAny("fl", _f32s(0.5, 2.0))),
        ("array_has_any(fl, [CAST(-0.0 AS FLOAT)])", HasAny("fl", _f32s(-0.0))),
        (
            "array_has_any(u, [18446744073709551615, -1])",
            HasAny("u", pa.array([2**64 - 1], pa.uint64())),
        ),
        # Opaque: values compared in another type than the items'...
        ("array_has_any(fl, [0.5])", Opaque("ARRAY_HAS_ANY(fl, [0.5])")),
        ("array_has_any(l, [1.5])", Opaque("ARRAY_HAS_ANY(l, [1.5])")),
        ("array_has_any(fl, [-0.0])", Opaque("ARRAY_HAS_ANY(fl, [-0.0])")),
        ("array_has_any(l, [2, 2.0])", Opaque("ARRAY_HAS_ANY(l, [2, 2.0])")),
        ("array_has(l, 1.0)", Opaque("ARRAY_HAS(l, 1.0)")),
        # ...NULLs, NaN, no values, values no list holds
        ("array_has_any(l, [1, NULL])", Opaque("ARRAY_HAS_ANY(l, [1, NULL])")),
        ("array_has_any(l, NULL)", Opaque("ARRAY_HAS_ANY(l, NULL)")),
        ("array_has(l, NULL)", Opaque("ARRAY_HAS(l, NULL)")),
        (
            "array_has_any(fl, [CAST('NaN' AS FLOAT)])",
            Opaque("ARRAY_HAS_ANY(fl, [CAST('NaN' AS FLOAT)])"),
        ),
        ("array_has_any(l, [])", Opaque("ARRAY_HAS_ANY(l, [])")),
        ("array_has_all(l, make_array())", Opaque("ARRAY_HAS_ALL(l, MAKE_ARRAY())")),
        ("array_has_any(l, [3000000000])", Opaque("ARRAY_HAS_ANY(l, [3000000000])")),
        ("array_has_all(l, [1, 3000000000])", Opaque("ARRAY_HAS_ALL(l, [1, 3000000000])")),
    ],
)
def test_list_shapes(sql: str, tree: object) -> None:
    got = predicate_tree(sql, SCHEMA)
    assert type(got) is type(tree)
    if isinstance(tree, HasAny | HasAll):
        assert isinstance(got, HasAny | HasAll)
        assert got.column == tree.column
        assert got.values.type == tree.values.type
        # repr tells -0.0 from 0.0
        assert [repr(v) for v in got.values.to_pylist()] == [
            repr(v) for v in tree.values.to_pylist()
        ]
    else:
        assert got == tree


def test_refuses_what_parse_filter_refuses() -> None:
    with pytest.raises(FilterError, match="cannot hold values of type string"):
        predicate_tree("array_has_any(l, ['a'])", SCHEMA)
    with pytest.raises(FilterError, match="function array_contains_all"):
        predicate_tree("array_contains_all(l, [1])", SCHEMA)
    with pytest.raises(FilterError, match="unknown column"):
        predicate_tree("i8 = 1 OR nope = 2", SCHEMA)


@pytest.mark.parametrize(
    "tree",
    [
        Equals("i8", pa.scalar(1, pa.int64())),  # not the column's type
        Equals("nope", _i8(1)),
        Equals("st.zz", _i8(1)),
        Range("f32", low=pa.scalar(float("nan"), pa.float32())),
        IsIn("i8", pa.array([1, None], pa.int8())),
        LikePrefix("i8", "a"),
        HasAny("l", pa.array([1], pa.int64())),  # not the item type
        HasAny("l", pa.array([1, None], pa.int32())),
        HasAll("fl", pa.array([float("nan")], pa.float32())),
        HasAny("i8", pa.array([1], pa.int8())),  # not a list
        And(()),
    ],
)
def test_to_arrow_refuses_malformed_leaves(tree: object) -> None:
    with pytest.raises(FilterError):
        to_arrow(tree, SCHEMA)  # type: ignore[arg-type]
