"""Comparisons as pylance (DataFusion) types them: a literal takes the type of what it
is compared with when it can do so exactly (:func:`adopt`), strings meet dates and
timestamps by being parsed, timestamps of different zones are aligned, and floats
compare in IEEE 754's total order (:func:`compare`).
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from sqlglot import exp

from lancelet.expr.sql import kernels, timestamps
from lancelet.expr.sql.dialect import sql_text
from lancelet.expr.sql.values import NULL_BOOL, Value, apply, cast, const, family

__all__ = ["adopt", "coerce", "compare", "float_operands"]


def adopt(literal: Value, target: pa.DataType, node: exp.Expression) -> Value:
    """Give a literal the type of what it is compared with, when that keeps its value."""
    value = literal.const
    if value is None or value.type == target:
        return literal
    if pa.types.is_null(value.type):
        return const(pa.scalar(None, target))
    if pa.types.is_timestamp(target):
        return _adopt_time(literal, target, node)
    source, dest = family(value.type), family(target)
    if source == "string" and dest == "time":
        return cast(literal, target, node)
    if source != dest:
        return literal
    if pa.types.is_decimal(target) and pa.types.is_integer(value.type):
        # Arrow casts integers only to decimals with room for any int64 value.
        try:
            return const(pa.scalar(decimal.Decimal(value.as_py()), target))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return literal
    if pa.types.is_floating(target):
        # SQL engines round the literal to the column's precision: f32 = 0.1 matches.
        return const(value.cast(target, safe=False))
    try:
        converted = value.cast(target)
        exact = converted.cast(value.type) == value
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return literal
    return const(converted) if exact else literal


def _adopt_time(literal: Value, target: pa.TimestampType, node: exp.Expression) -> Value:
    """A constant compared with a timestamp, as :func:`timestamps.adopt` reads it."""
    assert literal.const is not None
    if pa.types.is_timestamp(literal.type) and literal.type.tz is None and target.tz:
        timestamps.check_zone_reading(node, target.tz)
    adopted = timestamps.adopt(literal.const, target)
    return literal if adopted is None else const(adopted)


def _align_times(left: Value, right: Value, node: exp.Expression) -> tuple[Value, Value]:
    """Two timestamps as pylance compares them: one without a zone read in the other's
    zone; of different units, refused (pylance truncates to the coarser)."""
    values = [left, right]
    for i, (value, other) in enumerate(((left, right), (right, left))):
        if value.type.tz is None and other.type.tz is not None:
            timestamps.check_zone_reading(node, other.type.tz)
            zoned = pa.timestamp(value.type.unit, other.type.tz)
            values[i] = Value(timestamps.localize(value.expr, other.type.tz), zoned)
    if left.type.unit != right.type.unit:
        constant = left.const if left.const is not None else right.const
        raise timestamps.unit_error(sql_text(node), left.type, right.type, constant)
    return values[0], values[1]


def coerce(left: Value, right: Value, node: exp.Expression) -> tuple[Value, Value]:
    if pa.types.is_null(left.type) and pa.types.is_null(right.type):
        # No kernel compares two untyped NULLs; the answer is NULL whatever the type.
        return NULL_BOOL, NULL_BOOL
    if left.const is not None and right.const is None:
        left = adopt(left, right.type, node)
    elif right.const is not None and left.const is None:
        right = adopt(right, left.type, node)
    # DataFusion compares a string column with a date by parsing the strings.
    if family(left.type) == "string" and family(right.type) == "time":
        left = cast(left, right.type, node)
    elif family(right.type) == "string" and family(left.type) == "time":
        right = cast(right, left.type, node)
    if pa.types.is_timestamp(left.type) and pa.types.is_timestamp(right.type):
        left, right = _align_times(left, right, node)
    return left, right


def float_operands(left: Value, right: Value, node: exp.Expression) -> tuple[Value, Value]:
    """Convert the integer side of an integer/float pair to the float type.

    Arrow would too, but with a safe cast that refuses integers beyond 2**24 (float32) or
    2**53 (float64); SQL engines just round.
    """
    if pa.types.is_integer(left.type) and pa.types.is_floating(right.type):
        left = cast(left, right.type, node, safe=False)
    elif pa.types.is_floating(left.type) and pa.types.is_integer(right.type):
        right = cast(right, left.type, node, safe=False)
    return left, right


def compare(fn: Callable[..., Any], left: Value, right: Value, node: exp.Expression) -> Value:
    left, right = float_operands(*coerce(left, right, node), node)
    if not (pa.types.is_floating(left.type) and pa.types.is_floating(right.type)):
        return apply(fn, [left, right], node)
    # DataFusion orders floats totally (-NaN first, NaN last, -0.0 before 0.0), except
    # that a constant compares with -0.0 and 0.0 alike.  Arrow's kernels follow IEEE,
    # so both sides become integer keys that sort in the total order.
    wide = left.type if left.type.bit_width >= right.type.bit_width else right.type
    signed_zero = left.const is None and right.const is None
    keys = [
        _order_key(v if v.type == wide else cast(v, wide, node), signed_zero, node)
        for v in (left, right)
    ]
    return apply(fn, keys, node)


def _order_key(value: Value, signed_zero: bool, node: exp.Expression) -> Value:
    if value.const is not None:
        key = kernels.float_order_key(value.const.as_py(), value.type, signed_zero=signed_zero)
        return const(key)
    expr = kernels.float_order_key_expr(value.expr, value.type, signed_zero=signed_zero)
    return Value(expr, kernels.order_key_type(value.type))
