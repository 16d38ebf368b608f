"""Column references: a column (``col``), a struct field (``s.a``, ``s['a']``) and a
list item (``l[1]``, 1-based, negative from the end, NULL when out of range).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.errors import FilterError
from lancelet.expr.sql import kernels
from lancelet.expr.sql.dialect import sql_text
from lancelet.expr.sql.translator import Handler, Translator
from lancelet.expr.sql.values import Value, const, family

__all__ = ["HANDLERS", "struct_field"]


def _column(t: Translator, node: exp.Column) -> Value:
    return t.resolve(node.parts, node)


def _dot(t: Translator, node: exp.Dot) -> Value:
    # sqlglot spells a.b.c.d.e as Dot(Column(a.b.c.d), e).
    tail: list[object] = []
    base: object = node
    while isinstance(base, exp.Dot):
        tail.insert(0, base.expression)
        base = base.this
    if isinstance(base, exp.Column):
        return t.resolve([*base.parts, *tail], node)
    if not isinstance(base, exp.Expression) or not all(isinstance(p, exp.Identifier) for p in tail):
        raise t.unsupported(node, "field access on something other than a struct")
    value = t.visit(base)
    for part in tail:
        assert isinstance(part, exp.Identifier)
        value = struct_field(t, value, part.name, node)
    return value


def struct_field(t: Translator, value: Value, name: str, node: exp.Expression) -> Value:
    if not pa.types.is_struct(value.type) or value.type.get_field_index(name) < 0:
        raise FilterError(f"{sql_text(node)!r}: {value.type} has no field {name!r} ({t.sql!r})")
    index = value.type.get_field_index(name)
    return Value(pc.struct_field(value.expr, [index]), value.type.field(index).type)


def _bracket(t: Translator, node: exp.Bracket) -> Value:
    """``list[i]`` (1-based, negative from the end, NULL when out of range) and
    ``struct['name']``."""
    if len(node.expressions) != 1:
        raise t.unsupported(node, "a subscript with more than one index")
    subject = t.visit(node.this)
    key = t.visit(node.expressions[0])
    if key.const is None:
        raise t.unsupported(node, "a subscript that is not a literal")
    if pa.types.is_struct(subject.type) and family(key.type) == "string":
        return struct_field(t, subject, key.const.as_py(), node)
    is_list = pa.types.is_list(subject.type) or pa.types.is_large_list(subject.type)
    if (is_list or pa.types.is_fixed_size_list(subject.type)) and pa.types.is_integer(key.type):
        if subject.const is not None:
            raise t.unsupported(node, "a subscript of a constant")
        index = key.const.as_py()
        if index is None:
            return const(pa.scalar(None, subject.type.value_type))
        if not -(2**63) <= index < 2**63:
            raise FilterError(f"{sql_text(node)!r}: index {index} is out of range ({t.sql!r})")
        expr = kernels.list_item_expr(subject.expr, subject.type, index)
        return Value(expr, subject.type.value_type)
    raise FilterError(
        f"{sql_text(node)!r}: cannot subscript {subject.type} with {key.type} ({t.sql!r})"
    )


HANDLERS: dict[type[exp.Expression], Handler] = {
    exp.Column: _column,
    exp.Dot: _dot,
    exp.Bracket: _bracket,
}
