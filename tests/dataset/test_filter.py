"""SQL filter translation, checked against pylance's own filtering as the oracle."""

from __future__ import annotations

import datetime
import decimal
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.errors import FilterError
from lancelet.expr.filter import parse_filter, referenced_columns, to_expression
from lancelet.expr.functions import array_has
from tests.versions import STORAGE_VERSION

N = 12
SMALL = [0, 1, -1, 5, 100, -100, 127, -128, None, 7, 42, 3]
FLOATS = [0.5, 1.25, -2.0, None, 0.1, 3.0, 1e10, -0.0, 2.5, float("nan"), 7.0, 1.0]
WORDS = ["apple", "Banana", "cherry", None, "", "a_b", "a%b", "it's", "x\\y", "5", "zeta", "APPLE"]


def _scaled(factor: int, absolute: bool = False) -> list[int | None]:
    return [None if v is None else (abs(v) if absolute else v) * factor for v in SMALL]


def _table() -> pa.Table:
    day0 = datetime.date(2020, 1, 1)
    time0 = datetime.datetime(2020, 1, 1, 10)
    dates = [None if i == 4 else day0 + datetime.timedelta(days=40 * i) for i in range(N)]
    times = [
        None if i == 5 else time0 + datetime.timedelta(hours=97 * i, microseconds=i)
        for i in range(N)
    ]
    decimals = [None if v is None else decimal.Decimal(f"{v}.25") for v in SMALL]
    struct = pa.StructArray.from_arrays(
        [
            pa.array(SMALL, pa.int32()),
            pa.array(["x", "y", None, "x", "z", "y", "x", "w", "x", "y", "z", "x"]),
        ],
        names=["a", "b"],
    )
    return pa.table(
        {
            "id": pa.array(range(N), pa.int64()),
            "i8": pa.array(SMALL, pa.int8()),
            "i16": pa.array(_scaled(100), pa.int16()),
            "i32": pa.array(_scaled(10_000), pa.int32()),
            "i64": pa.array(_scaled(10**12), pa.int64()),
            "u8": pa.array(_scaled(1, absolute=True), pa.uint8()),
            "u32": pa.array(_scaled(1000, absolute=True), pa.uint32()),
            "u64": pa.array(_scaled(10**15, absolute=True), pa.uint64()),
            "f32": pa.array(FLOATS, pa.float32()),
            "f64": pa.array(FLOATS, pa.float64()),
            "b": pa.array(
                [True, False, None, True, True, False, False, None, True, False, True, True]
            ),
            "s": pa.array(WORDS, pa.string()),
            "ls": pa.array(WORDS, pa.large_string()),
            "d": pa.array(dates, pa.date32()),
            "ts": pa.array(times, pa.timestamp("us")),
            "dec": pa.array(decimals, pa.decimal128(10, 2)),
            "st": struct,
            "MixedCase": pa.array(SMALL, pa.int32()),
            "my col": pa.array(SMALL, pa.int32()),
        }
    )


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return _table()


@pytest.fixture(scope="module")
def oracle(table: pa.Table, tmp_path_factory: pytest.TempPathFactory) -> lance.LanceDataset:
    path = Path(tmp_path_factory.mktemp("filter")) / "d"
    return lance.write_dataset(table, path, data_storage_version=STORAGE_VERSION)


def _ids(table: pa.Table, expression: pc.Expression) -> list[int]:
    return sorted(table.filter(expression)["id"].to_pylist())


