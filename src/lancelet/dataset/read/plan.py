"""Readable plans of what a scan does (``explain_plan``) and, after running it, what
it cost (``analyze_plan``).

The plan is lancelet's own, written in pylance's shape: one node a line, the node
that runs last at the top, children indented below.  A scan is a ``LanceRead`` (the
fragments walked, the columns read, the filter applied while reading), fed by a
``ScalarIndexQuery`` for each index search that bounded the rows read, and followed
by a ``Sort`` (``order_by``), a ``Slice`` (offset and limit) and a ``Project`` (the
output columns), each only when the scan has one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from lancelet import io
from lancelet.dataset.read.ordering import ColumnOrdering
from lancelet.expr import (
    Contains,
    Equals,
    HasAny,
    IndexQuery,
    IsIn,
    IsNull,
    LikePrefix,
    Range,
)
from lancelet.io.counters import bytes_read_counter, iops_counter


@dataclass
class ScanMetrics:
    """What a scan did, counted as it runs."""

    fragments_scanned: int = 0
    ranges_scanned: int = 0
    rows_scanned: int = 0
    output_rows: int = 0


@dataclass(frozen=True)
class ScanFacts:
    """What a scan is set up to do, for its plan."""

    uri: str
    reads: Sequence[str]
    # Those of ``reads`` read after the filter, only for the rows it passed.
    late: Sequence[str]
    num_fragments: int
    filter: str | None
    filter_columns: Sequence[str]
    with_row_id: bool
    with_row_address: bool
    include_deleted_rows: bool
    index_searches: Sequence[tuple[str, IndexQuery, bool]]
    order: Sequence[ColumnOrdering]
    offset: int
    limit: int | None
    output: Sequence[str]
    batch_size: int
    metrics: ScanMetrics = field(default_factory=ScanMetrics)


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _literal(value: pa.Scalar | None) -> str:
    """A value as pylance's plans print it: strings bare, bytes as the upper-case hex
    of their first 10 bytes, with ``...`` after when there are more."""
    python = None if value is None else value.as_py()
    if isinstance(python, bytes):
        return python[:10].hex().upper() + ("..." if len(python) > 10 else "")
    return str(python)


def describe_query(query: IndexQuery) -> str:
    """An index query as SQL over its column."""
    column = query.column
    if isinstance(query, Equals):
        return f"{column} = {_literal(query.value)}"
    if isinstance(query, Range):
        bounds = []
        if query.low is not None:
            bounds.append(f"{column} {'>=' if query.low_inclusive else '>'} {_literal(query.low)}")
        if query.high is not None:
            op = "<=" if query.high_inclusive else "<"
            bounds.append(f"{column} {op} {_literal(query.high)}")
        return " && ".join(bounds) or f"{column} IS NOT NULL"
    if isinstance(query, IsIn):
        return f"{column} IN ({', '.join(_literal(v) for v in query.values)})"
    if isinstance(query, IsNull):
        return f"{column} IS NULL"
    if isinstance(query, LikePrefix):
        return f"{column} LIKE '{query.prefix}%'"
    if isinstance(query, Contains):
        return f'contains({column}, Utf8("{query.substring}"))'
    # The rest are HasAny and HasAll (mypy checks the union is covered).
    name = "array_has_any" if isinstance(query, HasAny) else "array_has_all"
    return f"{name}({column}, List([{', '.join(_literal(v) for v in query.values)}]))"


def _read_column(name: str, late: Sequence[str]) -> str:
    # In parentheses: read after the filter, for the rows it passed (in the fragments
    # scanned; rows an index found are taken whole).
    return f"({name})" if name in late else name


def _ordering(key: ColumnOrdering) -> str:
    direction = "ASC" if key.ascending else "DESC"
    nulls = "FIRST" if key.nulls_first else "LAST"
    return f"{key.column_name} {direction} NULLS {nulls}"


def _nodes(facts: ScanFacts, verbose: bool) -> list[tuple[int, str, str]]:
    """(depth, node name, its details), top node first."""
    out: list[tuple[str, str]] = []
    if list(facts.output) != list(facts.reads) or facts.with_row_id or facts.with_row_address:
        out.append(("Project", f"columns=[{', '.join(facts.output)}]"))
    if facts.offset or facts.limit is not None:
        out.append(("Slice", f"offset={facts.offset}, limit={facts.limit}"))
    if facts.order:
        out.append(("Sort", f"order_by=[{', '.join(_ordering(k) for k in facts.order)}]"))
    read = [
        f"uri={facts.uri}",
        f"projection=[{', '.join(_read_column(c, facts.late) for c in facts.reads)}]",
        f"num_fragments={facts.num_fragments}",
        f"row_id={_flag(facts.with_row_id)}",
        f"row_addr={_flag(facts.with_row_address)}",
        f"include_deleted_rows={_flag(facts.include_deleted_rows)}",
        f"filter={facts.filter if facts.filter is not None else '--'}",
    ]
    if verbose:
        read.append(f"filter_columns=[{', '.join(facts.filter_columns)}]")
        read.append(f"batch_size={facts.batch_size}")
    out.append(("LanceRead", ", ".join(read)))
    nodes = [(depth, name, text) for depth, (name, text) in enumerate(out)]
    below = len(out)
    for index_name, query, answered in facts.index_searches:
        text = f"query=[{describe_query(query)}]@{index_name}"
        if not answered:
            text += ", answered=false (the rows are scanned)"
        nodes.append((below, "ScalarIndexQuery", text))
    return nodes


def explain(facts: ScanFacts, verbose: bool = False) -> str:
    lines = [f"{'  ' * depth}{name}: {text}" for depth, name, text in _nodes(facts, verbose)]
    return "\n".join(lines) + "\n"


def analyze(facts: ScanFacts, run: Callable[[], pa.Table]) -> str:
    """The plan with what running it (``run``) cost: elapsed time, rows, and reads."""
    reads_before, bytes_before = iops_counter(), bytes_read_counter()
    requests_before = io.REQUEST_STATS.requests
    started = time.perf_counter()
    result = run()
    elapsed = time.perf_counter() - started
    reads, bytes_read = iops_counter(), bytes_read_counter()
    requests = io.REQUEST_STATS.requests - requests_before
    metrics = facts.metrics
    read_metrics = (
        f"output_rows={metrics.output_rows}, fragments_scanned={metrics.fragments_scanned}, "
        f"ranges_scanned={metrics.ranges_scanned}, rows_scanned={metrics.rows_scanned}, "
        f"bytes_read={bytes_read - bytes_before}, iops={reads - reads_before}, "
        f"requests={requests}"
    )
    lines = [f"AnalyzeExec: elapsed={elapsed * 1000:.3f}ms, output_rows={result.num_rows}"]
    for depth, name, text in _nodes(facts, verbose=True):
        if name == "LanceRead":
            text += f", metrics=[{read_metrics}]"
        lines.append(f"{'  ' * (depth + 1)}{name}: {text}")
    return "\n".join(lines) + "\n"
