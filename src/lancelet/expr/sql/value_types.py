"""The types and values of SQL arithmetic on numbers, as pylance 14 (DataFusion) has them.

:mod:`lancelet.expr.filter` asks :func:`arithmetic` for ``+ - * / %`` on two numeric
operands and :func:`unary` for ``abs`` and negation; this module decides the result
type and gives the function computing it (of Arrow arrays, scalars or expressions).

DataFusion's rules, as pylance 14 exhibits them:

* Floats: float64 if either operand is, else float32, else float16; integers and
  decimals meeting a float become that float (a decimal cannot become a float16: an
  error).  float16 is computed in float32 and rounded, as Rust's ``half`` does.
  Division by zero gives infinities and NaN, as IEEE 754 has it.
* Integers: the narrowest type holding both (``int8 + uint8`` is int16); uint64 with
  a signed type makes both ``DECIMAL(20, 0)``.  Integer division truncates.
* Decimals: an integer operand becomes a decimal (``DECIMAL(3, 0)`` for 8 bits, 5 for
  16, 10 for 32, 20 for 64), and with ``p``, ``s`` the operands' precision and scale:

  - ``+ -``: ``(max(p1 - s1, p2 - s2) + max(s1, s2) + 1, max(s1, s2))``
  - ``*``: ``(p1 + p2 + 1, s1 + s2)``
  - ``/``: ``(p1 + s2 + 4, s1 + 4)``, the quotient truncated toward zero
  - ``%``: ``(min(p1 - s1, p2 - s2) + max(s1, s2), max(s1, s2))``

  each capped at 38 (76 for ``DECIMAL256``).

Integer overflow wraps around in pylance; in computed values lancelet raises instead
(documented as deliberate), in filters it wraps as pylance does.
"""

from __future__ import annotations

import contextlib
import decimal
import functools
import hashlib
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.errors import FilterError
from lancelet.expr.sql import kernels, small_decimals

__all__ = [
    "Arithmetic",
    "arithmetic",
    "coerce_literal",
    "coerced_literals",
    "is_number",
    "nullable",
    "path_nullable",
    "unary",
]

_INTEGER_DIGITS = {8: 3, 16: 5, 32: 10, 64: 20}
_KERNELS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    # operator: (wrapping kernel, checked kernel)
    "+": (pc.add, pc.add_checked),
    "-": (pc.subtract, pc.subtract_checked),
    "*": (pc.multiply, pc.multiply_checked),
    "/": (pc.divide, pc.divide_checked),
    "%": (pc.remainder, pc.remainder_checked),
}


def is_number(dtype: pa.DataType) -> bool:
    return bool(
        pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_decimal(dtype)
    )


@dataclass(frozen=True)
class Arithmetic:
    """How pylance computes an operation: its result type, and a function of Arrow
    arrays, scalars or expressions computing it."""

    type: pa.DataType
    function: Callable[..., Any]


def arithmetic(op: str, left: pa.DataType, right: pa.DataType, *, checked: bool) -> Arithmetic:
    """``left op right`` for two numeric types; ``checked``: raise on integer overflow
    (pylance wraps around) rather than wrap."""
    if pa.types.is_floating(left) or pa.types.is_floating(right):
        return _float_arithmetic(op, left, right)
    if pa.types.is_decimal(left) or pa.types.is_decimal(right):
        return _decimal_arithmetic(op, _as_decimal(left), _as_decimal(right))
    common = _integer_type(left, right)
    if pa.types.is_decimal(common):
        return _decimal_arithmetic(op, common, common)
    kernel = _KERNELS[op][1 if checked else 0]
    return Arithmetic(common, lambda a, b: kernel(a.cast(common), b.cast(common)))


def unary(name: str, operand: pa.DataType, *, checked: bool) -> Arithmetic | None:
    """``abs`` or ``negate`` of a float16 (computed in float32); None for other types,
    which Arrow's kernels compute as pylance does."""
    if operand != pa.float16():
        return None
    kernel = {"abs": pc.abs, "negate": pc.negate}[name]
    f16, f32 = pa.float16(), pa.float32()
    return Arithmetic(f16, lambda a: kernel(a.cast(f32)).cast(f16, safe=False))


# --- floats ---------------------------------------------------------------------------


