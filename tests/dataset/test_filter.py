"""SQL filter translation, checked against pylance's own filtering as the oracle."""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lancelet.dataset.filter import parse_filter, referenced_columns, to_expression
from lancelet.errors import FilterError
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
        ("regexp_match(s, 'a')", "function regexp_match()"),
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