# Every filter here is accepted by pylance 14; the results must agree row for row.
ORACLE_FILTERS = [
    # comparisons, each integer width, literals on either side
    "i8 > 1",
    "i8 = -128",
    "i8 = - 128",
    "1 < i8",
    "i16 <= 500",
    "i32 <> 50000",
    "i32 != 50000",
    "i64 >= 5000000000000",
    "u8 < 6",
    "u32 = 5000",
    "u64 = 5000000000000000",
    "MixedCase = 1",
    "mixedcase = 1",
    "`my col` = 1",
    "`s` = 'apple'",
    # floats: float32 literals, NaN ordering, signed zero
    "f32 = 0.1",
    "f32 > 1",
    "f64 > 1e9",
    "f64 >= 0",
    "f64 = 0",
    "f64 < 1e9",
    "f64 = f32",
    "f64 > i8",
    # booleans
    "b",
    "NOT b",
    "b = true",
    "b IS TRUE",
    "b IS NOT TRUE",
    "b IS FALSE",
    "b IS NOT FALSE",
    "true",
    "false",
    "1 = 1",
    # strings
    "s = 'apple'",
    "s = 'it''s'",
    's = "apple"',
    "s > 'b'",
    "ls = 'apple'",
    "s LIKE 'a%'",
    "s LIKE '%a_b%'",
    "s LIKE 'a\\_b'",
    "s LIKE 'a\\%b'",
    "ls LIKE '_pple'",
    "s NOT LIKE 'a%'",
    "s ILIKE 'a%'",
    "s NOT ILIKE 'a%'",
    "lower(s) = 'apple'",
    "upper(s) = 'APPLE'",
    "length(s) = 5",
    "s || 'x' = 'applex'",
    # NULL semantics
    "i8 IS NULL",
    "i8 IS NOT NULL",
    "i8 = NULL",
    "i8 = 1 AND NULL",
    "i8 = 1 OR NULL",
    "NOT (i8 = 1 OR NULL)",
    "i8 IS DISTINCT FROM 1",
    "i8 IS NOT DISTINCT FROM NULL",
    "i8 + NULL IS NULL",
    "NULL = NULL",
    "NULL IN (1, NULL)",
    "b OR NULL",
    # IN, BETWEEN
    "i8 IN (1, 5)",
    "i8 NOT IN (1, 5)",
    "i8 IN (1, i16)",
    "s IN ('apple', 'zeta')",
    "s IN ('apple', NULL)",
    "s NOT IN ('apple', NULL)",
    "s NOT IN ('apple', 'zeta')",
    "f64 IN (0.5, 1.25)",
    "f64 NOT IN (0.5, 1.25)",
    "f64 IN (0, 1)",
    "f32 NOT IN (0, 1)",
    "f64 NOT IN (0, 1, NULL)",
    "i8 BETWEEN 1 AND 100",
    "i8 NOT BETWEEN 1 AND 100",
    "i8 BETWEEN 100 AND 1",
    "f64 BETWEEN 1 AND 1e12",
    "s BETWEEN 'a' AND 'c'",
    # dates, timestamps, decimals
    "d = date '2020-02-10'",
    "d BETWEEN date '2020-01-01' AND date '2020-06-01'",
    "d < timestamp '2020-02-10 00:00:01'",
    "ts > date '2020-01-10'",
    "ts = timestamp '2020-01-05 11:00:00.000001'",
    "ts > d",
    "d > ts",
    "dec > 1",
    "dec > i8",
    # struct fields
    "st.a > 1",
    "st.b = 'x'",
    "st.a IS NULL",
    # arithmetic
    "i8 % 2 = 1",
    "i8 % -3 = -1",
    "f64 % 2 = 0.5",
    "i8 / 2 = 2",
    "i8 + 200 > 300",
    "i8 * 100 > 1000",
    "i8 + i16 > 100",
    "u8 - 1 = 4",
    "-i8 > 0",
    "i8 > -(1)",
    "i8 / 2.0 = 2.5",
    "f64 + 1 > 5",
    "(i8 + 1) * 2 = 4",
    # casts
    "CAST(i8 AS decimal(5,1)) = 5",
    "CAST(dec AS double) > 5",
    "CAST(ts AS date) = date '2020-01-05'",
    "CAST(d AS timestamp) > timestamp '2020-03-01 00:00:00'",
    "CAST(b AS int) = 1",
    "CAST(i8 AS boolean)",
    "CAST(f64 AS float) > 5",
    "CAST(f32 AS string) = '0.1'",
    "i8::int = 5",
    # boolean structure
    "i8 > 0 AND s LIKE 'a%' OR b IS NULL",
    "NOT (i8 > 0 AND (s = 'zeta' OR d IS NULL))",
]


@pytest.mark.parametrize("sql", ORACLE_FILTERS)
def test_matches_pylance(sql: str, table: pa.Table, oracle: lance.LanceDataset) -> None:
    expected = sorted(oracle.to_table(filter=sql, columns=["id"])["id"].to_pylist())
    assert _ids(table, parse_filter(sql, table.schema)) == expected


