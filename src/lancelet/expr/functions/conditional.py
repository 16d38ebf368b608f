"""``coalesce``, ``nvl``/``ifnull``, ``nvl2``, ``nullif``, ``greatest``, ``least`` and
Lance's ``is_valid``, as pylance evaluates them.

The arguments are brought to a common type first (:mod:`.coercion`), so that
``coalesce(int32_col, 0)`` is ``int64`` as in pylance.  Floats are compared as
DataFusion compares them here, in IEEE 754's total order: ``nullif(x, x)`` is NULL for a
NaN, ``-0.0`` is not ``0.0``, and ``greatest`` takes a NaN over every number.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lancelet.expr.functions.base import (
    Call,
    Value,
    apply,
    cast,
    const,
    is_float,
    is_null,
    is_numeric,
    is_string,
    null,
)
from lancelet.expr.functions.coercion import CoercionError, common_type
from lancelet.expr.functions.numeric import as_float64
from lancelet.expr.sql import kernels

__all__ = ["FUNCTIONS"]


def unify(call: Call, values: list[Value]) -> tuple[pa.DataType, list[Value]]:
    """The arguments' common type, and the arguments cast to it."""
    try:
        target = common_type([v.type for v in values])
    except CoercionError as e:
        raise call.error(f"lancelet does not combine arguments of types {e}") from None
    if pa.types.is_decimal(target) and any(is_float(v.type) for v in values):
        raise call.error("lancelet does not combine floats with decimals")
    return target, [to_type(call, v, target) for v in values]


def _text_result(call: Call, value: Value, *indices: int) -> Value:
    """A string result is string_view in pylance when one of those arguments is."""
    return call.text_result(value, is_string(value.type) and call.arg_is_view(*indices))


def to_type(call: Call, value: Value, target: pa.DataType) -> Value:
    if value.type == target:
        return value
    if is_null(value.type):
        return null(target)
    # Integers to a wider integer, to a float (rounding, as DataFusion casts), or
    # timestamps to a coarser unit (truncating toward zero, as arrow-rs casts).
    lossy = is_float(target) or pa.types.is_timestamp(target)
    return cast(value, target, call.node, safe=not lossy)


def coalesce(call: Call) -> Value:
    call.arity(1, 1 << 16)
    target, values = unify(call, call.values())
    if is_null(target):
        return null(target)
    every = range(len(values))
    if len(values) == 1:
        return _text_result(call, values[0], *every)
    return _text_result(call, apply(pc.coalesce, values, call.node), *every)


def nvl(call: Call) -> Value:
    """``nvl(a, b)`` (``ifnull``): ``coalesce(a, b)``, but typed by nvl's signature:
    decimals become float64, and other types than numbers and strings become text
    (refused here)."""
    call.arity(2)
    values = call.values()
    types = [v.type for v in values if not is_null(v.type)]
    if any(not (is_numeric(t) or is_string(t)) for t in types):
        shown = ", ".join(str(t) for t in types)
        raise call.error(f"pylance converts the arguments ({shown}) to text; lancelet does not")
    if any(pa.types.is_decimal(t) for t in types) and all(is_numeric(t) for t in types):
        first, second = (as_float64(call, v) for v in values)
        return apply(pc.coalesce, [first, second], call.node)
    result = coalesce(call)
    if is_string(result.type) and any(is_null(v.type) for v in values):
        # pylance types nvl of a string (or large string) and a NULL literal as
        # string_view (measured; coalesce keeps the string's type).
        return call.as_view(result)
    return result


def nvl2(call: Call) -> Value:
    """``nvl2(x, a, b)``: ``a`` where ``x`` is not NULL, else ``b``, in the common type
    of all three (``nvl2(double, int, int)`` is a double), or text when ``a`` and ``b``
    are text."""
    call.arity(3)
    tested, *choices = call.values()
    try:
        target = common_type([v.type for v in (tested, *choices)])
    except CoercionError:
        target, _ = unify(call, choices)
        if not (is_string(target) and not pa.types.is_nested(tested.type)):
            # pylance casts the tested value to the common type too (failing on some rows).
            raise call.error(
                f"lancelet does not test a {tested.type} against {target} values"
            ) from None
    if pa.types.is_decimal(target) and any(is_float(v.type) for v in call.values()):
        raise call.error("lancelet does not combine floats with decimals")
    if is_null(target):
        return null(target)
    when_valid, when_null = (to_type(call, v, target) for v in choices)
    valid = apply(pc.is_valid, [tested], call.node)
    chosen = apply(pc.if_else, [valid, when_valid, when_null], call.node)
    return _text_result(call, chosen, 1, 2)


def nullif(call: Call) -> Value:
    """``nullif(a, b)``: NULL where ``a`` equals ``b``, else ``a``."""
    call.arity(2)
    target, (first, second) = unify(call, call.values())
    if is_null(target):
        return null(target)
    if pa.types.is_nested(target):
        raise call.error(f"lancelet does not compare {target} values")
    same = apply(pc.coalesce, [_equal(call, first, second), const(pa.scalar(False))], call.node)
    return _text_result(call, apply(pc.if_else, [same, null(target), first], call.node), 0, 1)


def _equal(call: Call, left: Value, right: Value) -> Value:
    if not is_float(left.type):
        return apply(pc.equal, [left, right], call.node)
    return apply(pc.equal, [order_key(left), order_key(right)], call.node)


def order_key(value: Value) -> Value:
    """Integers that order the float ``value`` as IEEE 754's total order does."""
    if value.const is not None:
        key = kernels.float_order_key(value.const.as_py(), value.type, signed_zero=True)
        return const(key)
    expr = kernels.float_order_key_expr(value.expr, value.type, signed_zero=True)
    return Value(expr, kernels.order_key_type(value.type))


def _extreme(pick: Callable[..., Any], later_wins: Callable[..., Any]) -> Callable[[Call], Value]:
    def extreme(call: Call) -> Value:
        """The greatest (least) argument that is not NULL."""
        call.arity(1, 1 << 16)
        target, values = unify(call, call.values())
        if is_null(target):
            return null(target)
        if pa.types.is_nested(target) or pa.types.is_binary(target):
            raise call.error(f"lancelet does not compare {target} values")
        every = range(len(values))
        if not is_float(target):
            return _text_result(call, apply(pick, values, call.node, skip_nulls=True), *every)
        best = values[0]
        for value in values[1:]:
            wins = apply(later_wins, [order_key(value), order_key(best)], call.node)
            # A NULL comparison (either side NULL) keeps whichever is not NULL.
            wins = apply(pc.coalesce, [wins, apply(pc.is_null, [best], call.node)], call.node)
            best = apply(pc.if_else, [wins, value, best], call.node)
        return best

    return extreme


def is_valid(call: Call) -> Value:
    """Lance's ``is_valid(x)``: ``x IS NOT NULL``."""
    call.arity(1)
    return apply(pc.is_valid, [call.value(0)], call.node)


FUNCTIONS: dict[str, Callable[[Call], Value]] = {
    "coalesce": coalesce,
    "nvl": nvl,
    "ifnull": nvl,
    "nvl2": nvl2,
    "nullif": nullif,
    "greatest": _extreme(pc.max_element_wise, pc.greater),
    "least": _extreme(pc.min_element_wise, pc.less),
    "is_valid": is_valid,
}
