"""DataFusion's math functions, as pylance evaluates them.

Types follow pylance: a float32 argument gives float32, integers and decimals give
float64 (except ``floor``/``ceil`` of a decimal, which keep it, and ``round`` of a
decimal, which keeps its precision with fewer decimal places); ``atan2`` and ``nanvl``
of integers give float32, as DataFusion's signatures coerce them.

``round(x, d)`` is ``(x * 10^d).round() / 10^d`` in x's float type, rounding halves
away from zero, with ``10^d`` computed by repeated multiplication as Rust's ``powi``
does; ``trunc`` likewise.  Those and the functions pyarrow lacks (``cbrt``,
``factorial``, ``gcd``, ``lcm``) are numpy kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.expr.functions import float_kernels
from lancelet.expr.functions.base import (
    Call,
    Value,
    apply,
    cast,
    const,
    is_float,
    is_integer,
    is_null,
    is_numeric,
    null,
    vectorized,
)

__all__ = ["FUNCTIONS"]


def number(call: Call, index: int) -> Value:
    """Argument ``index``, a number (or NULL)."""
    value = call.value(index)
    if not (is_numeric(value.type) or is_null(value.type)):
        raise call.error(f"takes numbers, not {value.type}")
    if value.type == pa.float16():
        raise call.error("lancelet does not compute with float16")
    if pa.types.is_decimal(value.type) and value.type.bit_width != 128:
        raise call.error(f"lancelet does not compute with {value.type}")
    return value


def as_float(call: Call, value: Value) -> Value:
    """A float32 stays float32; integers, decimals and NULL become float64."""
    if is_float(value.type):
        return value
    return as_float64(call, value)


def as_float64(call: Call, value: Value) -> Value:
    """``value`` as float64, converted as pylance converts it."""
    if is_null(value.type):
        return null(pa.float64())
    if not pa.types.is_decimal(value.type):
        return cast(value, pa.float64(), call.node, safe=False)
    if value.type.precision > 18:
        # arrow-rs converts the 128-bit unscaled integer; lancelet only 64-bit ones.
        raise call.error(
            f"lancelet converts decimals of precision up to 18 to floats, not {value.type}"
        )
    return vectorized(call, float_kernels.decimal_to_float, [value], [], pa.float64())


def _unary(kernel: Callable[..., pc.Expression]) -> Callable[[Call], Value]:
    def function(call: Call) -> Value:
        call.arity(1)
        return apply(kernel, [as_float(call, number(call, 0))], call.node)

    return function


# pyarrow's kernels answer an argument outside a function's domain (sqrt(-1), ln(-1))
# with a NaN of their own, positive; pylance's libm and CPU give the NaNs below, whose
# sign decides where they sort (-NaN first, NaN last) in a comparison.


def _domain_nan(call: Call, result: Value, argument: Value, negative: bool) -> Value:
    """``result`` with the NaNs it has where ``argument`` is not NaN given ``negative``'s
    sign."""
    outside = apply(
        pc.and_kleene,
        [
            apply(pc.is_nan, [result], call.node),
            apply(pc.invert, [apply(pc.is_nan, [argument], call.node)], call.node),
        ],
        call.node,
    )
    nan = const(pa.scalar(-math.nan if negative else math.nan, result.type))
    return apply(pc.if_else, [outside, nan, result], call.node)


def _sqrt(call: Call, value: Value) -> Value:
    # The CPU's square root of a negative number is the default NaN, negative on x86.
    return _domain_nan(call, apply(pc.sqrt, [value], call.node), value, negative=True)


def _ln(call: Call, value: Value) -> Value:
    # glibc's logf of a negative number is -NaN, its log +NaN.
    result = apply(pc.ln, [value], call.node)
    return _domain_nan(call, result, value, negative=value.type == pa.float32())


def sqrt(call: Call) -> Value:
    call.arity(1)
    return _sqrt(call, as_float(call, number(call, 0)))


def ln(call: Call) -> Value:
    call.arity(1)
    return _ln(call, as_float(call, number(call, 0)))


def log2(call: Call) -> Value:
    call.arity(1)
    value = as_float(call, number(call, 0))
    result = apply(pc.log2, [value], call.node)
    return _domain_nan(call, result, value, negative=value.type == pa.float32())


def acosh(call: Call) -> Value:
    call.arity(1)
    value = as_float(call, number(call, 0))
    result = apply(pc.acosh, [value], call.node)
    return _domain_nan(call, result, value, negative=True)


def atanh(call: Call) -> Value:
    """Rust's ``atanh``, ``0.5 * ln_1p(2x / (1 - x))`` (not libm's, which rounds
    differently; ``asinh`` and ``acosh`` are libm's)."""
    call.arity(1)
    x = as_float(call, number(call, 0))
    one, two = const(pa.scalar(1, x.type)), const(pa.scalar(2, x.type))
    ratio = apply(
        pc.divide,
        [apply(pc.multiply, [two, x], call.node), apply(pc.subtract, [one, x], call.node)],
        call.node,
    )
    logged = _domain_nan(call, apply(pc.log1p, [ratio], call.node), ratio, negative=True)
    return apply(pc.multiply, [const(pa.scalar(0.5, x.type)), logged], call.node)


