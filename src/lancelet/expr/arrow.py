"""A predicate tree evaluated by Arrow: :func:`to_arrow` makes the compute expression.

Each leaf means what the equivalent SQL means to :func:`~lancelet.expr.filter.parse_filter`
(DataFusion's semantics, as pylance has them), so that ``to_arrow(predicate_tree(sql))``
and ``parse_filter(sql)`` select the same rows:

* A leaf is NULL where its column is NULL (IsNull excepted), as SQL comparisons are.
* Floats: Equals and IsIn use IEEE equality, so ``-0.0`` equals ``0.0`` and NaN equals
  nothing; a float leaf's value is never NaN.  Range compares in IEEE 754's total
  order, the sign of zero ignored: a NaN with its sign bit clear is above every
  number (``x > 1`` holds for it), one with its sign bit set below every number.
* LikePrefix: the string starts with the prefix, character for character.
* Contains: the string holds the substring somewhere, character for character.
* HasAny / HasAll: the list holds an item equal to any / each of the values, floats
  equal when their bits are (``-0.0`` is not ``0.0``); NULL where the list is NULL.
  With no values, FALSE / TRUE on every row, NULL lists included (as SQL's
  ``array_has_any(l, [])`` is).
* And, Or and Not use SQL's three-valued logic (Kleene's).
* Opaque: SQL text translated by :func:`~lancelet.expr.filter.parse_value`; a bare
  ``NULL`` there is a boolean NULL.

:func:`evaluate` applies the same kernels to a table's columns at once, without
building an expression for Arrow's query engine, whose set-up costs more than the
whole evaluation on the few rows an indexed lookup reads.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import FilterError
from lancelet.expr.filter import parse_value
from lancelet.expr.functions import array_has
from lancelet.expr.nodes import (
    And,
    Contains,
    Equals,
    HasAll,
    HasAny,
    IsIn,
    IsNull,
    LikePrefix,
    Not,
    Opaque,
    Or,
    Predicate,
    Range,
)
from lancelet.expr.sql import kernels
from lancelet.file.extensions import ARROW_JSON, is_extension

__all__ = ["column_type", "evaluate", "filter_table", "to_arrow"]

_NULL_BOOL = pa.scalar(None, pa.bool_())
_TRUE = pa.scalar(True)


def to_arrow(pred: Predicate, schema: pa.Schema) -> pc.Expression:
    """The Arrow compute expression for ``pred`` over a table of ``schema``.

    Raises :class:`FilterError` when a leaf names a column ``schema`` lacks, carries a
    value that is not in its column's type, or is one no evaluator here supports.
    """
    if isinstance(pred, And):
        return _combine(pc.and_kleene, pred.children, schema)
    if isinstance(pred, Or):
        return _combine(pc.or_kleene, pred.children, schema)
    if isinstance(pred, Not):
        return pc.invert(to_arrow(pred.child, schema))
    if isinstance(pred, Opaque):
        return _opaque(pred.sql, schema)
    if isinstance(pred, IsNull):
        field, _ = _column(pred.column, schema)
        return pc.is_null(field)
    if isinstance(pred, Equals):
        return _equals(pred, schema)
    if isinstance(pred, Range):
        return _range(pred, schema)
    if isinstance(pred, IsIn):
        return _is_in(pred, schema)
    if isinstance(pred, LikePrefix):
        return _like_prefix(pred, schema)
    if isinstance(pred, (HasAny, HasAll)):
        return _has(pred, schema)
    if isinstance(pred, Contains):
        field, _ = _column(pred.column, schema)
        return pc.match_substring(field, pattern=pred.substring)
    raise FilterError(f"{pred!r} is not a predicate")


# A boolean array, chunked array or scalar (Arrow's types are not checked statically).
Mask: TypeAlias = Any


def evaluate(pred: Predicate, table: pa.Table) -> Mask | None:
    """``pred`` over ``table``'s rows, computed now with the kernels, in the order,
    that :func:`to_arrow`'s expression uses: true, false or null per row (or one of
    them for every row).  None when the tree has a part this evaluator leaves to the
    expression: Opaque text, list predicates, a struct field, a column of lists,
    dictionaries or other nested values, a float column's ranges and IN lists (which
    compare by an order key there), a literal not of its column's type, a NULL or
    NaN literal, or a column the table lacks."""
    if isinstance(pred, And | Or):
        if not pred.children:
            return None
        parts = [evaluate(child, table) for child in pred.children]
        if any(part is None for part in parts):
            return None
        combine = pc.and_kleene if isinstance(pred, And) else pc.or_kleene
        return functools.reduce(combine, parts)
    if isinstance(pred, Not):
        inner = evaluate(pred.child, table)
        return None if inner is None else pc.invert(inner)
    if not isinstance(pred, Equals | Range | IsIn | IsNull | LikePrefix):
        return None
    if "." in pred.column or table.schema.get_field_index(pred.column) < 0:
        return None
    column = table.column(pred.column)
    dtype = column.type
    if isinstance(pred, Equals) and pa.types.is_floating(dtype):
        value = _literal_of(pred.value, dtype)
        if value is None or value.as_py() != value.as_py():
            return None  # NaN
        return pc.equal(column, value)
    if not _plain_type(dtype):
        return None
    if isinstance(pred, IsNull):
        return pc.is_null(column)
    if isinstance(pred, LikePrefix):
        if not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)):
            return None
        return pc.starts_with(column, pattern=pred.prefix)
    if isinstance(pred, Equals):
        value = _literal_of(pred.value, dtype)
        return None if value is None else pc.equal(column, value)
    if isinstance(pred, Range):
        return _eager_range(pred, column)
    values = pred.values
    if values.type != column.type or values.null_count:
        return None
    hit: Mask = pa.scalar(False) if len(values) == 0 else pc.is_in(column, value_set=values)
    return pc.if_else(pc.is_valid(column), hit, _NULL_BOOL)


def filter_table(table: pa.Table, pred: Predicate | None, expression: pc.Expression) -> pa.Table:
    """The rows of ``table`` that ``expression`` keeps, with ``pred`` the same filter as
    a tree: computed by :func:`evaluate`'s kernels where it takes the tree (an Acero
    plan costs about twice as much on a batch, more than the test on a few rows), else
    through Arrow's query engine, which also says what is wrong with a failing one."""
    try:
        mask = None if pred is None else evaluate(pred, table)
    except pa.ArrowException:
        mask = None
    if isinstance(mask, pa.Array | pa.ChunkedArray) and len(mask) == table.num_rows:
        return table.filter(mask)
    return table.filter(expression)


