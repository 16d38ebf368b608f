"""Spark's pushed-down filters as Arrow compute expressions.

Spark hands a reader the conjuncts of a query's ``WHERE`` clause that compare one
column with literals.  Each is translated to a :class:`pyarrow.compute.Expression` with
Spark's semantics (three-valued logic; NaN equal to itself and greater than every other
float), or left to Spark when that cannot be guaranteed.  Spark does not re-check the
filters a reader accepts, so a translation that could differ from Spark's answer for
some row is not made.

:func:`to_predicate` translates the same filters into the predicate tree
(:mod:`lancelet.expr`) that index planning reads, with literals in the column's exact
type (or none at all).  The tree's leaves have DataFusion's float semantics (see
:mod:`lancelet.expr.arrow`), so Spark's "every NaN is greater than every number" is
spelled with them: a NaN with its sign bit set is the only float below ``-inf`` there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import datasource as sds

from lancelet.expr import And, Equals, IsIn, IsNull, LikePrefix, Not, Or, Predicate, Range

_NULL_BOOL = pa.scalar(None, pa.bool_())
_FALSE = pa.scalar(False)


class _Untranslatable(Exception):
    """The filter is left for Spark to evaluate."""


def _column(attribute: tuple[str, ...], schema: pa.Schema) -> tuple[pc.Expression, pa.DataType]:
    dtype: pa.DataType | None = None
    for depth, name in enumerate(attribute):
        if depth == 0:
            if name not in schema.names:
                raise _Untranslatable(name)
            dtype = schema.field(name).type
        else:
            assert dtype is not None
            if not pa.types.is_struct(dtype) or dtype.get_field_index(name) < 0:
                raise _Untranslatable(name)
            dtype = dtype.field(name).type
    assert dtype is not None
    return pc.field(*attribute), dtype


def _literal(value: Any, dtype: pa.DataType) -> pa.Scalar:
    """``value`` in the column's type when that is exact; otherwise in its own type,
    which Arrow then compares after widening both sides."""
    if value is None or isinstance(value, (list, tuple, dict)):
        raise _Untranslatable(value)
    if pa.types.is_floating(dtype) and isinstance(value, float) and math.isnan(value):
        raise _Untranslatable(value)  # rare enough to leave to Spark
    try:
        return pa.scalar(value).cast(dtype)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError):
        try:
            return pa.scalar(value)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise _Untranslatable(value) from exc


def _nan(column: pc.Expression, dtype: pa.DataType) -> pc.Expression | None:
    return pc.is_nan(column) if pa.types.is_floating(dtype) else None


def _greater(op: Callable[[Any, Any], pc.Expression]) -> Callable[..., pc.Expression]:
    # Spark orders NaN above every number, so "x > 1.0" holds for NaN.
    def build(column: pc.Expression, dtype: pa.DataType, value: Any) -> pc.Expression:
        out = op(column, _literal(value, dtype))
        nan = _nan(column, dtype)
        return out if nan is None else out | nan

    return build


def _compare(op: Callable[[Any, Any], pc.Expression]) -> Callable[..., pc.Expression]:
    def build(column: pc.Expression, dtype: pa.DataType, value: Any) -> pc.Expression:
        return op(column, _literal(value, dtype))

    return build


def _null_safe_equal(column: pc.Expression, dtype: pa.DataType, value: Any) -> pc.Expression:
    if value is None:
        return pc.is_null(column)
    return pc.if_else(pc.is_null(column), _FALSE, column == _literal(value, dtype))


def _in(column: pc.Expression, dtype: pa.DataType, values: Sequence[Any]) -> pc.Expression:
    literals = [_literal(v, dtype) for v in values]
    if not literals or len({s.type for s in literals}) != 1:
        raise _Untranslatable(values)
    value_set = pa.array([s.as_py() for s in literals], literals[0].type)
    if pa.types.is_floating(value_set.type) and pc.any(pc.equal(value_set, 0)).as_py():
        # The hash lookup tells -0.0 from 0.0; Spark's IN does not.
        value_set = pa.concat_arrays([value_set, pa.array([0.0, -0.0], value_set.type)])
    found = pc.is_in(column, value_set=value_set)
    # SQL: NULL IN (...) is NULL, not false, which matters under NOT.
    return pc.if_else(pc.is_null(column), _NULL_BOOL, found)


def _string(function: Callable[..., pc.Expression]) -> Callable[..., pc.Expression]:
    def build(column: pc.Expression, dtype: pa.DataType, value: Any) -> pc.Expression:
        if not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)):
            raise _Untranslatable(dtype)
        if not isinstance(value, str):
            raise _Untranslatable(value)
        return function(column, pattern=value)

    return build


_COMPARISONS: dict[type[sds.Filter], Callable[..., pc.Expression]] = {
    sds.EqualTo: _compare(lambda a, b: a == b),
    sds.EqualNullSafe: _null_safe_equal,
    sds.GreaterThan: _greater(lambda a, b: a > b),
    sds.GreaterThanOrEqual: _greater(lambda a, b: a >= b),
    sds.LessThan: _compare(lambda a, b: a < b),
    sds.LessThanOrEqual: _compare(lambda a, b: a <= b),
    sds.In: _in,
    sds.StringStartsWith: _string(pc.starts_with),
    sds.StringEndsWith: _string(pc.ends_with),
    sds.StringContains: _string(pc.match_substring),
}


def _translate(spark_filter: sds.Filter, schema: pa.Schema) -> pc.Expression:
    if isinstance(spark_filter, sds.Not):
        return ~_translate(spark_filter.child, schema)
    if isinstance(spark_filter, (sds.IsNull, sds.IsNotNull)):
        column, _ = _column(spark_filter.attribute, schema)
        null = pc.is_null(column)
        return null if isinstance(spark_filter, sds.IsNull) else ~null
    build = _COMPARISONS.get(type(spark_filter))
    if build is None:
        raise _Untranslatable(spark_filter)
    # Every comparison filter has these two fields.
    attribute, value = getattr(spark_filter, "attribute"), getattr(spark_filter, "value")  # noqa: B009
    column, dtype = _column(attribute, schema)
    if pa.types.is_dictionary(dtype):
        raise _Untranslatable(dtype)
    return build(column, dtype, value)


def to_expression(spark_filter: sds.Filter, schema: pa.Schema) -> pc.Expression | None:
    """The Arrow expression for one Spark filter over a table of ``schema``; None when
    it is left to Spark."""
    try:
        expression = _translate(spark_filter, schema)
        # Binding to the schema catches literals Arrow cannot compare with the column.
        schema.empty_table().filter(expression)
    except (
        _Untranslatable,
        pa.ArrowInvalid,
        pa.ArrowNotImplementedError,
        pa.ArrowTypeError,
        OverflowError,
    ):
        return None
    return expression


def conjunction(expressions: Sequence[pc.Expression]) -> pc.Expression | None:
    out: pc.Expression | None = None
    for expression in expressions:
        out = expression if out is None else out & expression
    return out


def top_level_columns(spark_filter: sds.Filter) -> set[str]:
    if isinstance(spark_filter, sds.Not):
        return top_level_columns(spark_filter.child)
    attribute = getattr(spark_filter, "attribute", ())
    return {attribute[0]} if attribute else set()


# --- the predicate tree ------------------------------------------------------------


def to_predicate(spark_filter: sds.Filter, schema: pa.Schema) -> Predicate | None:
    """The predicate tree for one Spark filter over a table of ``schema``, with Spark's
    semantics; None when it is left to Spark, as :func:`to_expression` leaves it, or when
    a literal is not exactly a value of its column's type."""
    if to_expression(spark_filter, schema) is None:
        return None
    try:
        return _tree(spark_filter, schema)
    except _Untranslatable:
        return None


