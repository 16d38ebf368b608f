"""The translation of every scalar function lancelet implements, by lower-case name, and
the dispatch of a call to it (or its refusal by name).

Calls arrive from :mod:`lancelet.expr.functions.calls` as sqlglot nodes: plain calls
(``exp.Anonymous``, as the filter's dialect reads every catalogued name), and the
special syntaxes sqlglot parses itself (``EXTRACT(year FROM d)``,
``SUBSTRING(s FROM 2 FOR 3)``, ``TRIM(LEADING 'x' FROM s)``, ``current_timestamp``),
which read as the DataFusion functions they stand for.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from lancelet.errors import FilterError
from lancelet.expr.functions import conditional, dates, nested, numeric, strings, vectors
from lancelet.expr.functions.base import Call, Value
from lancelet.expr.sql import catalog
from lancelet.expr.sql.translator import Translator

__all__ = ["FUNCTIONS", "call"]

FUNCTIONS: dict[str, Callable[[Call], Value]] = {
    **conditional.FUNCTIONS,
    **strings.FUNCTIONS,
    **numeric.FUNCTIONS,
    **dates.FUNCTIONS,
    **nested.FUNCTIONS,
    **vectors.FUNCTIONS,
}


def call(translator: Translator, node: exp.Expression) -> Value:
    """Translate the function call ``node``, or refuse it naming the function."""
    name, args = _parts(node)
    reason = catalog.refusal(name)
    if reason is not None:
        raise FilterError(
            f"lancelet does not implement SQL function '{name}': {reason} (in {translator.sql!r})"
        )
    handler = FUNCTIONS.get(name)
    if handler is None:
        raise FilterError(f"unsupported SQL construct function {name}() in {translator.sql!r}")
    return handler(Call(translator, node, name, args))


_TRIM_BY_POSITION = {"LEADING": "ltrim", "TRAILING": "rtrim", "BOTH": "btrim", None: "btrim"}


def _parts(node: exp.Expression) -> tuple[str, list[exp.Expression]]:
    """The DataFusion function ``node`` calls, and its arguments in DataFusion's order."""
    if isinstance(node, exp.Anonymous):
        return node.name.lower(), list(node.expressions)
    if isinstance(node, exp.Extract):
        return "date_part", [exp.Literal.string(node.this.name), node.expression]
    if isinstance(node, exp.Substring):
        return "substr", _present(node.this, node.args.get("start"), node.args.get("length"))
    if isinstance(node, exp.Trim):
        position = node.args.get("position")
        name = _TRIM_BY_POSITION.get(position.upper() if isinstance(position, str) else None)
        return name or "btrim", _present(node.this, node.expression)
    if isinstance(node, exp.Overlay):
        return "overlay", []
    if isinstance(node, exp.CurrentTimestamp):
        return "current_timestamp", _present(node.this)
    if isinstance(node, exp.CurrentTime):
        return "current_time", _present(node.this)
    raise FilterError(f"unsupported SQL construct {node.key.upper()}")


def _present(*args: exp.Expression | None) -> list[exp.Expression]:
    return [a for a in args if a is not None]
