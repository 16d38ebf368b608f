"""Columnar reads through the JVM bridge (``java/``: ``ArrowBatchReaderFactory``): the
Arrow batches Spark's Python workers send reach Spark as ``ColumnarBatch``es.

Expected answers are Spark's own: the same table written by pyarrow as Parquet and
read by Spark's Parquet source, queried alike.  Reads without the bridge are row reads,
so these tests are skipped then.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterator
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession

from lancelet.spark.bridge import bridge_jar
from tests.versions import STORAGE_VERSION

pytestmark = pytest.mark.skipif(bridge_jar() is None, reason="the Spark bridge is not loaded")

ROWS = 2000
COLUMNAR = "spark.lancelet.bridge.columnar"


def _typed_table() -> pa.Table:
    """A column of each type lancelet's reader sends, every fifth or so value null."""
    rng = np.random.default_rng(7)
    ids = np.arange(ROWS, dtype=np.int64)
    null = rng.random(ROWS) < 0.2
    floats = rng.normal(size=ROWS)
    floats[::97] = np.nan
    day = datetime.date(1990, 1, 1)
    moment = datetime.datetime(2001, 2, 3, 4, 5, 6, 789000)
    return pa.table(
        {
            "id": ids,
            "i8": pa.array((ids % 250 - 125).astype(np.int8), mask=null),
            "i32": pa.array(rng.integers(-(2**31), 2**31 - 1, ROWS, dtype=np.int32), mask=null),
            "f32": pa.array(floats.astype(np.float32), mask=null),
            "f64": pa.array(floats, mask=null),
            "flag": pa.array(ids % 3 == 0, mask=null),
            "name": pa.array([f"name {i}" * (i % 4) for i in ids], mask=null),
            "blob": pa.array([bytes([i % 256]) * (i % 5) for i in ids], mask=null),
            "day": pa.array([day + datetime.timedelta(days=int(i) * 37) for i in ids], mask=null),
            "at": pa.array(
                [moment + datetime.timedelta(seconds=int(i) * 9973) for i in ids],
                pa.timestamp("us", tz="UTC"),
                mask=null,
            ),
            "local": pa.array(
                [moment - datetime.timedelta(hours=int(i)) for i in ids], pa.timestamp("us")
            ),
            "price": pa.array(
                [decimal.Decimal(int(i) * 7919 % 10**7).scaleb(-2) for i in ids],
                pa.decimal128(12, 2),
                mask=null,
            ),
            "point": pa.array(
                [{"x": int(i), "tag": f"t{i % 5}"} for i in ids],
                pa.struct([("x", pa.int64()), ("tag", pa.string())]),
                mask=null,
            ),
            "tags": pa.array([[f"k{j}" for j in range(i % 4)] for i in ids], mask=null),
            "vals": pa.array(
                [[float(j) for j in range(i % 3)] if i % 11 else None for i in ids],
                pa.list_(pa.float64()),
            ),
            "nulls": pa.nulls(ROWS),
        }
    )


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    root: Path = tmp_path_factory.mktemp("columnar")
    table = _typed_table()
    lance_path, parquet_path = str(root / "t.lance"), str(root / "t.parquet")
    lance.write_dataset(
        table, lance_path, data_storage_version=STORAGE_VERSION, max_rows_per_file=600
    )
    pq.write_table(table, parquet_path, row_group_size=600)
    return lance_path, parquet_path


@pytest.fixture
def rows_only(spark: SparkSession) -> Iterator[None]:
    spark.conf.set(COLUMNAR, "false")
    try:
        yield
    finally:
        spark.conf.unset(COLUMNAR)


def _plan(df: DataFrame) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def _same(got: DataFrame, want: DataFrame, columnar: bool = True) -> None:
    """Equal types and rows in order (each query orders by a key; ``repr`` makes NaN
    equal NaN), the lance scan columnar or not: the plan is read once run (Spark's
    adaptive execution places the scan's columnar-to-row step as it runs)."""
    assert got.schema.simpleString() == want.schema.simpleString()
    assert [repr(r) for r in got.collect()] == [repr(r) for r in want.collect()]
    assert ("ColumnarToRow" in _plan(got)) == columnar


# Spark's Parquet reads a column of nulls as int: the lance read's void column is cast.
EVERY_COLUMN = ", ".join(_typed_table().column_names[:-1]) + ", CAST(nulls AS INT) AS nulls"
QUERIES = (
    f"SELECT {EVERY_COLUMN} FROM {{t}} ORDER BY id",
    "SELECT id, name, point.tag, get(tags, 1), price * 2 FROM {t} WHERE i8 > 10 ORDER BY id",
    "SELECT flag, count(*), sum(i32), avg(f64), max(at), min(day), sum(price), "
    "count(blob), max(local), sum(size(vals)) FROM {t} GROUP BY flag ORDER BY flag",
)


