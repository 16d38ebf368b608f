"""The typed values a SQL translation builds (:class:`Value`), and the application of
Arrow compute functions to them with constants folded while parsing (:func:`apply`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.errors import FilterError
from lancelet.expr.sql.dialect import sql_text

__all__ = [
    "FALSE",
    "NULL_BOOL",
    "TRUE",
    "Value",
    "apply",
    "boolean_operand",
    "cast",
    "const",
    "family",
    "is_number",
]


@dataclass(frozen=True)
class Value:
    """A translated sub-expression and its Arrow type.

    ``const`` holds the value of sub-expressions known while parsing.  It lets a literal
    take the type of the column it is compared with, and makes errors such as a malformed
    date literal surface while parsing rather than while scanning.
    """

    expr: pc.Expression
    type: pa.DataType
    const: pa.Scalar | None = None
    # A column (or struct field) as named, not computed from one.
    is_column: bool = False
    # The resolved names of that column and struct fields, when is_column.
    path: tuple[str, ...] | None = None


def const(value: pa.Scalar) -> Value:
    return Value(pc.scalar(value), value.type, value)


NULL_BOOL = const(pa.scalar(None, pa.bool_()))

FALSE = const(pa.scalar(False))

TRUE = const(pa.scalar(True))


def apply(
    fn: Callable[..., Any], args: Sequence[Value], node: exp.Expression, **options: Any
) -> Value:
    """Apply a compute function to translated arguments, folding constants.

    ``fn`` accepts arrays, scalars and expressions alike (pyarrow's compute wrappers do).
    """
    try:
        if all(a.const is not None for a in args):
            return const(fn(*[a.const for a in args], **options))
        # The kernel applied to empty arrays gives the type pyarrow's expression binder will
        # infer, and rejects mismatched types now rather than at scan time.
        probe = fn(*[pa.array([], a.type) for a in args], **options)
        return Value(fn(*_operands(args), **options), probe.type)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        types = ", ".join(str(a.type) for a in args)
        raise FilterError(f"{sql_text(node)!r} does not accept arguments of type ({types})") from e
    except pa.ArrowInvalid as e:
        raise FilterError(f"cannot evaluate {sql_text(node)!r}: {e}") from e


def _operands(args: Sequence[Value]) -> list[pc.Expression]:
    # When binding, Arrow casts a literal to the type of the other argument, unlike kernel
    # dispatch on arrays (int8_col * 100 would wrap around in int8).  A literal wrapped in
    # a cast is no longer a literal to the binder, so ordinary type promotion applies.
    variable_types = {a.type for a in args if a.const is None}
    return [
        a.expr.cast(a.type) if _is_literal_to_guard(a, variable_types) else a.expr for a in args
    ]


def _is_literal_to_guard(value: Value, variable_types: set[pa.DataType]) -> bool:
    # An untyped NULL literal needs no guard: any type the binder gives it is right.
    if value.const is None or pa.types.is_null(value.type):
        return False
    return bool(variable_types - {value.type})


def cast(value: Value, target: pa.DataType, node: exp.Expression, *, safe: bool = True) -> Value:
    return apply(lambda x: x.cast(target, safe=safe), [value], node)


def family(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_temporal(t):
        return "time"
    return str(t)


def is_number(t: pa.DataType) -> bool:
    return family(t) == "number"


def boolean_operand(value: Value) -> Value:
    # Arrow's logical kernels take no null-typed arguments; SQL's bare NULL is a boolean
    # NULL there.
    return NULL_BOOL if pa.types.is_null(value.type) else value
