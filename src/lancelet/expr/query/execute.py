"""Running a bound ``SELECT`` over a table: a dataset, seen through :class:`QuerySource`.

The source is read once, the columns the query names, with ``WHERE`` as the read's
filter (so a dataset's scalar indices serve it as they serve ``to_table``).  Then, in
memory and in SQL's order: grouping and aggregates, ``HAVING``, the SELECT list,
``DISTINCT``, ``ORDER BY``, ``OFFSET`` and ``LIMIT``.  Each expression is translated by
the filter translator (:func:`lancelet.expr.filter.parse_value`), which types
literals and operators as DataFusion's SQL does (``int32_col + 1`` is int64).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.errors import SqlQueryError, UnsupportedSqlError
from lancelet.expr.compute import evaluate
from lancelet.expr.filter import parse_value
from lancelet.expr.query import aggregate as agg
from lancelet.expr.query.binding import (
    OutputItem,
    Scope,
    column_reference,
    ordinal,
    output_items,
    resolve,
)
from lancelet.expr.query.naming import display_name, is_aggregate, is_nullable
from lancelet.expr.query.ordering import SortKey, distinct_indices, sort_indices
from lancelet.expr.query.statement import parse_select, table_ref, text

_TEXT_TYPES = frozenset({exp.DataType.Type.VARCHAR, exp.DataType.Type.TEXT, exp.DataType.Type.CHAR})


class QuerySource(Protocol):
    """The table a query reads, under the name its FROM clause gives it."""

    @property
    def name(self) -> str:
        """The name the query's FROM clause calls the table."""

    @property
    def schema(self) -> pa.Schema:
        """The columns the query may read."""

    def read(self, columns: Sequence[str], filter: str | None) -> pa.Table:
        """``columns`` (in schema order) of the rows that ``filter`` (SQL over the
        schema's columns, None: every row) keeps."""


@dataclass(frozen=True)
class Column:
    """A computed column: its field (name, type, nullability) and values."""

    field: pa.Field
    values: pa.ChunkedArray | pa.Array


def run_query(source: QuerySource, sql: str) -> pa.Table:
    """The result of ``sql`` over ``source``, in full."""
    select = parse_select(sql)
    ref = table_ref(select, source.name, sql)
    scope = Scope(source.schema if ref else pa.schema([]), ref.qualifier if ref else None)
    query = _Query(select, scope, sql)
    table = query.scan(source) if ref else _one_row()
    columns, keys = query.grouped(table) if query.aggregated else query.plain(table)
    return _finish(select, columns, keys, sql)


def _one_row() -> pa.Table:
    return pa.table({"__row": pa.nulls(1)})


