"""numpy kernels for the math functions whose pylance semantics pyarrow's kernels do
not have: ``round`` and ``trunc`` to a number of decimal places (DataFusion scales by
a power of ten computed as Rust's ``powi`` computes it), ``power`` of integers,
``factorial``, ``gcd`` and ``lcm``.

They use only IEEE 754 arithmetic (multiplication, division, truncation), never a
libm function, whose last bit numpy's SIMD builds may compute differently from pylance.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import FilterEvaluationError

__all__ = [
    "Kernel",
    "decimal_to_float",
    "factorial",
    "gcd",
    "lcm",
    "power",
    "round_scaled",
    "trunc_scaled",
]

Kernel = Callable[..., pa.Array]


def _floats(values: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    mask = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    filled = values.fill_null(0) if values.null_count else values
    return np.asarray(filled.to_numpy(zero_copy_only=False)), mask


def _ints(values: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    mask = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    filled = values.fill_null(0) if values.null_count else values
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=np.int64), mask


def _either(*masks: np.ndarray | None) -> np.ndarray | None:
    present = [m for m in masks if m is not None]
    if not present:
        return None
    either: np.ndarray = np.logical_or.reduce(present)
    return either


def powi(base: float, exponents: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``base.powi(n)`` for each ``n``, as compiler-rt's ``__powidf2`` computes it:
    square-and-multiply in ``dtype``, then the reciprocal for a negative ``n``."""
    result = np.ones(len(exponents), dtype=dtype)
    factor = np.full(len(exponents), base, dtype=dtype)
    remaining = np.abs(exponents.astype(np.int64))
    while remaining.any():
        odd = (remaining & 1) == 1
        result = np.where(odd, result * factor, result)
        remaining = remaining >> 1
        factor = np.where(remaining > 0, factor * factor, factor)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        powers: np.ndarray = np.where(exponents < 0, dtype.type(1) / result, result)
    return powers


def decimal_to_float(values: pa.Array) -> pa.Array:
    """arrow-rs's cast of a decimal128 (precision up to 18) to float64: the unscaled
    integer as a float, divided by 10^scale."""
    words = np.frombuffer(values.buffers()[1], dtype=np.int64).reshape(-1, 2)
    unscaled = words[values.offset : values.offset + len(values), 0]
    scale = powi(10.0, np.array([values.type.scale]), np.dtype(np.float64))[0]
    mask = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    return pa.array(unscaled.astype(np.float64) / scale, pa.float64(), mask=mask)


def _half_away(values: np.ndarray) -> np.ndarray:
    """Rounding halves away from zero (Rust's ``round``), exactly."""
    whole = np.trunc(values)
    with np.errstate(invalid="ignore"):
        fraction = values - whole
        up = np.abs(fraction) >= 0.5
    rounded: np.ndarray = np.where(up, whole + np.sign(values), whole)
    return rounded


def _scaled(
    values: pa.Array, digits: pa.Array | None, snap: Callable[[np.ndarray], np.ndarray]
) -> pa.Array:
    x, value_mask = _floats(values)
    if digits is None:
        return pa.array(snap(x), values.type, mask=value_mask)
    n, digit_mask = _ints(digits)
    if (np.abs(n) > 2**31 - 1).any():
        raise FilterEvaluationError("the number of decimal places does not fit a 32-bit integer")
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        scale = powi(10.0, n, x.dtype)
        out = snap(x * scale) / scale
        out = np.where(n == 0, snap(x), out)
    return pa.array(out, values.type, mask=_either(value_mask, digit_mask))


def round_scaled(values: pa.Array, digits: pa.Array | None = None) -> pa.Array:
    """round(x, d): (x * 10^d) rounded half away from zero, / 10^d."""
    return _scaled(values, digits, _half_away)


def trunc_scaled(values: pa.Array, digits: pa.Array | None = None) -> pa.Array:
    """trunc(x, d): (x * 10^d) truncated toward zero, / 10^d; trunc(x) of a zero of
    either sign is +0.0, as pylance's one-argument trunc gives."""
    if digits is None:
        return _scaled(values, None, _trunc_positive_zero)
    return _scaled(values, digits, np.trunc)


def _trunc_positive_zero(values: np.ndarray) -> np.ndarray:
    truncated: np.ndarray = np.where(values == 0, np.zeros(1, values.dtype), np.trunc(values))
    return truncated


def power(bases: pa.Array, exponents: pa.Array) -> pa.Array:
    """power with the platform's pow; zero to a negative power fails, as in pylance."""
    zero_base = pc.and_(pc.equal(bases, 0.0), pc.less(exponents, 0.0))
    if pc.any(zero_base).as_py():
        raise FilterEvaluationError("zero raised to a negative power is undefined")
    return pc.power(bases, exponents)


# 0! .. 20!: 21! overflows int64.
_FACTORIALS = np.array([1, *np.cumprod(np.arange(1, 21, dtype=np.int64))], dtype=np.int64)


def factorial(values: pa.Array) -> pa.Array:
    """n! (1 for n < 2)."""
    n, mask = _ints(values)
    valid = ~mask if mask is not None else np.ones(len(n), bool)
    if (valid & (n < 0)).any():
        raise FilterEvaluationError("factorial of a negative number is undefined")
    if (valid & (n > 20)).any():
        raise FilterEvaluationError(
            f"Overflow happened on FACTORIAL({int(n[valid & (n > 20)][0])})"
        )
    return pa.array(_FACTORIALS[np.clip(n, 0, 20)], pa.int64(), mask=mask)


def _gcd_values(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # Magnitudes as unsigned, so that |i64::MIN| is representable.
    x = np.abs(a.astype(np.int64)).view(np.uint64).copy()
    y = np.abs(b.astype(np.int64)).view(np.uint64).copy()
    while (y != 0).any():
        nonzero = y != 0
        remainder = np.where(nonzero, x % np.where(nonzero, y, 1), 0)
        x = np.where(nonzero, y, x)
        y = np.where(nonzero, remainder, y)
    divisor: np.ndarray = x
    return divisor


def gcd(first: pa.Array, second: pa.Array) -> pa.Array:
    """The greatest common divisor of |a| and |b| (0 for two zeros)."""
    a, mask_a = _ints(first)
    b, mask_b = _ints(second)
    mask = _either(mask_a, mask_b)
    result = _gcd_values(a, b)
    valid = ~mask if mask is not None else np.ones(len(a), bool)
    if (valid & (result > np.uint64(2**63 - 1))).any():
        raise FilterEvaluationError("Signed integer overflow in GCD")
    return pa.array(result.astype(np.int64), pa.int64(), mask=mask)


def lcm(first: pa.Array, second: pa.Array) -> pa.Array:
    """The least common multiple of |a| and |b| (0 when either is 0)."""
    a, mask_a = _ints(first)
    b, mask_b = _ints(second)
    mask = _either(mask_a, mask_b)
    divisor = _gcd_values(a, b)
    x = np.abs(a).view(np.uint64)
    y = np.abs(b).view(np.uint64)
    quotient = x // np.where(divisor == 0, 1, divisor)
    valid = ~mask if mask is not None else np.ones(len(a), bool)
    with np.errstate(over="ignore"):
        product = quotient * y
    # Overflow: the product does not divide back, or exceeds int64.
    wrapped = (y != 0) & ((product // np.where(y == 0, 1, y)) != quotient)
    if (valid & (wrapped | (product > np.uint64(2**63 - 1)))).any():
        raise FilterEvaluationError("Signed integer overflow in LCM")
    return pa.array(np.where(divisor == 0, 0, product).astype(np.int64), pa.int64(), mask=mask)
