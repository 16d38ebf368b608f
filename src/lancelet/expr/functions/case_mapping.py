"""SQL's ``upper()`` and ``lower()`` with full Unicode case mapping, as pylance has them.

pylance maps case with Rust's ``str::to_uppercase`` / ``to_lowercase``: the full
mapping of Unicode's SpecialCasing (``upper('Straße')`` is ``'STRASSE'``, ``upper('ﬁ')``
is ``'FI'``, ``lower('İ')`` is ``'i̇'``) and the final-sigma rule (``lower('ΣΑΣ')`` is
``'σας'``).  Arrow's ``utf8_upper`` / ``utf8_lower`` map each code point to one code
point.  Here Arrow's kernels map every value, and only the values holding a character
whose full mapping differs from Arrow's (found with one regular expression over the
array) are mapped again, by Python's ``str.upper`` / ``str.lower``, which implement the
full mapping and final sigma as Rust does.

The Unicode versions differ: pylance 14 uses Unicode 16, Arrow's utf8proc and Python's
``unicodedata`` each their own.  A character whose one-character mapping Arrow and
Python disagree on (one of them knows a newer or older Unicode) has no answer lancelet
can vouch for; a value holding one is refused, naming it.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import FilterError
from lancelet.expr.sql import kernels

__all__ = ["Direction", "case_map", "function"]

Direction = Literal["upper", "lower"]
_ARROW: dict[str, Callable[..., Any]] = {"upper": pc.utf8_upper, "lower": pc.utf8_lower}
_PYTHON: dict[str, Callable[[str], str]] = {"upper": str.upper, "lower": str.lower}
_CAPITAL_SIGMA = "\u03a3"  # lower-cases to a final sigma at the end of a word
_STRING_TYPES = (pa.string(), pa.large_string())


@dataclass(frozen=True)
class _Exceptions:
    """The characters Arrow's kernel maps otherwise than the full mapping does, as
    regular-expression character classes."""

    # Those mapped right by Python (SpecialCasing, final sigma), and those Arrow and
    # Python map to different single characters (a Unicode version difference).
    any: str | None
    unknown: str | None


# Every cased character of Unicode (17) is in planes 0 and 1; the tests compare the
# mapping of every code point with pylance's.
_LAST_CASED_PLANE_END = 0x20000


def _all_code_points() -> tuple[str, pa.StringArray]:
    """Every Unicode scalar value of the planes with cased characters: joined into one
    text, and one per string (built without a per-value loop)."""
    points = np.concatenate([np.arange(0xD800), np.arange(0xE000, _LAST_CASED_PLANE_END)])
    text = "".join(map(chr, points.tolist()))
    widths = 1 + (points >= 0x80) + (points >= 0x800) + (points >= 0x10000)
    offsets = np.concatenate([[0], np.cumsum(widths)]).astype(np.int32)
    array = pa.StringArray.from_buffers(
        len(points), pa.py_buffer(offsets.tobytes()), pa.py_buffer(text.encode())
    )
    return text, array


def _char_class(chars: list[str]) -> str | None:
    if not chars:
        return None
    return "[" + "".join(re.escape(c) for c in sorted(chars)) + "]"


@functools.cache
def _exceptions(direction: Direction) -> _Exceptions:
    text, points = _all_code_points()
    # One call maps every character but NUL (which maps to itself) on its own, the
    # characters separated by NULs, which no mapping produces.
    mapped = _PYTHON[direction]("\0".join(text[1:])).split("\0")
    full = pa.array(["\0", *mapped], pa.string())
    differ = pc.not_equal(full, _ARROW[direction](points))
    special: list[str] = []
    unknown: list[str] = []
    for char, mapped in zip(
        pc.filter(points, differ).to_pylist(), pc.filter(full, differ).to_pylist(), strict=True
    ):
        (special if len(mapped) > 1 else unknown).append(char)
    if direction == "lower":
        special.append(_CAPITAL_SIGMA)
    return _Exceptions(_char_class(special + unknown), _char_class(unknown))


def case_map(values: pa.Array, direction: Direction) -> pa.Array:
    """``values`` (strings) in upper or lower case, as pylance maps them."""
    mapped = _ARROW[direction](values)
    exceptions = _exceptions(direction)
    if exceptions.any is None or not len(values):
        return mapped
    redo = pc.fill_null(pc.match_substring_regex(values, pattern=exceptions.any), False)
    if not pc.any(redo).as_py():
        return mapped
    rare = pc.filter(values, redo).to_pylist()
    if exceptions.unknown is not None:
        _refuse_unknown(rare, exceptions.unknown, direction)
    # Only the rare values with special characters, one Python call each.
    python = _PYTHON[direction]
    fixed = pa.array([python(text) for text in rare], values.type)
    return pc.replace_with_mask(mapped, redo, fixed)


def _refuse_unknown(texts: list[str], pattern: str, direction: Direction) -> None:
    unknown = re.compile(pattern)
    for text in texts:
        found = unknown.search(text)
        if found is not None:
            raise FilterError(
                f"{direction}() of {text!r}: the case mapping of U+{ord(found.group()):04X} "
                "differs between Unicode versions (pylance 14 follows Unicode 16, this "
                "Arrow and this Python each another), so lancelet cannot give pylance's "
                "answer and refuses"
            )


def _kernel(direction: Direction) -> Callable[..., pa.Array]:
    def kernel(_context: Any, values: pa.Array) -> pa.Array:
        return case_map(values, direction)

    return kernel


@functools.cache
def _register(direction: Direction, dtype: pa.DataType) -> str:
    name = f"lancelet_full_{direction}_{dtype}"
    doc = {
        "summary": f"SQL's {direction}() with Unicode's full case mapping",
        "description": "SpecialCasing and final sigma, as Rust's str methods map case.",
    }
    # A reloaded module finds its functions registered already.
    with contextlib.suppress(pa.ArrowKeyError):
        pc.register_scalar_function(_kernel(direction), name, doc, {"values": dtype}, dtype)
    return name


def function(direction: Direction, dtype: pa.DataType) -> Callable[..., Any]:
    """``upper`` or ``lower`` of values of type ``dtype``, as a function of an Arrow
    array, scalar or expression, like pyarrow's compute functions (which it is, for
    types other than strings: they raise Arrow's errors)."""
    if dtype not in _STRING_TYPES:
        return _ARROW[direction]

    def apply(values: Any) -> Any:
        if isinstance(values, pc.Expression):
            return kernels.call(_register(direction, dtype), [values])
        if isinstance(values, pa.Scalar):
            return case_map(pa.array([values.as_py()], dtype), direction)[0]
        if isinstance(values, pa.ChunkedArray):
            chunks = [case_map(chunk, direction) for chunk in values.chunks]
            return pa.chunked_array(chunks, dtype)
        return case_map(values, direction)

    return apply
