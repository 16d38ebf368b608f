"""Result types, values and nullability of SQL arithmetic, against pylance, over a grid.

For each arithmetic operator and unary function lancelet supports, every pair of
operand types (integers of each width and sign, floats of each width, decimals of a
few precisions and scales, literals of each kind on either side) is computed by both
libraries with ``to_table(columns={"r": expr})``; the field (type and nullability) and
the values must be the same.  Where pylance wraps an integer around, lancelet refuses
(deliberately): the test checks that pylance's value is indeed not the true one.
"""

from __future__ import annotations

import decimal
import itertools
import math
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet
from tests.versions import STORAGE_VERSION

D = decimal.Decimal
SIGNED = {"i8": pa.int8(), "i16": pa.int16(), "i32": pa.int32(), "i64": pa.int64()}
UNSIGNED = {"u8": pa.uint8(), "u16": pa.uint16(), "u32": pa.uint32(), "u64": pa.uint64()}
FLOATS = {"f16": pa.float16(), "f32": pa.float32(), "f64": pa.float64()}
DECIMALS = {
    "d52": pa.decimal128(5, 2),
    "d102": pa.decimal128(10, 2),
    "d150": pa.decimal128(15, 0),
    "d380": pa.decimal128(38, 0),
    "d3810": pa.decimal128(38, 10),
}
TYPES = {**SIGNED, **UNSIGNED, **FLOATS, **DECIMALS}
LITERALS = ["2", "-1", "300", "100000", "2.5", "0.1"]
OPERATORS = ["+", "-", "*", "/", "%"]


def _values(name: str, dtype: pa.DataType) -> pa.Array:
    if name in SIGNED:
        return pa.array([1, -2, None, 7, 3], dtype)
    if name in UNSIGNED:
        return pa.array([1, 2, None, 7, 3], dtype)
    if name == "f16":
        return pa.array(
            np.array([1.5, -2.25, np.nan, 7.0, 0.1], np.float16),
            mask=np.array([0, 0, 1, 0, 0], bool),
        )
    if name in FLOATS:
        return pa.array([1.5, -2.25, None, 7.0, 0.1], dtype)
    if dtype.scale == 0:
        return pa.array([D(1), D(-2), None, D(7), D(3)], dtype)
    return pa.array([D("1.00"), D("-2.50"), None, D("7.25"), D("0.10")], dtype)


def _table() -> pa.Table:
    fields = [pa.field(name, dtype) for name, dtype in TYPES.items()]
    columns = [_values(name, dtype) for name, dtype in TYPES.items()]
    fields.append(pa.field("nn", pa.int32(), nullable=False))
    columns.append(pa.array([1, 2, 3, 4, 5], pa.int32()))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = Path(tmp_path_factory.mktemp("sql_types")) / "d"
    lance.write_dataset(_table(), out, data_storage_version=STORAGE_VERSION)
    return out


Result = tuple[pa.Field, list[Any]] | Exception


def _result(dataset: Any, sql: str) -> Result:
    try:
        table = dataset.to_table(columns={"r": sql})
    except (ValueError, OSError, pa.ArrowException) as e:
        return e
    return table.schema.field("r"), [_comparable(v) for v in table["r"].to_pylist()]


def _comparable(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and value == 0:
        return ("zero", math.copysign(1, value))
    return value


def _exact(sql: str, table: pa.Table) -> list[Any] | None:
    """The true values of ``a op b`` on integers (None for other operations)."""
    parts = sql.split(" ")
    if len(parts) != 3 or parts[1] not in "+-*":
        return None
    operands = []
    for part in (parts[0], parts[2]):
        if part in table.column_names and pa.types.is_integer(table.schema.field(part).type):
            operands.append(table[part].to_pylist())
        elif part.lstrip("-").isdigit():
            operands.append([int(part)] * table.num_rows)
        else:
            return None
    apply = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}[parts[1]]
    return [None if a is None or b is None else apply(a, b) for a, b in zip(*operands, strict=True)]


