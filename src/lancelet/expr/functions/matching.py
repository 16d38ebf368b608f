"""Matching strings with patterns: ``regexp_like``, ``regexp_match`` (as a condition)
and ``contains``.  The patterns are literals, read as pylance reads them
(:func:`lancelet.expr.functions.arguments.regex_pattern`).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.errors import FilterError
from lancelet.expr.functions import arguments
from lancelet.expr.sql.dialect import sql_text
from lancelet.expr.sql.translator import Handler, Translator
from lancelet.expr.sql.values import FALSE, NULL_BOOL, Value, apply, family

__all__ = ["HANDLERS", "regexp"]


def _regexp_like(t: Translator, node: exp.RegexpLike) -> Value:
    args = [node.this, node.expression]
    if node.args.get("flag") is not None:
        args.append(node.args["flag"])
    return regexp(t, node, "regexp_like", args)


def regexp(t: Translator, node: exp.Expression, name: str, args: list[exp.Expression]) -> Value:
    """``regexp_like(s, pattern[, flags])``: true where ``pattern`` matches somewhere in
    ``s``, NULL where ``s`` is NULL; ``regexp_match`` as a condition: the same, but
    false (never NULL) where regexp_like is NULL."""
    where = f"{sql_text(node)!r} (filter {t.sql!r})"
    if name == "regexp_match" and not _coerced_to_boolean(node):
        raise FilterError(
            f"{where}: lancelet takes regexp_match only as a condition (the whole filter "
            "or an operand of AND, OR, NOT); use regexp_like for a boolean value"
        )
    if len(args) not in (2, 3):
        raise FilterError(f"{where}: {name} takes a string, a pattern and optional flags")
    subject = t.visit(args[0])
    literals = [t.visit(a) for a in args[1:]]
    if any(v.const is None or family(v.type) not in ("string", "null") for v in literals):
        raise FilterError(f"{where}: lancelet's {name} takes a string literal pattern and flags")
    if family(subject.type) not in ("string", "null"):
        raise FilterError(f"{where}: {name} matches strings, not {subject.type}")
    if any(v.const is not None and not v.const.is_valid for v in literals):
        return FALSE if name == "regexp_match" else NULL_BOOL
    texts = [v.const.as_py() for v in literals if v.const is not None]
    flags = texts[1] if len(texts) > 1 else None
    try:
        pattern = arguments.regex_pattern(texts[0], flags, name)
    except FilterError as e:
        raise FilterError(f"{where}: {e}") from None
    try:
        pc.match_substring_regex(pa.array([""]), pattern=pattern)  # compiles it
    except pa.ArrowInvalid as e:
        raise FilterError(
            f"{where}: lancelet's regular expressions (RE2) do not take this pattern: {e}"
        ) from None
    if pa.types.is_null(subject.type):
        matched = NULL_BOOL
    else:
        matched = apply(pc.match_substring_regex, [subject], node, pattern=pattern)
    if name == "regexp_match":
        # pylance reads the list of groups as "matched" (NULL when nothing matched, or s
        # or the pattern is NULL), and only where a boolean is expected.
        return apply(pc.coalesce, [matched, FALSE], node)
    return matched


def _contains(t: Translator, node: exp.Contains) -> Value:
    """DataFusion's ``contains(s, sub)``: whether ``s`` holds ``sub`` (case-sensitive),
    NULL where ``s`` is NULL; lancelet takes a literal ``sub`` only."""
    where = f"{sql_text(node)!r} (filter {t.sql!r})"
    subject, needle = t.visit(node.this), t.visit(node.expression)
    if needle.const is None or family(needle.type) not in ("string", "null"):
        raise FilterError(f"{where}: lancelet's contains takes a string literal to look for")
    if family(subject.type) not in ("string", "null"):
        raise FilterError(f"{where}: contains looks in strings, not {subject.type}")
    if not needle.const.is_valid or pa.types.is_null(subject.type):
        return NULL_BOOL
    return apply(pc.match_substring, [subject], node, pattern=needle.const.as_py())


def _coerced_to_boolean(node: exp.Expression) -> bool:
    """Whether ``node`` stands where pylance coerces regexp_match's list to a boolean:
    the whole filter, or an operand of AND, OR or NOT."""
    parent = node.parent
    while isinstance(parent, exp.Paren):
        parent = parent.parent
    return parent is None or isinstance(parent, (exp.And, exp.Or, exp.Not))


HANDLERS: dict[type[exp.Expression], Handler] = {
    exp.RegexpLike: _regexp_like,
    exp.Contains: _contains,
}