def _tree(spark_filter: sds.Filter, schema: pa.Schema) -> Predicate:
    if isinstance(spark_filter, sds.Not):
        return Not(_tree(spark_filter.child, schema))
    attribute: tuple[str, ...] = getattr(spark_filter, "attribute", ())
    if any("." in name for name in attribute):
        raise _Untranslatable(attribute)  # a dotted name would read as a struct path
    _, dtype = _column(attribute, schema)
    if pa.types.is_dictionary(dtype):
        raise _Untranslatable(dtype)
    column = ".".join(attribute)
    if isinstance(spark_filter, (sds.IsNull, sds.IsNotNull)):
        null = IsNull(column)
        return null if isinstance(spark_filter, sds.IsNull) else Not(null)
    value = getattr(spark_filter, "value")  # noqa: B009
    if isinstance(spark_filter, sds.In):
        return _tree_in(column, dtype, value)
    if isinstance(spark_filter, sds.StringStartsWith):
        if not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)):
            raise _Untranslatable(dtype)
        if not isinstance(value, str):
            raise _Untranslatable(value)
        return LikePrefix(column, value)
    if isinstance(spark_filter, sds.EqualNullSafe):
        if value is None:
            return IsNull(column)
        # Never NULL: FALSE for a NULL column.
        return And((Not(IsNull(column)), Equals(column, _exact(value, dtype))))
    if isinstance(spark_filter, sds.EqualTo):
        return Equals(column, _exact(value, dtype))
    return _tree_range(spark_filter, column, dtype, _exact(value, dtype))


