"""Parsing a ``LanceDataset.sql`` query, and refusing the SQL lancelet does not run.

pylance hands the query to DataFusion.  lancelet runs single-table ``SELECT``
statements: a projection (``*``, columns, expressions, aliases), ``WHERE``,
``GROUP BY`` with aggregate functions, ``HAVING``, ``DISTINCT``, ``ORDER BY``,
``LIMIT`` and ``OFFSET``.  Everything else (joins, subqueries, ``WITH``, ``UNION``,
window functions, ``EXPLAIN``, statements that are no ``SELECT``) is refused by name
with :class:`~lancelet.errors.UnsupportedSqlError`, never approximated.

The dialect is the one filters are parsed in (identifiers in double quotes or
backticks), with DataFusion's default null order (``NULLS LAST`` ascending, ``NULLS
FIRST`` descending) and the function names as written kept in each node's meta,
because DataFusion names output columns after them (``char_length(dataset.s)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import sqlglot
from sqlglot import exp, parser, tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError

from lancelet.errors import SqlQueryError, UnsupportedSqlError
from lancelet.expr.filter import node_sql

# The meta key under which the parser keeps a function's name as written.
WRITTEN_NAME = "written_name"

# SELECT's clauses lancelet runs; any other clause that is present is refused.
_RUN_CLAUSES = frozenset(
    {"expressions", "from_", "where", "group", "having", "order", "limit", "offset", "distinct"}
)
# What the refusal calls the others.
_CLAUSE_NAMES = {
    "with_": "WITH (common table expressions)",
    "joins": "JOIN",
    "laterals": "LATERAL",
    "qualify": "QUALIFY",
    "windows": "WINDOW",
    "pivots": "PIVOT",
    "into": "SELECT INTO",
    "sample": "TABLESAMPLE",
    "connect": "CONNECT BY",
    "prewhere": "PREWHERE",
    "distribute": "DISTRIBUTE BY",
    "sort": "SORT BY",
    "cluster": "CLUSTER BY",
    "locks": "FOR UPDATE",
    "exclude": "EXCLUDE",
}
# Nodes anywhere in the query that lancelet does not evaluate.
_REFUSED_NODES: tuple[tuple[type[exp.Expr], str], ...] = (
    (exp.Subquery, "subqueries"),
    (exp.Exists, "EXISTS subqueries"),
    (exp.Window, "window functions (OVER)"),
    (exp.Join, "JOIN"),
    (exp.Placeholder, "query parameters"),
)


class SqlDialect(Dialect):
    """Filters' dialect, with DataFusion's null ordering and written function names."""

    NULL_ORDERING = "nulls_are_large"
    ORIGINAL_NAME_META_KEY = WRITTEN_NAME

    class Tokenizer(tokens.Tokenizer):
        IDENTIFIERS: ClassVar[list[str | tuple[str, str]]] = ['"', "`"]
        HEX_STRINGS: ClassVar[list[str | tuple[str, str]]] = [("X'", "'"), ("x'", "'")]

    class Parser(parser.Parser):
        # As in filters: DataFusion does not know these under sqlglot's meaning.
        FUNCTIONS: ClassVar[dict[str, Callable[..., Any]]] = {
            name: build
            for name, build in parser.Parser.FUNCTIONS.items()
            if name not in ("ARRAY", "ARRAY_CONTAINS_ALL", "ARRAY_OVERLAPS")
        }


def text(node: exp.Expr) -> str:
    """SQL text of a sub-expression that the filter translator parses back to it."""
    return node_sql(cast(exp.Expression, node))


@dataclass(frozen=True)
class TableRef:
    """The FROM clause: the table named (normalized) and the name columns are
    qualified by (its alias, if it has one)."""

    name: str
    qualifier: str


def parse_select(sql: str) -> exp.Select:
    """The one SELECT statement of ``sql``, checked to use only what lancelet runs."""
    if not isinstance(sql, str):
        raise TypeError(f"LanceDataset.sql: the query must be a string, not {sql!r}")
    try:
        statements = [s for s in sqlglot.parse(sql, read=SqlDialect) if s is not None]
    except (ParseError, TokenError) as exc:
        raise SqlQueryError(f"cannot parse SQL {sql!r}: {exc}") from None
    if not statements:
        raise SqlQueryError("No SQL statements were provided in the query string")
    if len(statements) > 1:
        raise UnsupportedSqlError(
            f"SQL {sql!r}: the query holds {len(statements)} statements; one is run at a time"
        )
    statement = statements[0]
    if not isinstance(statement, exp.Select):
        raise UnsupportedSqlError(f"SQL {sql!r}: {_statement_kind(statement)} is not supported")
    _check_clauses(statement, sql)
    return statement


def _statement_kind(statement: exp.Expr) -> str:
    if isinstance(statement, exp.SetOperation):
        return f"{type(statement).__name__.upper()} (a set operation)"
    if isinstance(statement, exp.Command):
        return f"the {statement.name.upper()} statement"
    return f"the {statement.key.upper()} statement (only SELECT runs)"


def _check_clauses(select: exp.Select, sql: str) -> None:
    for clause, value in select.args.items():
        if clause not in _RUN_CLAUSES and value not in (None, [], False):
            what = _CLAUSE_NAMES.get(clause, clause.rstrip("_").upper())
            raise UnsupportedSqlError(f"SQL {sql!r}: {what} is not supported")
    for kind, what in _REFUSED_NODES:
        if select.find(kind) is not None:
            raise UnsupportedSqlError(f"SQL {sql!r}: {what} are not supported")
    if any(inner is not select for inner in select.find_all(exp.Query)):
        raise UnsupportedSqlError(f"SQL {sql!r}: subqueries are not supported")
    distinct = select.args.get("distinct")
    if distinct is not None and distinct.args.get("on") is not None:
        raise UnsupportedSqlError(f"SQL {sql!r}: DISTINCT ON is not supported")
    group = select.args.get("group")
    grouping = (exp.Rollup, exp.Cube, exp.GroupingSets)
    if group is not None and (
        any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets"))
        or any(isinstance(n, grouping) for n in group.walk())
    ):
        raise UnsupportedSqlError(f"SQL {sql!r}: ROLLUP, CUBE and GROUPING SETS are not supported")


def table_ref(select: exp.Select, table_name: str, sql: str) -> TableRef | None:
    """The FROM clause's table, which must be the dataset's registered name (None: no
    FROM clause, a query of constants)."""
    source = select.args.get("from_")
    if source is None:
        return None
    table = source.this
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        raise UnsupportedSqlError(f"SQL {sql!r}: FROM {table.sql()} is not supported")
    if table.args.get("db") or table.args.get("catalog"):
        raise SqlQueryError(f"table {table.sql()!r} not found; the dataset is {table_name!r}")
    name = normalized(table.this)
    if name != table_name:
        raise SqlQueryError(f"table {name!r} not found; the dataset is {table_name!r}")
    alias = table.args.get("alias")
    if alias is not None and alias.args.get("columns"):
        raise UnsupportedSqlError(f"SQL {sql!r}: column aliases in FROM are not supported")
    qualifier = name if alias is None else normalized(alias.this)
    return TableRef(name, qualifier)


def normalized(identifier: exp.Expr) -> str:
    """An identifier as DataFusion resolves it: unquoted ones in lower case."""
    if isinstance(identifier, exp.Identifier) and not identifier.quoted:
        return identifier.name.lower()
    return identifier.name


def table_name(name: str) -> str:
    """The name a ``table_name(...)`` registers the dataset under: as an unquoted
    identifier, in lower case."""
    if not isinstance(name, str):
        raise TypeError(f"table_name must be a string, not {name!r}")
    if not name.isidentifier() or not name.isascii():
        raise UnsupportedSqlError(
            f"table_name {name!r}: lancelet registers plain identifiers only (letters, "
            "digits and underscores)"
        )
    return name.lower()
