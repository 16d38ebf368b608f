"""Filtered reads the JVM bridge answers while Spark plans them
(:mod:`lancelet.spark.local_rows`, ``LocalRowsScan`` in ``java/``): few rows, no task.

Expected rows are Spark's own reading the live rows written by pyarrow as Parquet, or
pylance's, never lancelet's.
"""

from __future__ import annotations

import datetime
import decimal
import pickle
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import datasource as sds
from pyspark.sql import types as st

from lancelet.errors import ArgumentError
from lancelet.spark import local_rows
from lancelet.spark.bridge import bridge_jar
from lancelet.spark.options import read_options
from lancelet.spark.read_hints import LOCAL_KEY, ReadHints
from lancelet.spark.reader import LanceFilteringReader, dataset_schema, open_dataset
from tests.versions import STORAGE_VERSION

bridged = pytest.mark.skipif(bridge_jar() is None, reason="the Spark bridge is not loaded")

ROWS = 3000
MAX_ROWS = "spark.lancelet.bridge.localRows"


def _table() -> pa.Table:
    ids = np.arange(ROWS, dtype=np.int64)
    null = np.random.default_rng(3).random(ROWS) < 0.1
    day = datetime.date(1990, 1, 1)
    moment = datetime.datetime(2001, 2, 3, 4, 5, 6, 789000)
    return pa.table(
        {
            "id": ids,
            "k": ids % 7,
            "name": pa.array([f"n{i}" for i in ids], mask=null),
            "small": pa.array((ids % 200 - 100).astype(np.int8)),
            "f64": pa.array(np.sin(ids.astype(np.float64)), mask=null),
            "flag": pa.array(ids % 3 == 0, mask=null),
            "day": pa.array([day + datetime.timedelta(days=int(i)) for i in ids]),
            "at": pa.array(
                [moment + datetime.timedelta(seconds=int(i) * 977) for i in ids],
                pa.timestamp("us", tz="UTC"),
                mask=null,
            ),
            "local": pa.array([moment - datetime.timedelta(hours=int(i)) for i in ids]),
            "price": pa.array(
                [decimal.Decimal(int(i) * 7 - 5000).scaleb(-2) for i in ids], pa.decimal128(12, 2)
            ),
            "blob": pa.array([bytes([int(i) % 256]) * (int(i) % 4) for i in ids], mask=null),
        }
    )


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """The table as a lance dataset of several fragments with deleted rows, and its
    live rows as Parquet."""
    root = tmp_path_factory.mktemp("local_rows")
    lance_path, parquet_path = str(root / "t.lance"), str(root / "t.parquet")
    lance.write_dataset(
        _table(), lance_path, data_storage_version=STORAGE_VERSION, max_rows_per_file=700
    )
    lance.dataset(lance_path).delete("id % 10 = 3")
    pq.write_table(lance.dataset(lance_path).to_table(), parquet_path)
    return lance_path, parquet_path


@pytest.fixture
def max_rows(spark: SparkSession) -> Iterator[None]:
    spark.conf.set(MAX_ROWS, "50")
    try:
        yield
    finally:
        spark.conf.unset(MAX_ROWS)


def _plan(df: DataFrame) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def _planned_rows(df: DataFrame) -> bool:
    """Whether the query's scan is rows found while it was planned: no task reads."""
    plan = _plan(df)
    return "LocalTableScan" in plan and "BatchScan" not in plan


def _same(got: DataFrame, want: DataFrame) -> None:
    assert got.schema.simpleString() == want.schema.simpleString()
    assert sorted(repr(r) for r in got.collect()) == sorted(repr(r) for r in want.collect())


SELECTIVE = (
    "id >= 100 AND id < 140",
    "id IN (5, 77, 1234, 2999)",
    "name = 'n42'",
    "k = 3 AND id < 300",
    "day >= DATE'1990-03-01' AND day < DATE'1990-04-01'",
    "at > TIMESTAMP'2001-02-28 00:00:00' AND id < 3000 AND small = 7",
    "price < -49.00",
    "id = -1",
)


@bridged
@pytest.mark.parametrize("where", SELECTIVE)
def test_a_selective_filter_is_answered_while_planned(
    spark: SparkSession, paths: tuple[str, str], where: str
) -> None:
    lanced = spark.read.format("lance").load(paths[0]).where(where)
    assert _planned_rows(lanced)
    _same(lanced, spark.read.parquet(paths[1]).where(where))
    # Fewer columns: only those read, the filter's own projected away.
    _same(
        lanced.select("name", "at"), spark.read.parquet(paths[1]).where(where).select("name", "at")
    )


