"""The ``lance`` source and ``LanceTable`` on S3 (a local moto server on 127.0.0.1):
settings given the Spark way (``spark.hadoop.fs.s3a.*``) or as ``storage.*`` options
reach the driver and every task; each job commits one version; results are read
back by pylance and compared with a pyarrow computation."""

from __future__ import annotations

import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import SparkSession

import lancelet.spark
from lancelet.spark.storage import s3a_options
from lancelet.spark.table import LanceTable
from tests.s3server import ACCESS_KEY, REGION, SECRET_KEY, S3Server
from tests.spark.util import assert_same_rows


def rows(start: int, stop: int) -> pa.Table:
    keys = np.arange(start, stop, dtype=np.int64)
    return pa.table(
        {
            "k": keys,
            "v": (keys * 3) % 17,
            "s": pa.array([f"s{i}" for i in keys]),
        }
    )


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def spark_way(server: S3Server) -> dict[str, str]:
    """The server's settings as a Spark user gives them to S3A: a host and port with
    SSL off, path-style requests."""
    return {
        "fs.s3a.endpoint": urlsplit(server.endpoint).netloc,
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.endpoint.region": REGION,
        "fs.s3a.access.key": ACCESS_KEY,
        "fs.s3a.secret.key": SECRET_KEY,
    }


