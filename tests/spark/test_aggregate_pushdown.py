"""Aggregates pushed into lance reads by the JVM bridge (``AggregateRead.java``,
:mod:`lancelet.spark.partial_aggregate`): each partition answers its groups' counts,
sums, minima and maxima and Spark merges them; ``COUNT(*)`` comes from the row
counts while the query is planned.

Every answer is checked against Spark's own, over the same rows written as Parquet
by pyarrow (no lancelet code on that side).
"""

from __future__ import annotations

import datetime
import decimal
import math
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from lancelet.spark.bridge import bridge_jar
from tests.versions import STORAGE_VERSION

pytestmark = pytest.mark.skipif(bridge_jar() is None, reason="the Spark bridge is not loaded")


def _plan(df: DataFrame) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def _both(
    spark: SparkSession, table: pa.Table, root: Path, rows_per_file: int
) -> tuple[DataFrame, DataFrame]:
    """The table as a lance read and as Spark's own Parquet read."""
    uri, parquet = str(root / "t.lance"), str(root / "t.parquet")
    lance.write_dataset(
        table, uri, data_storage_version=STORAGE_VERSION, max_rows_per_file=rows_per_file
    )
    pq.write_table(table, parquet)
    return spark.read.format("lance").load(uri), spark.read.parquet(parquet)