# pylance rejects these (it demands literals fit the column type exactly, and reads
# double-quoted words as strings); lancelet gives them their plain SQL meaning.
BEYOND_PYLANCE = [
    ("i8 > 1000", []),
    ("i8 IN (1, 5, 1000)", [1, 3]),
    ("i8 >= 1.5", [3, 4, 6, 9, 10, 11]),
    ("i8 = 1.0", [1]),
    ("dec = 5.25", [3]),
    ("d = '2020-02-10'", [1]),
    ("ts > '2020-02-10'", [10, 11]),
    ('"my col" = 1', [1]),
    ('"st"."b" = \'w\'', [7]),
    ("s LIKE 'a!%b' ESCAPE '!'", [6]),
    ("s LIKE 'x\\\\y'", [8]),
    ("i8 IN (NULL)", []),
    ("CAST(f64 AS varchar) = '0.5'", [0]),
    ("CAST(s AS int) = 5", None),  # 'apple' does not parse: a scan-time error
]


@pytest.mark.parametrize(("sql", "expected"), BEYOND_PYLANCE)
def test_beyond_pylance(sql: str, expected: list[int] | None, table: pa.Table) -> None:
    expression = parse_filter(sql, table.schema)
    if expected is None:
        with pytest.raises(pa.ArrowInvalid):
            table.filter(expression)
    else:
        assert _ids(table, expression) == expected


def test_literal_takes_column_type(table: pa.Table) -> None:
    # No cast of the column: the literal is an int8.
    expected = pc.field("i8") == pc.scalar(pa.scalar(5, pa.int8()))
    assert parse_filter("i8 = 5", table.schema).equals(expected)
    assert "cast" not in str(parse_filter("d = date '2020-01-01'", table.schema))


def test_nested_struct_path() -> None:
    inner = pa.StructArray.from_arrays([pa.array([1, 2, 3])], names=["c"])
    outer = pa.StructArray.from_arrays([inner], names=["b"])
    table = pa.table({"a": outer})
    expression = parse_filter("a.b.c >= 2", table.schema)
    assert expression.equals(pc.field("a", "b", "c") >= 2)
    assert table.filter(expression).num_rows == 2


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("i8 = ", "cannot parse filter 'i8 = '"),
        ("i8 > 1 i16", "cannot parse filter"),
        ("(i8 > 1", "cannot parse filter"),
        ("s = 'open", "cannot parse filter"),
        ("i8 = 1; i8 = 2", "single boolean expression"),
        ("", "empty"),
        ("nope = 1", "unknown column 'nope'.*columns are: id, i8"),
        ("`I8` = 1", "unknown column"),
        ("st.zz = 1", "struct column 'st' has no field 'zz'.*fields are: a, b"),
        ("i8.zz = 1", "'i8' is not a struct"),
        ("foo(s) = 1", "unsupported SQL construct function foo()"),
        ("md5(s) = 'b'", "lancelet does not implement SQL function 'md5'"),
        ("TRY_CAST(s AS int) = 5", "TRY_CAST"),
        ("i8 IN (SELECT 1)", "IN with a subquery"),
        ("s LIKE st.b", "LIKE with a pattern that is not a string literal"),
        ("d > interval '1 day'", "INTERVAL"),
        ("i32", "does not return a boolean"),
        ("NULL", "does not return a boolean"),
        ("s = 5", r"'s = 5' does not accept arguments of type \(string, int64\)"),
        ("d = 'soon'", "Failed to parse string: 'soon'"),
        ("1 / 0 = 1", "divide by zero"),
    ],
)
def test_errors(sql: str, message: str, table: pa.Table) -> None:
    with pytest.raises(FilterError, match=message):
        parse_filter(sql, table.schema)


def test_filter_error_is_value_error(table: pa.Table) -> None:
    with pytest.raises(ValueError):
        parse_filter("nope = 1", table.schema)


def test_to_expression(table: pa.Table) -> None:
    schema = table.schema
    assert to_expression(None, schema) is None
    assert to_expression("i8 = 5", schema).equals(parse_filter("i8 = 5", schema))
    expression = pc.field("st", "a") > 1
    assert to_expression(expression, schema) is expression
    with pytest.raises(FilterError, match="nope"):
        to_expression(pc.field("nope") > 1, schema)
    with pytest.raises(FilterError, match="bool"):
        to_expression(pc.field("i8") + 1, schema)


def test_referenced_columns(table: pa.Table) -> None:
    sql = "st.a > 1 AND (`my col` IN (1, i16) OR lower(s) LIKE 'a%') AND s = \"apple\""
    assert referenced_columns(sql) == {"st", "my col", "i16", "s", "apple"}
    assert referenced_columns(sql, table.schema) == {"st", "my col", "i16", "s"}
    assert referenced_columns("mixedcase > 1", table.schema) == {"MixedCase"}
    assert referenced_columns("1 = 1") == set()
    with pytest.raises(FilterError, match="unknown column"):
        referenced_columns("nope > 1", table.schema)


