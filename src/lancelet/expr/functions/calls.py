"""Function calls: each name sqlglot leaves as a plain call goes to its translation
(the scalar functions of :mod:`lancelet.expr.functions.registry`, the JSON functions,
list membership, ``regexp_match``, ``arrow_cast``) or is refused by name; and the
functions sqlglot parses itself (``lower``, ``upper``, ``length``, ``abs``,
``current_date``, ``EXTRACT(.. FROM ..)`` and the like).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.errors import FilterError
from lancelet.expr.functions import (
    arguments,
    case_mapping,
    json_functions,
    matching,
    membership,
    registry,
)
from lancelet.expr.sql import catalog, value_types
from lancelet.expr.sql.casts import sql_cast
from lancelet.expr.sql.dialect import sql_text
from lancelet.expr.sql.translator import Handler, Translator
from lancelet.expr.sql.values import Value, apply, cast, const, family

__all__ = ["HANDLERS"]


def _function(fn: Callable[..., Any]) -> Handler:
    def handler(t: Translator, node: exp.Expression) -> Value:
        return apply(fn, [t.visit(node.this)], node)

    return handler


def _case_mapping(direction: case_mapping.Direction) -> Handler:
    def handler(t: Translator, node: exp.Expression) -> Value:
        value = t.visit(node.this)
        return apply(case_mapping.function(direction, value.type), [value], node)

    return handler


def _abs(t: Translator, node: exp.Abs) -> Value:
    value = t.visit(node.this)
    half = value_types.unary("abs", value.type, checked=True)
    return apply(pc.abs_checked if half is None else half.function, [value], node)


def _anonymous(t: Translator, node: exp.Anonymous) -> Value:
    name = node.name.lower()
    if name == "regexp_match":
        return matching.regexp(t, node, "regexp_match", list(node.expressions))
    if name == "arrow_cast":
        return _arrow_cast(t, node)
    if name in json_functions.NAMES:
        return _json_function(t, node)
    if name in catalog.IMPLEMENTED_HERE or catalog.refusal(name):
        return _scalar_function(t, node)
    return membership.translate(t, node)


def _scalar_function(t: Translator, node: exp.Expression) -> Value:
    return registry.call(t, node)


def _json_function(t: Translator, node: exp.Expression) -> Value:
    name, subject_node, params = json_functions.call_parts(node)
    subject = t.visit(subject_node)
    expression, dtype = json_functions.expression(name, subject.expr, subject.type, params)
    return Value(expression, dtype)


def _arrow_cast(t: Translator, node: exp.Anonymous) -> Value:
    where = f"{sql_text(node)!r} (filter {t.sql!r})"
    if len(node.expressions) != 2:
        raise FilterError(f"{where}: arrow_cast takes a value and a type name")
    value, name = t.visit(node.expressions[0]), t.visit(node.expressions[1])
    if name.const is None or not name.const.is_valid or family(name.type) != "string":
        raise FilterError(f"{where}: arrow_cast takes a type name as a string literal")
    try:
        target = arguments.arrow_type(name.const.as_py())
    except FilterError as e:
        raise FilterError(f"{where}: {e}") from None
    if pa.types.is_timestamp(value.type) and pa.types.is_date32(target):
        # arrow-rs drops the time of day (rounding toward the earlier day).
        return cast(value, target, node, safe=False)
    if pa.types.is_timestamp(value.type) and pa.types.is_timestamp(target):
        if value.type.tz is not None or _UNIT_ORDER[target.unit] < _UNIT_ORDER[value.type.unit]:
            # pylance compares a timestamp cast to a coarser unit as if uncast.
            raise FilterError(
                f"{where}: lancelet casts only timestamps without a time zone to as fine a unit"
            )
        return cast(value, target, node)
    if _is_list_type(target) and not (pa.types.is_null(value.type) or _is_list_type(value.type)):
        raise FilterError(f"{where}: only NULL and lists cast to {target}")
    if pa.types.is_fixed_size_binary(target) and not pa.types.is_binary(value.type):
        raise FilterError(f"{where}: lancelet casts only binary values to {target}")
    from_string = family(value.type) == "string"
    if pa.types.is_integer(target) and not from_string and not _holds_all(target, value.type):
        # pylance neither raises nor gives NULL for values out of range (or NaN).
        raise FilterError(
            f"{where}: lancelet's arrow_cast converts to an integer type only from strings "
            f"and integers it holds all of, not from {value.type}"
        )
    return sql_cast(value, target, node)


_UNIT_ORDER = {"s": 0, "ms": 1, "us": 2, "ns": 3}


def _is_list_type(dtype: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
    )


def _holds_all(target: pa.DataType, source: pa.DataType) -> bool:
    """Whether the integer type ``target`` holds every value of the integer ``source``."""
    if not pa.types.is_integer(source):
        return False
    source_signed = pa.types.is_signed_integer(source)
    target_signed = pa.types.is_signed_integer(target)
    if source_signed == target_signed:
        return bool(target.bit_width >= source.bit_width)
    return target_signed and bool(target.bit_width > source.bit_width)


def _current_date(t: Translator, node: exp.CurrentDate) -> Value:
    if node.this is not None:
        raise t.unsupported(node, "current_date with an argument")
    return const(arguments.current_date())


HANDLERS: dict[type[exp.Expression], Handler] = {
    exp.Lower: _case_mapping("lower"),
    exp.Upper: _case_mapping("upper"),
    exp.Length: _function(pc.utf8_length),
    exp.Abs: _abs,
    exp.Anonymous: _anonymous,
    exp.CurrentDate: _current_date,
    exp.JSONExtract: _json_function,
    exp.JSONArrayContains: _json_function,
    # DataFusion functions that keep sqlglot's syntax: EXTRACT(.. FROM ..) and the like.
    **dict.fromkeys(
        (
            exp.Extract,
            exp.Substring,
            exp.Trim,
            exp.Overlay,
            exp.CurrentTimestamp,
            exp.CurrentTime,
        ),
        _scalar_function,
    ),
}
