"""SQL's operators: AND, OR, NOT and comparisons in three-valued logic, arithmetic
typed as :mod:`lancelet.expr.sql.value_types` types it, ``IS``, ``BETWEEN``, ``IN``,
``LIKE`` / ``ILIKE`` (with ``ESCAPE``) and ``||``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.errors import FilterError
from lancelet.expr.sql import timestamps, value_types
from lancelet.expr.sql.comparison import adopt, compare, float_operands
from lancelet.expr.sql.dialect import sql_text
from lancelet.expr.sql.literals import number
from lancelet.expr.sql.translator import Handler, Translator
from lancelet.expr.sql.values import (
    FALSE,
    NULL_BOOL,
    Value,
    apply,
    boolean_operand,
    const,
    family,
    is_number,
)

__all__ = ["HANDLERS"]


def _paren(t: Translator, node: exp.Paren) -> Value:
    return t.visit(node.this)


def _neg(t: Translator, node: exp.Neg) -> Value:
    operand = node.this
    if isinstance(operand, exp.Literal) and not operand.is_string:
        # Folding the sign into the text keeps -9223372036854775808 an int64.
        return const(number("-" + operand.this))
    return apply(pc.negate_checked if t.computes else pc.negate, [t.visit(operand)], node)


def _not(t: Translator, node: exp.Not) -> Value:
    return apply(pc.invert, [boolean_operand(t.visit(node.this))], node)


def _logical(fn: Callable[..., Any]) -> Handler:
    def handler(t: Translator, node: exp.Expression) -> Value:
        operands = [boolean_operand(t.visit(n)) for n in (node.this, node.expression)]
        return apply(fn, operands, node)

    return handler


# Arithmetic that raises on overflow, where the plain kernels wrap around.
_CHECKED: dict[Callable[..., Any], Callable[..., Any]] = {
    pc.add: pc.add_checked,
    pc.subtract: pc.subtract_checked,
    pc.multiply: pc.multiply_checked,
    pc.divide: pc.divide_checked,
    pc.negate: pc.negate_checked,
}


def _arithmetic(fn: Callable[..., Any]) -> Handler:
    def handler(t: Translator, node: exp.Expression) -> Value:
        left, right = t.visit(node.this), t.visit(node.expression)
        if fn in _OPERATORS and is_number(left.type) and is_number(right.type):
            return _numeric(t, _OPERATORS[fn], left, right, node)
        if t.computes:
            return apply(_CHECKED.get(fn, fn), float_operands(left, right, node), node)
        return apply(fn, float_operands(left, right, node), node)

    return handler


_OPERATORS = {pc.add: "+", pc.subtract: "-", pc.multiply: "*", pc.divide: "/", pc.remainder: "%"}


def _numeric(t: Translator, op: str, left: Value, right: Value, node: exp.Expression) -> Value:
    """Arithmetic on two numbers, typed and computed as pylance does it."""
    try:
        arithmetic = value_types.arithmetic(op, left.type, right.type, checked=t.computes)
    except FilterError as e:
        raise FilterError(f"{sql_text(node)!r} (in {t.sql!r}): {e}") from None
    value = apply(arithmetic.function, [left, right], node)
    return Value(value.expr, arithmetic.type, value.const)


def _comparison(fn: Callable[..., Any]) -> Handler:
    def handler(t: Translator, node: exp.Expression) -> Value:
        return compare(fn, t.visit(node.this), t.visit(node.expression), node)

    return handler


def _mod(t: Translator, node: exp.Mod) -> Value:
    dividend, divisor = t.visit(node.this), t.visit(node.expression)
    if is_number(dividend.type) and is_number(divisor.type):
        return _numeric(t, "%", dividend, divisor, node)
    dividend, divisor = float_operands(dividend, divisor, node)
    # Truncated remainder, the sign following the dividend, as SQL's % has it.
    remainder = pc.remainder_checked if t.computes else pc.remainder
    return apply(remainder, [dividend, divisor], node)


def _null_safe_equal(t: Translator, node: exp.Expression) -> Value:
    left, right = t.visit(node.this), t.visit(node.expression)
    left_null = apply(pc.is_null, [left], node)
    right_null = apply(pc.is_null, [right], node)
    either = apply(pc.or_kleene, [left_null, right_null], node)
    both = apply(pc.and_kleene, [left_null, right_null], node)
    return apply(pc.if_else, [either, both, compare(pc.equal, left, right, node)], node)


def _null_safe_not_equal(t: Translator, node: exp.Expression) -> Value:
    return apply(pc.invert, [_null_safe_equal(t, node)], node)


def _is(t: Translator, node: exp.Is) -> Value:
    subject, target = t.visit(node.this), node.expression
    if isinstance(target, exp.Null):
        return apply(pc.is_null, [subject], node)
    if isinstance(target, exp.Boolean):
        # x IS TRUE is never NULL: NULL counts as "not true".
        subject = boolean_operand(subject)
        if not target.this:
            subject = apply(pc.invert, [subject], node)
        return apply(pc.coalesce, [subject, FALSE], node)
    raise t.unsupported(node, "IS with something other than NULL, TRUE or FALSE")


def _between(t: Translator, node: exp.Between) -> Value:
    if node.args.get("symmetric"):
        raise t.unsupported(node, "BETWEEN SYMMETRIC")
    subject = t.visit(node.this)
    low, high = t.visit(node.args["low"]), t.visit(node.args["high"])
    timestamps.check_mixed_list(subject.type, [low.type, high.type], sql_text(node), "BETWEEN")
    above = compare(pc.greater_equal, subject, low, node)
    below = compare(pc.less_equal, subject, high, node)
    return apply(pc.and_kleene, [above, below], node)


def _in(t: Translator, node: exp.In) -> Value:
    if any(node.args.get(key) for key in ("query", "unnest", "field")):
        raise t.unsupported(node, "IN with a subquery")
    subject = t.visit(node.this)
    items = [t.visit(item) for item in node.expressions]
    if not items:
        raise t.unsupported(node, "IN with an empty list")
    timestamps.check_mixed_list(subject.type, [item.type for item in items], sql_text(node), "IN")
    timestamps.check_list_units([item.const for item in items], sql_text(node))
    if subject.const is None and all(item.const is not None for item in items):
        fast = _in_value_set(subject, items, node)
        if fast is not None:
            return fast
    # A chain of ORed equalities has SQL's NULL semantics for IN by construction.
    result = compare(pc.equal, subject, items[0], node)
    for item in items[1:]:
        result = apply(pc.or_kleene, [result, compare(pc.equal, subject, item, node)], node)
    return result


def _in_value_set(subject: Value, items: list[Value], node: exp.Expression) -> Value | None:
    """``subject IN (literals...)`` as one hash lookup, when every literal fits its type."""
    adopted = [adopt(item, subject.type, node).const for item in items]
    values = [v for v in adopted if v is not None and v.is_valid]
    if any(v.type != subject.type for v in values):
        return None
    list_has_null = len(values) < len(items)
    if pa.types.is_floating(subject.type) and any(v.as_py() != v.as_py() for v in values):
        return None  # the hash lookup does not tell -NaN from NaN; the total order does
    if pa.types.is_floating(subject.type) and any(v.as_py() == 0 for v in values):
        # The hash lookup tells -0.0 from 0.0; SQL's equality does not.
        values += [pa.scalar(0.0, subject.type), pa.scalar(-0.0, subject.type)]
    value_set = pa.array(values, subject.type)
    hit = apply(pc.is_in, [subject], node, value_set=value_set, skip_nulls=True)
    # is_in never returns NULL; SQL does when the subject is NULL, or when the list
    # holds a NULL and nothing matched.
    if list_has_null:
        hit = apply(pc.or_kleene, [hit, NULL_BOOL], node)
    valid = apply(pc.is_valid, [subject], node)
    return apply(pc.if_else, [valid, hit, NULL_BOOL], node)


def _like(t: Translator, node: exp.Expression, escape: str | None = None) -> Value:
    subject, pattern = t.visit(node.this), t.visit(node.expression)
    if pattern.const is None or family(pattern.type) not in ("string", "null"):
        raise t.unsupported(node, "LIKE with a pattern that is not a string literal")
    if not pattern.const.is_valid:
        return NULL_BOOL
    text = pattern.const.as_py()
    if escape is not None:
        text = _backslash_escapes(text, escape)
    ignore_case = isinstance(node, exp.ILike)
    return apply(pc.match_like, [subject], node, pattern=text, ignore_case=ignore_case)


def _like_handler(t: Translator, node: exp.Expression) -> Value:
    return _like(t, node)


def _escape(t: Translator, node: exp.Escape) -> Value:
    like, escape = node.this, t.visit(node.expression).const
    if not isinstance(like, (exp.Like, exp.ILike)):
        raise t.unsupported(node, "ESCAPE outside LIKE")
    if escape is None or family(escape.type) != "string" or len(escape.as_py()) != 1:
        raise t.unsupported(node, "ESCAPE with something other than one character")
    value = _like(t, like, escape.as_py())
    if like.args.get("negate"):
        value = apply(pc.invert, [value], node)
    return value


def _backslash_escapes(pattern: str, escape: str) -> str:
    """Rewrite a LIKE pattern that uses ``escape`` into Arrow's backslash-escaped form."""
    out: list[str] = []
    chars = iter(pattern)
    for char in chars:
        if char == escape:
            out.append("\\" + next(chars, ""))
        elif char == "\\":
            out.append("\\\\")
        else:
            out.append(char)
    return "".join(out)