# -- floats in the total order ------------------------------------------------------------

_NEG_NAN = float(np.copysign(np.nan, -1))
# x86 makes negative NaNs (0.0 * inf, inf - inf), so they are ordinary data.
_X = [np.nan, _NEG_NAN, 1.0, -0.0, 0.0, -np.inf, np.inf, 7.0, None]
_Y = [_NEG_NAN, np.nan, 1.0, 0.0, -0.0, np.nan, np.nan, np.nan, np.nan]

TOTAL_ORDER_FILTERS = [
    "x > 0",
    "x < 5",
    "x <= 1",
    "x < 0",
    "x >= -0.0",
    "x > -0.0",
    "x <= -0.0",
    "x = 0",
    "x = -0.0",
    "x <> 0",
    "x != 1",
    "x = x",
    "x = y",
    "x != y",
    "x < y",
    "x > y",
    "x IS DISTINCT FROM y",
    "x = y * 1",
    "x - 0 = 0",
    "-x > 0",
    "abs(x) > 0",
    "x IN (0)",
    "x IN (0.0, 5.0)",
    "x NOT IN (1.0, 7.0)",
    "x IN (cast('NaN' as double))",
    "x IN (-cast('NaN' as double), 1)",
    "x BETWEEN -1 AND 1",
    "x BETWEEN -0.0 AND -0.0",
    "x = cast('NaN' as double)",
    "x > cast(0 as float)",
    "x IS NOT DISTINCT FROM 0",
    "f > 0",
    "f < 0",
    "f = 0",
    "f = x",
    "f < y",
    "x > i",
    "i < x",
]


@pytest.fixture(scope="module")
def total_order(tmp_path_factory: pytest.TempPathFactory) -> tuple[pa.Table, lance.LanceDataset]:
    x = pa.array(_X, pa.float64())
    table = pa.table(
        {
            "id": pa.array(range(len(_X)), pa.int64()),
            "x": x,
            "y": pa.array(_Y, pa.float64()),
            "f": x.cast(pa.float32()),
            "i": pa.array([i - 3 for i in range(len(_X))], pa.int64()),
        }
    )
    path = Path(tmp_path_factory.mktemp("total-order")) / "d"
    return table, lance.write_dataset(table, path, data_storage_version=STORAGE_VERSION)


@pytest.mark.parametrize("sql", TOTAL_ORDER_FILTERS)
def test_floats_compare_in_pylances_total_order(
    total_order: tuple[pa.Table, lance.LanceDataset], sql: str
) -> None:
    table, oracle = total_order
    assert np.signbit(table["x"].to_numpy(zero_copy_only=False)[1])  # a negative NaN
    want = sorted(oracle.to_table(filter=sql)["id"].to_pylist())
    assert _ids(table, parse_filter(sql, table.schema)) == want


def test_half_floats_compare_too() -> None:
    halves = pa.table({"h": pa.array(np.array([np.nan, -1.5, 0.0, 2.0], np.float16))})
    assert halves.filter(parse_filter("h > 0", halves.schema))["h"].to_pylist()[1:] == [2.0]
    assert halves.filter(parse_filter("h = h", halves.schema)).num_rows == 4


# -- list membership: array_has_any, array_has_all, array_has ----------------------------

_NAN_BITS = float(np.copysign(np.nan, -1))
_INF = float("inf")
# Each list column holds nulls (lists and items), empty lists and duplicates.
_WORD_LISTS = [
    ["a", "b"], ["a"], [], None, [None], ["a", None], ["b", "b"], ["c"], [None, None],
    ["a", "a"], ["A"], [""], ["it's", "a%b"], ["b", "a", "c"],
]  # fmt: skip
_INT_LISTS = [
    [1, 2], [1], [], None, [None], [1, None], [2, 2], [3], [None, None], [1, 1], [300], [0],
    [-1, 2**53 + 1], [2**63 - 1, 127],
]  # fmt: skip
_FLOAT_LISTS = [
    [1.0, 2.5], [np.nan], [], None, [None], [-0.0, None], [0.0], [3.0], [None, None],
    [1.0, 1.0], [0.1], [_NAN_BITS], [2.0**53, 16777217.0], [_INF, -_INF],
]  # fmt: skip


def _map(lists: list[list[Any] | None], fn: Callable[[Any], Any]) -> list[list[Any] | None]:
    """``fn`` applied to every non-null item."""
    return [None if x is None else [None if v is None else fn(v) for v in x] for x in lists]


