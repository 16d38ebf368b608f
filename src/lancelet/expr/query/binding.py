"""Binding a parsed query to the dataset's columns, as DataFusion resolves names.

Unquoted identifiers are read in lower case and quoted ones as written; a column may
be qualified by the table's name (or its alias).  Every column reference is checked
against the dataset's schema and rewritten as a quoted, unqualified name, so that the
filter translator (:mod:`lancelet.expr.filter`), which reads the text of each
sub-expression, resolves it to exactly that column (and never reads a double-quoted
name as a string, as it does for names of no column).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from sqlglot import exp

from lancelet.errors import SqlQueryError, UnsupportedSqlError
from lancelet.expr.query.statement import normalized

# Column arguments from the innermost part out: ``c.b.a`` is this=a, table=b, db=c.
_PART_KEYS = ("this", "table", "db", "catalog")


@dataclass(frozen=True)
class Scope:
    """What a query's names resolve against: the columns it can read and the name
    that qualifies them (None: a query without FROM, which reads no column)."""

    schema: pa.Schema
    qualifier: str | None

    def field(self, name: str) -> pa.Field:
        index = self.schema.get_field_index(name)
        if index < 0:
            raise SqlQueryError(f"Schema error: No field named {name}. {self._valid()}")
        return self.schema.field(index)

    def _valid(self) -> str:
        if self.qualifier is None:
            return "The query has no FROM clause."
        listed = ", ".join(f"{self.qualifier}.{n}" for n in self.schema.names)
        return f"Valid fields are {listed}."


@dataclass(frozen=True)
class OutputItem:
    """One item of the SELECT list: its resolved expression and its alias, if any."""

    node: exp.Expr
    alias: str | None


def resolve(node: exp.Expr, scope: Scope) -> exp.Expr:
    """A copy of ``node`` whose column references are checked, unqualified and quoted."""

    def visit(child: exp.Expr) -> exp.Expr:
        if isinstance(child, exp.Column):
            return _resolved_column(child, scope)
        return child

    return node.copy().transform(visit, copy=False)


def _resolved_column(column: exp.Column, scope: Scope) -> exp.Column:
    if isinstance(column.this, exp.Star):
        raise UnsupportedSqlError(f"{column.sql()} is only supported as an item of SELECT")
    parts = [normalized(part) for part in column.parts]
    if len(parts) > 1 and scope.qualifier is not None and parts[0] == scope.qualifier:
        parts = parts[1:]
    scope.field(parts[0])
    ids = [exp.Identifier(this=part, quoted=True) for part in reversed(parts)]
    return exp.Column(**dict(zip(_PART_KEYS, ids, strict=False)))


def output_items(select: exp.Select, scope: Scope) -> list[OutputItem]:
    """The SELECT list with ``*`` (and ``table.*``) expanded to the scope's columns."""
    items: list[OutputItem] = []
    for node in select.expressions:
        if _is_star(node, scope):
            items += [OutputItem(_quoted_column(name), None) for name in scope.schema.names]
        elif isinstance(node, exp.Alias):
            items.append(OutputItem(resolve(node.this, scope), normalized(node.args["alias"])))
        else:
            items.append(OutputItem(resolve(node, scope), None))
    return items


def _is_star(node: exp.Expr, scope: Scope) -> bool:
    if isinstance(node, exp.Star):
        if scope.qualifier is None:
            raise SqlQueryError("SELECT * with no FROM clause: there are no columns to select")
        return True
    if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
        table = [normalized(p) for p in node.parts[:-1]]
        if table != [scope.qualifier]:
            raise SqlQueryError(f"{node.sql()}: no table named {'.'.join(table)!r}")
        return True
    return False


def _quoted_column(name: str) -> exp.Column:
    return exp.Column(this=exp.Identifier(this=name, quoted=True))


def column_reference(node: exp.Expr) -> str | None:
    """The name ``node`` gives if it is a bare, unqualified name (as ``ORDER BY`` and
    ``GROUP BY`` may name an output column); None otherwise."""
    if isinstance(node, exp.Column) and len(node.parts) == 1:
        return normalized(node.this)
    return None


def ordinal(node: exp.Expr) -> int | None:
    """The position ``node`` gives if it is an integer literal (``ORDER BY 1``)."""
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return int(node.this)
    return None
