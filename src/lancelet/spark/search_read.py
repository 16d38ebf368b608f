"""Search reads: the rows a whole-version search ranks, read in one task.

* ``nearest`` (a JSON object, pylance's ``nearest=`` dictionary: ``column``, ``q``
  and any of ``k``, ``nprobes``, ``refine_factor``, ``metric``, ``use_index``...)
  returns the k rows nearest the query vector with their ``_distance``, nearest
  first;
* ``full_text_query`` (a query string, or a JSON object ``{"query": ...,
  "columns": [...]}``, pylance's dictionary form) returns the rows matching it
  with their BM25 ``_score``, best first; ``limit`` keeps the best ones.

A ranking is a property of the whole version, not of one fragment, so the search
runs in one task, through the column's index when it has one (as pylance
searches).  The ``filter`` option filters inside the search (before the rows are
ranked when ``prefilter`` is true, pylance's prefilter; after, otherwise); the
filters Spark applies to the DataFrame come after the search (a postfilter, which
may leave fewer rows).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import datasource as sds

DISTANCE = "_distance"
SCORE = "_score"


@dataclass(frozen=True)
class Search:
    """One search read: pylance's keyword and its value, and the column it adds."""

    keyword: str  # "nearest" or "full_text_query"
    query: Any
    column: str  # DISTANCE or SCORE
    limit: int | None = None


class SearchPartition(sds.InputPartition):
    """The one partition of a search read."""

    def __init__(self) -> None:
        super().__init__("search")


def parse_search(nearest: str | None, full_text: str | None, limit: int | None) -> Search | None:
    """The search the read options ask for, if any (not both kinds at once)."""
    if nearest is not None and full_text is not None:
        raise ValueError(
            "lance data source: options nearest and full_text_query cannot be combined in one read"
        )
    if limit is not None and full_text is None:
        raise ValueError("lance data source: option limit applies to full_text_query reads")
    if nearest is not None:
        return Search("nearest", parse_nearest(nearest), DISTANCE)
    if full_text is not None:
        return Search("full_text_query", parse_full_text(full_text), SCORE, limit)
    return None


def parse_nearest(raw: str) -> dict[str, Any]:
    """The ``nearest`` option as pylance's dictionary; one query vector only."""
    try:
        query = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"lance data source: option nearest is not JSON: {exc}") from exc
    if not isinstance(query, dict) or not {"column", "q"} <= set(query):
        raise ValueError(
            "lance data source: option nearest must be a JSON object with at least "
            f'"column" and "q", got {raw!r}'
        )
    vector = query["q"]
    if not isinstance(vector, list) or not vector or not all(_is_number(v) for v in vector):
        raise ValueError(
            "lance data source: option nearest: q must be one query vector (a JSON list "
            "of numbers); a Spark read searches one vector at a time"
        )
    return query


def parse_full_text(raw: str) -> str | dict[str, Any]:
    """The ``full_text_query`` option: a query string, or pylance's dictionary form
    when it is a JSON object."""
    if not raw.lstrip().startswith("{"):
        return raw
    try:
        query = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"lance data source: option full_text_query is not JSON: {exc}") from exc
    columns = query.get("columns") if isinstance(query, dict) else None
    if (
        not isinstance(query, dict)
        or set(query) != {"query", "columns"}
        or not isinstance(query["query"], str)
        or not isinstance(columns, list)
        or not all(isinstance(c, str) for c in columns)
    ):
        raise ValueError(
            "lance data source: option full_text_query as JSON must be an object with a "
            f'"query" string and a "columns" list of names, got {raw!r}'
        )
    return query


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def search_rows(
    dataset: Any,
    search: Search,
    columns: list[str],
    filter: str | None,
    prefilter: bool,
    with_row_id: bool,
    with_row_address: bool,
    batch_size: int,
) -> Iterator[pa.RecordBatch]:
    """The search's rows: ``columns``, the search's column and the row columns
    asked for."""
    keywords: dict[str, Any] = {search.keyword: search.query}
    if search.limit is not None:
        keywords["limit"] = search.limit
    table = dataset.to_table(
        columns=columns,
        filter=filter,
        prefilter=prefilter,
        with_row_id=with_row_id,
        with_row_address=with_row_address,
        **keywords,
    )
    yield from table.to_batches(max_chunksize=batch_size)