def _disagreement(sql: str, expected: Result, got: Result, table: pa.Table) -> str | None:
    if isinstance(expected, Exception) and isinstance(got, Exception):
        return None
    if isinstance(expected, Exception):
        return f"pylance refuses ({str(expected)[:80]}), lancelet gives {got}"
    if isinstance(got, Exception):
        # Deliberate: lancelet refuses integer overflow, where pylance wraps around.
        exact = _exact(sql, table)
        if "overflow" in str(got) and exact is not None and exact != expected[1]:
            return None
        return f"lancelet refuses ({str(got)[:120]}), pylance gives {expected}"
    if got != expected:
        return f"pylance {expected}, lancelet {got}"
    return None


def _binary(op: str) -> list[str]:
    names = [*TYPES, "nn"]
    pairs = [f"{a} {op} {b}" for a, b in itertools.product(names, names)]
    literals = [f"{a} {op} {lit}" for a in names for lit in LITERALS]
    flipped = [f"{lit} {op} {a}" for a in names for lit in LITERALS]
    return pairs + literals + flipped


UNARY = [f"abs({n})" for n in [*TYPES, "nn"]] + [f"-{n}" for n in [*TYPES, "nn"]]

# Where pylance converts literals to a column's type, and where not (and nesting).
SHAPES = [
    "i8 * (1 - i8)",
    "i8 + (1 + 1)",
    "(1 + 1) + i8",
    "(i8 + 1) * 2",
    "abs(i8 + 1)",
    "i8 + 1 + 1",
    "i8 + (1 + (2 * 3))",
    "i8 + (1 + (2 * i8))",
    "i8 + (i8 + i8)",
    "i16 + (1 + i8)",
    "i8 * (200 - i8)",
    "i8 + - 1",
    "i8 + (1)",
    "d52 * (1 - d52)",
    "d102 * (1 - d52)",
    "d52 + (1 + 1)",
    "d52 + 1000",
    "f16 + 65519",
    "f16 + 65520",
    "f16 + 70000.0",
    "f32 + 1e39",
    "f64 / 0",
    "f32 % 0",
    "f16 / 0",
    "i8 / 0",
    "d52 / 0",
    "i8 = 1000",
    "i8 BETWEEN 1 AND 1000",
    "i8 IN (1, 300)",
    "nn + 1",
    "nn > 1 AND nn < 3",
    "CAST(nn AS BIGINT) * 2",
    "abs(nn)",
    "u64 + i64",
    "u64 * i8",
    "u64 / i32",
    "u64 % i16",
    "d3810 / d3810",
    "d380 * d380",
]


@pytest.mark.parametrize("group", [*OPERATORS, "unary", "shapes"])
def test_grid_matches_pylance(group: str, path: Path) -> None:
    expressions = {"unary": UNARY, "shapes": SHAPES}.get(group) or _binary(group)
    oracle, dataset = lance.dataset(path), lancelet.dataset(path)
    table = oracle.to_table()
    wrong = {}
    for sql in expressions:
        problem = _disagreement(sql, _result(oracle, sql), _result(dataset, sql), table)
        if problem is not None:
            wrong[sql] = problem
    assert wrong == {}


@pytest.mark.parametrize(
    "columns",
    [
        {"one": "1", "text": "'x'", "half": "1.5", "yes": "true"},
        {"null": "NULL"},
        {"dec": "CAST(1 AS DECIMAL(5,2))", "at": "TIMESTAMP '2024-01-01 00:00:00'"},
        {"n1": "nn + 1", "n2": "abs(nn)", "n3": "-nn", "n4": "nn > 1", "n5": "i32 > 1"},
        {"price": "d102 * (1 - d52)", "a32": "abs(i32)", "wide": "u64 + i8"},
    ],
)
def test_add_columns_fields_match_pylance(columns: dict[str, str], tmp_path: Path) -> None:
    """The fields add_columns records: types, and NOT NULL for values never NULL."""
    for name in ("pylance", "lancelet"):
        lance.write_dataset(_table(), tmp_path / name, data_storage_version=STORAGE_VERSION)
    lance.dataset(tmp_path / "pylance").add_columns(columns)
    lancelet.dataset(tmp_path / "lancelet").add_columns(columns)
    expected = lance.dataset(tmp_path / "pylance").to_table()
    got = lance.dataset(tmp_path / "lancelet").to_table()
    assert got.schema == expected.schema
    assert got == expected