def _plain_type(dtype: pa.DataType) -> bool:
    """Types whose comparisons :func:`evaluate` makes as :func:`to_arrow` does with no
    rewriting (floats compare by an order key there)."""
    t = pa.types
    return bool(
        t.is_integer(dtype)
        or t.is_decimal(dtype)
        or t.is_string(dtype)
        or t.is_large_string(dtype)
        or t.is_binary(dtype)
        or t.is_large_binary(dtype)
        or t.is_temporal(dtype)
        or t.is_boolean(dtype)
    )


def _literal_of(value: pa.Scalar | None, dtype: pa.DataType) -> pa.Scalar | None:
    """A leaf's literal if :func:`_checked` takes it for a column of ``dtype``."""
    if value is None or value.type != dtype or not value.is_valid:
        return None
    return value


def _eager_range(pred: Range, column: pa.ChunkedArray) -> Mask | None:
    out: Mask | None = None
    for bound, inclusive, strict, loose in (
        (pred.low, pred.low_inclusive, pc.greater, pc.greater_equal),
        (pred.high, pred.high_inclusive, pc.less, pc.less_equal),
    ):
        if bound is None:
            continue
        value = _literal_of(bound, column.type)
        if value is None:
            return None
        test = (loose if inclusive else strict)(column, value)
        out = test if out is None else pc.and_kleene(out, test)
    if out is None:
        return pc.if_else(pc.is_valid(column), _TRUE, _NULL_BOOL)
    return out


def column_type(column: str, schema: pa.Schema) -> pa.DataType:
    """The type of a leaf's column: a top-level name or a dotted path into structs."""
    return _column(column, schema)[1]


def _column(column: str, schema: pa.Schema) -> tuple[pc.Expression, pa.DataType]:
    path = column.split(".")
    if schema.get_field_index(path[0]) < 0:
        raise FilterError(f"the predicate names the column {column!r}, which the table lacks")
    dtype: pa.DataType = schema.field(path[0]).type
    for depth, name in enumerate(path[1:], 1):
        if not pa.types.is_struct(dtype) or dtype.get_field_index(name) < 0:
            parent = ".".join(path[:depth])
            raise FilterError(
                f"the predicate names {column!r}, but {parent!r} has no field {name!r}"
            )
        dtype = dtype.field(name).type
    if is_extension(dtype) and dtype.extension_name != ARROW_JSON:
        # Compared as its storage, as the filter compares it (see from_sql).
        return pc.field(*path).cast(dtype.storage_type), dtype.storage_type
    return pc.field(*path), dtype