def _lists_table() -> pa.Table:
    n = len(_WORD_LISTS)
    small = _map(_INT_LISTS, lambda v: max(-128, min(127, v)))
    day0 = datetime.date(2020, 1, 1)
    # uint64 lists also hold values beyond int64
    huge = [x if x is None or i % 3 else [*x, 2**64 - 1] for i, x in enumerate(_INT_LISTS)]
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "ls": pa.array(_WORD_LISTS, pa.list_(pa.string())),
            "lls": pa.array(_WORD_LISTS, pa.large_list(pa.string())),
            "lLs": pa.array(_WORD_LISTS, pa.list_(pa.large_string())),
            "li": pa.array(_INT_LISTS, pa.list_(pa.int64())),
            "li8": pa.array(small, pa.list_(pa.int8())),
            "li32": pa.array(_map(_INT_LISTS, lambda v: v % 2**31), pa.list_(pa.int32())),
            "lu8": pa.array(_map(small, abs), pa.list_(pa.uint8())),
            "lu64": pa.array(_map(huge, abs), pa.list_(pa.uint64())),
            "lf": pa.array(_FLOAT_LISTS, pa.list_(pa.float64())),
            "lf32": pa.array(_FLOAT_LISTS, pa.list_(pa.float32())),
            "lb": pa.array(_map(_INT_LISTS, lambda v: v > 1), pa.list_(pa.bool_())),
            "ld": pa.array(
                _map(_INT_LISTS, lambda v: day0 + datetime.timedelta(days=v % 500)),
                pa.list_(pa.date32()),
            ),
            "fsl": pa.array(
                [None if i == 3 else [i % 3, None if i % 4 == 0 else 1] for i in range(n)],
                pa.list_(pa.int64(), 2),
            ),
            "st": pa.array(
                [{"tags": x} for x in _WORD_LISTS], pa.struct([("tags", pa.list_(pa.string()))])
            ),
            "s": pa.array(["a", "b", None] * 4 + ["c", "a"]),
        }
    )


@pytest.fixture(scope="module")
def lists(tmp_path_factory: pytest.TempPathFactory) -> tuple[pa.Table, lance.LanceDataset]:
    table = _lists_table()
    path = Path(tmp_path_factory.mktemp("lists")) / "d"
    return table, lance.write_dataset(table, path, data_storage_version=STORAGE_VERSION)


