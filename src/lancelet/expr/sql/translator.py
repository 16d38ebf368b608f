"""The translator of a sqlglot tree into typed Arrow values (:class:`Translator`): it
resolves column names against the schema and hands each node to the translation of
its node class, from the table :mod:`lancelet.expr.filter` assembles.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.errors import FilterError
from lancelet.expr.sql import value_types
from lancelet.expr.sql.dialect import sql_text
from lancelet.expr.sql.values import Value, apply, const
from lancelet.file.extensions import ARROW_JSON, is_extension

__all__ = ["Handler", "Translator", "construct_name"]


class Translator:
    """Translates the nodes of one SQL text over ``schema``'s columns, each by the
    ``handlers`` entry of its node class; ``columns`` collects the top-level columns
    read.  ``computes``: the text computes a column (a projection, an update, a new
    column) rather than a filter, which types literals and overflow differently."""

    def __init__(
        self,
        sql: str,
        schema: pa.Schema,
        handlers: Mapping[type[exp.Expression], Handler],
        computes: bool = False,
    ) -> None:
        self.sql = sql
        self.schema = schema
        self.handlers = handlers
        self.computes = computes
        self.columns: set[str] = set()
        # The literals pylance gives a column's type (computed values only).
        self.coerced: dict[int, pa.DataType] = {}

    def visit(self, node: exp.Expression) -> Value:
        handler = self.handlers.get(type(node))
        if handler is None:
            raise FilterError(
                f"unsupported SQL construct {construct_name(node)} in filter {self.sql!r}"
            )
        value = handler(self, node)
        if id(node) in self.coerced:
            value = _coerce_literal(self, value, self.coerced[id(node)], node)
        # sqlglot marks NOT LIKE / NOT ILIKE with a flag instead of wrapping them in NOT.
        if node.args.get("negate"):
            value = apply(pc.invert, [value], node)
        return value

    def column_type(self, node: exp.Expression) -> pa.DataType | None:
        """The type of the column (or struct field) ``node`` names, else None."""
        if not isinstance(node, (exp.Column, exp.Dot)):
            return None
        value = self.visit(node)
        return value.type if value.is_column else None

    def column_nullable(self, node: exp.Expression) -> bool | None:
        """Whether the column or struct field ``node`` names may be NULL (it may when a
        struct on its path may), else None."""
        if isinstance(node, exp.Bracket):  # struct['field']
            parent, key = self.column_nullable(node.this), self.visit(node.expressions[0])
            struct = self.visit(node.this).type
            if parent is None or key.const is None or not pa.types.is_struct(struct):
                return None
            return parent or struct.field(key.const.as_py()).nullable
        path = self.visit(node).path if isinstance(node, (exp.Column, exp.Dot)) else None
        return None if path is None else value_types.path_nullable(self.schema, path)

    def unsupported(self, node: exp.Expression, what: str) -> FilterError:
        return FilterError(
            f"unsupported SQL construct {what} in filter {self.sql!r}: {sql_text(node)}"
        )

    def resolve(self, path: Sequence[object], node: exp.Expression) -> Value:
        """Resolve ``col`` or ``col.field.subfield`` against the schema."""
        parts = [p for p in path if isinstance(p, exp.Identifier)]
        if len(parts) != len(path):
            raise self.unsupported(node, "a column reference that is not a plain name")
        field = _find_field(self.schema, parts[0])
        if field is None:
            if len(parts) == 1 and self._quote(parts[0]) == '"':
                # pylance reads "word" as a string literal; keep that reading for words
                # that name no column.
                return const(pa.scalar(parts[0].name, pa.string()))
            names = ", ".join(self.schema.names)
            column = sql_text(node)
            raise FilterError(
                f"No field named {column}: unknown column {column!r} in filter {self.sql!r}; "
                f"the columns are: {names}"
            )
        self.columns.add(field.name)
        resolved = [field.name]
        for part in parts[1:]:
            field = self._child(field, part, resolved)
            resolved.append(field.name)
        expression, dtype = pc.field(*resolved), field.type
        if is_extension(dtype) and dtype.extension_name != ARROW_JSON:
            # pylance's filters see an extension column as its storage (uuid as
            # FixedSizeBinary(16), an image URI as a string); JSON stays JSON.
            expression, dtype = expression.cast(dtype.storage_type), dtype.storage_type
        return Value(expression, dtype, is_column=True, path=tuple(resolved))

    def _child(self, field: pa.Field, part: exp.Identifier, path: list[str]) -> pa.Field:
        dotted = ".".join(path)
        if not pa.types.is_struct(field.type):
            raise FilterError(
                f"column {dotted!r} is not a struct, so it has no field {part.name!r} "
                f"(filter {self.sql!r})"
            )
        child = _find_field(field.type, part)
        if child is None:
            names = ", ".join(field.type.field(i).name for i in range(len(field.type)))
            raise FilterError(
                f"struct column {dotted!r} has no field {part.name!r} (filter {self.sql!r}); "
                f"its fields are: {names}"
            )
        return child

    def _quote(self, identifier: exp.Expression) -> str:
        """The character that quoted ``identifier`` in the SQL text, or ``""``."""
        if not identifier.args.get("quoted"):
            return ""
        start = identifier.meta.get("start")
        if isinstance(start, int) and 0 <= start < len(self.sql):
            return self.sql[start]
        return "`"


Handler = Callable[[Translator, Any], Value]


def _find_field(
    container: pa.Schema | pa.StructType, identifier: exp.Expression
) -> pa.Field | None:
    fields = [container.field(i) for i in range(len(container))]
    name = identifier.name
    for field in fields:
        if field.name == name:
            return field
    if identifier.args.get("quoted"):
        return None
    folded = [f for f in fields if f.name.lower() == name.lower()]
    if len(folded) > 1:
        choices = ", ".join(f.name for f in folded)
        raise FilterError(f"column name {name!r} is ambiguous; quote one of: {choices}")
    return folded[0] if folded else None


def construct_name(node: exp.Expression) -> str:
    if isinstance(node, exp.Anonymous):
        return f"function {node.name}()"
    if isinstance(node, exp.TryCast):
        return "TRY_CAST"
    if isinstance(node, exp.Func):
        return f"function {node.sql_name()}()"
    return node.key.upper()


def _coerce_literal(
    t: Translator, value: Value, target: pa.DataType, node: exp.Expression
) -> Value:
    """A literal in the type of the column it meets, in a computed value, as pylance
    converts it (an error where pylance refuses)."""
    assert value.const is not None
    coerced = value_types.coerce_literal(value.const, target)
    if coerced is None:
        raise FilterError(
            f"{sql_text(node)!r}: the literal {value.const.as_py()!r} does not fit the column's "
            f"type {target} (in {t.sql!r})"
        )
    return const(coerced)
