"""A table's scalar indices as a Spark DataFrame (``LanceTable.listIndices``)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as st

from lancelet.dataset.engine import Snapshot, list_indices

INDICES_SCHEMA = st.StructType(
    [
        st.StructField("name", st.StringType(), False),
        st.StructField("type", st.StringType(), False),
        st.StructField("fields", st.ArrayType(st.StringType(), False), False),
        st.StructField("uuid", st.StringType(), False),
        # The dataset version the index (segment) was last built or updated at.
        st.StructField("version", st.LongType(), False),
        st.StructField("numFragments", st.LongType(), False),
        st.StructField("fragmentIds", st.ArrayType(st.LongType(), False), False),
        # Live rows of the fragments it covers: the rows a filter can find through it.
        st.StructField("numIndexedRows", st.LongType(), False),
    ]
)


def indices_frame(spark: SparkSession, snapshot: Snapshot) -> DataFrame:
    """One row per index segment (a delta index has several under one name), sorted
    by name, as pylance's ``list_indices``."""
    live = {f.id: f.num_rows for f in snapshot.manifest.fragments}
    rows = [_row(i, live) for i in list_indices(snapshot)]
    return spark.createDataFrame(rows, INDICES_SCHEMA)


def _row(index: dict[str, Any], live: dict[int, int]) -> tuple[Any, ...]:
    fragments = sorted(int(f) for f in index["fragment_ids"])
    return (
        index["name"],
        index["type"],
        list(index["fields"]),
        index["uuid"],
        int(index["version"]),
        len(fragments),
        fragments,
        sum(live.get(f, 0) for f in fragments),
    )