@contextmanager
def session_settings(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """``settings`` on the live session as ``spark.hadoop.*``, the source registered
    with them; both undone afterwards."""
    for key, value in settings.items():
        spark.conf.set("spark.hadoop." + key, value)
    try:
        lancelet.spark.register(spark)
        yield
    finally:
        for key in settings:
            spark.conf.unset("spark.hadoop." + key)
        lancelet.spark.register(spark)


def storage(options: Mapping[str, str]) -> dict[str, str]:
    return {"storage." + key: value for key, value in options.items()}


def pylance_table(server: S3Server, uri: str) -> tuple[int, pa.Table]:
    dataset = lance.dataset(uri, storage_options=server.storage_options)
    dataset.validate()
    return dataset.version, dataset.to_table()


def test_a_job_writes_appends_and_reads_with_the_sessions_s3a_settings(
    spark: SparkSession, s3_server: S3Server, s3_bucket: str
) -> None:
    uri = f"s3a://{s3_bucket}/ds"
    first, second = rows(0, 600), rows(600, 1000)
    with session_settings(spark, spark_way(s3_server)):
        spark.createDataFrame(first).repartition(3).write.format("lance").mode("append").save(uri)
        version, table = pylance_table(s3_server, f"s3://{s3_bucket}/ds")
        assert version == 1
        assert_same_rows(table, first)

        read = spark.read.format("lance").load(uri).where("v < 5").select("k", "s")
        expected = first.filter(pc.less(first["v"], 5)).select(["k", "s"])
        assert_same_rows(pa.Table.from_pandas(read.toPandas(), preserve_index=False), expected)

        spark.createDataFrame(second).repartition(2).write.format("lance").mode("append").save(uri)
        version, table = pylance_table(s3_server, f"s3://{s3_bucket}/ds")
        assert version == 2  # one commit for the job's two tasks
        assert_same_rows(table, pa.concat_tables([first, second]))

        # The filter option: read by lancelet's scanner in the tasks.
        scanned = (
            spark.read.format("lance").option("filter", "k >= 950").option("columns", "k").load(uri)
        )
        assert sorted(r.k for r in scanned.collect()) == list(range(950, 1000))


def test_table_jobs_on_s3_with_a_per_bucket_endpoint(
    spark: SparkSession, s3_server: S3Server, s3_bucket: str
) -> None:
    uri = f"s3://{s3_bucket}/table"
    data = rows(0, 100)
    lance.write_dataset(data, uri, storage_options=s3_server.storage_options, max_rows_per_file=40)
    settings = spark_way(s3_server)
    # The bucket's own endpoint wins over the general one, as in S3A.
    settings[f"fs.s3a.bucket.{s3_bucket}.endpoint"] = settings["fs.s3a.endpoint"]
    settings["fs.s3a.endpoint"] = f"127.0.0.1:{closed_port()}"
    with session_settings(spark, settings):
        table = LanceTable.forPath(spark, f"s3a://{s3_bucket}/table")
        assert table.delete("k < 10").collect()[0][0] == 10
        assert table.update("k >= 90", set={"v": "v + 100"}).collect()[0][0] == 10
        history = table.history().collect()
    assert [(r.version, r.operation) for r in history] == [
        (3, "UPDATE"),
        (2, "DELETE"),
        (1, "OVERWRITE"),
    ]
    version, got = pylance_table(s3_server, uri)
    assert version == 3
    kept = data.filter(pc.greater_equal(data["k"], 10))
    bumped = pc.if_else(pc.greater_equal(kept["k"], 90), pc.add(kept["v"], 100), kept["v"])
    assert_same_rows(got, kept.set_column(1, "v", bumped))


def test_explicit_storage_options_without_session_settings(
    spark: SparkSession, s3_server: S3Server, s3_bucket: str
) -> None:
    uri = f"s3://{s3_bucket}/ds"
    data = rows(0, 300)
    lance.write_dataset(data, uri, storage_options=s3_server.storage_options, max_rows_per_file=100)
    options = storage(s3_server.storage_options)
    frame = spark.read.format("lance").options(**options).load(f"s3a://{s3_bucket}/ds")
    got = pa.Table.from_pandas(frame.where("k % 7 = 0").toPandas(), preserve_index=False)
    assert_same_rows(got, data.filter(pa.array(data["k"].to_numpy() % 7 == 0)))

    # An explicit option wins over the session's setting of the same key.
    wrong = {"fs.s3a.endpoint": f"http://127.0.0.1:{closed_port()}"}
    with session_settings(spark, wrong):
        assert spark.read.format("lance").options(**options).load(uri).count() == 300

    with pytest.raises(Exception, match="unknown storage option"):
        spark.read.format("lance").options(**options, **{"storage.no_such_key": "1"}).load(uri)


def test_a_wrong_endpoint_fails_the_job_and_changes_nothing(
    spark: SparkSession, s3_server: S3Server, s3_bucket: str
) -> None:
    uri = f"s3://{s3_bucket}/ds"
    data = rows(0, 50)
    lance.write_dataset(data, uri, storage_options=s3_server.storage_options)
    before = s3_server.keys(s3_bucket)
    wrong = {
        **s3_server.storage_options,
        "endpoint": f"http://127.0.0.1:{closed_port()}",
        "client_max_retries": "1",  # the default ten take seconds to give up
    }
    frame = spark.createDataFrame(rows(50, 80))
    with pytest.raises(Exception, match="127.0.0.1") as failed:
        frame.write.format("lance").mode("append").options(**storage(wrong)).save(uri)
    assert f"s3://{s3_bucket}/ds" in str(failed.value)
    version, got = pylance_table(s3_server, uri)
    assert version == 1
    assert_same_rows(got, data)
    assert s3_server.keys(s3_bucket) == before


def test_a_stream_from_s3_to_s3(
    spark: SparkSession, s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    source, sink = f"s3://{s3_bucket}/source", f"s3a://{s3_bucket}/sink"
    data = rows(0, 200)
    lance.write_dataset(data, source, storage_options=s3_server.storage_options)
    lance.write_dataset(
        rows(200, 300), source, mode="append", storage_options=s3_server.storage_options
    )
    options = storage(s3_server.storage_options)
    query = (
        spark.readStream.format("lance")
        .options(**options)
        .load(source)
        .writeStream.format("lance")
        .options(**options)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start(sink)
    )
    query.awaitTermination(120)
    assert query.exception() is None
    version, got = pylance_table(s3_server, f"s3://{s3_bucket}/sink")
    assert version == 1  # one micro-batch, one commit
    assert_same_rows(got, rows(0, 300))


ANONYMOUS = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"


def test_s3a_settings_translate_as_s3a_reads_them() -> None:
    settings = {
        "fs.s3a.endpoint": "storage.example.com",
        "fs.s3a.path.style.access": "False",
        "fs.s3a.aws.credentials.provider": ANONYMOUS,
        "fs.s3a.bucket.other.endpoint": "elsewhere.example.com",
        "fs.s3a.fast.upload": "true",  # Hadoop's own client: no storage option
    }
    assert s3a_options(settings, "s3a://logs/x") == {
        "endpoint": "https://storage.example.com",
        "virtual_hosted_style_request": "true",
        "skip_signature": "true",
    }
    assert s3a_options(settings, "s3://other/x")["endpoint"] == "https://elsewhere.example.com"
    assert s3a_options(settings, "gs://logs/x") == {}
    assert s3a_options(settings, "/tmp/x") == {}
    with pytest.raises(ValueError, match="fs.s3a.connection.ssl.enabled"):
        s3a_options({"fs.s3a.connection.ssl.enabled": "no"}, "s3a://logs/x")
