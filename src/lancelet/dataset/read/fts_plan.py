"""Plans of a full-text search (``explain_plan`` / ``analyze_plan``), lancelet's own in
the shape of pylance's (measured on pylance 14.0.2): the node that runs last at the
top, children indented below::

    ProjectionExec: expr=[id, text, _score]
      LanceRead: uri=..., projection=[id, text], source=stream(_rowid)
        GlobalLimitExec: skip=0, fetch=2          (with a limit or offset)
          FilterExec: id <= 1                     (a postfilter)
            MatchQuery: column=text, query=[lance search text]
              Prefilter: filter=[id <= 1]         (a prefilter)

pylance prints the same projection, read, limit and query nodes (its postfilter node
sits between two reads, and its prefilter is a ``ScalarIndexQuery`` when an index
answers it).  ``analyze_plan`` adds what lancelet counted: output rows, the query's
tokens, and under the prefilter the index segments searched (``index_comparisons``,
as ``scan_stats_callback`` counts them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lancelet.index.fts import queries as q


@dataclass(frozen=True)
class FullTextPlan:
    """What a full-text search is set up to do."""

    uri: str
    outputs: Sequence[str]
    reads: Sequence[str]
    offset: int
    limit: int | None
    postfilter: str | None
    prefilter: str | None


def describe(query: q.FullTextQuery | None, text: str, columns: Sequence[str]) -> str:
    """The query node: its kind and what it searches."""
    if query is None:
        phrase = len(text) >= 2 and text[0] == text[-1] == '"'
        if len(columns) == 1:
            kind = "PhraseQuery" if phrase else "MatchQuery"
            return f"{kind}: column={columns[0]}, query=[{text[1:-1] if phrase else text}]"
        return f"MultiMatchQuery: columns=[{', '.join(columns)}], query=[{text}]"
    parts = [type(query).__name__ + ":"]
    column = getattr(query, "column", None)
    names = getattr(query, "columns", None)
    if isinstance(column, str):
        parts.append(f"column={column},")
    elif names:
        parts.append(f"columns=[{', '.join(names)}],")
    parts.append(f"query=[{getattr(query, 'query', '...')}]")
    return " ".join(parts).rstrip(",")


def nodes(plan: FullTextPlan, search: str) -> list[tuple[str, str]]:
    """(node name, details), top node first, each the child of the one before."""
    out = [
        ("ProjectionExec", f"expr=[{', '.join(plan.outputs)}]"),
        (
            "LanceRead",
            f"uri={plan.uri}, projection=[{', '.join(plan.reads)}], source=stream(_rowid)",
        ),
    ]
    if plan.offset or plan.limit is not None:
        fetch = "None" if plan.limit is None else str(plan.offset + plan.limit)
        out.append(("GlobalLimitExec", f"skip={plan.offset}, fetch={fetch}"))
    if plan.postfilter is not None:
        out.append(("FilterExec", plan.postfilter))
    name, _, details = search.partition(": ")
    out.append((name, details))
    if plan.prefilter is not None:
        out.append(("Prefilter", f"filter=[{plan.prefilter}]"))
    return out


def render(named: Sequence[tuple[str, str]]) -> str:
    return "".join(f"{'  ' * depth}{name}: {text}\n" for depth, (name, text) in enumerate(named))
