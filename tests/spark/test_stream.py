"""The streaming sink: one commit per micro-batch, exactly once across restarts."""

from __future__ import annotations

import os
import time
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from lancelet.spark.stream import BATCH_KEY, QUERY_KEY
from tests.spark.test_write import ROWS_SCHEMA, data_files, pylance_rows, rows
from tests.spark.util import assert_same_rows
from tests.versions import STORAGE_VERSION


def _run(spark: SparkSession, source: Path, out: str, checkpoint: str) -> StreamingQuery:
    """Process every file in ``source``, one per micro-batch, then stop."""
    stream = spark.readStream.schema(ROWS_SCHEMA).option("maxFilesPerTrigger", 1)
    writer = stream.parquet(str(source)).writeStream.format("lance")
    query = writer.option("checkpointLocation", checkpoint).trigger(availableNow=True).start(out)
    assert query.awaitTermination(180)
    assert query.exception() is None
    return query


def test_restarts_commit_each_batch_once(spark: SparkSession, tmp_path: Path) -> None:
    source, out, checkpoint = tmp_path / "in", str(tmp_path / "out"), str(tmp_path / "ckpt")
    source.mkdir()
    pq.write_table(rows(0, 10), source / "0.parquet")
    pq.write_table(rows(10, 25), source / "1.parquet")
    # Spark's file source takes files oldest first; two files written within one clock
    # tick would come in either order, and batch 1 would not be the 15 rows.
    now = time.time()  # recent: the source ignores files much older than the newest
    os.utime(source / "0.parquet", (now - 20, now - 20))
    os.utime(source / "1.parquet", (now - 10, now - 10))

    query = _run(spark, source, out, checkpoint)
    assert lance.dataset(out).version == 2  # one version per micro-batch
    assert_same_rows(pylance_rows(out), rows(0, 25))
    properties = lance.dataset(out).read_transaction(2).transaction_properties
    assert properties == {QUERY_KEY: str(query.id), BATCH_KEY: "1"}

    # The sink committed batch 1 but Spark died before recording it: the restarted
    # query runs batch 1 again, and the sink recognises it and removes the new files.
    files = data_files(out)
    for name in ("1", ".1.crc"):  # the log entry and its checksum file
        os.remove(os.path.join(checkpoint, "commits", name))
    replayed = _run(spark, source, out, checkpoint)
    assert replayed.id == query.id
    assert [(p["batchId"], p["numInputRows"]) for p in replayed.recentProgress] == [(1, 15)]
    assert lance.dataset(out).version == 2
    assert data_files(out) == files
    assert_same_rows(pylance_rows(out), rows(0, 25))

    pq.write_table(rows(25, 30), source / "2.parquet")
    os.utime(source / "2.parquet", (now, now))
    _run(spark, source, out, checkpoint)
    assert lance.dataset(out).version == 3
    assert_same_rows(pylance_rows(out), rows(0, 30))
    assert_same_rows(spark.read.format("lance").load(out).toArrow(), rows(0, 30))


def test_sink_refuses_a_schema_mismatch(spark: SparkSession, tmp_path: Path) -> None:
    source, out = tmp_path / "in", str(tmp_path / "out")
    source.mkdir()
    pq.write_table(rows(0, 5), source / "0.parquet")
    lance.write_dataset(pa.table({"k": [1]}), out, data_storage_version=STORAGE_VERSION)
    stream = spark.readStream.schema(ROWS_SCHEMA).parquet(str(source))
    with pytest.raises(Exception, match="lacks"):
        writer = stream.writeStream.format("lance").trigger(availableNow=True)
        writer.option("checkpointLocation", str(tmp_path / "ckpt")).start(out).awaitTermination(60)
    assert lance.dataset(out).version == 1