def _same(got: list[Row], want: list[Row]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        for a, b in zip(g, w, strict=True):
            if isinstance(b, float) and isinstance(a, float):
                assert a == pytest.approx(b, rel=1e-9, abs=1e-9) or (
                    math.isnan(a) and math.isnan(b)
                )
            else:
                assert a == b


def _table(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    cents = rng.integers(-(10**6), 10**6, n)
    return pa.table(
        {
            "id": np.arange(n),
            "k": pa.array([["a", "b", None, "é"][i % 4] for i in range(n)]),
            "d": pa.array(
                [decimal.Decimal(int(c)).scaleb(-2) for c in cents], pa.decimal128(15, 2)
            ),
            "f": rng.normal(size=n),
            "i": pa.array(rng.integers(-100, 100, n), pa.int32()),
            "day": pa.array(
                [datetime.date(2020, 1, 1) + datetime.timedelta(int(x)) for x in cents % 900]
            ),
            "flag": pa.array([bool(c % 3) if c % 5 else None for c in cents]),
        }
    )


QUERIES = [
    ["sum(d)", "sum(i)", "min(k)", "max(d)", "count(k)", "avg(d)", "sum(f)", "count(f)"],
    ["min(day)", "max(day)", "min(flag)", "max(flag)", "count(flag)", "count(*)"],
    ["avg(i)", "max(id)", "min(id)", "count(1)"],
]


@pytest.mark.parametrize("query", QUERIES)
def test_aggregates_are_pushed_and_answer_as_spark(
    spark: SparkSession, tmp_path: Path, query: list[str]
) -> None:
    df, parquet = _both(spark, _table(3000), tmp_path, 700)
    pushed = df.selectExpr(*query)
    assert "agg_func_0" in _plan(pushed)
    _same(pushed.collect(), parquet.selectExpr(*query).collect())
    grouped = df.groupBy("k", "flag").agg({"d": "sum", "i": "max", "*": "count"})
    assert "group_col_0" in _plan(grouped)
    order = ["k", "flag"]
    want = parquet.groupBy("k", "flag").agg({"d": "sum", "i": "max", "*": "count"})
    _same(grouped.orderBy(*order).collect(), want.orderBy(*order).collect())


def test_count_star_is_answered_while_planning(spark: SparkSession, tmp_path: Path) -> None:
    df, _ = _both(spark, _table(2000), tmp_path, 300)
    lance.dataset(str(tmp_path / "t.lance")).delete("id % 9 = 4")
    df = spark.read.format("lance").load(str(tmp_path / "t.lance"))
    assert "LocalTableScan" in _plan(df.selectExpr("count(*)"))
    assert df.count() == lance.dataset(str(tmp_path / "t.lance")).count_rows()
    # With the filter option the rows are counted by the tasks, Spark summing them.
    # With the filter option the rows are counted by reading them, Spark summing the
    # counts: while planned (a few partitions' counts) or, with that off, by the tasks.
    filtered = spark.read.format("lance").option("filter", "i > 50").load(str(tmp_path / "t.lance"))
    want = lance.dataset(str(tmp_path / "t.lance")).count_rows("i > 50")
    assert filtered.count() == want
    spark.conf.set("spark.lancelet.bridge.localRows", "0")
    try:
        assert "BatchScan" in _plan(filtered.selectExpr("count(*)"))
        assert filtered.count() == want
    finally:
        spark.conf.unset("spark.lancelet.bridge.localRows")


def test_count_star_counts_the_version_the_dataframe_read(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The count the source infers the schema with is that of the version the
    DataFrame fixed when loaded, and Spark's schema does not carry it."""
    _, parquet = _both(spark, _table(1200), tmp_path, 250)
    uri = str(tmp_path / "t.lance")
    lance.dataset(uri).delete("id % 7 = 1")
    loaded = spark.read.format("lance").load(uri)
    before = lance.dataset(uri).count_rows()
    lance.dataset(uri).delete("id < 100")  # a later version the DataFrame does not read
    assert loaded.count() == before == 1200 - len(range(1, 1200, 7))
    assert spark.read.format("lance").load(uri).count() == lance.dataset(uri).count_rows()
    old = spark.read.format("lance").option("version", 1).load(uri)
    assert old.count() == 1200
    assert all(not f.metadata for f in loaded.schema.fields)
    assert loaded.schema == parquet.schema


def test_partial_sums_past_their_type_are_sent_as_rows() -> None:
    from pyspark.sql import types as T

    from lancelet.spark.partial_aggregate import FUNCTION_KEY, AggregateSpec, answered
    from lancelet.spark.types import spark_arrow_schema

    def read(values: list[int], per: int) -> int:
        dec = pa.decimal128(5, 2)
        table = pa.table({"d": pa.array([decimal.Decimal(v).scaleb(-2) for v in values], dec)})
        meta = {FUNCTION_KEY: "sum", "lancelet.column": "d"}
        answer = T.StructType([T.StructField("agg_0", T.DecimalType(15, 2), True, meta)])
        spec = AggregateSpec.of(answer)
        assert spec is not None
        out = answered(iter(table.to_batches(per)), spec, table.schema, spark_arrow_schema(answer))
        assert sum(out.column(0).to_pylist()) == sum(decimal.Decimal(v).scaleb(-2) for v in values)
        return out.num_rows

    # decimal(5, 2) holds 999.99: one sum of 1.00 + 2.00 + 3.00 fits, 600 x 3 does not.
    assert read([100, 200, 300], 2) == 1
    assert read([60000] * 3, 2) == 3


def test_large_sums_answer_as_spark(spark: SparkSession, tmp_path: Path) -> None:
    big = decimal.Decimal("9999999999999.99")  # decimal(15, 2)'s largest
    # Partial sums past decimal(15, 2), and longs whose sum Arrow might wrap.
    longs = [2**61, -(2**61), 2**61, -(2**61), 5] * 40
    table = pa.table(
        {
            "g": [i % 3 for i in range(200)],
            "d": pa.array([big if i % 2 else 1 for i in range(200)], pa.decimal128(15, 2)),
            "l": pa.array(longs, pa.int64()),
        }
    )
    df, parquet = _both(spark, table, tmp_path, 1000)
    for query in (["sum(d)", "sum(l)"], ["g", "sum(d)", "sum(l)", "count(*)"]):
        if query[0] == "g":
            got = df.groupBy("g").agg({"d": "sum", "l": "sum"}).orderBy("g").collect()
            want = parquet.groupBy("g").agg({"d": "sum", "l": "sum"}).orderBy("g").collect()
        else:
            got, want = df.selectExpr(*query).collect(), parquet.selectExpr(*query).collect()
        _same(got, want)


def test_aggregates_of_an_empty_dataset(spark: SparkSession, tmp_path: Path) -> None:
    df, parquet = _both(spark, _table(0), tmp_path, 100)
    query = ["count(*)", "sum(d)", "min(k)", "count(f)"]
    _same(df.selectExpr(*query).collect(), parquet.selectExpr(*query).collect())
    assert df.groupBy("k").count().collect() == []


def test_what_is_not_pushed_still_answers(spark: SparkSession, tmp_path: Path) -> None:
    df, parquet = _both(spark, _table(1500), tmp_path, 400)
    for query in (["max(f)", "min(f)"], ["sum(i + 1)", "count(DISTINCT k)"]):
        assert "agg_func_0" not in _plan(df.selectExpr(*query))
        _same(df.selectExpr(*query).collect(), parquet.selectExpr(*query).collect())
    # A pushed filter keeps the aggregate in Spark.
    filtered = df.where("i > 10").selectExpr("sum(d)", "count(*)")
    assert "agg_func_0" not in _plan(filtered)
    _same(filtered.collect(), parquet.where("i > 10").selectExpr("sum(d)", "count(*)").collect())


COLUMN_TYPES = {
    "int32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "int64": (pa.int64(), st.integers(-(2**40), 2**40)),
    "dec": (pa.decimal128(9, 3), st.decimals(-999999, 999999, places=3, allow_nan=False)),
    "str": (pa.string(), st.text(alphabet="abcé\u00ff", max_size=3)),
    "f64": (pa.float64(), st.floats(-1e6, 1e6, allow_nan=False)),
}
FUNCTIONS = ("sum", "min", "max", "count")


@st.composite
def _cases(draw: st.DrawFn) -> tuple[pa.Table, list[str], list[str], int]:
    n = draw(st.integers(0, 60))
    names = draw(
        st.lists(st.sampled_from(sorted(COLUMN_TYPES)), min_size=1, max_size=3, unique=True)
    )
    columns = {}
    for name in names:
        arrow, values = COLUMN_TYPES[name]
        columns[name] = pa.array(draw(st.lists(st.none() | values, min_size=n, max_size=n)), arrow)
    groups = draw(
        st.lists(st.sampled_from([c for c in names if c != "f64"] or ["none"]), max_size=1)
    )
    groups = [g for g in groups if g in columns]
    aggregates = []
    for name in names:
        for function in draw(
            st.lists(st.sampled_from(FUNCTIONS), min_size=1, max_size=2, unique=True)
        ):
            if function == "sum" and name == "str":
                continue
            aggregates.append(f"{function}({name})")
    aggregates.append("count(*)")
    return pa.table(columns), groups, aggregates, draw(st.integers(1, 25))


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=_cases())
def test_random_aggregates_answer_as_spark(
    spark: SparkSession,
    tmp_path_factory: pytest.TempPathFactory,
    case: tuple[pa.Table, list[str], list[str], int],
) -> None:
    table, groups, aggregates, rows_per_file = case
    df, parquet = _both(spark, table, tmp_path_factory.mktemp("agg"), rows_per_file)
    got = df.groupBy(*groups).agg(*[_expr(a) for a in aggregates])
    want = parquet.groupBy(*groups).agg(*[_expr(a) for a in aggregates])
    if groups:
        got, want = got.orderBy(*groups), want.orderBy(*groups)
    _same(got.collect(), want.collect())


def _expr(text: str) -> Column:
    return F.expr(text)


def test_aggregates_of_row_ids(spark: SparkSession, tmp_path: Path) -> None:
    _both(spark, _table(1000), tmp_path, 300)
    uri = str(tmp_path / "t.lance")
    lance.dataset(uri).delete("id % 4 = 1")
    df = spark.read.format("lance").option("with_row_id", "true").load(uri)
    query = df.selectExpr("count(_rowid) AS n", "min(_rowid) AS lo", "max(_rowid) AS hi")
    assert "agg_func_0" in _plan(query)
    ids = lance.dataset(uri).to_table(with_row_id=True)["_rowid"].to_pylist()
    row = query.collect()[0]
    assert (row.n, row.lo, row.hi) == (len(ids), min(ids), max(ids))
