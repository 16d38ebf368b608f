"""``regexp_replace`` and ``regexp_count``, as pylance evaluates them.

Patterns are Rust regular expressions in pylance and RE2 in pyarrow; the two agree
except where :func:`lancelet.expr.functions.arguments.regex_pattern` says, and patterns
using those differences are refused, as for ``regexp_like``.  The pattern, flags and
replacement must be literals.

A replacement is Rust's: ``$1`` or ``${1}`` is a group (``\\1`` too, which DataFusion
rewrites to ``${1}``), ``$$`` is a ``$``; it is rewritten to RE2's ``\\1`` syntax.  Named
groups, groups past 9 and ``$name`` followed by letters (a group *named* ``1x`` in
Rust) are refused.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import FilterError
from lancelet.expr.functions import arguments
from lancelet.expr.functions.base import (
    Call,
    Value,
    apply,
    cast,
    const,
    is_null,
    is_string,
    null,
)

__all__ = ["regexp_count", "regexp_replace", "rust_replacement"]

_GROUP = re.compile(r"\$(?:\{([^}]*)\}|([0-9A-Za-z_]+))")


def rust_replacement(replacement: str, groups: int, named: bool) -> str:
    """The RE2 rewrite string for a DataFusion (Rust) replacement string, for a pattern
    with ``groups`` numbered groups (up to 9 counted) and ``named`` groups or not."""
    # DataFusion first turns \N into ${N}.
    text = re.sub(r"\\(\d+)", lambda m: "${" + m.group(1) + "}", replacement)
    out: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        if char != "$":
            out.append("\\\\" if char == "\\" else char)
            position += 1
            continue
        if text.startswith("$$", position):
            out.append("$")
            position += 2
            continue
        match = _GROUP.match(text, position)
        if match is None:
            out.append("$")  # a lone $ stands for itself
            position += 1
            continue
        out.append(_group_reference(match, groups, named))
        position = match.end()
    return "".join(out)


def _group_reference(match: re.Match[str], groups: int, named: bool) -> str:
    name = match.group(1) if match.group(1) is not None else match.group(2)
    if name.isdigit() and int(name) <= 9:
        # Rust replaces a group the pattern lacks by nothing.
        return "\\" + str(int(name)) if int(name) <= groups or name == "0" else ""
    if name and not name.isdigit() and not named:
        return ""  # a name no group has
    raise FilterError(f"lancelet takes replacement groups $0 to $9 only, not {match.group(0)!r}")


def _group_count(pattern: str) -> int:
    """How many of groups 1 to 9 the RE2 ``pattern`` has."""
    count = 0
    for group in range(1, 10):
        try:
            pc.replace_substring_regex(pa.array([""]), pattern=pattern, replacement=f"\\{group}")
        except pa.ArrowInvalid:
            break
        count = group
    return count


def _pattern(call: Call, pattern: str, flags: str) -> str:
    try:
        rewritten = arguments.regex_pattern(pattern, flags or None, call.name)
    except FilterError as e:
        raise call.error(str(e)) from None
    try:
        pc.match_substring_regex(pa.array([""]), pattern=rewritten)  # compiles it
    except pa.ArrowInvalid as e:
        raise call.error(
            f"lancelet's regular expressions (RE2) do not take this pattern: {e}"
        ) from None
    return rewritten


def regexp_replace(call: Call) -> Value:
    """``regexp_replace(s, pattern, replacement[, flags])``: the first match (every match
    with the flag ``g``) replaced."""
    call.arity(3, 4)
    subject = call.value(0)
    if not (is_string(subject.type) or is_null(subject.type)):
        raise call.error(f"the string must be a string, not {subject.type}")
    pattern = call.str_literal(1, "pattern")
    replacement = call.str_literal(2, "replacement")
    flags = call.str_literal(3, "flags") if len(call.args) == 4 else ""
    if is_null(subject.type) or pattern is None or replacement is None or flags is None:
        # pylance reads a NULL literal argument as a string_view.
        result = null(subject.type if is_string(subject.type) else pa.string())
        return call.text_result(
            result, call.arg_is_view(0) or is_null(subject.type) or len(call.args) > 1
        )
    every = "g" in flags
    rewritten = _pattern(call, pattern, flags.replace("g", ""))
    try:
        named = "(?P<" in pattern or "(?<" in pattern
        rewrite = rust_replacement(replacement, _group_count(rewritten), named)
        pc.replace_substring_regex(pa.array(["x"]), pattern=rewritten, replacement=rewrite)
    except (FilterError, pa.ArrowInvalid) as e:
        raise call.error(f"lancelet does not take this replacement: {e}") from None
    replaced = apply(
        pc.replace_substring_regex,
        [subject],
        call.node,
        pattern=rewritten,
        replacement=rewrite,
        max_replacements=None if every else 1,
    )
    return call.text_result(replaced, call.arg_is_view(0))


def regexp_count(call: Call) -> Value:
    """``regexp_count(s, pattern[, 1[, flags]])``: the number of non-overlapping matches
    (0 where ``s`` is NULL, as pylance counts)."""
    call.arity(2, 4)
    subject = call.value(0)
    if not (is_string(subject.type) or is_null(subject.type)):
        raise call.error(f"the string must be a string, not {subject.type}")
    pattern = call.str_literal(1, "pattern")
    start = call.int_literal(2, "start position") if len(call.args) >= 3 else 1
    flags = call.str_literal(3, "flags") if len(call.args) == 4 else ""
    if start != 1:
        raise call.error("lancelet counts from the start of the string (position 1) only")
    if pattern is None or flags is None:
        return null(pa.int64())
    rewritten = _pattern(call, pattern, flags)
    if pc.match_substring_regex(pa.array([""]), pattern=rewritten)[0].as_py():
        # pyarrow steps over an empty match by a byte, pylance by a character.
        raise call.error("lancelet does not count matches of a pattern that matches ''")
    zero = const(pa.scalar(0, pa.int64()))
    if is_null(subject.type):
        return zero
    counted = apply(pc.count_substring_regex, [subject], call.node, pattern=rewritten)
    counted = cast(counted, pa.int64(), call.node)
    return apply(pc.coalesce, [counted, zero], call.node)
