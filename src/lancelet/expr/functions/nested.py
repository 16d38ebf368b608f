"""Struct and list functions, and ``arrow_typeof``, as pylance evaluates them.

* ``struct(a, ...)`` (``row``) names its fields ``c0``, ``c1``...; ``named_struct('x',
  a, ...)`` takes names and values; neither is ever NULL.  ``get_field(s, 'x')`` is
  ``s['x']``.
* ``array_length(l)`` (``list_length``) and ``cardinality(l)`` count items, as
  ``uint64``; ``array_element(l, i)`` (``array_extract``, ``list_element``,
  ``list_extract``) is ``l[i]``: 1-based, from the end when negative, NULL out of
  range; ``array_slice(l, from, to[, stride])`` keeps items ``from`` to ``to``
  (1-based, inclusive); ``array_empty(l)`` (``empty``, ``list_empty``).
* ``arrow_typeof(x)``: the name arrow-rs prints for x's type.
* ``make_array``/``make_list`` build the values of ``array_has_any`` and the like only.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from lancelet.expr.functions.base import (
    Call,
    Value,
    apply,
    cast,
    const,
    is_null,
    null,
)
from lancelet.expr.sql import kernels
from lancelet.expr.sql.references import struct_field

__all__ = ["FUNCTIONS", "type_name"]


def _is_list(dtype: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
    )


def lists(call: Call, index: int = 0) -> Value | None:
    """Argument ``index``, a list; None when it is a NULL literal."""
    value = call.value(index)
    if is_null(value.type):
        return None
    if not _is_list(value.type):
        raise call.error(f"takes a list, not {value.type}")
    return value


# --- structs -------------------------------------------------------------------------


def _make_struct(call: Call, names: list[str], values: list[Value]) -> Value:
    if len(set(names)) != len(names):
        raise call.error("the field names must differ")
    typed = [null(pa.null()) if is_null(v.type) else v for v in values]
    if all(v.const is not None for v in typed):
        fields = [pa.field(n, v.type) for n, v in zip(names, typed, strict=True)]
        row = {n: v.const.as_py() for n, v in zip(names, typed, strict=True) if v.const is not None}
        return const(pa.scalar(row, pa.struct(fields)))
    return apply(pc.make_struct, typed, call.node, field_names=names)


def struct(call: Call) -> Value:
    call.arity(1, 1 << 16)
    return _make_struct(call, [f"c{i}" for i in range(len(call.args))], call.values())


def named_struct(call: Call) -> Value:
    if not call.args or len(call.args) % 2:
        raise call.error(f"named_struct requires an even number of arguments, got {len(call.args)}")
    names: list[str] = []
    for index in range(0, len(call.args), 2):
        name = call.str_literal(index, "field name")
        if name is None or name == "":
            raise call.error("the field names must be non-empty string literals")
        names.append(name)
    values = [call.value(i) for i in range(1, len(call.args), 2)]
    return _make_struct(call, names, values)


def get_field(call: Call) -> Value:
    call.arity(2)
    subject = call.value(0)
    if not pa.types.is_struct(subject.type):
        raise call.error(f"takes a struct, not {subject.type}")
    name = call.str_literal(1, "field name")
    if name is None:
        raise call.error("the field name must not be NULL")
    return struct_field(call.translator, subject, name, call.node)


# --- lists ---------------------------------------------------------------------------


def _lengths(call: Call, subject: Value) -> Value:
    return cast(apply(pc.list_value_length, [subject], call.node), pa.uint64(), call.node)


def array_length(call: Call) -> Value:
    """``array_length(l[, dimension])``: the items of ``l`` (dimension 1)."""
    call.arity(1, 2)
    subject = lists(call)
    dimension = call.int_literal(1, "dimension") if len(call.args) == 2 else 1
    if subject is None or dimension is None:
        return null(pa.uint64())
    if dimension == 1:
        return _lengths(call, subject)
    if dimension > 1 and not _is_list(subject.type.value_type):
        return null(pa.uint64())
    raise call.error(f"lancelet reads dimension 1 of a list of lists only, not {dimension}")


def cardinality(call: Call) -> Value:
    call.arity(1)
    subject = lists(call)
    if subject is None:
        return null(pa.uint64())
    if _is_list(subject.type.value_type):
        raise call.error("lancelet counts the items of lists of values only, not of lists of lists")
    return _lengths(call, subject)


def array_element(call: Call) -> Value:
    """``l[i]``: 1-based, negative from the end, NULL out of range."""
    call.arity(2)
    subject = lists(call)
    index = call.int_literal(1, "index")
    if subject is None:
        return null(pa.null())
    if index is None:
        return null(subject.type.value_type)
    if subject.const is not None:
        item = kernels.list_item(pa.array([subject.const.as_py()], subject.type), index)[0]
        return const(item)
    return Value(kernels.list_item_expr(subject.expr, subject.type, index), subject.type.value_type)


def array_slice(call: Call) -> Value:
    """``array_slice(l, from, to[, stride])`` with positive literal bounds."""
    call.arity(3, 4)
    subject = lists(call)
    bounds = [call.int_literal(i, "bound") for i in range(1, len(call.args))]
    if subject is None:
        return null(pa.null())
    if any(b is None for b in bounds):
        return null(subject.type)
    begin, end, *rest = (b for b in bounds if b is not None)
    stride = rest[0] if rest else 1
    if begin < 0 or end < 1 or stride < 1:
        raise call.error("lancelet slices with positive bounds and stride only")
    if pa.types.is_fixed_size_list(subject.type):
        raise call.error(f"lancelet does not slice {subject.type}")
    start = max(begin, 1) - 1
    stop = max(end, start)
    return apply(pc.list_slice, [subject], call.node, start=start, stop=stop, step=stride)


def array_empty(call: Call) -> Value:
    call.arity(1)
    subject = lists(call)
    if subject is None:
        return null(pa.bool_())
    counted = apply(pc.list_value_length, [subject], call.node)
    return apply(pc.equal, [counted, const(pa.scalar(0, counted.type))], call.node)


def make_array(call: Call) -> Value:
    raise call.error(
        "lancelet takes make_array/make_list only as the values of array_has_any, "
        "array_has_all and their other spellings"
    )


# --- arrow_typeof ----------------------------------------------------------------------

_NAMES = {
    pa.null(): "Null",
    pa.bool_(): "Boolean",
    pa.int8(): "Int8",
    pa.int16(): "Int16",
    pa.int32(): "Int32",
    pa.int64(): "Int64",
    pa.uint8(): "UInt8",
    pa.uint16(): "UInt16",
    pa.uint32(): "UInt32",
    pa.uint64(): "UInt64",
    pa.float16(): "Float16",
    pa.float32(): "Float32",
    pa.float64(): "Float64",
    pa.string(): "Utf8",
    pa.large_string(): "LargeUtf8",
    pa.string_view(): "Utf8View",
    pa.binary(): "Binary",
    pa.large_binary(): "LargeBinary",
    pa.date32(): "Date32",
    pa.date64(): "Date64",
}
_UNITS = {"s": "s", "ms": "ms", "us": "µs", "ns": "ns"}


def type_name(dtype: pa.DataType) -> str | None:
    """arrow-rs's display of ``dtype``; None for types lancelet does not name."""
    if dtype in _NAMES:
        return _NAMES[dtype]
    if pa.types.is_timestamp(dtype):
        zone = f', "{dtype.tz}"' if dtype.tz is not None else ""
        return f"Timestamp({_UNITS[dtype.unit]}{zone})"
    if pa.types.is_decimal128(dtype) or pa.types.is_decimal256(dtype):
        return f"Decimal{dtype.bit_width}({dtype.precision}, {dtype.scale})"
    if pa.types.is_fixed_size_binary(dtype):
        return f"FixedSizeBinary({dtype.byte_width})"
    if pa.types.is_dictionary(dtype):
        key, value = type_name(dtype.index_type), type_name(dtype.value_type)
        return None if key is None or value is None else f"Dictionary({key}, {value})"
    if _is_list(dtype):
        return _list_name(dtype)
    if pa.types.is_struct(dtype):
        fields = [_field_name(dtype.field(i)) for i in range(dtype.num_fields)]
        if any(f is None for f in fields):
            return None
        return "Struct(" + ", ".join(f"{f}" for f in fields if f is not None) + ")"
    return None


