"""The names and nullability DataFusion gives the columns a query computes.

An unaliased expression's column is named after the expression as DataFusion prints
it: columns qualified by the table (``dataset.id``), literals with their type
(``Int64(1)``, ``Utf8("a")``, ``Float64(2)``), functions under the name written, in
lower case, with their arguments joined by commas and no spaces, and no parentheses
(``dataset.a + Int64(1) * Int64(2)`` whatever the grouping).  A bare column keeps its
own name.  Where lancelet does not know DataFusion's spelling (``CASE``, functions of
several named arguments, struct fields), the expression must be given a name with
``AS``: :func:`display_name` returns None and the caller refuses.

Nullability follows DataFusion's rules: columns keep theirs, literals and ``IS [NOT]
NULL`` are never null, operators are null when an operand can be, scalar functions
always may be (DataFusion's default), ``count`` never is and other aggregates may be.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Mapping

import pyarrow as pa
from sqlglot import exp

from lancelet.expr.query.statement import WRITTEN_NAME

_OPERATORS: dict[type[exp.Expr], str] = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.Mod: "%",
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.And: "AND",
    exp.Or: "OR",
    exp.DPipe: "||",
    exp.Like: "LIKE",
    exp.ILike: "ILIKE",
    exp.NullSafeEQ: "IS NOT DISTINCT FROM",
    exp.NullSafeNEQ: "IS DISTINCT FROM",
}
_NEGATED: dict[type[exp.Expr], str] = {exp.Like: "NOT LIKE", exp.ILike: "NOT ILIKE"}
_INT64_MAX = 2**63 - 1
_UINT64_MAX = 2**64 - 1
_NAMED_ARGS = frozenset({"this", "expressions", "big_int"})


def display_name(node: exp.Expr, qualifier: str) -> str | None:
    """The output column name DataFusion gives ``node`` (a resolved expression), or
    None when lancelet cannot tell it."""
    inner = _unwrapped(node)
    if isinstance(inner, exp.Column):
        return inner.name if len(inner.parts) == 1 else None
    return _name(node, qualifier)


def _unwrapped(node: exp.Expr) -> exp.Expr:
    while isinstance(node, (exp.Paren, exp.Cast)):
        node = node.this
    return node


def _name(node: exp.Expr, q: str) -> str | None:
    handler = _HANDLERS.get(type(node))
    if handler is not None:
        return handler(node, q)
    if type(node) in _OPERATORS:
        return _operator(node, q)
    if is_aggregate(node):
        return _aggregate(node, q)  # type: ignore[arg-type]
    if isinstance(node, exp.Func):
        return _function(node, q)
    return None


def _operator(node: exp.Expr, q: str) -> str | None:
    given = {k for k, v in node.args.items() if v not in (None, False)}
    if given - {"this", "expression", "negate", "safe"}:
        return None
    operator = _OPERATORS[type(node)]
    if node.args.get("negate"):
        if type(node) not in _NEGATED:
            return None
        operator = _NEGATED[type(node)]
    return _joined(q, node.this, f" {operator} ", node.expression)


def _joined(q: str, left: exp.Expr, between: str, right: exp.Expr) -> str | None:
    a, b = _name(left, q), _name(right, q)
    return None if a is None or b is None else f"{a}{between}{b}"


def _column(node: exp.Column, q: str) -> str | None:
    return f"{q}.{node.name}" if len(node.parts) == 1 else None


def _literal(node: exp.Literal, q: str) -> str | None:
    if node.is_string:
        return f"Utf8({rust_debug(node.this)})"
    return _number(node.this)


def _number(text: str, negative: bool = False) -> str | None:
    sign = "-" if negative else ""
    if text.isdigit():
        value = int(sign + text)
        if -_INT64_MAX - 1 <= value <= _INT64_MAX:
            return f"Int64({value})"
        return f"UInt64({value})" if 0 <= value <= _UINT64_MAX else None
    try:
        return f"Float64({rust_float(float(sign + text))})"
    except ValueError:
        return None


def rust_float(value: float) -> str:
    """``value`` as Rust's ``Display`` prints an f64: the shortest digits that read
    back as it, never an exponent, no ``.0`` on whole numbers."""
    if value != value or value in (float("inf"), float("-inf")):
        return {"nan": "NaN", "inf": "inf", "-inf": "-inf"}[repr(value)]
    text = format(decimal.Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "-0" if text == "-0" else text


def rust_debug(text: str) -> str:
    """``text`` as Rust's ``Debug`` prints a string: quoted, with escapes."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{{{ord(char):x}}}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}


def _neg(node: exp.Neg, q: str) -> str | None:
    inner = node.this
    if isinstance(inner, exp.Literal) and not inner.is_string:
        return _number(inner.this, negative=True)
    name = _name(inner, q)
    return None if name is None else f"(- {name})"


def _not(node: exp.Not, q: str) -> str | None:
    inner = _unparen(node.this)
    if type(inner) in _NEGATED:
        return _joined(q, inner.this, f" {_NEGATED[type(inner)]} ", inner.expression)
    if isinstance(inner, exp.Is):
        return _is(inner, q, " NOT")
    if isinstance(inner, exp.Between):
        return _between(inner, q, " NOT")
    if isinstance(inner, exp.In):
        return _in(inner, q, " NOT")
    name = _name(node.this, q)
    return None if name is None else f"NOT {name}"