class _Query:
    def __init__(self, select: exp.Select, scope: Scope, sql: str) -> None:
        self.select = select
        self.scope = scope
        self.sql = sql
        self.qualifier = scope.qualifier or ""
        self.items = output_items(select, scope)
        self.names = [self._name(item) for item in self.items]
        _check_unique(self.names)
        self.where = _clause(select, "where")
        having = _clause(select, "having")
        self.having = None if having is None else self._with_aliases(having)
        self.order: list[exp.Ordered] = (
            list(select.args["order"].expressions) if _has(select, "order") else []
        )
        self.aggregated = (
            _has(select, "group") or self.having is not None or self._uses_aggregates()
        )

    def _name(self, item: OutputItem) -> str:
        if item.alias is not None:
            return item.alias
        name = display_name(item.node, self.qualifier)
        if name is None:
            raise UnsupportedSqlError(
                f"SQL {self.sql!r}: name the column {text(item.node)} with AS; lancelet "
                "does not know the name DataFusion would give it"
            )
        return name

    def _with_aliases(self, node: exp.Expr, over_columns: bool = False) -> exp.Expr:
        """``node`` with the output columns it names replaced by their expressions, as
        HAVING and ORDER BY may name them: HAVING where no source column has the name,
        ORDER BY (``over_columns``) whatever the source columns are called."""

        def visit(child: exp.Expr) -> exp.Expr:
            name = column_reference(child)
            if name is None or name not in self.names:
                return child
            if name in self.scope.schema.names and not over_columns:
                return child
            return self.items[self.names.index(name)].node.copy()

        return node.copy().transform(visit, copy=False)

    def _source_order(self) -> list[exp.Expr]:
        """The ORDER BY expressions over the source, resolved."""
        return [
            resolve(self._with_aliases(o.this, over_columns=True), self.scope)
            for o in self.order
            if self._is_source(o.this)
        ]

    def _uses_aggregates(self) -> bool:
        nodes = [item.node for item in self.items] + [o.this for o in self.order]
        nodes += [self.having] if self.having is not None else []
        return any(is_aggregate(n) for node in nodes for n in node.walk())

    # -- the scan --------------------------------------------------------------------

    def scan(self, source: QuerySource) -> pa.Table:
        where = None if self.where is None else text(resolve(self.where, self.scope))
        table = source.read(self._reads(), where)
        if table.num_columns == 0:  # expressions over no column still need the rows
            return pa.table({"__row": pa.nulls(table.num_rows)})
        return table

    def _reads(self) -> list[str]:
        nodes = [item.node for item in self.items]
        nodes += [resolve(n, self.scope) for n in self._group_nodes() if n is not None]
        nodes += self._source_order()
        if self.having is not None:
            nodes.append(resolve(self.having, self.scope))
        named = {c.parts[0].name for node in nodes for c in node.find_all(exp.Column)}
        return [name for name in self.scope.schema.names if name in named]

    def _is_source(self, node: exp.Expr) -> bool:
        """Whether an ORDER BY item is an expression over the source, not an output
        column named by position or name."""
        return ordinal(node) is None and column_reference(node) not in self.names

    # -- plain queries ---------------------------------------------------------------

    def plain(self, source: pa.Table) -> tuple[list[Column], list[SortKey]]:
        columns = evaluate_nodes([item.node for item in self.items], source, self.names, self.sql)
        columns = [self._plain_field(item, c) for item, c in zip(self.items, columns, strict=True)]
        return columns, self._sort_keys(columns, source, lambda node: node)

    def _sort_keys(
        self, columns: list[Column], rows: pa.Table, prepare: Callable[[exp.Expr], exp.Expr]
    ) -> list[SortKey]:
        """The ORDER BY keys: output columns named by position or name, or expressions
        over the source (made expressions over ``rows`` by ``prepare``)."""
        sources = self._source_order()
        if _is_distinct(self.select):
            self._order_in_select(sources)
        computed = iter(evaluate_nodes([prepare(n) for n in sources], rows, None, self.sql))
        keys = []
        for item in self.order:
            if self._is_source(item.this):
                values = next(computed).values
            else:
                values = columns[self._output_position(item.this) - 1].values
            keys.append(
                SortKey(values, bool(item.args.get("desc")), bool(item.args.get("nulls_first")))
            )
        return keys

    def _output_position(self, node: exp.Expr) -> int:
        position = ordinal(node)
        if position is None:
            return self.names.index(str(column_reference(node))) + 1
        self.item_at(position, "ORDER BY")
        return position

    def _plain_field(self, item: OutputItem, column: Column) -> Column:
        """A bare column keeps its field (metadata, nullability), renamed."""
        if isinstance(item.node, exp.Column) and len(item.node.parts) == 1:
            source = self.scope.field(item.node.name)
            if source.type == column.field.type:
                return Column(source.with_name(column.field.name), column.values)
        return column

    def _order_in_select(self, sources: Sequence[exp.Expr]) -> None:
        listed = {text(item.node) for item in self.items}
        for node in sources:
            if text(node) not in listed:
                raise SqlQueryError(
                    f"For SELECT DISTINCT, ORDER BY expressions {text(node)} must appear "
                    "in select list"
                )

    # -- grouped queries -------------------------------------------------------------

    def _group_nodes(self) -> list[exp.Expr]:
        """The GROUP BY items as expressions over the source (unresolved)."""
        if not _has(self.select, "group"):
            return []
        return [self._group_node(node) for node in self.select.args["group"].expressions]

    def _group_node(self, node: exp.Expr) -> exp.Expr:
        position = ordinal(node)
        if position is not None:
            return self.item_at(position, "GROUP BY").node
        name = column_reference(node)
        if name is not None and name not in self.scope.schema.names and name in self.names:
            return self.items[self.names.index(name)].node
        return node

    def item_at(self, position: int, clause: str) -> OutputItem:
        if not 1 <= position <= len(self.items):
            raise SqlQueryError(
                f"{clause} {position}: the SELECT list has columns 1 to {len(self.items)}"
            )
        return self.items[position - 1]

    def grouped(self, source: pa.Table) -> tuple[list[Column], list[SortKey]]:
        group = [resolve(n, self.scope) for n in self._group_nodes()]
        rewriter = _Rewriter([text(n) for n in group])
        for node in self._aggregated_nodes():
            rewriter.collect(node)
        post = self._post_table(source, group, rewriter)
        outputs = [rewriter.rewrite(item.node) for item in self.items]
        columns = evaluate_nodes(outputs, post, self.names, self.sql)
        columns = [self._plain_field(item, c) for item, c in zip(self.items, columns, strict=True)]
        if self.having is not None:
            keep = self._having(post, rewriter)
            columns = [Column(c.field, c.values.filter(keep)) for c in columns]
            post = post.filter(keep)
        return columns, self._sort_keys(columns, post, rewriter.rewrite)

    def _aggregated_nodes(self) -> Iterable[exp.Expr]:
        yield from (item.node for item in self.items)
        if self.having is not None:
            yield resolve(self.having, self.scope)
        yield from self._source_order()

    def _post_table(self, source: pa.Table, group: list[exp.Expr], rewriter: _Rewriter) -> pa.Table:
        keys = evaluate_nodes(group, source, None, self.sql)
        arguments = [c.argument for c in rewriter.calls]
        present = [a for a in arguments if a is not None]
        computed = iter(evaluate_nodes(present, source, None, self.sql))
        values = [None if a is None else next(computed).values for a in arguments]
        firsts, results = agg.aggregate(
            [k.values for k in keys], rewriter.calls, values, source.num_rows
        )
        fields: list[pa.Field] = []
        arrays: list[pa.Array] = []
        source_fields = {f.name: f for f in self.scope.schema}
        for number, (node, key) in enumerate(zip(group, keys, strict=True)):
            nullable = is_nullable(node, source_fields) or key.values.null_count > 0
            fields.append(pa.field(f"__key{number}", key.field.type, nullable))
            arrays.append(key.values.take(firsts))
        for number, (call, value) in enumerate(zip(rewriter.calls, values, strict=True)):
            kind = agg.result_type(call, None if value is None else value.type)
            fields.append(pa.field(f"__aggregate{number}", kind, call.kind != "count"))
            arrays.append(value_array(results[number], kind))
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def _having(self, post: pa.Table, rewriter: _Rewriter) -> pa.Array:
        assert self.having is not None
        (column,) = evaluate_nodes(
            [rewriter.rewrite(resolve(self.having, self.scope))], post, None, self.sql
        )
        if not pa.types.is_boolean(column.field.type):
            raise SqlQueryError(f"HAVING {text(self.having)} is not boolean")
        return pc.fill_null(column.values, False)