# Every filter here is accepted by pylance 14; the results must agree row for row.
MEMBERSHIP_FILTERS = [
    # spellings of the functions and of the array
    "array_has_any(ls, ['a'])",
    "ARRAY_HAS_ANY(ls, ['a', 'c'])",
    "list_has_any(ls, make_array('a'))",
    "arrays_overlap(ls, ARRAY['b'])",
    "array_has_any(ls, make_list('a', 'A'))",
    "array_has_all(ls, ['a', 'b'])",
    "list_has_all(ls, ['a', 'b', 'c'])",
    "array_has(ls, 'a')",
    "array_contains(ls, '')",
    "list_has(ls, 'it''s')",
    "list_contains(ls, 'a%b')",
    # NULL lists, NULL items, NULL values, empty arrays, duplicates
    "array_has_any(ls, ['a']) IS NULL",
    "NOT array_has_any(ls, ['a'])",
    "NOT array_has_all(ls, ['a', 'b'])",
    "NOT array_has(ls, 'b')",
    "array_has_any(ls, [NULL])",
    "array_has_any(ls, ['a', NULL])",
    "NOT array_has_any(ls, ['a', NULL])",
    "array_has_any(ls, [NULL, NULL])",
    "array_has_all(ls, [NULL])",
    "array_has_all(ls, ['a', NULL])",
    "NOT array_has_all(ls, ['a', NULL])",
    "array_has_any(ls, [])",
    "NOT array_has_any(ls, make_array())",
    "array_has_all(ls, [])",
    "array_has_all(ls, []) IS NULL",
    "array_has_any(ls, NULL) IS NULL",
    "NOT array_has_any(ls, NULL)",
    "array_has(ls, NULL) IS NULL",
    "array_has_any(ls, ['a', 'a'])",
    "array_has_all(ls, ['b', 'b'])",
    # other list and string types, struct fields, fixed-size lists
    "array_has_any(lls, ['a', NULL])",
    "array_has_all(lLs, ['a', 'b'])",
    "array_has(lls, 'c')",
    "array_has_any(st.tags, ['b'])",
    "array_has_any(st.tags, ['b']) IS NULL",
    "array_has_any(fsl, [1])",
    "array_has_any(fsl, [NULL])",
    "array_has_all(fsl, [0, 1])",
    "array_has(fsl, 2)",
    "array_has_any(fsl, [1]) IS NULL",
    # integers: compared exactly, whatever their widths
    "array_has_any(li, [1])",
    "array_has_all(li, [1, 2])",
    "array_has_any(li, [1, NULL])",
    "array_has_any(li, [9007199254740993])",
    "array_has_any(li, [9223372036854775807, 9223372036854775808])",
    "array_has_any(li, [18446744073709551615])",
    "array_has_any(li, [CAST(1 AS TINYINT), CAST(-1 AS INT)])",
    "array_has_any(li8, [300])",
    "NOT array_has_any(li8, [300])",
    "array_has_all(li8, [1, 300])",
    "NOT array_has_all(li8, [1, 300])",
    "array_has_any(li8, [127, -1])",
    "array_has(li8, 300)",
    "array_has(li8, CAST(255 AS TINYINT UNSIGNED))",
    "array_has_any(li32, [2147483647, 2])",
    "array_has_any(lu8, [-1, 1])",
    "array_has(lu8, CAST(-1 AS TINYINT))",
    "array_has_any(lu64, [-1, 18446744073709551615])",
    "array_has_all(lu64, [1, 18446744073709551615])",
    "array_has(lu64, 18446744073709551615)",
    "array_has(li, 1 + 1)",
    "array_has(li, -1)",
    # floats: bits compare (-0.0 is not 0.0, NaN finds NaN); integers round to floats
    "array_has_any(lf, [0.0])",
    "array_has_any(lf, [-0.0])",
    "array_has(lf, 0.0)",
    "array_has_any(lf, [CAST('NaN' AS DOUBLE)])",
    "array_has_any(lf, [-CAST('NaN' AS DOUBLE)])",
    "array_has(lf, -CAST('NaN' AS DOUBLE))",
    "array_has_any(lf, [1, 2.5])",
    "array_has_all(lf, [1, 2.5])",
    "array_has_any(lf, [9007199254740993])",
    "array_has_any(lf, [CAST('inf' AS DOUBLE)])",
    "array_has_any(lf32, [0.1])",
    "array_has_any(lf32, [CAST(0.1 AS FLOAT)])",
    "array_has(lf32, CAST(0.1 AS FLOAT))",
    "array_has_any(lf32, [16777217])",
    "array_has_any(lf32, [0.5, 16777217])",
    "array_has_any(lf32, [-0.0])",
    "array_has_any(lf32, [CAST('NaN' AS DOUBLE)])",
    "array_has_any(lf, [CAST(0.5 AS FLOAT), 16777217])",
    "array_has_any(li, [1.0])",
    "array_has_any(li, [1.5, 2])",
    "array_has_any(li, [9007199254740992.0])",
    "array_has(li, 9007199254740992.0)",
    "array_has(li32, CAST(2147483647 AS FLOAT))",
    "array_has_any(lu64, [18446744073709551615.0])",
    # booleans and dates
    "array_has_any(lb, [true])",
    "array_has_any(lb, [false, NULL])",
    "array_has_all(lb, [true, false])",
    "array_has(lb, false)",
    "array_has_any(ld, [DATE '2020-01-02'])",
    "array_has(ld, CAST('2020-01-03' AS DATE))",
    # in larger filters
    "array_has_any(ls, ['a']) AND array_has(li, 1)",
    "array_has_any(ls, ['c']) OR s = 'a'",
    "NOT (array_has_all(li, [1, 2]) OR array_has(lf, 0.0))",
]


@pytest.mark.parametrize("sql", MEMBERSHIP_FILTERS)
def test_membership_matches_pylance(sql: str, lists: tuple[pa.Table, lance.LanceDataset]) -> None:
    table, oracle = lists
    expected = sorted(oracle.to_table(filter=sql, columns=["id"])["id"].to_pylist())
    assert _ids(table, parse_filter(sql, table.schema)) == expected