@bridged
def test_the_filter_option_and_limits_are_answered_while_planned(
    spark: SparkSession, paths: tuple[str, str]
) -> None:
    filtered = spark.read.format("lance").option("filter", "id < 60 AND k = 2").load(paths[0])
    assert "LocalTableScan" in _plan(filtered)
    want = lance.dataset(paths[0]).to_table(filter="id < 60 AND k = 2")
    assert sorted(r.id for r in filtered.collect()) == sorted(want["id"].to_pylist())

    limited = spark.read.format("lance").load(paths[0]).where("k = 2").limit(5)
    got = limited.collect()
    live = set(lance.dataset(paths[0]).to_table(filter="k = 2")["id"].to_pylist())
    assert len(got) == 5 and {r.id for r in got} <= live


@bridged
def test_more_rows_than_the_setting_allows_are_read_by_tasks(
    spark: SparkSession, paths: tuple[str, str], max_rows: None
) -> None:
    parquet = spark.read.parquet(paths[1])
    lanced = spark.read.format("lance").load(paths[0])
    few, many = lanced.where("id < 40"), lanced.where("id < 400")
    assert "LocalTableScan" in _plan(few)
    assert "BatchScan" in _plan(many) and "pushed [" in _plan(many)
    _same(few, parquet.where("id < 40"))
    _same(many, parquet.where("id < 400"))
    spark.conf.set(MAX_ROWS, "0")
    none = spark.read.format("lance").load(paths[0]).where("id < 40")
    assert "BatchScan" in _plan(none)
    _same(none, parquet.where("id < 40"))
    for bad in ("many", "-1"):
        spark.conf.set(MAX_ROWS, bad)
        with pytest.raises(Exception, match=f"{MAX_ROWS} must be a number of rows"):
            spark.read.format("lance").load(paths[0]).where("id < 40").collect()


AGGREGATES = (
    "SELECT sum(price), min(day), max(id), count(name), avg(small), count(*) FROM {t}",
    "SELECT k, flag, sum(small), max(day), min(price), count(*) FROM {t} GROUP BY k, flag",
)


@bridged
@pytest.mark.parametrize("sql", AGGREGATES)
def test_aggregates_are_answered_while_planned(
    spark: SparkSession, paths: tuple[str, str], sql: str
) -> None:
    lanced = spark.sql(sql, t=spark.read.format("lance").load(paths[0]))
    assert _planned_rows(lanced)
    _same(lanced, spark.sql(sql, t=spark.read.parquet(paths[1])))


@bridged
def test_aggregates_of_an_empty_dataset_answered_while_planned(
    spark: SparkSession, tmp_path: Path
) -> None:
    """No partition: the answer is that of one empty partition, as Spark reads it."""
    out, parquet = str(tmp_path / "empty.lance"), str(tmp_path / "empty.parquet")
    lance.write_dataset(_table().slice(0, 0), out, data_storage_version=STORAGE_VERSION)
    pq.write_table(_table().slice(0, 0), parquet)
    sql = "SELECT sum(small), count(*), max(price), count(name) FROM {t}"
    lanced = spark.sql(sql, t=spark.read.format("lance").load(out))
    assert "LocalTableScan" in _plan(lanced)
    _same(lanced, spark.sql(sql, t=spark.read.parquet(parquet)))
    assert [tuple(r) for r in lanced.collect()] == [(None, 0, None, 0)]


@bridged
def test_aggregates_of_more_rows_than_allowed_are_read_by_tasks(
    spark: SparkSession, paths: tuple[str, str], max_rows: None
) -> None:
    sql = "SELECT id % 100 AS g, sum(price), count(*) FROM {t} GROUP BY id % 100"
    grouped = "SELECT small, sum(price), count(*) FROM {t} GROUP BY small"  # 200 groups
    for query in (sql, grouped):
        lanced = spark.sql(query, t=spark.read.format("lance").load(paths[0]))
        assert "BatchScan" in _plan(lanced)
        _same(lanced, spark.sql(query, t=spark.read.parquet(paths[1])))


@bridged
def test_nested_columns_are_read_by_tasks(spark: SparkSession, tmp_path: Path) -> None:
    table = pa.table(
        {"id": np.arange(100), "point": pa.array([{"x": i, "tag": str(i)} for i in range(100)])}
    )
    out = str(tmp_path / "nested")
    lance.write_dataset(table, out, data_storage_version=STORAGE_VERSION)
    df = spark.read.format("lance").load(out).where("id < 3")
    assert "BatchScan" in _plan(df)
    assert [(r.id, r.point.tag) for r in df.orderBy("id").collect()] == [
        (0, "0"),
        (1, "1"),
        (2, "2"),
    ]
    assert "LocalTableScan" in _plan(df.select("id"))