def _exact(value: Any, dtype: pa.DataType) -> pa.Scalar:
    """``value`` in the column's type, when it is exactly that value there."""
    if value is None or isinstance(value, (list, tuple, dict)):
        raise _Untranslatable(value)
    if isinstance(value, float) and math.isnan(value):
        raise _Untranslatable(value)
    try:
        source = pa.scalar(value)
        if _kind(source.type) != _kind(dtype):
            raise _Untranslatable(value)  # e.g. an integer for a timestamp column
        cast = source.cast(dtype)
        back = cast.cast(source.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError):
        raise _Untranslatable(value) from None
    if not back.equals(source):
        raise _Untranslatable(value)  # rounded, e.g. a double for a float column
    return cast


def _kind(dtype: pa.DataType) -> str:
    if pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_decimal(dtype):
        return "number"
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return "string"
    if pa.types.is_temporal(dtype):
        return "time"
    return str(dtype)


def _tree_in(column: str, dtype: pa.DataType, values: Sequence[Any]) -> Predicate:
    if not values:
        raise _Untranslatable(values)
    array = pa.array([_exact(v, dtype) for v in values], dtype)
    return IsIn(column, pc.unique(array))


def _tree_range(
    spark_filter: sds.Filter, column: str, dtype: pa.DataType, value: pa.Scalar
) -> Predicate:
    kind = type(spark_filter)
    if kind not in (sds.GreaterThan, sds.GreaterThanOrEqual, sds.LessThan, sds.LessThanOrEqual):
        raise _Untranslatable(spark_filter)
    greater = kind in (sds.GreaterThan, sds.GreaterThanOrEqual)
    inclusive = kind in (sds.GreaterThanOrEqual, sds.LessThanOrEqual)
    if not pa.types.is_floating(dtype):
        if greater:
            return Range(column, low=value, low_inclusive=inclusive)
        return Range(column, high=value, high_inclusive=inclusive)
    # In the tree's total order a NaN with its sign bit set sorts below -inf, where
    # Spark puts every NaN above every number.
    below_every_number = pa.scalar(-math.inf, dtype)
    if greater:
        above = Range(column, low=value, low_inclusive=inclusive)
        return Or((above, Range(column, high=below_every_number, high_inclusive=False)))
    return Range(column, low=below_every_number, high=value, high_inclusive=inclusive)
