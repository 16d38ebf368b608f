"""The arguments of DataFusion's filter functions that lancelet translates itself:
``regexp_match`` / ``regexp_like`` patterns and flags, ``arrow_cast`` type names, and
``current_date``.

:mod:`~lancelet.expr.functions.matching` and :mod:`~lancelet.expr.functions.calls`
evaluate the calls; this module decides what their literal arguments mean, and refuses
those whose meaning in pylance (Rust's ``regex`` crate, arrow-rs type names) lancelet
cannot reproduce exactly.

Rust's ``regex`` and RE2 (which Arrow's ``match_substring_regex`` uses) share their
syntax, leftmost-first semantics and the meaning of ``^``, ``$`` and ``.``, but differ in:

* ``\\d \\w \\s \\b`` and their negations: Unicode classes in Rust, ASCII in RE2;
* character class set operations (``[a-z&&[^aeiou]]``, ``--``, ``~~``) and nested
  classes, which only Rust has;
* escapes only one of them knows (``\\Q...\\E``, ``\\C``, ``\\u``, ``\\<``...), and
  ``{,n}``.

Patterns using any of these are refused, as are Unicode property classes (``\\p{..}``)
whose tables may differ between the two.
"""

from __future__ import annotations

import datetime
import re

import pyarrow as pa

from lancelet.errors import FilterError

__all__ = ["arrow_type", "current_date", "regex_pattern"]

# Escapes that mean the same in Rust's regex and RE2: letters, and any punctuation.
_SAME_ESCAPES = frozenset("ntrfvaxAz")
_FLAGS = frozenset("ims")


def regex_pattern(pattern: str, flags: str | None, function: str) -> str:
    """The RE2 pattern that matches what ``pattern`` with DataFusion ``flags`` matches
    in Rust; raises :class:`FilterError` naming ``function`` when they would differ."""
    _check_pattern(pattern, function)
    if flags is None or flags == "":
        return pattern
    if not set(flags) <= _FLAGS:
        raise FilterError(f"{function}: lancelet supports only the flags i, m and s, not {flags!r}")
    return f"(?{''.join(sorted(set(flags)))}){pattern}"


def _check_pattern(pattern: str, function: str) -> None:
    def refuse(what: str) -> FilterError:
        return FilterError(
            f"{function}: the pattern {pattern!r} uses {what}, which Rust's regex (pylance) "
            "and RE2 (lancelet) read differently; lancelet refuses it"
        )

    if "{," in pattern:
        raise refuse("'{,n}'")
    in_class = False
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            escaped = pattern[i + 1 : i + 2]
            if escaped.isalnum() and escaped not in _SAME_ESCAPES:
                raise refuse(f"the escape \\{escaped}")
            if escaped in ("<", ">"):
                raise refuse(f"the escape \\{escaped}")
            i += 2
            continue
        if in_class:
            if char == "[":
                if pattern.startswith("[:", i):
                    end = pattern.find(":]", i + 2)
                    if end < 0:
                        raise refuse("a nested character class")
                    i = end + 2
                    continue
                raise refuse("a nested character class")
            if pattern[i : i + 2] in ("&&", "--", "~~"):
                raise refuse(f"the class operator {pattern[i : i + 2]!r}")
            if char == "]":
                in_class = False
        elif char == "[":
            in_class = True
            i += 1
            # A ']' right after '[' or '[^' is a literal in both.
            if pattern.startswith("^", i):
                i += 1
            if pattern.startswith("]", i):
                i += 1
            continue
        i += 1


_INTEGERS = {
    "Int8": pa.int8(),
    "Int16": pa.int16(),
    "Int32": pa.int32(),
    "Int64": pa.int64(),
    "UInt8": pa.uint8(),
    "UInt16": pa.uint16(),
    "UInt32": pa.uint32(),
    "UInt64": pa.uint64(),
}
_NAMED_TYPES: dict[str, pa.DataType] = {
    **_INTEGERS,
    "Float32": pa.float32(),
    "Float64": pa.float64(),
    "Utf8": pa.string(),
    "LargeUtf8": pa.large_string(),
    "Boolean": pa.bool_(),
    "Date32": pa.date32(),
}
_UNITS = {
    "Second": "s",
    "Millisecond": "ms",
    "Microsecond": "us",
    "Nanosecond": "ns",
    **{unit: unit for unit in ("s", "ms", "us", "ns")},
}
# Timestamp(Second, None) and the newer Timestamp(s).
_TIMESTAMP = re.compile(r"Timestamp\(\s*(\w+)\s*(?:,\s*None\s*)?\)")
# FixedSizeList(32, Float32) and the newer FixedSizeList(32 x Float32); List(Int64).
_FIXED_SIZE_LIST = re.compile(r"FixedSizeList\(\s*(\d+)\s*(?:,|x)\s*(.+)\)")
_LIST = re.compile(r"(Large)?List\(\s*(.+)\)")


_FIXED_SIZE_BINARY = re.compile(r"FixedSizeBinary\(\s*(\d{1,9})\s*\)")


def arrow_type(name: str) -> pa.DataType:
    """The Arrow type an ``arrow_cast`` type name (arrow-rs's spelling) names, for the
    names lancelet supports."""
    text = name.strip()
    if text in _NAMED_TYPES:
        return _NAMED_TYPES[text]
    match = _TIMESTAMP.fullmatch(text)
    if match and match.group(1) in _UNITS:
        return pa.timestamp(_UNITS[match.group(1)])
    width = _FIXED_SIZE_BINARY.fullmatch(text)
    if width:
        return pa.binary(int(width.group(1)))
    fixed = _FIXED_SIZE_LIST.fullmatch(text)
    if fixed:
        return pa.list_(arrow_type(fixed.group(2)), int(fixed.group(1)))
    variable = _LIST.fullmatch(text)
    if variable:
        item = arrow_type(variable.group(2))
        return pa.large_list(item) if variable.group(1) else pa.list_(item)
    supported = ", ".join(
        [
            *_NAMED_TYPES,
            "Timestamp(<unit>, None)",
            "Timestamp(s|ms|us|ns)",
            "FixedSizeBinary(n)",
            "List(<type>)",
            "LargeList(<type>)",
            "FixedSizeList(<n>, <type>)",
        ]
    )
    raise FilterError(
        f"arrow_cast: lancelet does not support the type {name!r}; it supports {supported}"
    )


def current_date() -> pa.Scalar:
    """Today's date in UTC, as DataFusion's ``current_date`` gives it."""
    return pa.scalar(datetime.datetime.now(datetime.timezone.utc).date(), pa.date32())
