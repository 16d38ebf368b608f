"""A filter ``a AND b AND ...`` applied one conjunct at a time, cheapest first.

Arrow evaluates an expression on every row: ``d >= X AND mode IN (...) AND comment
LIKE '%x%'`` matches the pattern against every comment, though the date range leaves
a seventh of the rows and the pattern is the costly part.  A row passes a WHERE clause
of conjuncts only when each is TRUE, so testing each on the rows the ones before kept
selects the same rows in any order; the pattern then meets a few percent of them.

Only conjuncts whose Arrow functions cannot fail on a value (comparisons, IN, LIKE,
IS NULL, boolean logic) are staged: a cast or arithmetic could raise on a row that an
earlier conjunct dropped, and the filter as a whole would have raised there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.errors import FilterError
from lancelet.expr.filter import node_sql, parse_filter, referenced_columns, syntax_tree

__all__ = ["Stage", "apply_stages", "stages_of"]

# Arrow functions that cannot fail once their arguments are bound (they compare, look
# up or combine values): only conjuncts made of these are staged.
_TOTAL = frozenset(
    {
        "and",
        "and_kleene",
        "or",
        "or_kleene",
        "invert",
        "equal",
        "not_equal",
        "greater",
        "greater_equal",
        "less",
        "less_equal",
        "is_in",
        "is_valid",
        "is_null",
        "if_else",
        "match_like",
        "match_substring",
        "starts_with",
        "ends_with",
    }
)
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\(")
_INFIX = re.compile(r" (\+|-|\*|/) ")
_PATTERNS = frozenset({"match_like", "match_substring", "starts_with", "ends_with"})
_ROW = "_lancelet_staged_row"


@dataclass(frozen=True)
class Stage:
    """Conjuncts tested together: their expression and the columns they read."""

    expression: pc.Expression
    columns: frozenset[str]


def stages_of(sql: str, schema: pa.Schema) -> list[Stage] | None:
    """The stages of the SQL filter ``sql``, cheapest first; None when it is not worth
    staging (one conjunct) or cannot be staged safely."""
    try:
        conjuncts = _conjuncts(syntax_tree(sql))
        if len(conjuncts) < 2:
            return None
        parts = [_part(node_sql(node), schema) for node in conjuncts]
    except FilterError:
        return None  # the whole filter is translated (and its error told) as before
    if any(part is None for part in parts):
        return None
    ranked = sorted((p for p in parts if p is not None), key=lambda p: p[0])
    stages: list[Stage] = []
    groups: dict[tuple[int, frozenset[str]], list[pc.Expression]] = {}
    for cost, columns, expression in ranked:
        groups.setdefault((cost, columns), []).append(expression)
    for (_, columns), expressions in groups.items():
        combined = expressions[0]
        for more in expressions[1:]:
            combined = pc.and_kleene(combined, more)
        stages.append(Stage(combined, columns))
    return stages if len(stages) > 1 else None


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def _part(sql: str, schema: pa.Schema) -> tuple[int, frozenset[str], pc.Expression] | None:
    """A conjunct's cost rank, columns and expression; None if it may fail on a row."""
    expression = parse_filter(sql, schema)
    text = str(expression)
    calls = set(_CALL.findall(text))
    if not calls <= _TOTAL or _INFIX.search(text):
        return None
    columns = frozenset(referenced_columns(sql, schema))
    if not columns:
        return None  # a constant: left to the whole filter
    return _cost(columns, calls, schema), columns, expression


def _cost(columns: frozenset[str], calls: set[str], schema: pa.Schema) -> int:
    """0: fixed-width values compared; 1: strings or nested values compared; 2: text
    matched against a pattern."""
    if calls & _PATTERNS:
        return 2
    fixed = all(
        name not in schema.names or pa.types.is_primitive(schema.field(name).type)
        for name in columns
    )
    return 0 if fixed else 1


def apply_stages(table: pa.Table, stages: list[Stage]) -> pa.Table:
    """The rows of ``table`` every stage passes (in order), as ``table.filter`` of
    their conjunction selects them."""
    work = table.select([n for n in table.column_names if any(n in s.columns for s in stages)])
    work = work.append_column(_ROW, pa.array(np.arange(table.num_rows, dtype=np.int64)))
    for at, stage in enumerate(stages):
        work = work.filter(stage.expression)
        if not work.num_rows:
            return table.slice(0, 0)
        later = set().union(*(s.columns for s in stages[at + 1 :]))
        work = work.select([n for n in work.column_names if n in later or n == _ROW])
    keep = np.zeros(table.num_rows, dtype=bool)
    keep[work[_ROW].to_numpy()] = True
    # A mask, not a take: rows keep their order and each chunk its own dictionary.
    return table.filter(pa.array(keep))
