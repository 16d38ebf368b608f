"""Brain-float (bfloat16) bit conversions in NumPy, without ``ml_dtypes``.

A bfloat16 is the upper half of a float32: sign, 8 exponent bits, 7 mantissa bits.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, localcontext

import numpy as np

_MANTISSA_BITS = 7
_MIN_NORMAL_EXPONENT = -126


def float_to_bits(values: np.ndarray) -> np.ndarray:
    """The bfloat16 bit patterns (uint16) nearest to float64 ``values``, ties to even.

    Rounding is done once, from the float64 value, to the bfloat16 grid: a step of
    2**(e - 7) for a value in [2**e, 2**(e+1)), and 2**-133 below the normal range.
    The rounded value is then exact in float32, whose upper half is the pattern.
    """
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    safe = np.where(finite, values, 0.0)
    _, exponent = np.frexp(safe)
    step = np.maximum(exponent - 1, _MIN_NORMAL_EXPONENT) - _MANTISSA_BITS
    rounded = np.ldexp(np.round(np.ldexp(safe, -step)), step)
    rounded = np.where(finite, rounded, values)
    with np.errstate(over="ignore"):
        single = rounded.astype(np.float32)
    bits = (single.view(np.uint32) >> 16).astype(np.uint16)
    # A NaN keeps its sign and becomes the quiet NaN.
    nan = np.isnan(values)
    return np.where(nan, bits | np.uint16(0x7FC0), bits).astype(np.uint16)


def bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """The float32 values (exact) of bfloat16 bit patterns."""
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32)


def format_bfloat16(bits: int) -> str:
    """A value as Lance prints one: the shortest float32 digits, never an exponent."""
    value = bits_to_float32(np.array([bits], dtype=np.uint16))[0]
    if np.isnan(value):
        return "NaN"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    shortest = np.format_float_positional(value, unique=True, trim="-")
    # Of two shortest digit strings equally near the value, Lance prints the upper.
    digits = len(shortest.lstrip("-").replace(".", "").strip("0"))
    if digits == 0:
        return shortest
    exact = Decimal(float(value))
    place = exact.adjusted() - digits + 1
    with localcontext() as context:
        context.prec = 100
        rounded = exact.quantize(Decimal(1).scaleb(place), rounding=ROUND_HALF_UP)
    text = f"{rounded:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