@bridged
def test_a_reused_dataframe_answers_from_its_version(spark: SparkSession, tmp_path: Path) -> None:
    out = str(tmp_path / "reused")
    lance.write_dataset(_table(), out, data_storage_version=STORAGE_VERSION, max_rows_per_file=700)
    df = spark.read.format("lance").load(out)
    before = lance.dataset(out).to_table(filter="id < 30")
    lance.dataset(out).delete("id < 10")
    lance.write_dataset(_table().slice(0, 20), out, mode="append")
    query = df.where("id < 30").select("id")
    assert "LocalTableScan" in _plan(query)
    assert sorted(r.id for r in query.collect()) == sorted(before["id"].to_pylist())


def _reader(uri: str, hint: str | None) -> LanceFilteringReader:
    options = read_options({"path": uri}, per_query=True)
    schema = dataset_schema(open_dataset(options), options)
    if hint is not None:
        schema = st.StructType(
            [st.StructField(f.name, f.dataType, f.nullable, {LOCAL_KEY: hint}) for f in schema]
        )
    reader = LanceFilteringReader(schema, options)
    assert not list(reader.pushFilters([sds.LessThan(("id",), 25)]))
    return reader


def test_the_planning_reader_answers_only_when_asked_and_cheap(
    paths: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    want = lance.dataset(paths[0]).to_table(filter="id < 25")
    asked = _reader(paths[0], "100").partitions()
    assert len(asked) == 1 and isinstance(asked[0], local_rows.LocalRows)
    # A task given the partition (the bridge could not take it) reads the same rows.
    task = pickle.loads(pickle.dumps(_reader(paths[0], "100")))
    got = pa.Table.from_batches(list(task.read(pickle.loads(pickle.dumps(asked[0])))))
    assert got["id"].to_pylist() == want["id"].to_pylist()
    assert got["name"].equals(want["name"])
    # Not asked, more rows than asked for, or too many bytes to test on the driver.
    for hint in (None, "10"):
        assert not any(
            isinstance(p, local_rows.LocalRows) for p in _reader(paths[0], hint).partitions()
        )
    for limit in ("lancelet.spark.local_rows.LOCAL_BYTES", "lancelet.spark.reader.TESTED_BYTES"):
        monkeypatch.setattr(local_rows, "_ANSWERS", OrderedDict())  # no answer kept
        monkeypatch.setattr(limit, 100)
        assert not isinstance(_reader(paths[0], "100").partitions()[0], local_rows.LocalRows)
        monkeypatch.undo()


def test_answered_locally_stops_at_its_limits_and_keeps_its_answers() -> None:
    batches = [
        pa.record_batch({"x": pa.array(range(i, i + 10)), "y": pa.array([str(i)] * 10)})
        for i in range(0, 50, 10)
    ]
    seen: list[int] = []

    def read(part: sds.InputPartition) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            seen.append(batch.num_rows)
            yield batch

    schema, parts = batches[0].schema, [sds.InputPartition(0)]
    found = local_rows.answered_locally(read, parts, schema, 50, "every row")
    assert found is not None
    got = pa.Table.from_batches(list(found.batches()))
    assert got.column("x").to_pylist() == list(range(50)) and got.schema == schema
    seen.clear()
    assert local_rows.answered_locally(read, parts, schema, 25, "too many") is None
    assert sum(seen) == 30  # stopped at the batch that passed the limit
    # The same rows asked again, of fewer columns: from the kept answer, not read.
    seen.clear()
    only_y = pa.schema([schema.field("y")])
    again = local_rows.answered_locally(read, parts, only_y, 50, "every row")
    assert again is not None and not seen
    assert pa.Table.from_batches(list(again.batches())).equals(got.select(["y"]))
    assert local_rows.answered_locally(read, parts, only_y, 25, "too many") is None and not seen
    # A column of another type than kept: read again.
    other = pa.schema([pa.field("x", pa.int32())])
    cast = [b.select(["x"]).cast(other) for b in batches]
    fresh = local_rows.answered_locally(lambda p: iter(cast), parts, other, 50, "every row")
    assert fresh is not None
    assert pa.Table.from_batches(list(fresh.batches())).schema == other


def test_the_local_hint_is_a_count_of_rows() -> None:
    field = st.StructField("x", st.LongType(), True, {LOCAL_KEY: "12"})
    assert ReadHints.of(st.StructType([field])).local == 12
    odd = st.StructField("x", st.LongType(), True, {LOCAL_KEY: "-3"})
    with pytest.raises(ArgumentError, match="count of rows"):
        ReadHints.of(st.StructType([odd]))
    other = st.StructField("y", st.LongType(), True, {LOCAL_KEY: "13"})
    with pytest.raises(ArgumentError, match="several"):
        ReadHints.of(st.StructType([field, other]))


def test_the_expected_rows_are_the_live_ones(paths: tuple[str, str]) -> None:
    """The Parquet copy the Spark tests compare to holds the rows not deleted."""
    ids = pq.read_table(paths[1])["id"]
    assert len(ids) == ROWS - ROWS // 10
    assert not pc.any(pc.equal(pc.remainder(ids, 10), 3)).as_py()