def cot(call: Call) -> Value:
    """``1 / tan(x)``."""
    call.arity(1)
    value = as_float(call, number(call, 0))
    one = const(pa.scalar(1, value.type))
    return apply(pc.divide, [one, apply(pc.tan, [value], call.node)], call.node)


def _pair_type(first: pa.DataType, second: pa.DataType, integers: pa.DataType) -> pa.DataType:
    types = {first, second} - {pa.null()}
    if pa.float64() in types or any(pa.types.is_decimal(t) for t in types):
        return pa.float64()
    if pa.float32() in types:
        return pa.float32()
    return integers


def _float_pair(call: Call, integers: pa.DataType) -> tuple[Value, Value]:
    first, second = number(call, 0), number(call, 1)
    target = _pair_type(first.type, second.type, integers)
    return tuple(  # type: ignore[return-value]
        as_float64(call, v) if target == pa.float64() else to_float(call, v, target)
        for v in (first, second)
    )


def to_float(call: Call, value: Value, target: pa.DataType) -> Value:
    if is_null(value.type):
        return null(target)
    return cast(value, target, call.node, safe=False)


def atan2(call: Call) -> Value:
    call.arity(2)
    y, x = _float_pair(call, pa.float32())
    return apply(pc.atan2, [y, x], call.node)


def nanvl(call: Call) -> Value:
    """``nanvl(x, y)``: ``y`` where ``x`` is NaN, else ``x``."""
    call.arity(2)
    first, second = _float_pair(call, pa.float32())
    return apply(pc.if_else, [apply(pc.is_nan, [first], call.node), second, first], call.node)


def power(call: Call) -> Value:
    """``power(base, exponent)``, in float64; zero to a negative power fails, as in
    pylance."""
    call.arity(2)
    base, exponent = number(call, 0), number(call, 1)
    if any(pa.types.is_decimal(v.type) for v in (base, exponent)):
        raise call.error("lancelet does not raise decimals to a power")
    simplified = _simplified_power(call)
    if simplified is not None:
        return simplified
    values = [as_float64(call, v) for v in (base, exponent)]
    return vectorized(call, float_kernels.power, values, [], pa.float64())


def _simplified_power(call: Call) -> Value | None:
    """DataFusion's rewrites: ``power(x, 0)`` is 1 on every row (NULL or NaN rows too),
    ``power(x, 1)`` is ``x``, ``power(b, log(b, x))`` is ``x``."""
    base, exponent = _bare(call.args[0]), _bare(call.args[1])
    if _is_number(exponent, 0):
        return const(pa.scalar(1.0))
    if _is_number(exponent, 1):
        return as_float64(call, call.value(0))
    inner = _call_args(exponent, ("log",))
    if inner is not None and len(inner) == 2 and _bare(inner[0]) == base:
        return as_float64(call, call.translator.visit(inner[1]))
    return None


def log(call: Call) -> Value:
    """``log(x)`` is ``log(10, x)``; ``log(base, x)`` is ``ln(x) / ln(base)``, as Rust
    computes it (so ``log(x)`` is not ``log10(x)``)."""
    call.arity(1, 2)
    if len(call.args) == 1:
        value = as_float(call, number(call, 0))
        base = const(pa.scalar(10, value.type))
        base_node: exp.Expression = exp.Literal.number(10)
        value_node = call.args[0]
    else:
        base, value = _float_pair(call, pa.float64())
        base_node, value_node = call.args
    simplified = _simplified_log(call, base_node, value_node, value.type)
    if simplified is not None:
        return simplified
    return apply(pc.divide, [_ln(call, value), _ln(call, base)], call.node)