def _unparen(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _is(node: exp.Is, q: str, negation: str = "") -> str | None:
    subject, what = _name(node.this, q), node.expression
    if subject is None:
        return None
    if isinstance(what, exp.Null):
        return f"{subject} IS{negation} NULL"
    if isinstance(what, exp.Boolean):
        return f"{subject} IS{negation} {'TRUE' if what.this else 'FALSE'}"
    return None


def _between(node: exp.Between, q: str, negation: str = "") -> str | None:
    parts = [_name(node.this, q), _name(node.args["low"], q), _name(node.args["high"], q)]
    if any(p is None for p in parts):
        return None
    return f"{parts[0]}{negation} BETWEEN {parts[1]} AND {parts[2]}"


def _in(node: exp.In, q: str, negation: str = "") -> str | None:
    items = [_name(e, q) for e in node.expressions]
    subject = _name(node.this, q)
    if subject is None or not items or any(i is None for i in items):
        return None
    return f"{subject}{negation} IN {', '.join(str(i) for i in items)}"


# Aggregate functions that sqlglot parses as calls of unknown functions.
ANONYMOUS_AGGREGATES = frozenset({"mean", "var"})


def is_aggregate(node: exp.Expr) -> bool:
    """Whether ``node`` calls an aggregate function."""
    if isinstance(node, exp.AggFunc):
        return True
    return isinstance(node, exp.Anonymous) and function_name(node) in ANONYMOUS_AGGREGATES


def call_arguments(node: exp.Func) -> list[exp.Expr] | None:
    """A function call's arguments in the order written, when that order is known:
    for calls whose arguments are ``this`` and a list of others (None otherwise)."""
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    if not {k for k, v in node.args.items() if v not in (None, [], False)} <= _NAMED_ARGS:
        return None
    first = [node.this] if node.args.get("this") is not None else []
    return first + list(node.expressions)


def function_name(node: exp.Func) -> str:
    """The name a function call was written with, in lower case (DataFusion's)."""
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return str(node.meta.get(WRITTEN_NAME) or node.sql_name()).lower()


def _function(node: exp.Func, q: str) -> str | None:
    args = call_arguments(node)
    if args is None:
        return None
    names = [_name(a, q) for a in args]
    if any(n is None for n in names):
        return None
    return f"{function_name(node)}({','.join(str(n) for n in names)})"


def _aggregate(node: exp.Func, q: str) -> str | None:
    arguments = call_arguments(node)
    if arguments is None or len(arguments) > 1:
        return None
    argument = arguments[0] if arguments else None
    prefix = ""
    if isinstance(argument, exp.Distinct):
        if len(argument.expressions) != 1:
            return None
        prefix, argument = "DISTINCT ", argument.expressions[0]
    if argument is None:
        inner: str | None = ""
    elif isinstance(argument, exp.Star):
        inner = "*"
    else:
        inner = _name(argument, q)
    return None if inner is None else f"{function_name(node)}({prefix}{inner})"


_HANDLERS: dict[type[exp.Expr], Callable[..., str | None]] = {
    exp.Column: _column,
    exp.Literal: _literal,
    exp.Boolean: lambda node, q: f"Boolean({'true' if node.this else 'false'})",
    exp.Null: lambda node, q: "NULL",
    exp.Paren: lambda node, q: _name(node.this, q),
    exp.Cast: lambda node, q: _name(node.this, q),
    exp.TryCast: lambda node, q: _name(node.this, q),
    exp.Neg: _neg,
    exp.Not: _not,
    exp.Is: _is,
    exp.Between: _between,
    exp.In: _in,
}


# --- nullability -------------------------------------------------------------------


def is_nullable(node: exp.Expr, fields: Mapping[str, pa.Field]) -> bool:
    """Whether DataFusion's schema lets ``node``'s column hold nulls; ``fields`` are
    the columns it reads, by name."""
    if not any(isinstance(n, exp.Column) or is_aggregate(n) for n in node.walk()):
        return isinstance(node, exp.Null)  # folded to a literal: null only if NULL
    return _nullable(node, fields)


def _nullable(node: exp.Expr, fields: Mapping[str, pa.Field]) -> bool:
    if isinstance(node, exp.Column):
        field = fields.get(node.name)
        return len(node.parts) > 1 or field is None or field.nullable
    if isinstance(node, (exp.Literal, exp.Boolean, exp.Is)):
        return False
    if isinstance(node, exp.Not) and isinstance(_unparen(node.this), exp.Is):
        return False
    if isinstance(node, exp.Count):
        return False
    if is_aggregate(node) or isinstance(node, (exp.TryCast, exp.Null)):
        return True
    if isinstance(node, exp.Coalesce):
        return all(_nullable(a, fields) for a in [node.this, *node.expressions])
    if isinstance(node, exp.Func) and not isinstance(node, exp.Cast):
        return True
    if isinstance(node, _STRICT):
        return any(_nullable(child, fields) for child in node.iter_expressions())
    return True


# Nodes that are null exactly when one of their operands is.
_STRICT: tuple[type[exp.Expr], ...] = (
    exp.Paren,
    exp.Cast,
    exp.Neg,
    exp.Not,
    exp.Between,
    exp.In,
    *_OPERATORS,
)
