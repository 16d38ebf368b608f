"""Writing with ``df.write.format("lance")``: every save mode, options, schema checks,
failed jobs and concurrent commits; pylance reads and validates each result."""

from __future__ import annotations

import datetime
import decimal
import os
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import lancelet.spark
from lancelet.errors import CommitConflictError, SchemaError
from lancelet.spark.options import write_options
from lancelet.spark.writer import LanceWriter
from tests.spark.util import assert_same_rows
from tests.versions import STORAGE_VERSION


def rows(start: int, stop: int) -> pa.Table:
    k = np.arange(start, stop, dtype=np.int64)
    return pa.table(
        {
            "k": k,
            "x": pa.array(k * 0.5, pa.float64(), mask=k % 5 == 0),
            "s": pa.array([f"s{i}" for i in k], pa.string(), mask=k % 7 == 0),
        }
    )


ROWS_SCHEMA = "k long, x double, s string"


def frame(spark: SparkSession, table: pa.Table, partitions: int = 3) -> DataFrame:
    return spark.createDataFrame(table, schema=ROWS_SCHEMA).repartition(partitions)


def pylance_rows(uri: str) -> pa.Table:
    dataset = lance.dataset(uri)
    dataset.validate()
    return dataset.to_table()


def data_files(uri: str) -> set[str]:
    path = os.path.join(uri, "data")
    return set(os.listdir(path)) if os.path.isdir(path) else set()


def test_append_creates_then_appends(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    frame(spark, rows(0, 100)).write.format("lance").mode("append").save(uri)
    frame(spark, rows(100, 130), 2).write.format("lance").mode("append").save(uri)
    assert lance.dataset(uri).version == 2
    assert_same_rows(pylance_rows(uri), rows(0, 130))
    # Appending no rows makes no version.
    frame(spark, rows(0, 0), 1).write.format("lance").mode("append").save(uri)
    assert lance.dataset(uri).version == 2


def test_spark_reads_pylance_append_to_spark_dataset(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    frame(spark, rows(0, 50)).write.format("lance").mode("append").save(uri)
    lance.write_dataset(rows(50, 80), uri, mode="append")
    lance.dataset(uri).delete("k < 10")
    got = spark.read.format("lance").load(uri).toArrow()
    assert_same_rows(got, rows(10, 80))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_data_storage_version(spark: SparkSession, tmp_path: Path, version: str) -> None:
    uri = str(tmp_path / "ds")
    writer = frame(spark, rows(0, 60)).write.format("lance").mode("append")
    writer.option("data_storage_version", version).save(uri)
    frame(spark, rows(60, 90), 2).write.format("lance").mode("append").save(uri)
    dataset = lance.dataset(uri)
    assert dataset.data_storage_version == version
    assert_same_rows(pylance_rows(uri), rows(0, 90))
    pairs = {
        (f.file_major_version, f.file_minor_version)
        for fragment in dataset.get_fragments()
        for f in fragment.metadata.files
    }
    assert pairs == {tuple(int(p) for p in version.split("."))}


def test_overwrite(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"other": [1, 2]}), uri, data_storage_version=STORAGE_VERSION)
    writer = frame(spark, rows(0, 40)).write.format("lance").mode("overwrite")
    writer.option("overwriteSchema", "true").save(uri)
    assert lance.dataset(uri).version == 2
    assert_same_rows(pylance_rows(uri), rows(0, 40))
    # Overwriting with no rows empties the dataset but keeps the new schema.
    frame(spark, rows(0, 0), 1).write.format("lance").mode("overwrite").save(uri)
    assert pylance_rows(uri).equals(rows(0, 0))


