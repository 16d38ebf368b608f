"""Random tables and SQL filters over them, for the predicate tree's property tests.

Columns come from a fixed menu of types (a random subset of it per example); values
from small pools full of edge cases (extremes of each integer width, NaN of both signs,
-0.0, infinities, strings holding LIKE's wildcards and backslashes, nulls everywhere),
so that equalities hit and comparisons straddle.  Literals come from pools per type
family plus pools of other families, so many literals do not fit the column's type.
List columns (lists of 0-4 items from those pools, NULL items and NULL lists among
them) are searched with array_has_any / array_has_all / array_has in all their
spellings, their values often drawn from the items' own pool.
"""

from __future__ import annotations

import datetime
import decimal
import math
import struct

import pyarrow as pa
from hypothesis import strategies as st

NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8_0000_0000_0000))[0]
NAN = math.nan
INF = math.inf

_INTS = [-(2**63), -129, -128, -1, 0, 1, 2, 5, 127, 128, 255, 1000, 2**31 - 1, 2**53 + 1]
_FLOATS = [NAN, NEG_NAN, -0.0, 0.0, 0.1, 1.5, 2.0, -1.0, -INF, INF, 1e-45, 3.4e38, 1e300]
_STRINGS = ["", "a", "ab", "abc", "a%b", "a_c", "A", "b", "a\\b", "é", "a\nb", "it's", "apple"]
_DATES = [datetime.date(2020, 1, 1), datetime.date(1970, 1, 1), datetime.date(1969, 12, 31)]
_TIMES = [
    datetime.datetime(2020, 1, 1),
    datetime.datetime(2020, 1, 1, 0, 0, 0, 1),
    datetime.datetime(1970, 1, 1),
    datetime.datetime(2019, 12, 31, 23, 59, 59),
]
_DECIMALS = [decimal.Decimal(x) for x in ("0", "1.5", "-2.25", "2", "99999999.99")]


def _fits(value: object, dtype: pa.DataType) -> bool:
    try:
        pa.scalar(value, dtype)
    except (pa.ArrowInvalid, OverflowError, TypeError):
        return False
    return True


# column name -> (type, pool of non-null values)
COLUMNS: dict[str, tuple[pa.DataType, list[object]]] = {
    "i8": (pa.int8(), [v for v in _INTS if _fits(v, pa.int8())]),
    "i32": (pa.int32(), [v for v in _INTS if _fits(v, pa.int32())]),
    "i64": (pa.int64(), _INTS),
    "u8": (pa.uint8(), [v for v in _INTS if _fits(v, pa.uint8())]),
    "u64": (pa.uint64(), [0, 1, 2, 2**63, 2**64 - 1]),
    "f32": (pa.float32(), _FLOATS[:-1]),
    "f64": (pa.float64(), [*_FLOATS, 2.0**53 + 2]),
    "s": (pa.string(), _STRINGS),
    "Ls": (pa.large_string(), _STRINGS),
    "d": (pa.date32(), _DATES),
    "ts": (pa.timestamp("us"), _TIMES),
    "b": (pa.bool_(), [True, False]),
    "dec": (pa.decimal128(10, 2), _DECIMALS),
    "st": (pa.struct([("a", pa.int32()), ("z", pa.string())]), []),
}
STRUCT_FIELDS = {"st.a": "i32", "st.z": "s"}
# list column name -> (list type, the scalar column whose pool its items come from)
LIST_COLUMNS: dict[str, tuple[pa.DataType, str]] = {
    "li8": (pa.list_(pa.int8()), "i8"),
    "lu64": (pa.list_(pa.uint64()), "u64"),
    "lf32": (pa.list_(pa.float32()), "f32"),
    "lf64": (pa.large_list(pa.float64()), "f64"),
    "ls": (pa.list_(pa.string()), "s"),
    "lLs": (pa.large_list(pa.large_string()), "Ls"),
    "ld": (pa.list_(pa.date32()), "d"),
    "lb": (pa.list_(pa.bool_()), "b"),
}