def _field_name(field: pa.Field) -> str | None:
    inner = type_name(field.type)
    if inner is None or field.metadata or '"' in field.name:
        return None
    return f'"{field.name}": {"" if field.nullable else "non-null "}{inner}'


def _list_name(dtype: pa.DataType) -> str | None:
    item = dtype.value_field
    inner = type_name(item.type)
    if inner is None or item.metadata:
        return None
    described = ("" if item.nullable else "non-null ") + inner
    if item.name != "item":
        described += f", field: '{item.name}'"
    if pa.types.is_fixed_size_list(dtype):
        return f"FixedSizeList({dtype.list_size} x {described})"
    return f"{'LargeList' if pa.types.is_large_list(dtype) else 'List'}({described})"


def arrow_typeof(call: Call) -> Value:
    call.arity(1)
    value = call.value(0)
    name = type_name(value.type)
    if name is None:
        raise call.error(f"lancelet does not name the type {value.type} as arrow-rs does")
    return const(pa.scalar(name, pa.string()))


FUNCTIONS: dict[str, Callable[[Call], Value]] = {
    "struct": struct,
    "row": struct,
    "named_struct": named_struct,
    "get_field": get_field,
    "array_length": array_length,
    "list_length": array_length,
    "cardinality": cardinality,
    "array_element": array_element,
    "array_extract": array_element,
    "list_element": array_element,
    "list_extract": array_element,
    "array_slice": array_slice,
    "list_slice": array_slice,
    "array_empty": array_empty,
    "list_empty": array_empty,
    "empty": array_empty,
    "arrow_typeof": arrow_typeof,
    "make_array": make_array,
    "make_list": make_array,
}
