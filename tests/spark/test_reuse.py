"""One DataFrame, many queries: every query on a DataFrame read through the ``lance``
source gives the same answer whatever ran before it, and a filter one query pushed
never reaches another.

Spark plans a Python source's read once per DataFrame and reuses the plan; the probe
test below shows it on the running Spark.  Each expected value is computed with
pyarrow or read by pylance, never by lancelet.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import CaseInsensitiveDict

from lancelet.spark.compat import PUSHED_READ_PER_QUERY
from lancelet.spark.source import LanceDataSource
from lancelet.spark.table import LanceTable
from tests.spark.probe import PushdownProbe
from tests.spark.util import per_query_plans
from tests.versions import STORAGE_VERSION


def rows(start: int, stop: int) -> pa.Table:
    ids = np.arange(start, stop, dtype=np.int64)
    return pa.table({"id": ids, "k": ids % 10})


def _dataset(tmp_path: Path, start: int, stop: int) -> str:
    uri = str(tmp_path / "ds")
    lance.write_dataset(
        rows(start, stop), uri, data_storage_version=STORAGE_VERSION, max_rows_per_file=40
    )
    return uri


def _load(spark: SparkSession, uri: str, **options: Any) -> DataFrame:
    return spark.read.format("lance").options(**options).load(uri)


def _ids(df: DataFrame) -> list[int]:
    return sorted(r.id for r in df.select("id").collect())


def test_spark_reuses_the_read_a_filter_was_pushed_to(spark: SparkSession) -> None:
    """The cause: Spark 4.x keeps the read it planned while pushing a query's filters
    on the DataFrame and runs it again for a later query that pushes none.  The
    pushdown default follows what the running Spark does."""
    spark.dataSource.register(PushdownProbe)
    df = spark.read.format(PushdownProbe.name()).load()
    assert df.filter("x > 5").count() == 4
    reused = df.count() == 4  # all 10 rows when the filtered read is not reused
    assert reused == (not PUSHED_READ_PER_QUERY)


def test_a_reused_dataframe_reads_one_version(spark: SparkSession, tmp_path: Path) -> None:
    """The issue's sequence: count, append, count, filtered count, count."""
    uri = _dataset(tmp_path, 0, 10)
    d = _load(spark, uri)
    assert d.count() == 10
    lance.write_dataset(rows(10, 15), uri, mode="append")
    assert d.count() == 10
    assert d.filter("id >= 0").count() == 10
    assert d.count() == 10
    assert _ids(d) == list(range(10))
    # A DataFrame loaded after the append reads it.
    assert _ids(_load(spark, uri)) == list(range(15))


def test_the_version_is_fixed_when_the_dataframe_is_loaded(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A filtered query first, then commits, then unfiltered queries."""
    uri = _dataset(tmp_path, 0, 100)
    d = _load(spark, uri)
    lance.dataset(uri).delete("id < 50")
    assert d.filter("k = 7").count() == 10
    lance.write_dataset(rows(100, 120), uri, mode="append")
    assert d.count() == 100
    assert d.filter("k = 7").count() == 10
    assert _ids(d.filter("id >= 95")) == list(range(95, 100))


@pytest.mark.parametrize("pushdown", [None, "true", "false"])
def test_a_filtered_count_does_not_leak_into_later_queries(
    spark: SparkSession, tmp_path: Path, pushdown: str | None
) -> None:
    uri = _dataset(tmp_path, 0, 100)
    options = {} if pushdown is None else {"pushdown": pushdown}
    if pushdown == "true" and not per_query_plans():
        with pytest.raises(Exception, match="pushdown"):
            _load(spark, uri, **options)
        return
    df = _load(spark, uri, **options)
    assert df.filter("k = 7").count() == 10
    assert df.count() == 100
    assert df.filter("k = 3").count() == 10
    assert df.filter("k = 7 or k = 3").count() == 20  # Spark pushes no disjunction
    assert df.count() == 100
    # A write of the DataFrame after a filtered count writes every row.
    assert df.filter("k = 7").count() == 10
    copy = str(tmp_path / "copy")
    df.write.format("lance").mode("append").save(copy)
    assert lance.dataset(copy).to_table().sort_by("id").equals(rows(0, 100))


def test_pinned_versions_and_moved_tags(spark: SparkSession, tmp_path: Path) -> None:
    uri = _dataset(tmp_path, 0, 10)
    lance.write_dataset(rows(10, 15), uri, mode="append")
    lance.dataset(uri).tags.create("t", 1)
    by_tag = _load(spark, uri, tag="t")
    by_version = _load(spark, uri, version=2)
    assert by_tag.count() == 10
    assert by_version.count() == 15
    # The tag moves and the dataset changes: each DataFrame keeps what it was loaded at.
    lance.dataset(uri).tags.update("t", 2)
    lance.dataset(uri).delete("id < 3")
    for df, want in ((by_tag, 10), (by_version, 15)):
        assert df.filter("id >= 0").count() == want
        assert df.count() == want
    assert _load(spark, uri, tag="t").count() == 15


def test_table_to_df_reads_the_version_of_the_call(spark: SparkSession, tmp_path: Path) -> None:
    uri = _dataset(tmp_path, 0, 100)
    table = LanceTable.forPath(spark, uri)
    df = table.toDF()
    assert df.filter("k = 1").count() == 10
    table.delete("k = 1")
    assert df.count() == 100
    assert df.filter("k = 1").count() == 10
    assert table.toDF().count() == 90
    assert table.toDF().filter("k = 1").count() == 0


def test_the_source_fixes_its_version_when_created(tmp_path: Path) -> None:
    """Spark creates the source once per DataFrame and pickles it for every plan."""
    uri = _dataset(tmp_path, 0, 10)
    source = LanceDataSource(CaseInsensitiveDict({"path": uri}))
    lance.write_dataset(rows(10, 15), uri, mode="append")
    again = pickle.loads(pickle.dumps(source))
    reader = again.reader(again.schema())
    got = pa.Table.from_batches([b for p in reader.partitions() for b in reader.read(p)])
    assert sorted(got.column("id").to_pylist()) == list(range(10))