def _float_arithmetic(op: str, left: pa.DataType, right: pa.DataType) -> Arithmetic:
    widths = {t.bit_width for t in (left, right) if pa.types.is_floating(t)}
    result = {64: pa.float64(), 32: pa.float32(), 16: pa.float16()}[max(widths)]
    if result == pa.float16() and (pa.types.is_decimal(left) or pa.types.is_decimal(right)):
        decimal_type = left if pa.types.is_decimal(left) else right
        raise FilterError(f"Cannot automatically convert {decimal_type} to float16")
    # Arrow has no float16 kernels: float32 holds every float16 and rounds each
    # operation on two of them exactly, so rounding its result is the float16 result.
    compute = pa.float32() if result == pa.float16() else result
    kernel = _KERNELS[op][0]  # IEEE 754: no overflow errors, x / 0 is ±inf or NaN

    def function(a: Any, b: Any) -> Any:
        value = kernel(_to_float(a, left, result, compute), _to_float(b, right, result, compute))
        return value if compute == result else value.cast(result, safe=False)

    return Arithmetic(result, function)


def _to_float(value: Any, source: pa.DataType, result: pa.DataType, compute: pa.DataType) -> Any:
    """An operand as DataFusion converts it to the float type ``result``, in the type
    ``compute`` holding it exactly."""
    if pa.types.is_decimal(source):
        # arrow-rs divides the unscaled value by a power of ten in float64.
        value = value.cast(pa.float64(), safe=False)
    if source != result:
        # Integers round to the nearest float, as SQL engines convert them.
        value = value.cast(result, safe=False)
    return value if compute == result else value.cast(compute)


# --- integers -------------------------------------------------------------------------


def _integer_type(left: pa.DataType, right: pa.DataType) -> pa.DataType:
    """DataFusion's common type of two integer types."""
    signed = [pa.types.is_signed_integer(t) for t in (left, right)]
    if left == right:
        return left
    if all(signed) or not any(signed):
        return left if left.bit_width >= right.bit_width else right
    unsigned = right if signed[0] else left
    signed_type = left if signed[0] else right
    if unsigned.bit_width == 64:
        return pa.decimal128(20, 0)
    width = max(signed_type.bit_width, unsigned.bit_width * 2)
    return {16: pa.int16(), 32: pa.int32(), 64: pa.int64()}[width]


# --- decimals -------------------------------------------------------------------------


def _as_decimal(dtype: pa.DataType) -> pa.DataType:
    if pa.types.is_decimal(dtype):
        return dtype
    return pa.decimal128(_INTEGER_DIGITS[dtype.bit_width], 0)


def _decimal_type(op: str, left: pa.DataType, right: pa.DataType) -> pa.DataType:
    p1, s1, p2, s2 = left.precision, left.scale, right.precision, right.scale
    if op in "+-":
        precision, scale = max(p1 - s1, p2 - s2) + max(s1, s2) + 1, max(s1, s2)
    elif op == "*":
        precision, scale = p1 + p2 + 1, s1 + s2
    elif op == "/":
        precision, scale = p1 + s2 + 4, s1 + 4
    else:
        precision, scale = min(p1 - s1, p2 - s2) + max(s1, s2), max(s1, s2)
    if pa.types.is_decimal256(left) or pa.types.is_decimal256(right):
        return pa.decimal256(min(precision, 76), min(scale, 76))
    return pa.decimal128(min(precision, 38), min(scale, 38))


def _decimal_arithmetic(op: str, left: pa.DataType, right: pa.DataType) -> Arithmetic:
    result = _decimal_type(op, left, right)
    name = _register_decimal(op, left, right, result)

    def function(a: Any, b: Any) -> Any:
        if isinstance(a, pc.Expression) or isinstance(b, pc.Expression):
            return kernels.call(name, [_expression(a, left), _expression(b, right)])
        if isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar):
            arrays = pa.array([a.as_py()], left), pa.array([b.as_py()], right)
            return _decimal_compute(op, *arrays, result)[0]
        return _decimal_compute(op, _array(a, left), _array(b, right), result)

    return Arithmetic(result, function)


def _expression(value: Any, dtype: pa.DataType) -> pc.Expression:
    if isinstance(value, pc.Expression):
        return value.cast(dtype)
    return pc.scalar(value).cast(dtype)


def _array(value: Any, dtype: pa.DataType) -> pa.Array:
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    return value.cast(dtype)


@functools.cache
def _register_decimal(op: str, left: pa.DataType, right: pa.DataType, result: pa.DataType) -> str:
    key = f"{op}:{left}:{right}:{result}".encode()
    name = f"lancelet_decimal_{hashlib.sha1(key).hexdigest()}"

    def kernel(_context: Any, a: pa.Array, b: pa.Array) -> pa.Array:
        return _decimal_compute(op, a, b, result)

    doc = {"summary": f"DataFusion's decimal {op}", "description": f"The result is {result}."}
    with contextlib.suppress(pa.ArrowKeyError):
        pc.register_scalar_function(kernel, name, doc, {"a": left, "b": right}, result)
    return name


