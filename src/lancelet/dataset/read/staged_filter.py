"""A filter ``a AND b AND ...`` applied one conjunct at a time, cheapest first.

Arrow evaluates an expression on every row: ``d >= X AND mode IN (...) AND comment
LIKE '%x%'`` matches the pattern against every comment, though the date range leaves
a seventh of the rows and the pattern is the costly part.  A row passes a WHERE clause
of conjuncts only when each is TRUE, so testing each on the rows the ones before kept
selects the same rows in any order; the pattern then meets a few percent of them.

A scan reads each stage's columns only for the rows the stages before kept: a long
text column a cheap date range has narrowed down is then decoded for few rows.

Only conjuncts whose Arrow functions cannot fail on a value (comparisons, IN, LIKE,
IS NULL, boolean logic) are staged: a cast or arithmetic could raise on a row that an
earlier conjunct dropped, and the filter as a whole would have raised there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.dataset.read.fragment_reader import FragmentReader
from lancelet.dataset.read.run_filter import probed_by_runs
from lancelet.errors import FilterError
from lancelet.expr.arrow import filter_table
from lancelet.expr.filter import node_sql, parse_filter, referenced_columns, syntax_tree
from lancelet.expr.from_sql import predicate_tree
from lancelet.expr.nodes import Predicate

__all__ = ["Stage", "apply_stages", "attach", "selective", "staged_read", "stages_of"]

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
# Above this share of a range left, a column is read whole and then filtered, rather
# than taken row by row; a scan reads stage by stage only below it.
_DENSE = 0.25
# A table in memory is filtered stage by stage when the first keeps at most this share.
_WORTH = 0.5
# Rows of the sample that tells how much the first stage keeps.
_SAMPLE = 2048


@dataclass(frozen=True)
class Stage:
    """Conjuncts tested together: their expression, the columns they read and, where
    the eager evaluator takes them, their predicate tree (the same rows, computed with
    Arrow's kernels directly: Acero's plan costs about twice as much on a range's
    rows, and more than the whole test on the few rows a late stage sees)."""

    expression: pc.Expression
    columns: frozenset[str]
    predicate: Predicate | None = None

    def keep(self, table: pa.Table) -> pa.Table:
        """The rows of ``table`` the stage passes (TRUE: NULL and FALSE drop)."""
        return filter_table(table, self.predicate, self.expression)


def stages_of(sql: str, schema: pa.Schema) -> list[Stage] | None:
    """The stages of the SQL filter ``sql``, cheapest first; None when it is not worth
    staging (one conjunct) or cannot be staged safely."""
    try:
        conjuncts = _conjuncts(syntax_tree(sql))
        if len(conjuncts) < 2:
            return None
        texts = [node_sql(node) for node in conjuncts]
        parts = [_part(text, schema) for text in texts]
    except FilterError:
        return None  # the whole filter is translated (and its error told) as before
    if any(part is None for part in parts):
        return None
    ranked = sorted(
        ((p, text) for p, text in zip(parts, texts, strict=True) if p is not None),
        key=lambda pair: pair[0][0],
    )
    if ranked[-1][0][0] == 0:
        return None  # fixed-width comparisons: cheaper to test than to copy for
    stages: list[Stage] = []
    groups: dict[tuple[int, frozenset[str]], list[tuple[pc.Expression, str]]] = {}
    for (cost, columns, expression), text in ranked:
        groups.setdefault((cost, columns), []).append((expression, text))
    for (_, columns), members in groups.items():
        combined = members[0][0]
        for more, _ in members[1:]:
            combined = pc.and_kleene(combined, more)
        sql = " AND ".join(f"({text})" for _, text in members)
        stages.append(Stage(combined, columns, _predicate(sql, schema)))
    return stages if len(stages) > 1 else None


def _predicate(sql: str, schema: pa.Schema) -> Predicate | None:
    try:
        return predicate_tree(sql, schema)
    except FilterError:
        return None  # the stage is tested by its expression


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


def selective(table: pa.Table, stage: Stage, share: float) -> bool:
    """Whether ``stage`` keeps at most ``share`` of a sample of ``table``'s rows (spread
    over it): staging pays only when the cheap stage leaves the costly ones few rows;
    otherwise it copies columns a filter of the whole conjunction would not."""
    step = max(table.num_rows // _SAMPLE, 1)
    sample = table.select([n for n in table.column_names if n in stage.columns])
    sample = sample.take(pa.array(np.arange(0, table.num_rows, step, dtype=np.int64)))
    kept: int = stage.keep(sample).num_rows
    return bool(kept <= sample.num_rows * share)


def apply_stages(table: pa.Table, stages: list[Stage], whole: pc.Expression) -> pa.Table:
    """The rows of ``table`` every stage passes (in order), as ``table.filter`` of
    their conjunction ``whole`` selects them (by it, when the first stage is not
    selective)."""
    if not selective(table, stages[0], _WORTH):
        return table.filter(whole)
    work = table.select([n for n in table.column_names if any(n in s.columns for s in stages)])
    work = work.append_column(_ROW, pa.array(np.arange(table.num_rows, dtype=np.int64)))
    for at, stage in enumerate(stages):
        work = stage.keep(work)
        if not work.num_rows:
            return table.slice(0, 0)
        later = set().union(*(s.columns for s in stages[at + 1 :]))
        work = work.select([n for n in work.column_names if n in later or n == _ROW])
    keep = np.zeros(table.num_rows, dtype=bool)
    keep[work[_ROW].to_numpy()] = True
    # A mask, not a take: rows keep their order and each chunk its own dictionary.
    return table.filter(pa.array(keep))


def staged_read(
    reader: FragmentReader,
    stages: list[Stage],
    whole: pc.Expression,
    span: tuple[int, int],
    live: Callable[[pa.Table], pa.Table],
    offset: str,
) -> tuple[pa.Table, bool]:
    """The physical rows ``span`` of ``reader``'s fragment that every stage passes,
    with the stages' columns and their offsets (column ``offset``); ``live`` drops the
    deleted rows of a table of the span.  Each stage's columns are read only for the
    rows the stages before it kept, when the first is selective; else every column is
    read whole and filtered by the conjunction ``whole``.  Also returns whether the
    first stage was selective."""
    start, stop = span
    first = sorted(stages[0].columns)
    # A first stage on one column stored as runs is tested once per run.
    by_runs = probed_by_runs(reader, first, span, stages[0].predicate, offset)
    if by_runs is not None:
        # Only the rows the first stage keeps were made, deleted ones left out.
        table, later = by_runs, stages[1:]
        first_selective = table.num_rows <= (stop - start) * _DENSE
    else:
        table = reader.read(first, start, stop)
        table = table.append_column(offset, pa.array(np.arange(start, stop, dtype=np.uint32)))
        if not selective(table, stages[0], _DENSE):
            rest = sorted(set().union(*(s.columns for s in stages)) - set(first))
            others = reader.read(rest, start, stop)
            for name in rest:
                table = table.append_column(name, others[name])
            return live(table).filter(whole), False
        table, later, first_selective = live(table), stages, True
    have = set(first)
    for stage in later:
        if not table.num_rows:
            break  # (attach reads no columns for no rows)
        table = attach(reader, table, sorted(stage.columns - have), span, offset)
        have |= stage.columns
        table = stage.keep(table)
    return table, first_selective


def attach(
    reader: FragmentReader, table: pa.Table, columns: list[str], span: tuple[int, int], offset: str
) -> pa.Table:
    """``table``, rows of the physical ``span`` named (ascending) by their ``offset``
    column, with ``columns`` read for those rows: taken when they are few, else read
    whole and filtered."""
    hits = table[offset].to_numpy()
    if not columns or not len(hits):
        return table
    start, stop = span
    if len(hits) > (stop - start) * _DENSE:
        # A mask, not a take: hits ascend, and filtering keeps each chunk's own
        # dictionary, where a take must unify them (which Arrow cannot with nulls).
        keep = np.zeros(stop - start, dtype=bool)
        keep[hits - start] = True
        rest = reader.read(columns, start, stop).filter(pa.array(keep))
    else:
        rest = reader.take(columns, hits.astype(np.int64))
    for name in columns:
        table = table.append_column(name, rest[name])
    return table
