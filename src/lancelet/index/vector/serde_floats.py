"""JSON numbers read as pylance reads them.

pylance parses the JSON in its index metadata with serde_json's default number
parser, which is fast rather than exact: the digits are gathered into a u64 (digits
past its range dropped), converted to f64 and then multiplied or divided by a power
of ten in f64 arithmetic.  The result can be one ulp from the correctly rounded
value Python's ``float`` gives (``"3.9114034175872803"`` reads as
``3.91140341758728``).  SQ bounds are used in quantization and shown in the index
statistics, so lancelet reads them the same way.
"""

from __future__ import annotations

import json
import re
from typing import Any

_U64_MAX = 2**64 - 1
_NUMBER = re.compile(r"(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?")
# serde_json's table: 1e0 ..= 1e308, each the f64 nearest to the power.
_POW10 = [float(f"1e{i}") for i in range(309)]


def loads(text: str) -> Any:
    """``json.loads`` with every number that has a fraction or an exponent read as
    serde_json reads it."""
    return json.loads(text, parse_float=parse_float)


def parse_float(text: str) -> float:
    """The f64 serde_json (without ``float_roundtrip``) reads from ``text``."""
    found = _NUMBER.fullmatch(text)
    if found is None:
        raise ValueError(f"not a JSON number: {text!r}")
    sign, whole, fraction, exponent_text = found.groups()
    significand = 0
    exponent = 0
    overflowed = False
    for digit in whole:  # at most a few dozen digits: metadata, not data
        if overflowed or significand * 10 + int(digit) > _U64_MAX:
            overflowed = True
            exponent += 1  # a dropped integer digit still counts its place
        else:
            significand = significand * 10 + int(digit)
    for digit in fraction or "":
        if overflowed or significand * 10 + int(digit) > _U64_MAX:
            overflowed = True  # dropped fraction digits change nothing
        else:
            significand = significand * 10 + int(digit)
            exponent -= 1
    exponent += int(exponent_text or 0)
    value = _from_parts(significand, exponent)
    return -value if sign else value


def _from_parts(significand: int, exponent: int) -> float:
    value = float(significand)
    while True:
        if abs(exponent) < len(_POW10):
            if exponent >= 0:
                value *= _POW10[exponent]
                if value == float("inf"):
                    raise ValueError("number out of range")
            else:
                value /= _POW10[-exponent]
            return value
        if value == 0.0:
            return value
        if exponent >= 0:
            raise ValueError("number out of range")
        value /= 1e308
        exponent += 308
