"""Filters Spark pushes to the reader: evaluated by lancelet with Spark's semantics.

Spark itself is the oracle: its answer for each predicate over pylance's rows (a
DataFrame made with ``spark.createDataFrame``) is compared with (1) the rows a
``LanceFilteringReader`` returns for the filters Spark pushes for that predicate
(recorded by a probe source), and (2) a query with the default options, in which
Spark pushes the filters to lancelet where that is safe (see lancelet.spark.compat).
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import lance
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import datasource as sds
from pyspark.sql import types as st
from pyspark.sql.pandas.types import to_arrow_schema

from lancelet.spark.options import read_options
from lancelet.spark.reader import LanceFilteringReader
from tests.spark.probe import FilterRecorder
from tests.spark.test_read import mixed_table
from tests.spark.util import per_query_plans
from tests.versions import STORAGE_VERSION

# (SQL predicate, whether the reader takes every filter Spark pushes for it)
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
    ("_rowid >= 4294967296 and i > 5", True),
    ("k in (3, 50)", True),  # a few rows of a range: the others' columns taken by row
    ("i > 5 or s like 'row-2%'", False),  # Spark pushes no disjunction
]


@pytest.fixture(scope="module")
def uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("pushdown") / "ds")
    lance.write_dataset(
        mixed_table(0, 90), path, data_storage_version=STORAGE_VERSION, max_rows_per_file=40
    )
    lance.dataset(path).delete("k % 10 = 7")
    return path


def _load(spark: SparkSession, uri: str) -> DataFrame:
    return spark.read.format("lance").option("with_row_id", True).load(uri)


@pytest.fixture(scope="module")
def wanted(spark: SparkSession, uri: str) -> list[list[int]]:
    """For each predicate, the keys of the rows Spark keeps (NULL counts as false)."""
    schema = _load(spark, uri).schema
    theirs = lance.dataset(uri).to_table(with_row_id=True)
    oracle = spark.createDataFrame(theirs.cast(to_arrow_schema(schema, timezone="UTC")), schema)
    flags = oracle.selectExpr(
        "k", *[f"coalesce({p}, false) AS p{n}" for n, (p, _) in enumerate(PREDICATES)]
    ).collect()
    return [sorted(r.k for r in flags if r[f"p{n}"]) for n in range(len(PREDICATES))]


def _filters_in_spark(df: DataFrame) -> bool:
    """Whether Spark's physical plan still has a Filter node."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    return re.search(r"\bFilter\b", plan) is not None


def _pushed_by_spark(
    spark: SparkSession, schema: st.StructType, predicate: str, out: Path
) -> list[sds.Filter]:
    """The filters Spark hands a Python source reading ``schema`` for ``predicate``."""
    spark.dataSource.register(FilterRecorder)
    source = spark.read.format(FilterRecorder.name()).schema(schema)
    source.option("out", str(out)).load().filter(predicate).count()
    if not out.exists():
        return []  # Spark had nothing it could hand over, and called no Python
    with open(out, "rb") as file:
        found: list[sds.Filter] = pickle.load(file)
    return found


def _keys(reader: LanceFilteringReader, column: str = "k") -> list[int]:
    batches = [b for p in reader.partitions() for b in reader.read(p)]
    return sorted(v for b in batches for v in b.column(column).to_pylist())


def _row_ids(reader: LanceFilteringReader) -> list[int]:
    """The row ids of the rows read, in the order of their keys."""
    batches = [b for p in reader.partitions() for b in reader.read(p)]
    pairs = sorted(
        (k, i)
        for b in batches
        for k, i in zip(*b.select(["k", "_rowid"]).to_pydict().values(), strict=True)
    )
    return [i for _, i in pairs]


def test_the_reader_evaluates_pushed_filters_as_spark(
    spark: SparkSession, uri: str, wanted: list[list[int]], tmp_path: Path
) -> None:
    schema = _load(spark, uri).schema
    options = read_options({"path": uri, "with_row_id": "true", "rows_per_partition": "16"})
    theirs = lance.dataset(uri).to_table(columns=["k"], with_row_id=True)
    row_ids = dict(zip(theirs["k"].to_pylist(), theirs["_rowid"].to_pylist(), strict=True))
    for n, (predicate, pushed) in enumerate(PREDICATES):
        filters = _pushed_by_spark(spark, schema, predicate, tmp_path / f"filters{n}")
        reader = LanceFilteringReader(schema, options)
        left = list(reader.pushFilters(filters))
        assert (bool(filters) and not left) == pushed, predicate
        got = _keys(reader)
        if pushed:
            assert got == wanted[n], predicate
            assert _row_ids(reader) == [row_ids[k] for k in got], predicate
        else:  # Spark applies what is left to a superset of its answer
            assert set(wanted[n]) <= set(got), predicate


def test_queries_with_default_options_match_spark(
    spark: SparkSession, uri: str, wanted: list[list[int]]
) -> None:
    assert not _filters_in_spark(_load(spark, uri))
    for n, (predicate, pushed) in enumerate(PREDICATES):
        query = _load(spark, uri).filter(predicate).select("k")
        assert sorted(r.k for r in query.collect()) == wanted[n], predicate
        # A filter the reader took is gone from Spark's plan.
        assert _filters_in_spark(query) != (pushed and per_query_plans()), predicate


def test_pushed_filters_replace_earlier_ones(uri: str) -> None:
    schema = st.StructType(
        [st.StructField("k", st.LongType()), st.StructField("i", st.IntegerType())]
    )
    reader = LanceFilteringReader(schema, read_options({"path": uri}))
    assert not list(reader.pushFilters([sds.EqualTo(("k",), 3)]))
    assert not list(reader.pushFilters([sds.GreaterThan(("i",), 40)]))
    theirs = lance.dataset(uri).to_table(columns=["k"], filter="i > 40")
    assert _keys(reader) == sorted(theirs.column("k").to_pylist())


@pytest.mark.parametrize("where", [("k", 20), ("k", 86)])
def test_a_read_of_the_tested_columns_only_gives_their_row_ids(
    spark: SparkSession, uri: str, where: tuple[str, int]
) -> None:
    """The filter's column is all the read takes: the kept rows' ids come with them
    (many rows of a range kept, or a few)."""
    full = _load(spark, uri).schema
    schema = st.StructType([full["k"], full["_rowid"]])
    options = read_options({"path": uri, "with_row_id": "true", "rows_per_partition": "16"})
    reader = LanceFilteringReader(schema, options)
    assert not list(reader.pushFilters([sds.GreaterThan((where[0],), where[1])]))
    theirs = lance.dataset(uri).to_table(
        columns=["k"], with_row_id=True, filter=f"{where[0]} > {where[1]}"
    )
    expected = sorted(zip(theirs["k"].to_pylist(), theirs["_rowid"].to_pylist(), strict=True))
    assert len(expected) > 1
    assert [(k, i) for k, i in zip(_keys(reader), _row_ids(reader), strict=True)] == expected
