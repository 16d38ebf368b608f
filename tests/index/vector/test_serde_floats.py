"""JSON numbers read as pylance's serde_json reads them (lancelet.index.vector.serde_floats)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from lancelet.index.vector.serde_floats import loads, parse_float


def test_the_bound_pylance_reads_one_ulp_away() -> None:
    # Measured: pylance 14.0.2 wrote "3.9114034175872803" as an SQ bound and its
    # statistics (and the next segment it wrote) give 3.91140341758728.
    assert parse_float("3.9114034175872803") == 3.91140341758728
    assert 3.91140341758728 != 3.9114034175872803
    assert loads('{"bounds": {"start": -4.056928634643555, "end": 3.9114034175872803}}') == {
        "bounds": {"start": -4.056928634643555, "end": 3.91140341758728}
    }


@given(st.integers(0, 2**53 - 1), st.integers(-22, 22))
def test_exact_operands_round_correctly(significand: int, exponent: int) -> None:
    """A significand below 2**53 and a power of ten up to 1e22 are exact in f64, so
    one multiplication or division is correctly rounded: Python's float agrees."""
    text = f"{significand}e{exponent}"
    assert parse_float(text) == float(text)
    assert parse_float("-" + text) == -float(text)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_never_more_than_a_few_ulps_from_the_exact_value(value: float) -> None:
    text = repr(value)
    if "e" not in text and "." not in text:
        text += ".0"
    found = parse_float(text)
    assert math.isclose(found, value, rel_tol=4e-16, abs_tol=1e-300) or found == value


def test_dropped_digits() -> None:
    # Digits past u64's range are dropped; integer ones still count their place.
    assert parse_float("123456789012345678901234.5") == 12345678901234567890.0 * 1e4
    assert parse_float("0.1234567890123456789012345") == 12345678901234567890 / 1e20
    assert parse_float("1e-400") == 0.0