def value_array(values: pa.Array, kind: pa.DataType) -> pa.Array:
    return values if values.type == kind else values.cast(kind)


class _Rewriter:
    """Turns expressions over the source into expressions over the grouped table:
    each GROUP BY expression and aggregate call becomes a column of it."""

    def __init__(self, group: list[str]) -> None:
        self.group = group
        self.calls: list[agg.AggregateCall] = []

    def collect(self, node: exp.Expr) -> None:
        for child in node.walk():
            if is_aggregate(child) and text(child) not in [c.key for c in self.calls]:
                self.calls.append(agg.aggregate_call(child))

    def rewrite(self, node: exp.Expr) -> exp.Expr:
        def visit(child: exp.Expr) -> exp.Expr:
            sql = text(child)
            if sql in self.group:
                return _quoted(f"__key{self.group.index(sql)}")
            if is_aggregate(child):
                keys = [c.key for c in self.calls]
                return _quoted(f"__aggregate{keys.index(sql)}")
            if isinstance(child, exp.Column):
                raise SqlQueryError(
                    f"Column in SELECT must be in GROUP BY or an aggregate function: "
                    f"{child.name} must appear in the GROUP BY clause or be used in an "
                    "aggregate function"
                )
            return child

        return node.copy().transform(visit, copy=False)