NUMBER_LITERALS = [
    "0", "1", "-1", "2", "5", "127", "128", "-128", "-129", "255", "256", "1000", "1.5", "2.0",
    "0.1", "-0.0", "0.0", "1e-45", "3.4e38", "1e300", "9007199254740993",
    "9223372036854775807", "-9223372036854775808", "9223372036854775808",
    "18446744073709551615", "18446744073709551616",
    "CAST('NaN' AS DOUBLE)", "CAST('-inf' AS DOUBLE)", "CAST('inf' AS FLOAT)",
    "CAST(1 AS TINYINT)", "2 + 3", "99999999.99", "-2.25",
    "CAST(1.5 AS FLOAT)", "CAST(-0.0 AS FLOAT)", "-CAST('NaN' AS DOUBLE)",
]  # fmt: skip
STRING_LITERALS = ["''", "'a'", "'ab'", "'A'", '"apple"', "'it''s'", "'a\\b'", "'é'", "'b'"]
DATE_LITERALS = ["'2020-01-01'", "DATE '2020-01-01'", "'1970-01-01'", "DATE '1969-12-31'"]
TIME_LITERALS = [
    "'2020-01-01 00:00:00'",
    "'2020-01-01 00:00:00.000001'",
    "TIMESTAMP '2020-01-01 00:00:00'",
    "'1970-01-01T00:00:00'",
]
BOOL_LITERALS = ["true", "false"]
LIKE_PATTERNS = [
    "'a%'", "'ab%'", "'%'", "'a_%'", "'a\\%%'", "'a%b%'", "'a'", "'%b'", "'_%'", "'it''s%'",
    "'a\\\\%'", "'é%'", "'A%'", "''", "'a%%'",
]  # fmt: skip


def family_literals(dtype: pa.DataType) -> list[str]:
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return STRING_LITERALS
    if pa.types.is_date(dtype):
        return DATE_LITERALS + STRING_LITERALS[:2]
    if pa.types.is_timestamp(dtype):
        return TIME_LITERALS + DATE_LITERALS[:1]
    if pa.types.is_boolean(dtype):
        return BOOL_LITERALS
    return NUMBER_LITERALS


@st.composite
def tables(draw: st.DrawFn, *, lists: bool = False) -> pa.Table:
    """Random columns of ``COLUMNS`` (and of ``LIST_COLUMNS`` with ``lists``)."""
    menu = sorted(COLUMNS) + (sorted(LIST_COLUMNS) if lists else [])
    names = draw(st.lists(st.sampled_from(menu), min_size=1, max_size=6, unique=True))
    rows = draw(st.integers(0, 24))
    arrays: dict[str, pa.Array] = {"_row": pa.array(range(rows), pa.int64())}
    for name in names:
        arrays[name] = _column(draw, name, rows)
    return pa.table(arrays)


def _values(draw: st.DrawFn, pool: list[object], rows: int) -> list[object]:
    return draw(st.lists(st.sampled_from([None, *pool]), min_size=rows, max_size=rows))


def _column(draw: st.DrawFn, name: str, rows: int) -> pa.Array:
    if name in LIST_COLUMNS:
        return _list_column(draw, name, rows)
    dtype, pool = COLUMNS[name]
    if name != "st":
        return pa.array(_values(draw, pool, rows), dtype)
    a = pa.array(_values(draw, COLUMNS["i32"][1], rows), pa.int32())
    z = pa.array(_values(draw, _STRINGS, rows), pa.string())
    valid = draw(st.lists(st.booleans(), min_size=rows, max_size=rows))
    mask = pa.array([not v for v in valid], pa.bool_())
    return pa.StructArray.from_arrays([a, z], names=["a", "z"], mask=mask)


def _list_column(draw: st.DrawFn, name: str, rows: int) -> pa.Array:
    """Lists of 0-4 items, duplicates and NULL items among them, some lists NULL."""
    dtype, scalar = LIST_COLUMNS[name]
    items = st.lists(st.sampled_from([None, *COLUMNS[scalar][1]]), max_size=4)
    lists = draw(st.lists(st.none() | items, min_size=rows, max_size=rows))
    return pa.array(lists, dtype)


def list_names(table: pa.Table) -> list[str]:
    return [n for n in table.column_names if n in LIST_COLUMNS]


def column_names(table: pa.Table) -> list[str]:
    """The scalar columns a filter may name: struct fields by their dotted path."""
    names = [n for n in table.column_names if n not in ("_row", "st", *LIST_COLUMNS)]
    if "st" in table.column_names:
        names += list(STRUCT_FIELDS)
    return names


def _type_of(name: str) -> pa.DataType:
    if name in LIST_COLUMNS:
        return COLUMNS[LIST_COLUMNS[name][1]][0]  # the item type
    return COLUMNS[STRUCT_FIELDS.get(name, name)][0]


@st.composite
def literals(draw: st.DrawFn, column: str) -> str:
    """A literal for ``column``: mostly of its family, sometimes of another or NULL."""
    pool = family_literals(_type_of(column))
    kind = draw(st.integers(0, 19))
    if kind == 0:
        return "NULL"
    if kind == 1:
        return draw(st.sampled_from(NUMBER_LITERALS + STRING_LITERALS + DATE_LITERALS))
    return draw(st.sampled_from(pool))


@st.composite
def spelled(draw: st.DrawFn, column: str) -> str:
    """``column`` as a filter may spell it: quoted, or in another case."""
    how = draw(st.integers(0, 3))
    if how == 1:
        return ".".join(f"`{part}`" for part in column.split("."))
    if how == 2 and "." not in column:
        return f'"{column}"'
    if how == 3:
        return column.upper() if column != column.upper() else column.lower()
    return column