# pylance refuses these, while planning or while scanning (an error, not rows).
MEMBERSHIP_REFUSED = [
    ("array_contains_all(ls, ['a'])", "function array_contains_all()"),
    ("array_overlaps(ls, ['a'])", "function array_overlaps()"),
    ("has_any(ls, ['a'])", "function has_any()"),
    ("array_has_any(ls, array('a'))", "takes an array of literals"),
    ("array_has_any(ls, 'a')", "takes an array of literals"),
    ("array_has_all(ls, 'a')", "takes an array of literals"),
    ("array_has_all(ls, NULL)", "takes an array of literals"),
    ("array_has_any(li, CAST(NULL AS INT))", "takes an array of literals"),
    ("array_has_any(li, (1, 2))", "takes an array of literals"),
    ("array_has(ls, ['a'])", "cannot hold values of type list"),
    ("array_has_any(ls, [['a']])", "cannot hold values of type list"),
    ("array_has_any(ls)", "array_has_any takes a list and an array of values"),
    ("array_has_any(ls, ['a'], ['b'])", "array_has_any takes a list and an array of values"),
    ("array_has(ls, 'a', 'b')", "array_has takes a list and a value"),
    ("array_has_any(s, ['a'])", "looks in a list column, not a string"),
    ("array_has_any(NULL, [1])", "looks in a list column"),
    ("array_has_any(ls, [1])", "a list of string cannot hold values of type int64"),
    ("array_has(ls, 1)", "a list of string cannot hold values of type int64"),
    ("array_has_any(ls, ['a', 1])", "cannot hold values of type int64"),
    ("array_has_any(li, ['x'])", "a list of int64 cannot hold values of type string"),
    ("array_has(li, '1')", "a list of int64 cannot hold values of type string"),
    ("array_has(li, CAST(NULL AS VARCHAR))", "cannot hold values of type string"),
    ("array_has(ls, CAST(NULL AS INT))", "cannot hold values of type int32"),
    ("array_has_any(lb, [1])", "a list of bool cannot hold values of type int64"),
    ("array_has_any(li, [true])", "a list of int64 cannot hold values of type bool"),
    ("array_has_any(ld, ['2020-01-02'])", "cannot hold values of type string"),
    ("array_has(ld, '2020-01-02')", "cannot hold values of type string"),
    ("array_has(lu64, 1)", "does not compare a list of uint64 with int64"),
    ("array_has(lu64, CAST(1 AS TINYINT))", "does not compare a list of uint64 with int8"),
    ("array_has(li, 18446744073709551615)", "does not compare a list of int64 with uint64"),
    ("array_has(li8, 18446744073709551615)", "does not compare a list of int8 with uint64"),
    # a decimal to pylance, which then fails on the NaN in the list
    ("array_has_any(lf32, [18446744073709551615, -1])", "does not compare a mix of"),
]


@pytest.mark.parametrize(("sql", "message"), MEMBERSHIP_REFUSED)
def test_membership_refused_as_pylance_refuses(
    sql: str, message: str, lists: tuple[pa.Table, lance.LanceDataset]
) -> None:
    table, oracle = lists
    with pytest.raises((ValueError, OSError, pa.ArrowException)):
        oracle.to_table(filter=sql, columns=["id"])
    with pytest.raises(FilterError, match=message):
        parse_filter(sql, table.schema)


# pylance accepts these; lancelet refuses them rather than answer (no columns or
# expressions in the array, no constant list, no strings read as numbers or dates as
# timestamps, no float16, decimal or timestamp lists...).
MEMBERSHIP_BEYOND_LANCELET = [
    ("array_has_any(['a', 'b'], ls)", "looks in a list column"),
    ("array_has_any(ls, ls)", "takes an array of literals"),
    ("array_has_any(ls, [s])", "takes literal values only"),
    ("array_has(ls, s)", "takes literal values only"),
    ("array_has(NULL, 1)", "looks in a list column"),
    ("array_has_any(li, ['1'])", "a list of int64 cannot hold values of type string"),
    (
        "array_has_any(ld, [TIMESTAMP '2020-01-02 00:00:00'])",
        "cannot hold values of type timestamp",
    ),
]


@pytest.mark.parametrize(("sql", "message"), MEMBERSHIP_BEYOND_LANCELET)
def test_membership_beyond_lancelet(
    sql: str, message: str, lists: tuple[pa.Table, lance.LanceDataset]
) -> None:
    table, oracle = lists
    oracle.to_table(filter=sql, columns=["id"])  # pylance answers
    with pytest.raises(FilterError, match=message):
        parse_filter(sql, table.schema)