def _quoted(name: str) -> exp.Column:
    return exp.Column(this=exp.Identifier(this=name, quoted=True))


def evaluate_nodes(
    nodes: Sequence[exp.Expr], table: pa.Table, names: Sequence[str] | None, sql: str
) -> list[Column]:
    """Each (resolved) expression computed over the rows of ``table``."""
    if not nodes:
        return []
    names = list(names) if names is not None else [f"c{i}" for i in range(len(nodes))]
    fields = {f.name: f for f in table.schema}
    expressions = {}
    typed: list[pa.Field] = []
    for number, (node, name) in enumerate(zip(nodes, names, strict=True)):
        expr, dtype, _ = parse_value(text(node), table.schema)
        _check_text_cast(node, dtype, sql)
        expressions[f"e{number}"] = expr
        typed.append(pa.field(name, dtype, is_nullable(node, fields)))
    out = evaluate(table, expressions, f"SQL {sql!r}")
    columns = []
    for f, values in zip(typed, out.columns, strict=True):
        values = values if values.type == f.type else values.cast(f.type)
        columns.append(Column(f.with_nullable(f.nullable or values.null_count > 0), values))
    return columns


def _check_text_cast(node: exp.Expr, dtype: pa.DataType, sql: str) -> None:
    """DataFusion casts to VARCHAR give Utf8View, which lancelet's expressions do not
    produce: a string result computed through such a cast is refused."""
    if not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)):
        return
    for cast in node.find_all(exp.Cast):
        if cast.to.this in _TEXT_TYPES:
            raise UnsupportedSqlError(
                f"SQL {sql!r}: {text(cast)} gives Utf8View strings in pylance, which "
                "lancelet does not produce"
            )


def _finish(select: exp.Select, columns: list[Column], keys: list[SortKey], sql: str) -> pa.Table:
    schema = pa.schema([c.field for c in columns])
    table = pa.Table.from_arrays([c.values for c in columns], schema=schema)
    if _is_distinct(select):
        keep = distinct_indices(table.columns, "SELECT DISTINCT")
        table = table.take(keep)
        keys = [SortKey(k.values.take(keep), k.descending, k.nulls_first) for k in keys]
    if keys:
        table = table.take(sort_indices(keys, "ORDER BY"))
    offset = _count(select, "offset", sql) or 0
    limit = _count(select, "limit", sql)
    return table.slice(offset, limit)


def _count(select: exp.Select, clause: str, sql: str) -> int | None:
    node = select.args.get(clause)
    if node is None:
        return None
    value = node.args.get("expression")
    if isinstance(value, exp.Neg):
        raise SqlQueryError(f"{clause.upper()} must be >= 0, '{text(value)}' was provided")
    number = None if value is None else ordinal(value)
    if number is None:
        raise UnsupportedSqlError(f"SQL {sql!r}: {clause.upper()} must be a whole number")
    return number


def _check_unique(names: Sequence[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise SqlQueryError(
                f"Projections require unique expression names but {name!r} is given twice; "
                "consider aliasing (AS) one of them"
            )
        seen.add(name)


def _clause(select: exp.Select, name: str) -> exp.Expr | None:
    node = select.args.get(name)
    return None if node is None else node.this


def _has(select: exp.Select, name: str) -> bool:
    return select.args.get(name) is not None


def _is_distinct(select: exp.Select) -> bool:
    return select.args.get("distinct") is not None