def _queries(spark: SparkSession, paths: tuple[str, str], columnar: bool) -> None:
    lance_path, parquet_path = paths
    # Small batches: a partition's later batches load into the vectors Spark was given.
    lanced = spark.read.format("lance").option("batch_size", 128).load(lance_path)
    parquet = spark.read.parquet(parquet_path)
    for sql in QUERIES:
        _same(spark.sql(sql, t=lanced), spark.sql(sql, t=parquet), columnar)


def test_columnar_reads_answer_as_spark_reads_parquet(
    spark: SparkSession, paths: tuple[str, str]
) -> None:
    _queries(spark, paths, columnar=True)


def test_row_reads_when_the_session_turns_columnar_off(
    spark: SparkSession, paths: tuple[str, str], rows_only: None
) -> None:
    _queries(spark, paths, columnar=False)


def test_count_limit_and_filter_pushdown_read_columnar(
    spark: SparkSession, paths: tuple[str, str], tasks_read: None
) -> None:
    lance_path, parquet_path = paths
    df, parquet = spark.read.format("lance").load(lance_path), spark.read.parquet(parquet_path)
    assert df.count() == parquet.count() == ROWS
    pushed = df.where("id BETWEEN 100 AND 130").select("name", "at")
    assert "pushed [" in _plan(pushed)
    want = parquet.where("id BETWEEN 100 AND 130").select("name", "at")
    _same(pushed.orderBy("at"), want.orderBy("at"))
    assert len(df.select("point").limit(3).collect()) == 3


def test_which_types_are_read_as_columnar_batches(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    source = jvm.org.lancelet.spark.LanceSource
    assert list(source.missingColumnarInternals()) == []

    def columnar(ddl: str) -> bool:
        return bool(source.readsColumnar(jvm.org.apache.spark.sql.types.StructType.fromDDL(ddl)))

    assert columnar("a INT, b ARRAY<STRUCT<x: DECIMAL(10,2), y: MAP<STRING, DATE>>>")
    assert columnar("a TIMESTAMP_NTZ, b INTERVAL DAY TO SECOND, c BINARY, d VOID")
    # Types lancelet's reader does not send are not tried as columnar batches: rows.
    assert not columnar("a INT, v VARIANT")
    assert not columnar("a ARRAY<STRUCT<v: VARIANT>>")
    assert not columnar("a INTERVAL YEAR TO MONTH")


def _read_as(request: pytest.FixtureRequest, columnar: bool) -> None:
    if not columnar:
        request.getfixturevalue("rows_only")


@pytest.mark.parametrize("columnar", [True, False], ids=["columnar", "rows"])
@pytest.mark.parametrize("limit", [1, 5, 127, 128, 129, 600, 601, 1300])
def test_limited_reads_return_whole_rows(
    spark: SparkSession,
    paths: tuple[str, str],
    limit: int,
    columnar: bool,
    request: pytest.FixtureRequest,
) -> None:
    """A limited read's last batch (columnar: ``ArrowBatchReader.finishLimited``) or
    row (``LimitedRowReader``) is moved or copied out of Spark's Python runner before
    the worker's stream is read to its end: its rows come back whole, every column,
    at batch and partition boundaries (batches of 128 rows, files of 600)."""
    _read_as(request, columnar)
    lance_path, parquet_path = paths
    lanced = spark.read.format("lance").option("batch_size", 128).load(lance_path)
    got = spark.sql(f"SELECT {EVERY_COLUMN} FROM {{t}} LIMIT {limit}", t=lanced)
    rows = got.collect()
    assert ("ColumnarToRow" in _plan(got)) == columnar
    want = {
        r.id: repr(r)
        for r in spark.sql(
            f"SELECT {EVERY_COLUMN} FROM {{t}}", t=spark.read.parquet(parquet_path)
        ).collect()
    }
    assert len(rows) == limit
    assert len({r.id for r in rows}) == limit
    assert all(repr(r) == want[r.id] for r in rows)


def _python_workers() -> set[int]:
    """The Python workers Spark's daemons forked and keep (Linux: from /proc)."""
    daemons, children = set(), {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid, ppid = int(stat.parent.name), int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        if b"pyspark.daemon" in command:
            daemons.add(pid)
        children[pid] = ppid
    return {pid for pid, ppid in children.items() if ppid in daemons}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("columnar", [True, False], ids=["columnar", "rows"])
def test_a_limited_read_gives_its_python_worker_back(
    spark: SparkSession, paths: tuple[str, str], columnar: bool, request: pytest.FixtureRequest
) -> None:
    """Spark kills a Python worker whose stream a task left unread; a limited read
    reads it to the end, so the next query's task reuses the worker instead of paying
    for a new one (a fork and lancelet's import, about a second)."""
    _read_as(request, columnar)
    lance_path, _ = paths
    df = spark.read.format("lance").load(lance_path)
    df.limit(1).collect()  # the first: may start workers
    before = _python_workers()
    assert before
    for _ in range(3):
        assert len(df.limit(2).collect()) == 2
    assert _python_workers() <= before
