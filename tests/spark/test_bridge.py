"""The JVM bridge (``java/``, :mod:`lancelet.spark.bridge`): each query's read planned
for it, with only the columns it returns or filters on, its filters pushed, its
limit, and ``COUNT(*)`` answered by row counts.

Expected values come from pylance or pyarrow, never from lancelet.  The suite's
session loads the bridge (the jar is built by ``scripts/build_bridge.py`` before the
tests); ``LANCELET_SPARK_BRIDGE=0`` runs the whole Spark suite without it, and then
these tests are skipped but the fallback one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import DataFrame, SparkSession

from lancelet.spark.bridge import bridge_jar
from tests.versions import STORAGE_VERSION

bridged = pytest.mark.skipif(bridge_jar() is None, reason="the Spark bridge is not loaded")

ROWS = 3000


def _table(start: int, stop: int) -> pa.Table:
    ids = np.arange(start, stop, dtype=np.int64)
    return pa.table({"id": ids, "k": ids % 7, "name": [f"n{i}" for i in ids]})


@pytest.fixture
def uri(tmp_path: Path) -> str:
    out = str(tmp_path / "ds")
    lance.write_dataset(
        _table(0, ROWS), out, data_storage_version=STORAGE_VERSION, max_rows_per_file=700
    )
    lance.dataset(out).delete("id % 10 = 3")
    return out


def _plan(df: DataFrame) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


@bridged
def test_this_spark_has_every_internal_the_bridge_uses(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    assert list(jvm.org.lancelet.spark.LanceSource.missingInternals()) == []


@bridged
def test_a_query_reads_only_its_columns(spark: SparkSession, uri: str) -> None:
    df = spark.read.format("lance").load(uri)
    query = df.select("name")
    assert "BatchScan lance[name#" in _plan(query)
    want = lance.dataset(uri).to_table(columns=["name"])["name"].to_pylist()
    assert sorted(r.name for r in query.collect()) == sorted(want)


@bridged
def test_filters_are_pushed_per_query_and_their_columns_read(
    spark: SparkSession, uri: str, tasks_read: None
) -> None:
    df = spark.read.format("lance").load(uri)
    query = df.where("k = 2").select("name")
    assert "pushed [" in _plan(query)
    want = lance.dataset(uri).to_table(columns=["name"], filter="k = 2")["name"].to_pylist()
    assert sorted(r.name for r in query.collect()) == sorted(want)
    # The same DataFrame, no filter: every row (a pushed read is never reused).
    assert df.count() == lance.dataset(uri).count_rows()
    assert df.where("k = 2").count() == len(want)


@bridged
def test_count_is_answered_by_row_counts(spark: SparkSession, uri: str) -> None:
    df = spark.read.format("lance").load(uri)
    assert df.count() == lance.dataset(uri).count_rows()
    assert df.selectExpr("count(*) AS n").collect()[0].n == lance.dataset(uri).count_rows()
    # count(column) counts non-null values: not pushed, still right.
    assert df.selectExpr("count(name) AS n").collect()[0].n == lance.dataset(uri).count_rows()


@bridged
def test_count_of_an_empty_dataset(spark: SparkSession, tmp_path: Path) -> None:
    out = str(tmp_path / "empty")
    lance.write_dataset(_table(0, 0), out, data_storage_version=STORAGE_VERSION)
    assert spark.read.format("lance").load(out).count() == 0


@bridged
def test_limits(spark: SparkSession, uri: str) -> None:
    df = spark.read.format("lance").load(uri)
    assert len(df.limit(5).collect()) == 5
    got = df.where("k = 4").limit(7).collect()
    assert len(got) == 7 and all(r.k == 4 for r in got)
    live = lance.dataset(uri).to_table()
    assert {r.id for r in got} <= set(live["id"].to_pylist())
    assert len(df.select("id").limit(ROWS * 2).collect()) == live.num_rows


@bridged
def test_a_reused_dataframe_reads_one_version(spark: SparkSession, uri: str) -> None:
    df = spark.read.format("lance").load(uri)
    before = lance.dataset(uri).to_table()
    lance.write_dataset(_table(ROWS, ROWS + 100), uri, mode="append")
    lance.dataset(uri).delete("k = 1")
    for _ in range(2):
        assert df.count() == before.num_rows
        want = before.filter(pc.field("k") == 1)
        assert sorted(r.id for r in df.where("k = 1").select("id").collect()) == sorted(
            want["id"].to_pylist()
        )
        assert df.select("id").distinct().count() == before.num_rows


def test_without_the_bridge_the_python_source_answers(uri: str) -> None:
    env = {**os.environ, "LANCELET_SPARK_BRIDGE": "0"}
    script = (
        "import json, sys, lancelet.spark as ls\n"
        "spark = ls.session('nobridge', 'local[1]')\n"
        "df = spark.read.format('lance').load(sys.argv[1])\n"
        "plan = df.select('id')._jdf.queryExecution().executedPlan().toString()\n"
        "print(json.dumps({'count': df.count(), 'k2': df.where('k = 2').count(),\n"
        "                  'jars': spark.conf.get('spark.jars', ''), 'plan': plan}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, uri], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    table = lance.dataset(uri).to_table()
    assert out["count"] == table.num_rows
    assert out["k2"] == len(table.filter(pc.field("k") == 2))
    assert "lancelet-spark-bridge" not in out["jars"]
    assert "BatchScan lance[id#" in out["plan"] and "name#" in out["plan"]


def test_read_hints_limit_and_count_batches() -> None:
    from pyspark.sql import types as st

    from lancelet.errors import ArgumentError
    from lancelet.spark.partial_aggregate import FUNCTION_KEY
    from lancelet.spark.read_hints import LIMIT_KEY, ReadHints

    field = st.StructField("x", st.LongType(), True, {LIMIT_KEY: "5"})
    hints = ReadHints.of(st.StructType([field]))
    batches = [pa.record_batch([pa.array(range(i * 3, i * 3 + 3))], names=["x"]) for i in range(4)]
    limited = st.StructType([field])
    out = list(hints.applied(iter(batches), limited, limited))
    assert [v for b in out for v in b.column(0).to_pylist()] == [0, 1, 2, 3, 4]

    counted = st.StructType(
        [st.StructField("agg_0", st.LongType(), True, {FUNCTION_KEY: "count_all"})]
    )
    hints = ReadHints.of(counted)
    table = st.StructType([st.StructField("x", st.LongType())])
    read = hints.columns(counted, table)
    assert read.fields == []
    empty = [b.select([]) for b in batches]
    out = list(hints.applied(iter(empty), counted, read))
    assert len(out) == 1 and out[0].column(0).to_pylist() == [12]
    assert next(iter(hints.applied(iter(()), counted, read))).column(0).to_pylist() == [0]

    odd = st.StructType([st.StructField("m", st.LongType(), False, {FUNCTION_KEY: "median"})])
    with pytest.raises(ArgumentError, match="median"):
        ReadHints.of(odd)