def _concat(a: Any, b: Any) -> Any:
    return pc.binary_join_element_wise(a, b, "")


HANDLERS: dict[type[exp.Expression], Handler] = {
    exp.Paren: _paren,
    exp.Neg: _neg,
    exp.Not: _not,
    exp.And: _logical(pc.and_kleene),
    exp.Or: _logical(pc.or_kleene),
    exp.EQ: _comparison(pc.equal),
    exp.NEQ: _comparison(pc.not_equal),
    exp.LT: _comparison(pc.less),
    exp.LTE: _comparison(pc.less_equal),
    exp.GT: _comparison(pc.greater),
    exp.GTE: _comparison(pc.greater_equal),
    exp.NullSafeEQ: _null_safe_equal,
    exp.NullSafeNEQ: _null_safe_not_equal,
    exp.Is: _is,
    exp.Between: _between,
    exp.In: _in,
    exp.Like: _like_handler,
    exp.ILike: _like_handler,
    exp.Escape: _escape,
    exp.Add: _arithmetic(pc.add),
    exp.Sub: _arithmetic(pc.subtract),
    exp.Mul: _arithmetic(pc.multiply),
    exp.Div: _arithmetic(pc.divide),
    exp.Mod: _mod,
    exp.DPipe: _arithmetic(_concat),
}
