"""Filters Spark pushes to the reader: evaluated by lancelet with Spark's semantics.

Spark itself is the oracle: each query runs once with pushdown (a DataFrame loaded for
that query, see LanceFilteringReader) and its rows are compared with Spark evaluating
the same predicates over the same data read without pushdown.
"""

from __future__ import annotations

import contextlib
import io
import re

import lance
import pytest
from pyspark.sql import DataFrame, SparkSession

from tests.spark.test_read import mixed_table

# (SQL predicate, whether Spark hands all of it to the reader)
PREDICATES = [
    ("i > 5", True),
    ("i <> 3", True),
    ("i in (1, 2, 3)", True),
    ("i is null", True),
    ("i <=> 3", True),
    ("not (i <=> 3)", True),
    ("f > 0.5", True),  # NaN is greater than every number in Spark
    ("f <= 0.5", True),
    ("f = 'NaN'", False),  # left to Spark
    ("s like 'row-1%'", True),
    ("s like '%7'", True),
    ("s like '%2%'", True),
    ("ls in ('L1', 'L3')", True),
    ("b", True),
    ("d >= date'2020-01-15'", True),
    ("ts < timestamp'2020-01-03 12:00:00'", True),
    ("ntz > timestamp_ntz'1970-01-01 00:01:00'", True),
    ("dec > 3.5", True),
    ("big > 9223372036854775850", True),
    ("pt.x < 20", True),
    ("_rowid >= 4294967296", True),
    ("i > 5 or s like 'row-2%'", False),  # Spark pushes no disjunction
]


@pytest.fixture(scope="module")
def uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("pushdown") / "ds")
    lance.write_dataset(mixed_table(0, 90), path, data_storage_version="2.0", max_rows_per_file=40)
    lance.dataset(path).delete("k % 10 = 7")
    return path


def _load(spark: SparkSession, uri: str, pushdown: bool) -> DataFrame:
    reader = spark.read.format("lance").option("with_row_id", True)
    return reader.option("pushdown", pushdown).load(uri)


def _filters_in_spark(df: DataFrame) -> bool:
    """Whether Spark's physical plan still has a Filter node."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.explain()
    return re.search(r"\bFilter \(", out.getvalue()) is not None


def test_pushed_filters_match_spark(spark: SparkSession, uri: str) -> None:
    oracle = _load(spark, uri, pushdown=False)
    flags = oracle.selectExpr(
        "k", *[f"coalesce({p}, false) AS p{n}" for n, (p, _) in enumerate(PREDICATES)]
    )
    rows = flags.collect()
    for n, (predicate, pushed) in enumerate(PREDICATES):
        want = sorted(r.k for r in rows if r[f"p{n}"])
        query = _load(spark, uri, pushdown=True).filter(predicate).select("k")
        assert sorted(r.k for r in query.collect()) == want, predicate
        # A filter the reader took is gone from Spark's plan.
        assert _filters_in_spark(query) != pushed, predicate


def test_without_pushdown_spark_filters(spark: SparkSession, uri: str) -> None:
    df = _load(spark, uri, pushdown=False)
    assert _filters_in_spark(df.filter("i > 5"))
    # Reusing one DataFrame for a filtered and an unfiltered query is safe without
    # pushdown (Spark 4.3 would reuse the filtered read for the second query).
    assert df.filter("i > 5").count() < df.count() == lance.dataset(uri).count_rows()
