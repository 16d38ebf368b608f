"""Aggregates a partition answers for its own rows, Spark merging the answers.

With the JVM bridge, Spark may push an aggregation into the read
(``SupportsPushDownAggregates``, ``java/.../AggregateRead.java``): grouping columns,
``COUNT(*)``, and ``COUNT``, ``SUM``, ``MIN``, ``MAX`` of columns.  The read schema is
then the answer's, each field naming in its metadata what it holds; every partition
sends its groups' partial answers and Spark adds the counts and sums and takes the
least and greatest of the minima and maxima, so a partition may send several rows
for one group.

Spark casts a pushed ``SUM`` of a ``decimal(p, s)`` column back to ``decimal(p, s)``
before adding the partial sums, and Spark's own long sums fail or wrap on overflow
depending on the session.  A partition whose sums might not fit (or not be exact)
therefore sends its rows themselves, one partial answer per row, so Spark meets
exactly the values it would have summed itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as st

from lancelet.errors import ArgumentError

FUNCTION_KEY = "lancelet.aggregate"
COLUMN_KEY = "lancelet.column"
FUNCTIONS = ("group", "count_all", "count", "sum", "min", "max")
_LONG_LIMIT = 2**63
_DECIMAL_DIGITS = 38  # what Arrow's decimal sums hold


@dataclass(frozen=True)
class Answer:
    """One field of the answer: a grouping column or a function of a column."""

    name: str
    function: str
    column: str | None


@dataclass(frozen=True)
class AggregateSpec:
    answers: tuple[Answer, ...]

    @classmethod
    def of(cls, schema: st.StructType) -> AggregateSpec | None:
        """The aggregation a read schema's field metadata asks for, or None."""
        if not any(FUNCTION_KEY in f.metadata for f in schema.fields):
            return None
        answers = []
        for field in schema.fields:
            function = field.metadata.get(FUNCTION_KEY)
            column = field.metadata.get(COLUMN_KEY)
            if function not in FUNCTIONS or (column is None) != (function == "count_all"):
                raise ArgumentError(
                    f"the read schema's field {field.name!r} asks for an aggregate this "
                    f"lancelet does not know: {function!r} of {column!r}"
                )
            answers.append(
                Answer(field.name, str(function), None if column is None else str(column))
            )
        groups = [a.function == "group" for a in answers]
        if groups != sorted(groups, reverse=True):
            raise ArgumentError("an aggregate read schema has its grouping columns first")
        return cls(tuple(answers))

    @property
    def count_only(self) -> bool:
        """Only ``COUNT(*)``, without grouping."""
        return all(a.function == "count_all" for a in self.answers)

    def columns(self) -> list[str]:
        """The dataset columns the answers need, each once."""
        return list(dict.fromkeys(a.column for a in self.answers if a.column is not None))


def answered(
    batches: Iterator[pa.RecordBatch], spec: AggregateSpec, read: pa.Schema, target: pa.Schema
) -> pa.RecordBatch:
    """A partition's partial answers from its ``batches`` (columns as ``read``),
    as ``target`` (the read schema in Arrow)."""
    if spec.count_only:
        return counted(sum(batch.num_rows for batch in batches), target)
    table = pa.Table.from_batches(list(batches), schema=read)
    if _sums_exact(table, spec):
        grouped = _grouped(table, spec, target)
        if _sums_fit(grouped, spec, table.schema):
            return grouped
    return _per_row(table, spec, target)


def counted(rows: int, target: pa.Schema) -> pa.RecordBatch:
    """The one row of a ``COUNT(*)`` read: ``rows``."""
    return pa.record_batch([pa.array([rows], pa.int64())] * len(target), schema=target)


def _grouped(table: pa.Table, spec: AggregateSpec, target: pa.Schema) -> pa.RecordBatch:
    keys: list[str] = []
    aggregations: list[tuple[Any, ...]] = []
    inputs: dict[str, pa.ChunkedArray] = {}
    for i, answer in enumerate(spec.answers):
        label = f"c{i}"
        if answer.function == "count_all":
            aggregations.append(([], "count_all"))
            continue
        assert answer.column is not None
        inputs[label] = _summable(table.column(answer.column), answer.function)
        if answer.function == "group":
            keys.append(label)
        elif answer.function == "count":
            aggregations.append((label, "count", pc.CountOptions(mode="only_valid")))
        else:
            aggregations.append((label, answer.function, pc.ScalarAggregateOptions(min_count=1)))
    result = pa.table(inputs).group_by(keys, use_threads=False).aggregate(aggregations)
    columns = []
    for i, answer in enumerate(spec.answers):
        if answer.function == "group":
            columns.append(result.column(f"c{i}"))
        elif answer.function == "count_all":
            columns.append(result.column("count_all"))
        else:
            columns.append(result.column(f"c{i}_{answer.function}"))
    return _as_target(columns, target)


def _per_row(table: pa.Table, spec: AggregateSpec, target: pa.Schema) -> pa.RecordBatch:
    """Every row its own partial answer: what Spark would have aggregated itself."""
    columns: list[pa.ChunkedArray | pa.Array] = []
    for answer in spec.answers:
        if answer.function == "count_all":
            columns.append(pa.array([1] * table.num_rows, pa.int64()))
            continue
        assert answer.column is not None
        column = table.column(answer.column)
        if answer.function == "count":
            columns.append(pc.cast(pc.is_valid(column), pa.int64()))
        else:
            columns.append(_summable(column, answer.function))
    return _as_target(columns, target)


def _summable(column: pa.ChunkedArray, function: str) -> pa.ChunkedArray:
    """Integers summed as longs, floats as doubles, as Spark sums them."""
    if function != "sum":
        return column
    if pa.types.is_integer(column.type):
        return pc.cast(column, pa.int64())
    if pa.types.is_floating(column.type):
        return pc.cast(column, pa.float64())
    return column


def _sums_exact(table: pa.Table, spec: AggregateSpec) -> bool:
    """Whether Arrow sums this partition's columns exactly however they are grouped:
    longs without wrapping, decimals within Arrow's 38 digits."""
    for answer in spec.answers:
        if answer.function != "sum":
            continue
        assert answer.column is not None
        column = table.column(answer.column)
        if pa.types.is_integer(column.type) and _largest(column) * len(column) >= _LONG_LIMIT:
            return False
        digits = column.type.precision if pa.types.is_decimal(column.type) else 0
        if digits and len(column) * 10**digits >= 10**_DECIMAL_DIGITS:
            return False
    return True


def _sums_fit(grouped: pa.RecordBatch, spec: AggregateSpec, read: pa.Schema) -> bool:
    """Whether each decimal(p, s) column's partial sums fit decimal(p, s), the type
    Spark casts them to before adding them up."""
    for answer, sums in zip(spec.answers, grouped.columns, strict=True):
        if answer.function != "sum" or answer.column is None:
            continue
        own = read.field(answer.column).type
        if pa.types.is_decimal(own) and _largest(sums) >= 10 ** (own.precision - own.scale):
            return False
    return True


def _largest(column: pa.ChunkedArray | pa.Array) -> int:
    """The largest magnitude of the column's values (0 if none)."""
    bounds = pc.min_max(column).as_py()
    return max((abs(v) for v in (bounds["min"], bounds["max"]) if v is not None), default=0)


def _as_target(columns: Sequence[pa.ChunkedArray | pa.Array], target: pa.Schema) -> pa.RecordBatch:
    arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
    cast = [pc.cast(a, f.type) for a, f in zip(arrays, target, strict=True)]
    return pa.record_batch(cast, schema=target)
