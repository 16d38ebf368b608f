"""What a query asks of a read beyond its columns, as the JVM bridge sends it.

Spark hands a Python source's reader one thing per query: the schema to read.  The
bridge (``java/``, :mod:`lancelet.spark.bridge`) plans each query's read with the
columns it needs, and puts what else the query pushed into that schema's field
metadata: a limit every partition may stop at (``lancelet.limit``), or an aggregation
each partition answers instead of sending its rows (``lancelet.aggregate``, see
:mod:`lancelet.spark.partial_aggregate`), or the rows a filtered read may answer
while it is planned (``lancelet.local``, see :mod:`lancelet.spark.local_rows`).
Without the bridge no field carries them.

The other way, the schema the bridge's source infers carries the live rows of the
version the DataFrame reads (``lancelet.rows``, on its first field), so that a
``COUNT(*)`` needs no read planned in Python; the bridge takes it off before Spark
sees the schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import types as st

from lancelet.errors import ArgumentError, SchemaError
from lancelet.spark.partial_aggregate import AggregateSpec, answered
from lancelet.spark.types import spark_arrow_schema

LIMIT_KEY = "lancelet.limit"
LOCAL_KEY = "lancelet.local"
ROWS_KEY = "lancelet.rows"


def with_row_count(schema: st.StructType, rows: int) -> st.StructType:
    """``schema`` with the live rows of the version read on its first field (none
    without fields: the bridge then plans the count as a read)."""
    if not schema.fields:
        return schema
    first, *rest = schema.fields
    counted = st.StructField(
        first.name, first.dataType, first.nullable, {**first.metadata, ROWS_KEY: str(rows)}
    )
    return st.StructType([counted, *rest])


def _number(schema: st.StructType, key: str) -> int | None:
    """The one number the fields' metadata give ``key``, or None."""
    values = {str(f.metadata[key]) for f in schema.fields if key in f.metadata}
    if len(values) > 1:
        raise ArgumentError(f"the read schema carries several {key!r}: {sorted(values)}")
    if not values:
        return None
    value = values.pop()
    if not value.isdigit():
        raise ArgumentError(f"the read schema's {key!r} is not a count of rows: {value!r}")
    return int(value)


@dataclass(frozen=True)
class ReadHints:
    limit: int | None = None
    aggregate: AggregateSpec | None = None
    local: int | None = None  # the rows the planning reader may answer itself

    @classmethod
    def of(cls, schema: st.StructType) -> ReadHints:
        limit, local = _number(schema, LIMIT_KEY), _number(schema, LOCAL_KEY)
        aggregate = AggregateSpec.of(schema)
        if aggregate is not None and limit is not None:
            raise ArgumentError("the read schema carries both a limit and an aggregate")
        return cls(limit, aggregate, local)

    @property
    def counts_rows(self) -> bool:
        """The read is a ``COUNT(*)`` without grouping."""
        return self.aggregate is not None and self.aggregate.count_only

    def columns(self, schema: st.StructType, table: st.StructType) -> st.StructType:
        """The columns to read: the schema's own, or those an aggregate needs (of the
        ``table``'s, the dataset's as Spark sees it)."""
        if self.aggregate is None:
            return schema
        by_name = {f.name: f for f in table.fields}
        missing = [c for c in self.aggregate.columns() if c not in by_name]
        if missing:
            raise SchemaError(f"an aggregate asks for column {missing[0]!r}, which is not read")
        return st.StructType([by_name[c] for c in self.aggregate.columns()])

    def applied(
        self, batches: Iterator[pa.RecordBatch], output: st.StructType, read: st.StructType
    ) -> Iterator[pa.RecordBatch]:
        """A partition's batches (of the ``read`` columns) as the query asked: at most
        ``limit`` rows, or its partial aggregates as ``output``."""
        if self.aggregate is not None:
            target = spark_arrow_schema(output)
            yield answered(batches, self.aggregate, spark_arrow_schema(read), target)
            return
        if self.limit is None:
            yield from batches
            return
        left = self.limit
        for batch in batches:
            if left <= 0:
                return
            yield batch.slice(0, left)
            left -= batch.num_rows
