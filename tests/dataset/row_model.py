"""A plain-Python model of a small table and of SQL predicates over it, for the index
property test (``test_index_properties.py``).

Tables hold an ``id`` column (unique, never updated: it names a row through deletes,
updates and compactions) and a random subset of the columns of
:mod:`tests.expr.grammar` (so that its random filters apply too), each filled from a
few values of that column's edge-case pool and nulls: equalities hit, bitmaps have
few keys, comparisons straddle NaN, -0.0, infinities and extremes.

Predicates are small trees rendered to SQL and evaluated here row by row with SQL's
three-valued logic and the comparison pylance's plain scan makes (checked against it
by the property test): floats in IEEE 754 total order with ``-0.0 = 0.0`` (a NaN with
its sign bit clear above every number and equal to itself, one with it set below
every number), strings by code point (UTF-8 byte order), NULL never equal to
anything.  Nothing here calls lancelet or pylance.
"""

from __future__ import annotations

import datetime
import math
import re
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from tests.expr import grammar

Row = dict[str, Any]

# Columns a table may have besides ``id`` (names and pools from the grammar).
OPTIONAL = ["i8", "i32", "i64", "u8", "u64", "f32", "f64", "s", "Ls", "d", "ts", "b", "dec", "st"]
# Columns an index may be built on, with the kinds each takes (pylance and lancelet
# both refuse Bloom filters on booleans and decimals).
INDEX_KINDS = ["BTREE", "BITMAP", "ZONEMAP", "BLOOMFILTER"]
NO_BLOOM = {"b", "dec"}
STRUCT_FIELDS = {"st.a": "i32", "st.z": "s"}


def value_type(column: str) -> str:
    """The grammar column whose type and pool ``column`` has."""
    return "i64" if column == "id" else STRUCT_FIELDS.get(column, column)


def leaf_columns(names: Sequence[str]) -> list[str]:
    """The columns a predicate, update or index may name: struct fields by path."""
    out = [n for n in names if n != "st"]
    if "st" in names:
        out += list(STRUCT_FIELDS)
    return out


def index_kinds(column: str) -> list[str]:
    return [k for k in INDEX_KINDS if not (k == "BLOOMFILTER" and value_type(column) in NO_BLOOM)]


# --- literals: SQL text and the Python value it means --------------------------------


@dataclass(frozen=True)
class Lit:
    sql: str
    value: Any  # None: NULL


NULL = Lit("NULL", None)


def _float_sql(v: float) -> str:
    if math.isnan(v):
        return "CAST('NaN' AS DOUBLE)"
    if math.isinf(v):
        return "CAST('inf' AS DOUBLE)" if v > 0 else "CAST('-inf' AS DOUBLE)"
    return repr(v)


def _f32_exact(v: float) -> bool:
    if math.isnan(v) or math.isinf(v):
        return True
    return bool(struct.unpack("<f", struct.pack("<f", v))[0] == v)


def literals(column: str) -> list[Lit]:
    """Literals for ``column`` that both libraries read as exactly the value they name,
    in the column's type: the model then needs no type coercion rules."""
    kind = value_type(column)
    pool = grammar.COLUMNS[kind][1]
    if kind in ("i8", "i32", "i64", "u8", "u64"):
        return [Lit(str(v), v) for v in pool if isinstance(v, int) and abs(v) < 2**62]
    if kind in ("f32", "f64"):
        # -NaN has no SQL spelling; a float32 column compares with exactly representable
        # doubles only, so that the comparison's type does not matter.
        values = [v for v in pool if isinstance(v, float) and not _negative_nan(v)]
        if kind == "f32":
            values = [v for v in values if _f32_exact(v)]
        return [Lit(_float_sql(v), v) for v in values]
    if kind in ("s", "Ls"):
        # Backslashes and newlines are left to the grammar's filters.
        return [
            Lit("'" + v.replace("'", "''") + "'", v)
            for v in pool
            if isinstance(v, str) and "\\" not in v and "\n" not in v
        ]
    if kind == "d":
        return [Lit(f"DATE '{v.isoformat()}'", v) for v in pool if isinstance(v, datetime.date)]
    if kind == "ts":
        return [
            Lit(f"TIMESTAMP '{v.isoformat(sep=' ')}'", v)
            for v in pool
            if isinstance(v, datetime.datetime)
        ]
    if kind == "b":
        return [Lit("true", True), Lit("false", False)]
    return []  # decimals: only the grammar's filters compare them


def _negative_nan(v: float) -> bool:
    return math.isnan(v) and math.copysign(1.0, v) < 0


# --- comparison keys ---------------------------------------------------------------