def _decimal_compute(op: str, a: pa.Array, b: pa.Array, result: pa.DataType) -> pa.Array:
    """``a op b`` in ``result``, exactly as DataFusion computes it.

    Arrow's decimal kernels size their result types by the operands' declared
    precisions, which for wide decimals exceeds even DECIMAL256; the operands are
    therefore first given the precision their values need.
    """
    if op in "/%" and pc.any(pc.equal(b, pa.scalar(0, b.type))).as_py():
        raise FilterError("Divide by zero error")
    fast = small_decimals.compute(op, a, b, result)
    if fast is not None:
        return fast
    a, b = _tight(a), _tight(b)
    if op == "/":
        # Arrow's quotient has a scale of at least s1 + p2 - s2 + 1 (truncated there);
        # a divisor with three integer digits makes that at least the s1 + 4 wanted.
        b = b.cast(pa.decimal256(max(b.type.precision, b.type.scale + 3), b.type.scale))
    try:
        value = _KERNELS[op][1](a, b)
        if value.type.scale > result.scale:
            # Truncation toward zero, as DataFusion's integer division of the scaled values.
            value = value.cast(pa.decimal256(value.type.precision, result.scale), safe=False)
        return value.cast(result)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        exact = _row_by_row(op, a, b, result)
        if exact is None:
            raise FilterError(f"decimal {op} of {a.type} and {b.type} into {result}: {e}") from e
        return exact


_ROW_OPS: dict[str, Callable[[decimal.Decimal, decimal.Decimal], decimal.Decimal]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
}


def _row_by_row(op: str, a: pa.Array, b: pa.Array, result: pa.DataType) -> pa.Array | None:
    """``a op b`` (+, - or *) in Python's exact decimal arithmetic, truncated toward
    zero to the result's scale; None when a row's value does not fit ``result``.  For
    operands whose largest values, in different rows, give Arrow a result type past
    DECIMAL256's 76 digits while every row's own result fits (rare: wide decimals)."""
    combine = _ROW_OPS.get(op)
    if combine is None:
        return None
    values: list[decimal.Decimal | None] = []
    with decimal.localcontext() as context:
        context.prec = 200
        step = decimal.Decimal(1).scaleb(-result.scale)
        limit = decimal.Decimal(10) ** (result.precision - result.scale)
        for x, y in zip(a.to_pylist(), b.to_pylist(), strict=True):
            if x is None or y is None:
                values.append(None)
                continue
            value = combine(x, y).quantize(step, rounding=decimal.ROUND_DOWN)
            if value.copy_abs() >= limit:
                return None
            values.append(value)
    return pa.array(values, result)


def _tight(values: pa.Array) -> pa.Array:
    """``values`` as DECIMAL256 with the precision their largest value needs."""
    scale = values.type.scale
    largest = pc.max(pc.abs(values)).as_py()
    digits = 1 if largest is None else len(str(int(largest.scaleb(scale))))
    return values.cast(pa.decimal256(max(digits, scale, 1), scale))


# --- literals meeting columns in computed values ----------------------------------------
#
# pylance converts a literal to the type of the column it meets, before DataFusion types
# the expression, in these places only (and nowhere below them):
#
# * ``column op literal`` and ``literal op column`` (op arithmetic or a comparison), at
#   the top of the expression or of an AND / OR chain there;
# * ``column op (constant arithmetic)``: each literal of the constant part;
# * ``column BETWEEN ... AND ...`` and ``column IN (...)``: the bounds and the items.
#
# So ``int8_col + 1`` is int8, where ``abs(int8_col + 1)``, ``(1 + 1) + int8_col`` and
# ``int8_col + (1 + int8_col)`` are int64.

_OPERATIONS = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)
_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)


def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _literal(node: exp.Expression) -> exp.Expression | None:
    """The node standing for a literal (``1``, ``(1)``, ``-1``), or None."""
    node = _unparen(node)
    if isinstance(node, exp.Literal):
        return node
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return node
    return None


def _constant_leaves(node: exp.Expression) -> list[exp.Expression] | None:
    """The literals of arithmetic made of literals only, or None."""
    found = _literal(node)
    if found is not None:
        return [found]
    node = _unparen(node)
    if not isinstance(node, _OPERATIONS):
        return None
    left, right = _constant_leaves(node.this), _constant_leaves(node.expression)
    return None if left is None or right is None else left + right


