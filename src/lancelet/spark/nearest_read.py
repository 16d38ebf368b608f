"""A k-nearest-neighbour read: the ``nearest`` option (a JSON object, pylance's
``nearest=`` dictionary: ``column``, ``q`` and any of ``k``, ``nprobes``,
``refine_factor``, ``metric``, ``use_index``...) makes a batch read return the k rows
nearest the query vector with their ``_distance``, nearest first.

The k nearest are a property of the whole version, not of one fragment, so the
search runs in one task, through the column's vector index when it has one (as
pylance searches).  The ``filter`` option filters inside the search (before the k
are chosen when ``prefilter`` is true, pylance's prefilter; after, otherwise); the
filters Spark applies to the DataFrame come after the search (a postfilter, which
may leave fewer than k rows).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import datasource as sds

DISTANCE = "_distance"


class NearestPartition(sds.InputPartition):
    """The one partition of a nearest-neighbour read."""

    def __init__(self) -> None:
        super().__init__("nearest")


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


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def nearest_rows(
    dataset: Any,
    query: dict[str, Any],
    columns: list[str],
    filter: str | None,
    prefilter: bool,
    with_row_id: bool,
    with_row_address: bool,
    batch_size: int,
) -> Iterator[pa.RecordBatch]:
    """The search's rows: ``columns``, ``_distance`` and the row columns asked for."""
    table = dataset.to_table(
        columns=columns,
        nearest=query,
        filter=filter,
        prefilter=prefilter,
        with_row_id=with_row_id,
        with_row_address=with_row_address,
    )
    yield from table.to_batches(max_chunksize=batch_size)
