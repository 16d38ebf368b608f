"""Lance's vector functions in SQL: ``_cast_list_f16(v)``, as pylance 14 evaluates it
(measured):

* ``v`` is a list (``List`` or ``FixedSizeList``, not ``LargeList``) of float32 or
  float16; the result is the same kind of list of float16, with the same nulls;
* each element rounds to the nearest float16 (ties to even), beyond float16's range
  to infinity, as IEEE conversion does (pyarrow's unchecked cast is that conversion).

pylance has no other function of the family (``_cast_list_f32`` and the like are
unknown to it, so they stay unknown here).
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from lancelet.expr.functions.base import Call, Value, cast, is_null, null

__all__ = ["FUNCTIONS"]


def _half_list(dtype: pa.DataType) -> pa.DataType | None:
    """The float16 list type ``_cast_list_f16`` makes of a ``dtype`` list; None when
    ``dtype`` is not a list pylance takes."""
    if pa.types.is_fixed_size_list(dtype):
        return pa.list_(pa.field(dtype.value_field.name, pa.float16()), dtype.list_size)
    if pa.types.is_list(dtype):
        return pa.list_(pa.field(dtype.value_field.name, pa.float16()))
    return None


def cast_list_f16(call: Call) -> Value:
    if not call.args:
        raise call.error("'_cast_list_f16' does not support zero arguments")
    call.arity(1)
    value = call.value(0)
    if is_null(value.type):
        return null(pa.list_(pa.float16()))
    target = _half_list(value.type)
    if target is None:
        raise call.error("cast_list_f16 only supports FixedSizeList/List arguments")
    element = value.type.value_type
    if not (pa.types.is_float32(element) or pa.types.is_float16(element)):
        raise call.error("cast_list_f16 only supports list of float32 or float16")
    # Unchecked: an element beyond float16's range becomes infinity, as in pylance.
    return cast(value, target, call.node, safe=False)


FUNCTIONS: dict[str, Callable[[Call], Value]] = {"_cast_list_f16": cast_list_f16}