def _simplified_log(
    call: Call, base: exp.Expression, value: exp.Expression, dtype: pa.DataType
) -> Value | None:
    """DataFusion's rewrites: ``log(b, 1)`` is 0 and ``log(b, b)`` is 1 on every row
    (NULL or NaN rows too), ``log(b, power(b, x))`` is ``x``."""
    value = _bare(value)
    if _is_number(value, 1):
        return const(pa.scalar(0, dtype))
    if _bare(base) == value:
        return const(pa.scalar(1, dtype))
    inner = _call_args(value, ("power", "pow"))
    if inner is not None and len(inner) == 2 and _bare(inner[0]) == _bare(base):
        exponent = call.translator.visit(inner[1])
        return as_float64(call, exponent)
    return None


def _bare(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _is_number(node: exp.Expression, number: float) -> bool:
    node = _bare(node)
    negative = isinstance(node, exp.Neg)
    literal = node.this if negative else node
    if not isinstance(literal, exp.Literal) or literal.is_string:
        return False
    return float(literal.this) * (-1 if negative else 1) == number


def _call_args(node: exp.Expression, names: tuple[str, ...]) -> list[exp.Expression] | None:
    if isinstance(node, exp.Anonymous) and node.name.lower() in names:
        return list(node.expressions)
    return None


def signum(call: Call) -> Value:
    """-1, 0 or 1 (NaN for NaN), as a float; zero of either sign gives 0.0."""
    call.arity(1)
    value = as_float(call, number(call, 0))
    zero = const(pa.scalar(0, value.type))
    is_zero = apply(pc.equal, [value, zero], call.node)
    signed = apply(pc.if_else, [is_zero, zero, apply(pc.sign, [value], call.node)], call.node)
    # Rust's signum of any NaN is the positive NaN.
    nan = const(pa.scalar(math.nan, value.type))
    return apply(pc.if_else, [apply(pc.is_nan, [value], call.node), nan, signed], call.node)


def isnan(call: Call) -> Value:
    call.arity(1)
    value = number(call, 0)
    if is_float(value.type):
        return apply(pc.is_nan, [value], call.node)
    if is_null(value.type):
        return null(pa.bool_())
    valid = apply(pc.is_valid, [value], call.node)
    return apply(pc.if_else, [valid, const(pa.scalar(False)), null(pa.bool_())], call.node)


def iszero(call: Call) -> Value:
    call.arity(1)
    value = number(call, 0)
    if is_null(value.type):
        return null(pa.bool_())
    return apply(pc.equal, [value, const(pa.scalar(0, value.type))], call.node)


def pi(call: Call) -> Value:
    call.arity(0)
    return const(pa.scalar(math.pi, pa.float64()))


def _digits(call: Call) -> int | None:
    return call.int_literal(1, "number of decimal places") if len(call.args) == 2 else 0


def round_number(call: Call) -> Value:
    """``round(x[, d])``: halves away from zero."""
    call.arity(1, 2)
    value = number(call, 0)
    if pa.types.is_decimal(value.type):
        return _round_decimal(call, value)
    value = as_float(call, value)
    return _scaled(call, value, float_kernels.round_scaled)


def trunc(call: Call) -> Value:
    """``trunc(x[, d])``: toward zero, to ``d`` decimal places."""
    call.arity(1, 2)
    return _scaled(call, as_float(call, number(call, 0)), float_kernels.trunc_scaled)


def _scaled(call: Call, value: Value, kernel: float_kernels.Kernel) -> Value:
    if len(call.args) == 1:
        return vectorized(call, kernel, [value], [], value.type)
    digits = call.value(1)
    if is_null(digits.type):
        return null(value.type)
    if not is_integer(digits.type):
        raise call.error(f"the number of decimal places must be an integer, not {digits.type}")
    return vectorized(call, kernel, [value, cast(digits, pa.int64(), call.node)], [], value.type)


def _round_decimal(call: Call, value: Value) -> Value:
    digits = _digits(call)
    if digits is None:
        return null(value.type)
    scale = max(0, min(value.type.scale, digits))
    target = pa.decimal128(value.type.precision, scale)
    if value.type.scale < 0:
        raise call.error(f"lancelet does not round {value.type}")
    if -digits > value.type.precision - value.type.scale:
        # Rounding left of every digit the type holds: 0 (NULL stays NULL).
        zero = const(pa.scalar(0, target))
        valid = apply(pc.is_valid, [value], call.node)
        return apply(pc.if_else, [valid, zero, null(target)], call.node)
    # Rounded in a decimal one digit wider, so that a carry (999.99 -> 1000) fits before
    # the cast to the result type checks that it fits there.
    wider = cast(
        value, pa.decimal128(min(value.type.precision + 1, 38), value.type.scale), call.node
    )
    rounded = apply(
        pc.round, [wider], call.node, ndigits=digits, round_mode="half_towards_infinity"
    )
    return cast(rounded, target, call.node)


def _floor_ceil(kernel: Callable[..., pc.Expression]) -> Callable[[Call], Value]:
    def function(call: Call) -> Value:
        """``floor(x)`` / ``ceil(x)``: floats keep their type, integers give float64,
        decimals keep their type (failing when the result does not fit it)."""
        call.arity(1)
        value = number(call, 0)
        if not pa.types.is_decimal(value.type):
            return apply(kernel, [as_float(call, value)], call.node)
        # In a decimal one digit wider, so that a carry (999.99 -> 1000) fits before the
        # cast back to the argument's type checks that it fits there.
        wider = pa.decimal128(min(value.type.precision + 1, 38), value.type.scale)
        whole = apply(kernel, [cast(value, wider, call.node)], call.node)
        return cast(whole, value.type, call.node)

    return function


def factorial(call: Call) -> Value:
    """``factorial(n)`` of an integer: 1 below 2, failing past 20 (int64 overflow)."""
    call.arity(1)
    value = number(call, 0)
    if is_null(value.type):
        return null(pa.int64())
    if not is_integer(value.type) or value.type == pa.uint64():
        raise call.error(f"takes an integer, not {value.type}")
    return vectorized(
        call, float_kernels.factorial, [cast(value, pa.int64(), call.node)], [], pa.int64()
    )


def _gcd_lcm(kernel: float_kernels.Kernel) -> Callable[[Call], Value]:
    def function(call: Call) -> Value:
        call.arity(2)
        values = [number(call, 0), number(call, 1)]
        if any(is_null(v.type) for v in values):
            return null(pa.int64())
        if not all(is_integer(v.type) and v.type != pa.uint64() for v in values):
            raise call.error(f"takes integers, not {values[0].type} and {values[1].type}")
        ints = [cast(v, pa.int64(), call.node) for v in values]
        return vectorized(call, kernel, ints, [], pa.int64())

    return function


def _scale(factor: float) -> Callable[[Call], Value]:
    def function(call: Call) -> Value:
        """degrees / radians: multiplied by a constant in the argument's float type."""
        call.arity(1)
        value = as_float(call, number(call, 0))
        scale = const(pa.scalar(factor, value.type))
        return apply(pc.multiply, [value, scale], call.node)

    return function


FUNCTIONS: dict[str, Callable[[Call], Value]] = {
    "round": round_number,
    "trunc": trunc,
    "floor": _floor_ceil(pc.floor),
    "ceil": _floor_ceil(pc.ceil),
    "sqrt": sqrt,
    "power": power,
    "pow": power,
    "exp": _unary(pc.exp),
    "ln": ln,
    "log10": _unary(pc.log10),
    "log2": log2,
    "log": log,
    "signum": signum,
    "isnan": isnan,
    "iszero": iszero,
    "nanvl": nanvl,
    "pi": pi,
    "sin": _unary(pc.sin),
    "cos": _unary(pc.cos),
    "tan": _unary(pc.tan),
    "cot": cot,
    "asin": _unary(pc.asin),
    "acos": _unary(pc.acos),
    "atan": _unary(pc.atan),
    "atan2": atan2,
    "sinh": _unary(pc.sinh),
    "cosh": _unary(pc.cosh),
    "tanh": _unary(pc.tanh),
    "asinh": _unary(pc.asinh),
    "acosh": acosh,
    "atanh": atanh,
    "degrees": _scale(180 / math.pi),
    "radians": _scale(math.pi / 180),
    "factorial": factorial,
    "gcd": _gcd_lcm(float_kernels.gcd),
    "lcm": _gcd_lcm(float_kernels.lcm),
}