def key(value: Any) -> Any:
    """What SQL compares: floats as integers in total order with zeros merged."""
    if isinstance(value, float):
        if value == 0:
            value = 0.0
        bits: int = struct.unpack("<q", struct.pack("<d", value))[0]
        return bits ^ 0x7FFF_FFFF_FFFF_FFFF if bits < 0 else bits
    return value


def cell(row: Row, column: str) -> Any:
    """A row's value of ``column`` (a null struct's fields are null)."""
    top, *rest = column.split(".")
    value = row[top]
    for name in rest:
        value = None if value is None else value[name]
    return value


# --- predicates ----------------------------------------------------------------------

Truth = bool | None

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": lambda a, b: bool(a == b),
    "<>": lambda a, b: bool(a != b),
    "<": lambda a, b: bool(a < b),
    "<=": lambda a, b: bool(a <= b),
    ">": lambda a, b: bool(a > b),
    ">=": lambda a, b: bool(a >= b),
}


@dataclass(frozen=True)
class Compare:
    column: str
    op: str
    lit: Lit
    flipped: bool = False  # spelled ``lit op' column``

    def sql(self) -> str:
        if self.flipped:
            mirror = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(self.op, self.op)
            return f"{self.lit.sql} {mirror} {self.column}"
        return f"{self.column} {self.op} {self.lit.sql}"

    def eval(self, row: Row) -> Truth:
        v = cell(row, self.column)
        if v is None or self.lit.value is None:
            return None
        return _OPS[self.op](key(v), key(self.lit.value))


@dataclass(frozen=True)
class Between:
    column: str
    low: Lit
    high: Lit
    negated: bool = False

    def sql(self) -> str:
        word = "NOT BETWEEN" if self.negated else "BETWEEN"
        return f"{self.column} {word} {self.low.sql} AND {self.high.sql}"

    def eval(self, row: Row) -> Truth:
        low = Compare(self.column, ">=", self.low).eval(row)
        high = Compare(self.column, "<=", self.high).eval(row)
        both = _and([low, high])
        return _not(both) if self.negated else both


@dataclass(frozen=True)
class InList:
    column: str
    items: tuple[Lit, ...]
    negated: bool = False

    def sql(self) -> str:
        word = "NOT IN" if self.negated else "IN"
        return f"{self.column} {word} ({', '.join(i.sql for i in self.items)})"

    def eval(self, row: Row) -> Truth:
        found = _or([Compare(self.column, "=", i).eval(row) for i in self.items])
        return _not(found) if self.negated else found


@dataclass(frozen=True)
class NullCheck:
    column: str
    negated: bool = False

    def sql(self) -> str:
        return f"{self.column} IS {'NOT ' if self.negated else ''}NULL"

    def eval(self, row: Row) -> Truth:
        return (cell(row, self.column) is None) != self.negated


@dataclass(frozen=True)
class Like:
    column: str
    pattern: str  # no backslash, no quote
    negated: bool = False

    def sql(self) -> str:
        return f"{self.column} {'NOT ' if self.negated else ''}LIKE '{self.pattern}'"

    def eval(self, row: Row) -> Truth:
        v = cell(row, self.column)
        if v is None:
            return None
        regex = "".join(
            ".*" if c == "%" else "." if c == "_" else re.escape(c) for c in self.pattern
        )
        return (re.fullmatch(regex, v, flags=re.DOTALL) is not None) != self.negated


@dataclass(frozen=True)
class Junction:
    op: str  # AND, OR
    children: tuple[Pred, ...]

    def sql(self) -> str:
        return "(" + f" {self.op} ".join(c.sql() for c in self.children) + ")"

    def eval(self, row: Row) -> Truth:
        values = [c.eval(row) for c in self.children]
        return _and(values) if self.op == "AND" else _or(values)


@dataclass(frozen=True)
class Negation:
    child: Pred

    def sql(self) -> str:
        return f"NOT ({self.child.sql()})"

    def eval(self, row: Row) -> Truth:
        return _not(self.child.eval(row))


Pred = Compare | Between | InList | NullCheck | Like | Junction | Negation


def _and(values: Sequence[Truth]) -> Truth:
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def _or(values: Sequence[Truth]) -> Truth:
    if any(v is True for v in values):
        return True
    return None if any(v is None for v in values) else False


def _not(value: Truth) -> Truth:
    return None if value is None else not value


def walk(pred: Pred) -> Iterator[Pred]:
    """``pred`` and every condition under it."""
    yield pred
    if isinstance(pred, Junction):
        for child in pred.children:
            yield from walk(child)
    elif isinstance(pred, Negation):
        yield from walk(pred.child)


def select(rows: Sequence[Row], pred: Pred) -> list[Row]:
    """The rows a WHERE clause keeps: those it is TRUE for."""
    return [r for r in rows if pred.eval(r) is True]


