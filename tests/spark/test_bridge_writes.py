"""Batch writes through the bridge (``SizedWrites``): a task whose first rows are
small sends its rows to the Python writer in batches cut by record count alone; wide
rows keep Spark's byte limit.  Either way every row arrives once, as written.

Expected values are computed independently (the generating expressions, in numpy and
Python) and read back with pylance.
"""

from __future__ import annotations

from pathlib import Path

import lance
import numpy as np
import pyarrow.compute as pc
import pytest
from pyspark.sql import SparkSession

from lancelet.spark.bridge import bridge_jar

bridged = pytest.mark.skipif(bridge_jar() is None, reason="the Spark bridge is not loaded")

MIB = 1 << 20


def _sized_writes(spark: SparkSession) -> object:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    return jvm.org.lancelet.spark.SizedWrites


@bridged
@pytest.mark.parametrize(
    ("widest", "max_bytes", "max_records", "alone"),
    [
        (200, 64 * MIB, 10_000, True),  # lineitem-sized rows
        (838, 64 * MIB, 10_000, True),  # the widest row that fits eight times over
        (839, 64 * MIB, 10_000, False),
        (200, 64 * MIB, 0, False),  # no record limit: the byte limit is all there is
        (200, 64 * MIB, -1, False),
        (200, 2**31 - 1, 10_000, False),  # the session already skips the check
        (2**63 - 1, 64 * MIB, 10_000, False),  # rows of unknown width
    ],
)
def test_which_tasks_go_by_record_count_alone(
    spark: SparkSession, widest: int, max_bytes: int, max_records: int, alone: bool
) -> None:
    sized = _sized_writes(spark)
    assert sized.bySizeAlone(widest, max_bytes, max_records) is alone  # type: ignore[attr-defined]


@bridged
def test_small_rows_past_the_sample_arrive_once_in_order(
    spark: SparkSession, tmp_path: Path
) -> None:
    out = str(tmp_path / "small")
    rows = 25_000  # each task samples 1,000 rows and sends the rest after them
    df = spark.range(0, rows, numPartitions=2).selectExpr("id", "concat('n', id) AS name")
    df.write.format("lance").mode("append").save(out)
    table = lance.dataset(out).to_table()
    ids = table["id"].to_numpy()
    np.testing.assert_array_equal(np.sort(ids), np.arange(rows))
    assert table["name"].to_pylist() == [f"n{i}" for i in ids]
    for fragment in lance.dataset(out).get_fragments():  # a task's rows keep their order
        part = fragment.to_table()["id"].to_numpy()
        assert (np.diff(part) == 1).all()


@bridged
def test_wide_rows_keep_the_byte_limit_and_arrive_once(spark: SparkSession, tmp_path: Path) -> None:
    out = str(tmp_path / "wide")
    rows, width = 1_300, 60_000  # 78 MB: over Spark's 64 MiB batch limit
    df = spark.range(0, rows, numPartitions=1).selectExpr(
        "id", f"concat(repeat('x', {width}), CAST(id AS STRING)) AS s"
    )
    df.write.format("lance").mode("append").save(out)
    table = lance.dataset(out).to_table()
    ids = table["id"].to_numpy()
    np.testing.assert_array_equal(ids, np.arange(rows))
    lengths = pc.binary_length(table["s"]).to_numpy()
    np.testing.assert_array_equal(lengths, [width + len(str(i)) for i in range(rows)])
    suffixes = pc.utf8_slice_codeunits(table["s"], width).to_pylist()
    assert suffixes == [str(i) for i in range(rows)]
