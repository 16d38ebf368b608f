"""List membership in SQL: ``array_has_any``, ``array_has_all`` and ``array_has`` (and
their other spellings), read into the list and the values typed for it
(:func:`lancelet.expr.functions.array_has.needles`) and evaluated by its kernel.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from lancelet.errors import FilterError
from lancelet.expr.functions import array_has
from lancelet.expr.sql.dialect import sql_text
from lancelet.expr.sql.translator import Handler, Translator, construct_name
from lancelet.expr.sql.values import NULL_BOOL, Value

__all__ = ["HANDLERS", "membership_call", "read_membership", "translate"]

# DataFusion's names that sqlglot leaves as unknown functions (it reads array_has,
# array_contains and array_has_all itself), and what each asks.
_MEMBERSHIP_NAMES = {
    "array_has_any": "any",
    "list_has_any": "any",
    "arrays_overlap": "any",
    "list_has_all": "all",
    "list_has": "value",
    "list_contains": "value",
}

_ARRAY_BUILDERS = ("make_array", "make_list")


def membership_call(node: exp.Expression) -> tuple[str, list[exp.Expression]] | None:
    """What a membership call asks ("any", "all" or "value") and its arguments."""
    if isinstance(node, exp.ArrayContains | exp.ArrayContainsAll):
        extra = [
            k for k, v in node.args.items() if v is not None and k not in ("this", "expression")
        ]
        args = [node.this, node.expression, *(node.args[k] for k in extra)]
        return ("value" if isinstance(node, exp.ArrayContains) else "all"), args
    if isinstance(node, exp.Anonymous) and node.name.lower() in _MEMBERSHIP_NAMES:
        return _MEMBERSHIP_NAMES[node.name.lower()], list(node.expressions)
    return None


def _function_name(node: exp.Expression) -> str:
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    return "array_has" if isinstance(node, exp.ArrayContains) else "array_has_all"


def read_membership(
    t: Translator, node: exp.Expression, kind: str, args: list[exp.Expression]
) -> tuple[Value, array_has.Mode, array_has.Needles | None]:
    name = _function_name(node)
    where = f"{sql_text(node)!r} (filter {t.sql!r})"
    wanted = "a value" if kind == "value" else "an array of values"
    if len(args) != 2:
        raise FilterError(f"{where}: {name} takes a list and {wanted}")
    subject = t.visit(args[0])
    if subject.const is not None or not array_has.is_list(subject.type):
        raise FilterError(f"{where}: {name} looks in a list column, not a {subject.type}")
    if kind == "any" and isinstance(args[1], exp.Null):
        literals: list[pa.Scalar] | None = None  # pylance: NULL on every row
    else:
        literals = _membership_literals(t, args[1], kind == "value", where, name)
    try:
        needles = array_has.needles(
            subject.type.value_type, literals or [], element=kind == "value"
        )
    except FilterError as e:
        raise FilterError(f"{where}: {e}") from None
    if literals is None or (kind == "value" and not literals[0].is_valid):
        return subject, "any", None
    return subject, ("all" if kind == "all" else "any"), needles


def _membership_literals(
    t: Translator, node: exp.Expression, single: bool, where: str, name: str
) -> list[pa.Scalar]:
    if single:
        elements = [node]
    elif isinstance(node, exp.Array) or (
        isinstance(node, exp.Anonymous) and node.name.lower() in _ARRAY_BUILDERS
    ):
        elements = list(node.expressions)
    else:
        raise FilterError(f"{where}: {name} takes an array of literals such as [1, 2]")
    out: list[pa.Scalar] = []
    for element in elements:
        value = t.visit(element)
        if value.const is None:
            raise FilterError(f"{where}: lancelet's {name} takes literal values only")
        out.append(value.const)
    return out


def translate(t: Translator, node: exp.Expression) -> Value:
    call = membership_call(node)
    if call is None:
        raise FilterError(f"unsupported SQL construct {construct_name(node)} in filter {t.sql!r}")
    subject, mode, needles = read_membership(t, node, *call)
    if needles is None:
        return NULL_BOOL
    expr = array_has.expression(subject.expr, subject.type, needles, mode)
    return Value(expr, pa.bool_())


HANDLERS: dict[type[exp.Expression], Handler] = {
    exp.ArrayContains: translate,
    exp.ArrayContainsAll: translate,
}
