"""``spark.readStream.format("lance")``: the snapshot then each version's new rows,
exactly once across restarts, with admission limits, starting points, and change
commits failed or skipped.  Each run writes to Spark's own Parquet sink, read back
by Spark's Parquet reader; expectations come from pylance's view of the versions."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from tests.versions import STORAGE_VERSION


def rows(start: int, stop: int) -> pa.Table:
    k = np.arange(start, stop, dtype=np.int64)
    return pa.table({"k": k, "s": pa.array([f"s{i}" for i in k])})


class Run:
    """One streaming query, rerun on the same checkpoint as a restarted query."""

    def __init__(self, spark: SparkSession, tmp_path: Path, uri: str, **options: str) -> None:
        self.spark, self.uri, self.options = spark, uri, options
        self.out = str(tmp_path / "out")
        self.checkpoint = str(tmp_path / "checkpoint")

    def __call__(self) -> list[int]:
        """Run until everything committed so far is read; the batches' sizes."""
        reader = self.spark.readStream.format("lance")
        for key, value in self.options.items():
            reader = reader.option(key, value)
        before = self.batches()
        query = (
            reader.load(self.uri)
            .writeStream.format("parquet")
            .option("checkpointLocation", self.checkpoint)
            .trigger(availableNow=True)
            .start(self.out)
        )
        query.awaitTermination(120)
        self.progress = query.recentProgress
        sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
        assert self.batches() >= before
        return sizes

    def batches(self) -> int:
        path = Path(self.checkpoint) / "commits"
        return len(list(path.glob("[0-9]*"))) if path.exists() else 0

    def keys(self) -> list[int]:
        found = self.spark.read.schema("k long, s string").parquet(self.out)
        return sorted(r.k for r in found.select("k").collect())


@pytest.fixture
def uri(tmp_path: Path) -> str:
    path = str(tmp_path / "ds")
    lance.write_dataset(
        rows(0, 100), path, max_rows_per_file=40, data_storage_version=STORAGE_VERSION
    )
    return path


def test_snapshot_then_appends_exactly_once(spark: SparkSession, tmp_path: Path, uri: str) -> None:
    run = Run(spark, tmp_path, uri)
    run()
    assert run.keys() == list(range(100))
    dataset = lance.write_dataset(rows(100, 130), uri, mode="append")
    dataset.create_scalar_index("k", "BTREE")  # carries no rows
    dataset.optimize.compact_files(target_rows_per_fragment=1000)  # moves rows only
    lance.write_dataset(rows(130, 140), uri, mode="append")
    run()  # a restarted query reads only what it has not read
    assert run.keys() == list(range(140))
    assert run() == []  # nothing new: no rows
    assert run.keys() == list(range(140))
    latest = lance.dataset(uri).version
    reported = [p["sources"][0].get("latestOffset") for p in run.progress]
    assert any(f'"version":{latest + 1}' in str(r).replace(" ", "") for r in reported), reported


def test_limits_cut_batches(spark: SparkSession, tmp_path: Path, uri: str) -> None:
    by_rows = Run(spark, tmp_path / "rows", uri, maxRowsPerTrigger="85")
    assert by_rows() == [80, 20]  # fragments of 40, 40 and 20 rows
    small = Run(spark, tmp_path / "small", uri, maxRowsPerTrigger="10")
    assert small() == [40, 40, 20]  # at least one fragment per batch
    by_files = Run(spark, tmp_path / "files", uri, maxFilesPerTrigger="1")
    assert by_files() == [40, 40, 20]
    assert by_rows.keys() == by_files.keys() == list(range(100))


def test_starting_version_and_timestamp(spark: SparkSession, tmp_path: Path, uri: str) -> None:
    time.sleep(1.1)
    lance.write_dataset(rows(100, 110), uri, mode="append")  # version 2
    lance.write_dataset(rows(110, 115), uri, mode="append")  # version 3
    from_two = Run(spark, tmp_path / "two", uri, startingVersion="2")
    from_two()
    assert from_two.keys() == list(range(100, 115))
    latest = Run(spark, tmp_path / "latest", uri, startingVersion="latest")
    latest()
    lance.write_dataset(rows(115, 117), uri, mode="append")
    latest()
    assert latest.keys() == [115, 116]
    second = lance.dataset(uri, version=2).versions()[1]["timestamp"]
    stamp = second.astimezone(timezone.utc).replace(microsecond=0)
    text = stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    by_time = Run(spark, tmp_path / "time", uri, startingTimestamp=text)
    by_time()
    assert by_time.keys() == list(range(100, 117))
    assert stamp <= datetime.now(timezone.utc)


def test_change_commits_fail_or_are_skipped(spark: SparkSession, tmp_path: Path, uri: str) -> None:
    run = Run(spark, tmp_path, uri)
    run()
    lance.write_dataset(rows(100, 110), uri, mode="append")
    lance.dataset(uri).delete("k < 10")
    lance.write_dataset(rows(110, 120), uri, mode="append")
    with pytest.raises(Exception, match="ignoreDeletes or skipChangeCommits"):
        run()
    # The rows appended before the delete were delivered before the stream stopped.
    assert run.keys() == list(range(110))

    skipping = Run(spark, tmp_path, uri, ignoreDeletes="true")  # same checkpoint
    skipping()
    assert skipping.keys() == list(range(120))
    lance.dataset(uri).update({"s": "'x'"}, where="k = 50")
    lance.write_dataset(rows(120, 125), uri, mode="append")
    with pytest.raises(Exception, match="skipChangeCommits"):
        skipping()
    Run(spark, tmp_path, uri, skipChangeCommits="true")()
    assert run.keys() == list(range(125))


def test_schema_change_fails_the_stream(spark: SparkSession, tmp_path: Path, uri: str) -> None:
    run = Run(spark, tmp_path, uri)
    run()
    lance.dataset(uri).add_columns({"d": "k * 2"})
    with pytest.raises(Exception, match="schema changed"):
        Run(spark, tmp_path, uri, skipChangeCommits="true")()


def test_bad_options(spark: SparkSession, tmp_path: Path, uri: str) -> None:
    refused = {
        "startingVersion or startingTimestamp": {"versionAsOf": "1"},
        "not a version number or 'latest'": {"startingVersion": "first"},
        "after the latest version, 1": {"startingVersion": "7"},
        "not both": {"maxRowsPerTrigger": "5", "maxFilesPerTrigger": "1"},
        "must be a positive integer": {"maxRowsPerTrigger": "0"},
        "unknown streaming read option": {"pushdown": "false"},
    }
    for message, options in refused.items():
        with pytest.raises(Exception, match=message):
            Run(spark, tmp_path / message[:5], uri, **options)()
    with pytest.raises(Exception, match="unknown read option"):
        spark.read.format("lance").option("startingVersion", "1").load(uri).collect()