# --- strategies ----------------------------------------------------------------------


@st.composite
def lit(draw: st.DrawFn, column: str, present: Sequence[Any]) -> Lit:
    """A literal for ``column``: mostly one of the values the table holds."""
    pool = literals(column)
    held = [x for x in pool if any(key(x.value) == key(v) for v in present if v is not None)]
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return NULL
    if choice < 6 and held:
        return draw(st.sampled_from(held))
    return draw(st.sampled_from(pool))


def _prefixes(values: Sequence[Any]) -> list[str]:
    out = {""}
    for v in values:
        if isinstance(v, str):
            out.update(v[:n] for n in range(1, len(v) + 1))
    return sorted(p for p in out if not set(p) & set("%_\\'\n"))


@st.composite
def leaf(
    draw: st.DrawFn, columns: Sequence[str], rows: Sequence[Row], favoured: Sequence[str] = ()
) -> Pred:
    """One condition, on a ``favoured`` column (an indexed one) two times in three."""
    usable = [c for c in columns if literals(c)]
    liked = [c for c in favoured if c in usable]
    if liked and draw(st.integers(0, 2)):
        usable = liked
    column = draw(st.sampled_from(usable))
    present = [cell(r, column) for r in rows]
    kind = value_type(column)
    shapes = ["cmp", "cmp", "between", "in", "null"]
    if kind in ("s", "Ls"):
        shapes += ["like", "like", "like"]
    shape = draw(st.sampled_from(shapes))
    negated = draw(st.integers(0, 3)) == 0
    if shape == "cmp":
        op = draw(st.sampled_from(list(_OPS)))
        return Compare(column, op, draw(lit(column, present)), draw(st.booleans()))
    if shape == "between":
        return Between(column, draw(lit(column, present)), draw(lit(column, present)), negated)
    if shape == "in":
        items = draw(st.lists(lit(column, present), min_size=1, max_size=4))
        return InList(column, tuple(items), negated)
    if shape == "null":
        return NullCheck(column, negated)
    prefix = draw(st.sampled_from(_prefixes(present)))
    suffix = draw(st.sampled_from(["%", "%", "%", "", "_%", "%b"]))
    return Like(column, prefix + suffix, negated)


@st.composite
def predicate(
    draw: st.DrawFn,
    columns: Sequence[str],
    rows: Sequence[Row],
    favoured: Sequence[str] = (),
    depth: int = 2,
) -> Pred:
    """Leaves under AND, OR and NOT."""
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(leaf(columns, rows, favoured))
    kind = draw(st.sampled_from(["AND", "AND", "OR", "OR", "NOT"]))
    if kind == "NOT":
        return Negation(draw(predicate(columns, rows, favoured, depth - 1)))
    child = predicate(columns, rows, favoured, depth - 1)
    children = draw(st.lists(child, min_size=2, max_size=3))
    return Junction(kind, tuple(children))


@dataclass
class Pools:
    """The few values each column of one table draws from."""

    values: dict[str, list[Any]]
    null_structs: bool

    @staticmethod
    def draw(draw: st.DrawFn, names: Sequence[str], null_structs: bool) -> Pools:
        out: dict[str, list[Any]] = {}
        for name in leaf_columns(names):
            pool = grammar.COLUMNS[value_type(name)][1]
            few = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4, unique_by=key))
            nulls = draw(st.integers(0, 2))  # how many of the draws are NULL
            out[name] = few + [None] * nulls
        return Pools(out, null_structs)


def rows_strategy(
    names: Sequence[str], pools: Pools, first_id: int, count: int
) -> st.SearchStrategy[list[Row]]:
    """``count`` rows with ids ``first_id``, ... and values from ``pools`` (a null
    struct only where the pools allow it: format 2.0 cannot store one)."""

    def one(row_id: int) -> st.SearchStrategy[Row]:
        fields: dict[str, st.SearchStrategy[Any]] = {"id": st.just(row_id)}
        for name in names:
            if name == "st":
                inner = st.fixed_dictionaries(
                    {
                        "a": st.sampled_from(pools.values["st.a"]),
                        "z": st.sampled_from(pools.values["st.z"]),
                    }
                )
                fields[name] = st.none() | inner if pools.null_structs else inner
            else:
                fields[name] = st.sampled_from(pools.values[name])
        return st.fixed_dictionaries(fields)

    return st.tuples(*(one(first_id + i) for i in range(count))).map(list)


def schema(names: Sequence[str]) -> pa.Schema:
    return pa.schema([("id", pa.int64()), *((n, grammar.COLUMNS[n][0]) for n in names)])


def to_arrow(rows: Sequence[Row], names: Sequence[str]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=schema(names))
