"""SQL filter strings, as ``to_table(filter=...)`` takes them, translated to Arrow expressions.

pylance hands filter strings to DataFusion.  Here sqlglot parses them and the syntax tree
is translated, node class by node class, into a :class:`pyarrow.compute.Expression` that
``pyarrow.Table.filter`` and the dataset scanner evaluate vectorized.

Typing follows DataFusion, as pylance exhibits it, where pyarrow's defaults differ:

* A literal compared with a column takes the column's type when it can do so exactly, so
  ``int8_col = 5`` compares int8 values while ``int8_col > 1000`` still works (in int64).
  Float literals are rounded to a float32 column's precision, so ``f32 = 0.1`` matches.
* Arithmetic on numbers is typed and computed as :mod:`lancelet.expr.sql.value_types`
  describes (decimal precisions, float16, uint64 with signed integers).
* Strings compared with dates or timestamps are parsed as dates or timestamps; time
  zones, timestamp literals and units as :mod:`lancelet.expr.sql.timestamps` describes.
* Floats compare in IEEE 754's total order, as DataFusion's do: ``-NaN`` is below every
  number and ``NaN`` above, ``-0.0`` is below ``0.0`` except when compared with a
  constant.
* AND, OR, NOT, IN and comparisons use SQL's three-valued logic.  A filter drops the rows
  where the predicate is NULL, as a ``WHERE`` clause does.

Identifiers may be quoted with backticks or double quotes.  pylance reads a double-quoted
word as a string literal (``s = "apple"``); a double-quoted word that names no column is
read that way here too.  Unquoted names that match no column exactly may match one column
ignoring case, as pylance allows.

The work is divided so that each part can be read alone: :mod:`lancelet.expr.sql` holds
the language (dialect, typed values, comparisons, operators, casts, column references),
:mod:`lancelet.expr.functions` the function calls; this module joins them into one
table of node classes and offers the entry points.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.errors import FilterError
from lancelet.expr.functions import array_has, calls, matching
from lancelet.expr.functions import membership as list_membership
from lancelet.expr.functions.membership import membership_call, read_membership
from lancelet.expr.sql import casts, catalog, literals, operators, references, value_types, values
from lancelet.expr.sql.comparison import adopt
from lancelet.expr.sql.dialect import parse, sql_text
from lancelet.expr.sql.translator import Handler, Translator

__all__ = [
    "Membership",
    "Operand",
    "exact_literal",
    "is_volatile",
    "membership",
    "node_sql",
    "operand",
    "parse_filter",
    "parse_value",
    "referenced_columns",
    "syntax_tree",
    "to_expression",
    "value_nullable",
]

# The translation of each sqlglot node class.
_HANDLERS: dict[type[exp.Expression], Handler] = {
    **references.HANDLERS,
    **literals.HANDLERS,
    **operators.HANDLERS,
    **casts.HANDLERS,
    **calls.HANDLERS,
    **matching.HANDLERS,
    **list_membership.HANDLERS,
}


def _translator(sql: str, schema: pa.Schema, computes: bool = False) -> Translator:
    return Translator(sql, schema, _HANDLERS, computes)


def parse_filter(sql: str, schema: pa.Schema) -> pc.Expression:
    """Translate a SQL predicate over ``schema``'s columns into an Arrow expression.

    Raises :class:`FilterError` when ``sql`` does not parse, names a column ``schema``
    lacks, uses a construct this module does not translate, or is not boolean.
    """
    expr, dtype, _ = parse_value(sql, schema)
    if not pa.types.is_boolean(dtype):
        raise FilterError(f"filter {sql!r} does not return a boolean (it returns {dtype})")
    return expr


def parse_value(
    sql: str, schema: pa.Schema, *, computes: bool = False
) -> tuple[pc.Expression, pa.DataType, frozenset[str]]:
    """A SQL value expression (``k * 2``, ``lower(s)``): the Arrow expression, its type,
    and the top-level columns it reads.

    ``computes``: the expression computes a column (a projection, an update, a new
    column) rather than a filter.  pylance types those differently: a literal meeting a
    column takes the column's type in the places :func:`value_types.coerced_literals`
    lists (``int8_col + 100`` is int8; a literal that does not fit is an error), where
    a filter widens.  Where pylance's int8 would wrap around, lancelet raises instead of
    returning the wrapped value.

    Cached: a scan asks for the expression and its columns separately, and a delete
    scans fragment by fragment with the same filter.  Filters that read the clock
    (``current_date``) are translated anew each time.
    """
    if is_volatile(sql):
        return _parse_value(sql, schema, computes)
    return _cached_parse_value(sql, schema, computes)


@functools.lru_cache(maxsize=256)
def value_nullable(sql: str, schema: pa.Schema) -> bool:
    """Whether the SQL value ``sql`` may be NULL, as pylance records it for a projected or
    added column (:func:`value_types.nullable`)."""
    translator = _translator(sql, schema, computes=True)
    return value_types.nullable(parse(sql), translator.column_nullable)


def is_volatile(sql: str) -> bool:
    """Whether ``sql`` may read the clock, so that its translation must not be cached."""
    lowered = sql.lower()
    return any(word in lowered for word in catalog.CLOCK_WORDS)


@functools.lru_cache(maxsize=256)
def _cached_parse_value(
    sql: str, schema: pa.Schema, computes: bool
) -> tuple[pc.Expression, pa.DataType, frozenset[str]]:
    return _parse_value(sql, schema, computes)


def _parse_value(
    sql: str, schema: pa.Schema, computes: bool
) -> tuple[pc.Expression, pa.DataType, frozenset[str]]:
    translator = _translator(sql, schema, computes)
    tree = parse(sql)
    if computes:
        translator.coerced = value_types.coerced_literals(tree, translator.column_type)
    value = translator.visit(tree)
    return value.expr, value.type, frozenset(translator.columns)


def to_expression(filter: str | pc.Expression | None, schema: pa.Schema) -> pc.Expression | None:
    """Normalize the ``filter`` argument of a scan: SQL text, an Expression, or nothing."""
    if filter is None:
        return None
    if isinstance(filter, str):
        return parse_filter(filter, schema)
    if isinstance(filter, pc.Expression):
        _check_expression(filter, schema)
        return filter
    raise TypeError(f"filter must be a SQL string or a pyarrow Expression, not {filter!r}")


def referenced_columns(sql: str, schema: pa.Schema | None = None) -> set[str]:
    """The top-level columns ``sql`` reads, e.g. ``{"s"}`` for ``s.a > 1``.

    Without ``schema`` the names are as written.  With it they are resolved the way
    :func:`parse_filter` resolves them (case, double-quoted strings), and the filter is
    validated.
    """
    if schema is not None:
        return set(parse_value(sql, schema)[2])
    tree = parse(sql)
    return {column.parts[0].name for column in tree.find_all(exp.Column)}


def syntax_tree(sql: str) -> exp.Expression:
    """The sqlglot tree of ``sql`` as :func:`parse_filter` parses it."""
    return parse(sql)


def node_sql(node: exp.Expression) -> str:
    """SQL text for a sub-tree of :func:`syntax_tree` that parses back to the same tree."""
    return sql_text(node)


@dataclass(frozen=True)
class Operand:
    """A value sub-expression of a filter, typed as :func:`parse_filter` types it.

    ``path``: the resolved column (and struct field) names when the sub-expression
    names a column; ``const``: its value when it is known while parsing.
    """

    type: pa.DataType
    path: tuple[str, ...] | None
    const: pa.Scalar | None


def operand(node: exp.Expression, sql: str, schema: pa.Schema) -> Operand:
    """Translate the value sub-expression ``node`` of the filter ``sql``."""
    value = _translator(sql, schema).visit(node)
    return Operand(value.type, value.path, value.const)


def exact_literal(const: pa.Scalar, target: pa.DataType, node: exp.Expression) -> pa.Scalar | None:
    """``const`` in the type ``target`` as a comparison with a ``target`` column adopts
    it (floats rounded to the column's precision, strings parsed as dates...); None when
    the comparison would keep another type (``int8_col > 1000``) or ``const`` is NULL."""
    adopted = adopt(values.const(const), target, node).const
    if adopted is None or not adopted.is_valid or adopted.type != target:
        return None
    return adopted


@dataclass(frozen=True)
class Membership:
    """A call of ``array_has_any``, ``array_has_all`` or ``array_has`` (``mode`` "any"
    of its one value) as :func:`parse_filter` reads it: the list, and the values typed
    for it (:func:`lancelet.expr.functions.array_has.needles`); ``needles`` is None when the
    call is NULL on every row (a NULL array or value)."""

    lists: Operand
    mode: array_has.Mode
    needles: array_has.Needles | None


def membership(node: exp.Expression, sql: str, schema: pa.Schema) -> Membership | None:
    """``node`` of the filter ``sql`` as a :class:`Membership`; None for other nodes."""
    call = membership_call(node)
    if call is None:
        return None
    subject, mode, needles = read_membership(_translator(sql, schema), node, *call)
    return Membership(Operand(subject.type, subject.path, subject.const), mode, needles)


def _check_expression(expression: pc.Expression, schema: pa.Schema) -> None:
    # Binding against an empty table reports missing fields and non-boolean results for
    # the cost of planning a zero-row scan.
    try:
        schema.empty_table().filter(expression)
    except (pa.ArrowException, TypeError) as e:
        raise FilterError(f"filter {expression} does not apply to this dataset: {e}") from e