def coerced_literals(
    tree: exp.Expression, column_type: Callable[[exp.Expression], pa.DataType | None]
) -> dict[int, pa.DataType]:
    """The literal nodes of ``tree`` (by ``id``) pylance converts to a column's type, and
    that type; ``column_type`` gives the type of a node naming a column, else None."""
    out: dict[int, pa.DataType] = {}

    def coerce(nodes: list[exp.Expression] | None, target: pa.DataType) -> None:
        out.update((id(n), target) for n in nodes or [])

    def resolve(node: exp.Expression) -> None:
        node = _unparen(node)
        if isinstance(node, (exp.And, exp.Or)):
            resolve(node.this)
            resolve(node.expression)
        elif isinstance(node, _OPERATIONS + _COMPARISONS):
            left = column_type(node.this)
            if left is not None:
                coerce(_constant_leaves(node.expression), left)
                return
            right = column_type(node.expression)
            literal = _literal(node.this)
            if right is not None and literal is not None:
                coerce([literal], right)
        elif isinstance(node, (exp.Between, exp.In)):
            subject = column_type(node.this)
            if subject is None:
                return
            bounds = [node.args["low"], node.args["high"]] if isinstance(node, exp.Between) else []
            for item in bounds or node.expressions:
                coerce(_constant_leaves(item), subject)

    resolve(tree)
    return out


def coerce_literal(value: pa.Scalar, target: pa.DataType) -> pa.Scalar | None:
    """A number literal in the type of the numeric column it meets, as pylance converts
    it: integers that the type holds exactly, floats to floats (rounded; a float16 must
    stay finite); None where pylance refuses.  Other literals are left as they are."""
    source = value.type
    if not value.is_valid or source == target or not (is_number(source) and is_number(target)):
        return value
    if pa.types.is_floating(target):
        if not (pa.types.is_integer(source) or pa.types.is_floating(source)):
            return None
        converted = value.cast(target, safe=False)
        finite = abs(converted.as_py()) != float("inf") or abs(value.as_py()) == float("inf")
        return converted if finite or target != pa.float16() else None
    if not pa.types.is_integer(source):
        return None  # a float (or decimal) literal does not become an integer or decimal
    try:
        if pa.types.is_decimal(target):
            return pa.scalar(decimal.Decimal(value.as_py()), target)
        return value.cast(target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, decimal.InvalidOperation):
        return None


# --- nullability of a computed value ---------------------------------------------------
#
# The field pylance records for a projection or a new column is NOT NULL where
# DataFusion proves the value never NULL: literals, columns and struct fields declared
# NOT NULL (on a path of NOT NULL structs), and operators and casts of those; IS [NOT]
# NULL / TRUE / FALSE and IS [NOT] DISTINCT FROM never are.  Function calls may be
# NULL (regexp_like and arrow_cast excepted: they are when their arguments are).

_NEVER_NULL = (exp.Literal, exp.Boolean, exp.Is, exp.NullSafeEQ, exp.NullSafeNEQ)
_LIKE_ARGUMENTS = (
    exp.Paren, exp.Neg, exp.Not, exp.Cast, exp.And, exp.Or, exp.DPipe, exp.Like, exp.ILike,
    exp.Escape, exp.Between, exp.In, exp.RegexpLike, *_OPERATIONS, *_COMPARISONS,
)  # fmt: skip


def path_nullable(schema: pa.Schema, path: tuple[str, ...]) -> bool:
    """Whether the column or struct field at ``path`` may be NULL: when it or a struct
    on the way may."""
    field = schema.field(path[0])
    may_be_null = field.nullable
    for name in path[1:]:
        field = field.type.field(name)
        may_be_null = may_be_null or field.nullable
    return bool(may_be_null)


def nullable(node: exp.Expression, column: Callable[[exp.Expression], bool | None]) -> bool:
    """Whether the value of ``node`` may be NULL, as pylance records it; ``column``
    tells whether a node naming a column (or struct field) may be NULL, else None."""
    named = column(node)
    if named is not None:
        return named
    if isinstance(node, exp.Not) and isinstance(node.this, exp.Is):
        return False  # IS NOT NULL
    if isinstance(node, _NEVER_NULL):
        return False
    if isinstance(node, exp.Anonymous) and node.name.lower() == "arrow_cast":
        return any(nullable(arg, column) for arg in node.expressions[:1])
    if isinstance(node, _LIKE_ARGUMENTS) and type(node) is not exp.TryCast:
        children = [c for c in node.iter_expressions() if not isinstance(c, exp.DataType)]
        return any(nullable(child, column) for child in children)
    return True