def _selected(dataset: Any, sql: str) -> list[int] | Exception:
    try:
        return sorted(dataset.to_table(filter=sql, columns=["nn"])["nn"].to_pylist())
    except (ValueError, OSError, pa.ArrowException) as e:
        return e


@pytest.mark.parametrize("op", OPERATORS)
def test_arithmetic_in_filters_matches_pylance(op: str, path: Path) -> None:
    """The same arithmetic in filters (no literal takes a column's type there): the rows
    where it is positive, or where it is above a decimal quotient's truncated digits."""
    oracle, dataset = lance.dataset(path), lancelet.dataset(path)
    names = ["i8", "u8", "u64", "i64", "f16", "f32", "d52", "d102", "d380", "d3810"]
    wrong = {}
    for a, b in itertools.product(names, [*names, "3", "2.5"]):
        for sql in (f"{a} {op} {b} > 0", f"{a} {op} {b} < 0.333334"):
            expected, got = _selected(oracle, sql), _selected(dataset, sql)
            both_refuse = isinstance(expected, Exception) and isinstance(got, Exception)
            if not both_refuse and got != expected:
                wrong[sql] = (expected, got)
    assert wrong == {}


NULLABILITY = [
    "nn", "n", "nn + 1", "nn + n", "-nn", "NOT b", "nn > 1", "n > 1", "nn = n",
    "b AND nn > 1", "b OR n > 1", "nn IS NULL OR b", "n IS NULL", "n IS NOT NULL",
    "b IS TRUE", "CAST(nn AS BIGINT)", "CAST(n AS BIGINT)", "nn BETWEEN 1 AND 2",
    "nn IN (1, 2)", "nn IN (1, n)", "s LIKE 'a%'", "s NOT ILIKE 'a%'", "s || 'x'",
    "abs(nn)", "upper(s)", "length(s)", "st.a", "st.b", "stn.a", "st['a']", "l[1]",
    "array_has(l, 1)", "regexp_like(s, 'a')", "contains(s, 'a')", "nn % 2", "f / 0",
    "arrow_cast(nn, 'Int64')", "nn IS NOT DISTINCT FROM 1", "l", "st", "f + 1.5",
]  # fmt: skip


def test_projected_fields_are_nullable_as_in_pylance(tmp_path: Path) -> None:
    """A projected value is NOT NULL where pylance proves it never NULL."""
    schema = pa.schema(
        [
            pa.field("nn", pa.int32(), False),
            pa.field("n", pa.int32()),
            pa.field("s", pa.string(), False),
            pa.field("b", pa.bool_(), False),
            pa.field("f", pa.float64(), False),
            pa.field("l", pa.list_(pa.int32()), False),
            pa.field("st", pa.struct([pa.field("a", pa.int32(), False), ("b", pa.int32())]), False),
            pa.field("stn", pa.struct([pa.field("a", pa.int32(), False)])),
        ]
    )
    rows = {
        "nn": [1, 2], "n": [1, None], "s": ["a", "b"], "b": [True, False], "f": [1.0, 2.0],
        "l": [[1], [2, 3]], "st": [{"a": 1, "b": None}, {"a": 2, "b": 3}], "stn": [{"a": 1}, None],
    }  # fmt: skip
    lance.write_dataset(pa.table(rows, schema=schema), tmp_path / "d")
    oracle, dataset = lance.dataset(tmp_path / "d"), lancelet.dataset(tmp_path / "d")
    expected = {sql: _result(oracle, sql) for sql in NULLABILITY}
    got = {sql: _result(dataset, sql) for sql in NULLABILITY}
    assert {s: r[0] for s, r in got.items() if isinstance(r, tuple)} == {
        s: r[0] for s, r in expected.items() if isinstance(r, tuple)
    }
