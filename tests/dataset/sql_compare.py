"""Comparing results of ``LanceDataset.sql`` queries between lancelet and pylance."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa


def run(dataset: Any, sql: str, **builder: Any) -> pa.Table:
    """The query's result as a table (with its schema even when it has no rows)."""
    query = dataset.sql(sql)
    for name, value in builder.items():
        query = getattr(query, name)(value)
    reader = query.build().to_stream_reader()
    return reader.read_all()


def canonical(value: Any) -> Any:
    """A value that compares equal for results equal up to float rounding: floats keep
    the sign of zero and 9 significant digits (aggregates sum in other orders); NaN is
    NaN whatever its sign bit, which arithmetic does not define (the order of -NaN and
    NaN is tested on its own)."""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if value == 0:
            return ("zero", math.copysign(1.0, value) < 0)
        return float(f"{value:.9g}")
    if isinstance(value, dict):
        return tuple(sorted((k, canonical(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(canonical(v) for v in value)
    return value


def rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return [tuple(canonical(v) for v in row.values()) for row in table.to_pylist()]


def _sort_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((v is None, repr(v)) for v in row)


def assert_same(ours: pa.Table, theirs: pa.Table, ordered: bool, sql: str) -> None:
    """Same column names, types and nullability; the same rows (in the same order if
    ``ordered``)."""
    assert ours.schema.remove_metadata() == theirs.schema.remove_metadata(), (
        f"{sql}\nlancelet: {ours.schema}\npylance: {theirs.schema}"
    )
    mine, reference = rows(ours), rows(theirs)
    if not ordered:
        mine, reference = sorted(mine, key=_sort_key), sorted(reference, key=_sort_key)
    assert mine == reference, f"{sql}\nlancelet: {mine}\npylance: {reference}"
