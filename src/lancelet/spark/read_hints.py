"""What a query asks of a read beyond its columns, as the JVM bridge sends it.

Spark hands a Python source's reader one thing per query: the schema to read.  The
bridge (``java/``, :mod:`lancelet.spark.bridge`) plans each query's read with the
columns it needs, and puts what else the query pushed into that schema's field
metadata: a limit every partition may stop at (``lancelet.limit``), or a count of
rows instead of the rows (``lancelet.aggregate`` = ``count``, on the one field of a
``COUNT(*)`` read).  Without the bridge no field carries them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import types as st

from lancelet.errors import ArgumentError
from lancelet.spark.types import spark_arrow_schema

LIMIT_KEY = "lancelet.limit"
AGGREGATE_KEY = "lancelet.aggregate"


@dataclass(frozen=True)
class ReadHints:
    limit: int | None = None
    count: bool = False

    @classmethod
    def of(cls, schema: st.StructType) -> ReadHints:
        limits = {str(f.metadata[LIMIT_KEY]) for f in schema.fields if LIMIT_KEY in f.metadata}
        aggregates = {
            str(f.metadata[AGGREGATE_KEY]) for f in schema.fields if AGGREGATE_KEY in f.metadata
        }
        if len(limits) > 1 or aggregates - {"count"}:
            raise ArgumentError(
                f"the read schema carries hints this lancelet does not know: limits "
                f"{sorted(limits)}, aggregates {sorted(aggregates)}"
            )
        count = bool(aggregates)
        if count and len(schema.fields) != 1:
            raise ArgumentError("a counting read has one field, the count")
        limit = int(limits.pop()) if limits else None
        return cls(limit, count)

    def columns(self, schema: st.StructType) -> st.StructType:
        """The dataset columns to read: none for a count."""
        return st.StructType([]) if self.count else schema

    def applied(
        self, batches: Iterator[pa.RecordBatch], schema: st.StructType
    ) -> Iterator[pa.RecordBatch]:
        """A partition's batches as the query asked: at most ``limit`` rows, or one
        row holding their number."""
        if self.count:
            yield counted(sum(batch.num_rows for batch in batches), schema)
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


def counted(rows: int, schema: st.StructType) -> pa.RecordBatch:
    """A counting read's one row: ``rows``."""
    # Spark checks the batch against the schema it sent, metadata included.
    target = spark_arrow_schema(schema)
    return pa.record_batch([pa.array([rows], pa.int64())], schema=target)