_COMPARISONS = ["=", "<>", "!=", "<", "<=", ">", ">="]


_ANY = ["array_has_any", "list_has_any", "arrays_overlap"]
_ALL = ["array_has_all", "list_has_all"]
_ONE = ["array_has", "array_contains", "list_has", "list_contains"]
_ARRAYS = ["[{}]", "make_array({})", "ARRAY[{}]", "make_list({})"]


def _sql_of(value: object, dtype: pa.DataType) -> str:
    """A SQL literal of ``value`` in ``dtype``."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        kind = "FLOAT" if dtype == pa.float32() else "DOUBLE"
        if math.isnan(value):
            cast = f"CAST('NaN' AS {kind})"
            return f"-{cast}" if math.copysign(1, value) < 0 else cast
        text = repr(value) if math.isfinite(value) else f"'{value}'"
        return f"CAST({text} AS {kind})"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    return str(value)


@st.composite
def item_literals(draw: st.DrawFn, column: str) -> str:
    """For a list column: often one of its items' own values, else any literal."""
    dtype, pool = COLUMNS[LIST_COLUMNS[column][1]]
    if draw(st.booleans()):
        return _sql_of(draw(st.sampled_from(pool)), dtype)
    return draw(literals(column))


@st.composite
def membership_sql(draw: st.DrawFn, table: pa.Table) -> str:
    """array_has_any / array_has_all / array_has over a list column."""
    column = draw(st.sampled_from(list_names(table)))
    name = draw(spelled(column))
    function = draw(st.sampled_from(_ANY + _ALL + _ONE))
    if function in _ONE:
        return f"{function}({name}, {draw(item_literals(column))})"
    if draw(st.integers(0, 19)) == 0:
        return f"{function}({name}, NULL)"
    items = draw(st.lists(item_literals(column), max_size=4))
    if items and draw(st.booleans()):
        items.append(items[0])  # a duplicate
    array = draw(st.sampled_from(_ARRAYS)).format(", ".join(items))
    return f"{function}({name}, {array})"


@st.composite
def leaf_sql(draw: st.DrawFn, table: pa.Table, *, negations: bool = True) -> str:
    """One condition in a shape an index might answer (or nearly so)."""
    if list_names(table) and (not column_names(table) or draw(st.integers(0, 3)) == 0):
        return draw(membership_sql(table))
    column = draw(st.sampled_from(column_names(table)))
    name = draw(spelled(column))
    strings = pa.types.is_string(_type_of(column)) or pa.types.is_large_string(_type_of(column))
    # LIKE on the string columns, comparisons and IN mostly elsewhere.
    shape = draw(
        st.sampled_from([4, 4, 4, 0, 1, 2, 3, 5, 6] if strings else [0, 0, 0, 1, 2, 2, 3, 4, 5, 6])
    )
    negate = "NOT " if negations and draw(st.booleans()) else ""
    if shape == 0:
        ops = _COMPARISONS if negations else ["=", "<", "<=", ">", ">="]
        op, literal = draw(st.sampled_from(ops)), draw(literals(column))
        return f"{literal} {op} {name}" if draw(st.booleans()) else f"{name} {op} {literal}"
    if shape == 1:
        low, high = draw(literals(column)), draw(literals(column))
        return f"{name} {negate}BETWEEN {low} AND {high}"
    if shape == 2:
        items = draw(st.lists(literals(column), min_size=1, max_size=5))
        if len(items) > 1 and draw(st.booleans()):
            items.append(items[0])  # a duplicate
        return f"{name} {negate}IN ({', '.join(items)})"
    if shape == 3:
        return f"{name} IS {negate}NULL"
    if shape == 4:
        pattern = draw(st.sampled_from(LIKE_PATTERNS))
        escape = " ESCAPE '!'" if draw(st.integers(0, 5)) == 0 else ""
        return f"{name} {negate}LIKE {pattern}{escape}"
    if shape == 5:
        other = draw(st.sampled_from(column_names(table)))
        return f"{name} {draw(st.sampled_from(_COMPARISONS))} {other}"
    bare = ["NULL", "true", "false", f"{name} IS TRUE", "1 = 1"]
    return draw(st.sampled_from(bare + (["b"] if "b" in table.column_names else [])))


@st.composite
def filter_sql(draw: st.DrawFn, table: pa.Table, depth: int = 3) -> str:
    """Leaves combined with AND, OR, NOT and parentheses."""
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(leaf_sql(table))
    kind = draw(st.sampled_from(["AND", "OR", "NOT", "()"]))
    if kind == "NOT":
        return f"NOT {draw(filter_sql(table, depth - 1))}"
    if kind == "()":
        return f"({draw(filter_sql(table, depth - 1))})"
    parts = draw(st.lists(filter_sql(table, depth - 1), min_size=2, max_size=3))
    return f" {kind} ".join(parts)