def test_errorifexists_and_ignore(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    lancelet.spark.save(frame(spark, rows(0, 20)), uri)  # errorifexists, the default
    assert_same_rows(pylance_rows(uri), rows(0, 20))
    files = data_files(uri)
    with pytest.raises(Exception, match="already exists"):
        lancelet.spark.save(frame(spark, rows(20, 30)), uri, mode="errorifexists")
    lancelet.spark.save(frame(spark, rows(20, 30)), uri, mode="ignore")
    assert lance.dataset(uri).version == 1
    assert data_files(uri) == files
    lancelet.spark.save(frame(spark, rows(20, 30)), uri, mode="append")
    assert_same_rows(pylance_rows(uri), rows(0, 30))

    fresh = str(tmp_path / "fresh")
    lancelet.spark.save(frame(spark, rows(0, 5)), fresh, mode="ignore")
    assert_same_rows(pylance_rows(fresh), rows(0, 5))
    # Spark itself refuses these modes for Python data sources.
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        frame(spark, rows(0, 5)).write.format("lance").mode("ignore").save(fresh)


def test_write_options(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    df = frame(spark, rows(0, 100), 2)
    df.write.format("lance").mode("append").option("max_rows_per_file", 15).save(uri)
    fragments = lance.dataset(uri).get_fragments()
    assert all(f.count_rows() <= 15 for f in fragments) and len(fragments) >= 7
    assert lance.dataset(uri).data_storage_version == "2.2"
    assert_same_rows(pylance_rows(uri), rows(0, 100))
    for key, value in (("data_storage_version", "2.1"), ("max_rows_per_file", "0"), ("nope", "1")):
        with pytest.raises(Exception, match=key):
            df.write.format("lance").mode("append").option(key, value).save(uri)
    assert lance.dataset(uri).version == 1


def test_spark_types_round_trip(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ts = datetime.datetime(2021, 5, 6, 7, 8, 9, 123456, tzinfo=datetime.timezone.utc)
    table = pa.table(
        {
            "k": pa.array([1, 2, 3], pa.int64()),
            "b": [True, None, False],
            "i8": pa.array([1, -2, 3], pa.int8()),
            "i32": pa.array([1, None, 3], pa.int32()),
            "f32": pa.array([1.5, float("nan"), None], pa.float32()),
            "bin": [b"a", None, b"ccc"],
            "d": [datetime.date(2020, 2, 29), None, datetime.date(1970, 1, 1)],
            "ts": pa.array([ts, None, ts], pa.timestamp("us", "UTC")),
            "dec": pa.array(
                [decimal.Decimal("1.25"), None, decimal.Decimal("-3")], pa.decimal128(9, 2)
            ),
            "arr": pa.array([[1, 2], [], None], pa.list_(pa.int64())),
            "st": pa.array([{"a": 1, "b": "x"}, {"a": None, "b": None}, {"a": 3, "b": "z"}]),
        }
    )
    df = spark.createDataFrame(table)
    df.write.format("lance").mode("append").save(uri)
    expected = df.toArrow()  # Spark's own Arrow form of the rows
    assert_same_rows(pylance_rows(uri).cast(expected.schema), expected)
    assert_same_rows(spark.read.format("lance").load(uri).toArrow(), expected)


def test_schema_mismatch_fails_before_writing(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(rows(0, 10), uri, data_storage_version=STORAGE_VERSION)
    files = data_files(uri)
    wrong = {
        "lacks": frame(spark, rows(0, 5)).withColumn("extra", F.lit(1)),
        "column 'x' is string": frame(spark, rows(0, 5)).withColumn("x", F.col("s")),
    }
    for message, df in wrong.items():
        with pytest.raises(Exception, match=message):
            df.write.format("lance").mode("append").save(uri)
    assert lance.dataset(uri).version == 1
    assert data_files(uri) == files
    # Columns in another order are matched by name; an all-null column fits.
    frame(spark, rows(10, 20)).select("s", "k", "x").write.format("lance").mode("append").save(uri)
    nulls = frame(spark, rows(20, 25)).withColumn("s", F.lit(None))
    nulls.write.format("lance").mode("append").save(uri)
    want = pa.concat_tables(
        [rows(0, 20), rows(20, 25).set_column(2, "s", pa.nulls(5, pa.string()))]
    )
    assert_same_rows(pylance_rows(uri), want)


def test_failed_task_commits_nothing_and_leaves_no_files(
    spark: SparkSession, tmp_path: Path
) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(rows(0, 10), uri, data_storage_version=STORAGE_VERSION)
    files = data_files(uri)

    data_dir = os.path.join(uri, "data")

    @F.udf("long")
    def fail_on_150(k):  # no type hints: they would make it an Arrow UDF
        if k == 150:
            import os
            import time

            # Fail only once the other task has written its 5 files (and, a moment later,
            # reported them): a task Spark kills mid-write leaves orphans for cleanup.
            deadline = time.monotonic() + 60
            while len(os.listdir(data_dir)) < len(files) + 5 and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1)
            raise ValueError("no row 150")
        return k

    df = spark.range(100, 200, numPartitions=2).select(fail_on_150("id").alias("k"))
    df = df.selectExpr("k", "CAST(k AS DOUBLE) AS x", "CAST(k AS STRING) AS s")
    with pytest.raises(Exception, match="no row 150"):
        df.write.format("lance").mode("append").option("max_rows_per_file", 10).save(uri)
    assert lance.dataset(uri).version == 1
    assert data_files(uri) == files
    assert_same_rows(pylance_rows(uri), rows(0, 10))


def _batches(table: pa.Table) -> list[pa.RecordBatch]:
    return table.to_batches(max_chunksize=7)


def test_concurrent_overwrite_fails_the_append(spark: SparkSession, tmp_path: Path) -> None:
    """The writer reads the version it appends to when the job starts; an overwrite
    committed before its commit is a conflict, and its files are removed."""
    uri = str(tmp_path / "ds")
    lance.write_dataset(rows(0, 10), uri, data_storage_version=STORAGE_VERSION)
    schema = frame(spark, rows(0, 1), 1).schema
    writer = LanceWriter.create(schema, write_options({"path": uri}), overwrite=False)
    messages = [
        writer.write(iter(_batches(rows(10, 30)))),
        writer.write(iter(_batches(rows(30, 35)))),
    ]
    lance.write_dataset(rows(100, 105), uri, mode="overwrite")
    files = data_files(uri)
    with pytest.raises(CommitConflictError):
        writer.commit(messages)
    assert lance.dataset(uri).version == 2
    assert_same_rows(pylance_rows(uri), rows(100, 105))
    assert data_files(uri) < files  # the job's files are gone, the overwrite's stay

    # A concurrent append does not conflict: both sets of rows are kept.
    writer = LanceWriter.create(schema, write_options({"path": uri}), overwrite=False)
    message = writer.write(iter(_batches(rows(0, 3))))
    lance.write_dataset(rows(200, 201), uri, mode="append")
    writer.commit([message])
    assert_same_rows(
        pylance_rows(uri), pa.concat_tables([rows(100, 105), rows(200, 201), rows(0, 3)])
    )
    with pytest.raises(SchemaError, match="column 'k' is string"):
        LanceWriter.create(
            frame(spark, rows(0, 1), 1).selectExpr("s AS k", "x", "s").schema,
            write_options({"path": uri}),
            overwrite=False,
        )


# Object stores are lancelet's own (see test_s3.py); other schemes are refused by name.
@pytest.mark.parametrize("uri", ["hdfs://namenode/t", "s3n://bucket/t", "wasbs://c@a/t"])
def test_unsupported_schemes_are_refused_not_made_local(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uri: str
) -> None:
    monkeypatch.chdir(tmp_path)
    df = spark.createDataFrame([(1,)], "k long")
    with pytest.raises(Exception, match="scheme.*is not supported"):
        df.write.format("lance").mode("append").save(uri)
    with pytest.raises(Exception, match="scheme.*is not supported"):
        spark.read.format("lance").load(uri).count()
    assert os.listdir(tmp_path) == []