@pytest.mark.parametrize(
    ("dtype", "sql"),
    [
        (pa.list_(pa.float16()), "array_has_any(l, [1.5])"),
        (pa.list_(pa.decimal128(10, 2)), "array_has_any(l, [1])"),
        (pa.list_(pa.timestamp("us")), "array_has_any(l, [TIMESTAMP '2020-01-01 00:00:00'])"),
        (pa.list_(pa.binary()), "array_has(l, 'a')"),
        (pa.list_(pa.list_(pa.int64())), "array_has_any(l, [1])"),
    ],
)
def test_membership_in_unsupported_lists_is_refused(dtype: pa.DataType, sql: str) -> None:
    message = re.escape(f"lancelet does not test lists of {dtype.value_type}")
    with pytest.raises(FilterError, match=message):
        parse_filter(sql, pa.schema([("l", dtype)]))


# -- the list membership kernel, against a plain-Python reference -------------------------

_POOLS: dict[str, tuple[pa.DataType, list[Any]]] = {
    "int64": (pa.int64(), [0, 1, -1, 7, 2**53 + 1, 2**63 - 1, -(2**63)]),
    "int8": (pa.int8(), [0, 1, -1, 127, -128]),
    "float64": (pa.float64(), [0.0, -0.0, 1.5, np.nan, _NAN_BITS, _INF, 2.0**53]),
    "float32": (pa.float32(), [0.0, -0.0, 1.5, np.nan, _NAN_BITS, -_INF, 0.25]),
    "string": (pa.string(), ["", "a", "b", "ab", "é"]),
}


def _bits(value: Any, dtype: pa.DataType) -> Any:
    """A value as the kernel compares it: floats by their bits, in ``dtype``."""
    if value is None or not pa.types.is_floating(dtype):
        return value
    width = np.float32 if dtype == pa.float32() else np.float64
    return np.array([value]).astype(width).tobytes()


def _reference(lists: list[Any], needles: list[Any], dtype: pa.DataType, mode: str) -> list[Any]:
    if not needles:
        return [mode == "all"] * len(lists)
    wanted = {_bits(v, dtype) for v in needles}
    out: list[Any] = []
    for items in lists:
        held = None if items is None else {_bits(v, dtype) for v in items}
        out.append(
            None if held is None else bool(held & wanted) if mode == "any" else wanted <= held
        )
    return out


@st.composite
def _membership_case(draw: st.DrawFn) -> tuple[pa.Array, pa.Array, str, list[Any], list[Any]]:
    item_name, needle_name = draw(
        st.sampled_from([(n, n) for n in _POOLS] + [("int64", "float64"), ("float32", "float64")])
    )
    item_type, pool = _POOLS[item_name]
    needle_type, needle_pool = _POOLS[needle_name]
    values = st.sampled_from([None, *pool])
    kind = draw(st.sampled_from(["list", "large_list", "fixed"]))
    rows = draw(st.integers(0, 12))
    if kind == "fixed":
        lists = draw(st.lists(st.none() | st.lists(values, min_size=2, max_size=2), max_size=rows))
        array = pa.array(lists, pa.list_(item_type, 2))
    else:
        lists = draw(st.lists(st.none() | st.lists(values, max_size=5), max_size=rows))
        array = pa.array(lists, (pa.list_ if kind == "list" else pa.large_list)(item_type))
    start = draw(st.integers(0, len(lists)))
    stop = draw(st.integers(start, len(lists)))
    if item_name == "int64" and needle_name == "float64":
        needle_pool = [float(v) for v in pool] + needle_pool
    needles = draw(st.lists(st.sampled_from([None, *needle_pool]), max_size=4))
    mode = draw(st.sampled_from(["any", "all"]))
    return (
        array.slice(start, stop - start),
        pa.array(needles, needle_type),
        mode,
        lists[start:stop],
        needles,
    )


@settings(max_examples=400, deadline=None)
@given(_membership_case())
def test_membership_kernel_matches_a_reference(
    case: tuple[pa.Array, pa.Array, str, list[Any], list[Any]],
) -> None:
    array, needles, mode, lists, values = case
    got = array_has.has_values(array, needles, mode).to_pylist()  # type: ignore[arg-type]
    assert got == _reference(lists, values, needles.type, mode)


def test_membership_kernel_runs_batch_by_batch() -> None:
    """Through a filter over a table of several chunks and a sliced one."""
    words = _WORD_LISTS * 3
    table = pa.Table.from_batches(
        [
            pa.record_batch([pa.array(words[i : i + 10], pa.list_(pa.string()))], names=["l"])
            for i in range(0, len(words), 10)
        ]
    ).slice(3)
    got = table.filter(parse_filter("array_has_all(l, ['a', NULL])", table.schema))
    held = [x for x in words[3:] if x is not None and "a" in x and None in x]
    assert got["l"].to_pylist() == held
