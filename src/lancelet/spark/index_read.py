"""Pushed filters answered by the dataset's scalar indices when a read is planned.

The conjunction of the filters a reader took from Spark is turned into a predicate
tree (:func:`lancelet.spark.filters.to_predicate`) and planned over the indices the
version can use (:func:`lancelet.dataset.engine.plan_read`).  A fragment an index covers is
cut into the same physical row ranges as any other, but each range carries the rows
the index left in it, and a range it left none in is not planned at all.  A task
reads only those rows, drops the deleted ones and applies every pushed filter: the
candidates are a superset of the matches.  Fragments no index covers are read whole.

Planned on the driver, not in the tasks: Spark pickles the reader *before* it asks
it for partitions, so a task knows nothing :meth:`partitions` worked out except what
the partitions carry; and the index is searched once per query, not once per task.
The candidates travel as a serialized Roaring bitmap, at most about a bit per
physical row of the range (128 KiB for the default million rows per partition).

Taking rows one by one costs more per row than reading a range: taking a quarter of
a million-row fragment's rows (four columns, scattered) took about as long as
reading all of them.  A range where the index leaves more than that share is read
whole, as if no index had answered; ranges it leaves nothing in are still dropped.
"""

from __future__ import annotations

import array
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap
from pyspark.sql import datasource as sds

from lancelet.expr import And, Predicate
from lancelet.spark.filters import to_predicate

# Above this share of a range's physical rows, the range is read whole.
DENSE = 0.25


@dataclass(frozen=True)
class CandidateRows:
    """The physical rows of a fragment range that an index says may pass the pushed
    filter ``planned_for`` names (see :func:`filter_digest`)."""

    bitmap: bytes
    count: int
    planned_for: str

    @classmethod
    def of(cls, offsets: np.ndarray, planned_for: str) -> CandidateRows:
        rows = BitMap(array.array("I", offsets.astype(np.uint32).tobytes()))
        rows.run_optimize()
        return cls(rows.serialize(), len(offsets), planned_for)

    def offsets(self) -> np.ndarray:
        """Sorted uint32 offsets."""
        return np.frombuffer(BitMap.deserialize(self.bitmap).to_array(), dtype=np.uint32)


def filter_digest(expression: pc.Expression | None) -> str:
    """A short name for a pushed filter, by which a task checks its partition was
    planned for the filter it applies (an IN list can make the text long)."""
    return hashlib.sha256(str(expression).encode()).hexdigest()


def pushed_predicate(filters: Sequence[sds.Filter], schema: pa.Schema) -> Predicate | None:
    """The conjunction of the filters' predicate trees, leaving out those that have
    none (a conjunct left out only widens the candidates)."""
    trees = [t for t in (to_predicate(f, schema) for f in filters) if t is not None]
    if not trees:
        return None
    return trees[0] if len(trees) == 1 else And(tuple(trees))


def in_range(rows: np.ndarray, start: int, stop: int) -> np.ndarray:
    """The sorted ``rows`` in ``[start, stop)``."""
    low, high = np.searchsorted(rows, [start, stop])
    return rows[low:high]