def _combine(
    fn: Callable[..., Any], children: tuple[Predicate, ...], schema: pa.Schema
) -> pc.Expression:
    if not children:
        raise FilterError(f"an {fn.__name__} predicate with no operands")
    return functools.reduce(fn, [to_arrow(child, schema) for child in children])


def _opaque(sql: str, schema: pa.Schema) -> pc.Expression:
    expression, dtype, _ = parse_value(sql, schema)
    if pa.types.is_null(dtype):
        return pc.scalar(_NULL_BOOL)
    if not pa.types.is_boolean(dtype):
        raise FilterError(f"filter {sql!r} does not return a boolean (it returns {dtype})")
    return expression


def _checked(column: str, value: pa.Scalar, dtype: pa.DataType) -> pa.Scalar:
    if value.type != dtype:
        raise FilterError(
            f"the predicate compares column {column!r} of type {dtype} with a {value.type} value"
        )
    if not value.is_valid:
        raise FilterError(f"the predicate compares column {column!r} with NULL")
    if pa.types.is_floating(dtype) and value.as_py() != value.as_py():
        raise FilterError(f"the predicate compares the float column {column!r} with NaN")
    return value


def _equals(pred: Equals, schema: pa.Schema) -> pc.Expression:
    field, dtype = _column(pred.column, schema)
    return pc.equal(field, pc.scalar(_checked(pred.column, pred.value, dtype)))


def _range(pred: Range, schema: pa.Schema) -> pc.Expression:
    field, dtype = _column(pred.column, schema)
    subject = field
    if pa.types.is_floating(dtype):
        subject = kernels.float_order_key_expr(field, dtype, signed_zero=False)
    out: pc.Expression | None = None
    for bound, inclusive, strict, loose in (
        (pred.low, pred.low_inclusive, operator.gt, operator.ge),
        (pred.high, pred.high_inclusive, operator.lt, operator.le),
    ):
        if bound is None:
            continue
        value = _checked(pred.column, bound, dtype)
        if pa.types.is_floating(dtype):
            value = kernels.float_order_key(value.as_py(), dtype, signed_zero=False)
        test = (loose if inclusive else strict)(subject, pc.scalar(value))
        out = test if out is None else pc.and_kleene(out, test)
    if out is None:
        return pc.if_else(pc.is_valid(field), pc.scalar(_TRUE), pc.scalar(_NULL_BOOL))
    return out


def _is_in(pred: IsIn, schema: pa.Schema) -> pc.Expression:
    field, dtype = _column(pred.column, schema)
    values = pred.values
    if values.type != dtype:
        raise FilterError(
            f"the predicate looks for {values.type} values in column {pred.column!r} "
            f"of type {dtype}"
        )
    if values.null_count:
        raise FilterError(f"the predicate looks for NULL in column {pred.column!r}")
    if pa.types.is_floating(dtype):
        if pc.any(pc.is_nan(values)).as_py():
            raise FilterError(f"the predicate looks for NaN in the float column {pred.column!r}")
        if pc.any(pc.equal(values, 0)).as_py():
            # The hash lookup tells -0.0 from 0.0; SQL's equality does not.
            values = pa.concat_arrays([values, pa.array([0.0, -0.0], dtype)])
    if len(values) == 0:
        hit: pc.Expression = pc.scalar(pa.scalar(False))
    else:
        hit = pc.is_in(field, value_set=values)
    return pc.if_else(pc.is_valid(field), hit, pc.scalar(_NULL_BOOL))


def _like_prefix(pred: LikePrefix, schema: pa.Schema) -> pc.Expression:
    field, dtype = _column(pred.column, schema)
    if not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)):
        raise FilterError(
            f"the predicate matches a prefix of column {pred.column!r} of type {dtype}"
        )
    return pc.starts_with(field, pattern=pred.prefix)


def _has(pred: HasAny | HasAll, schema: pa.Schema) -> pc.Expression:
    field, dtype = _column(pred.column, schema)
    if not array_has.is_list(dtype):
        raise FilterError(
            f"the predicate looks for values in column {pred.column!r} of type {dtype}"
        )
    item_type, values = dtype.value_type, pred.values
    if values.type != item_type or pa.types.is_nested(item_type):
        raise FilterError(
            f"the predicate looks for {values.type} values in the lists of column "
            f"{pred.column!r} of type {dtype}"
        )
    if values.null_count:
        raise FilterError(f"the predicate looks for NULL in the lists of column {pred.column!r}")
    if pa.types.is_floating(item_type) and pc.any(pc.is_nan(values)).as_py():
        raise FilterError(f"the predicate looks for NaN in the lists of column {pred.column!r}")
    mode: array_has.Mode = "any" if isinstance(pred, HasAny) else "all"
    return array_has.has_values_expr(field, dtype, values, mode)
