"""Reading with ``spark.read.format("lance")``: rows and types against pylance's read,
versions and tags, projections, row ids, partitioning and the version a read pins."""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as st

from lancelet.errors import UnsupportedTypeError
from lancelet.spark.options import read_options
from lancelet.spark.reader import LanceReader, dataset_schema, open_dataset
from lancelet.spark.types import spark_type
from tests.spark.util import assert_same_rows
from tests.versions import STORAGE_VERSION

N = 120


def mixed_table(start: int, stop: int) -> pa.Table:
    """Rows keyed by ``k`` with most of the types Spark can hold, and nulls."""
    k = np.arange(start, stop, dtype=np.int64)
    null = k % 7 == 3
    base = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    return pa.table(
        {
            "k": k,
            "i": pa.array((k % 50).astype(np.int32), mask=null),
            "u": pa.array((k * 3).astype(np.uint32)),
            "big": pa.array(k.astype(np.uint64) + np.uint64(2**63), pa.uint64()),
            "f": pa.array(np.where(k % 10 == 0, np.nan, (k % 20) / 10 - 1.0), mask=k % 11 == 5),
            "h": pa.array((k / 4).astype(np.float32)),
            "s": pa.array([f"row-{i}" for i in k], mask=k % 13 == 1),
            "ls": pa.array([f"L{i % 5}" for i in k], pa.large_string()),
            "bin": pa.array([bytes([i % 256]) * 3 for i in k], pa.binary()),
            "b": pa.array(k % 3 == 0),
            "d": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(int(i % 40)) for i in k]),
            "ts": pa.array(
                [base + datetime.timedelta(hours=int(i)) for i in k], pa.timestamp("us", "UTC")
            ),
            "ntz": pa.array(k * 1_000_000_000, pa.timestamp("ns")),
            "dec": pa.array([decimal.Decimal(int(i)) / 8 for i in k], pa.decimal128(10, 3)),
            "tags": pa.array([[int(i % 3)] * int(i % 4) for i in k], pa.list_(pa.int32())),
            "pt": pa.array(
                [{"x": float(i), "y": int(i) * 2} for i in k],
                pa.struct([("x", pa.float64()), ("y", pa.int64())]),
            ),
        }
    )


SPARK_SCHEMA = (
    "struct<k:bigint,i:int,u:bigint,big:decimal(20,0),f:double,h:float,s:string,ls:string,"
    "bin:binary,b:boolean,d:date,ts:timestamp,ntz:timestamp_ntz,dec:decimal(10,3),"
    "tags:array<int>,pt:struct<x:double,y:bigint>>"
)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> str:
    """pylance writes 3 versions: 120 rows in fragments of 50, some deleted, 30 appended;
    version 1 is tagged ``first``."""
    uri = str(tmp_path_factory.mktemp("read") / "mixed")
    lance.write_dataset(
        mixed_table(0, N), uri, data_storage_version=STORAGE_VERSION, max_rows_per_file=50
    )
    ds = lance.dataset(uri)
    ds.delete("k % 9 = 4")
    lance.write_dataset(mixed_table(N, N + 30), uri, mode="append")
    lance.dataset(uri).tags.create("first", 1)
    return uri


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by("k")


def _as_read_by_pylance(df: DataFrame, uri: str, **kwargs: object) -> None:
    """The DataFrame's rows are pylance's rows, value for value, in Spark's types."""
    got = df.toArrow()
    want = lance.dataset(uri, **kwargs).to_table(columns=got.schema.names)  # type: ignore[arg-type]
    assert_same_rows(got, want.cast(got.schema))


def test_read_matches_pylance(spark: SparkSession, mixed: str) -> None:
    df = spark.read.format("lance").load(mixed)
    assert df.schema.simpleString() == SPARK_SCHEMA
    _as_read_by_pylance(df, mixed)
    assert df.count() == lance.dataset(mixed).count_rows()


def test_versions_and_tags(spark: SparkSession, mixed: str) -> None:
    for options in ({"version": "1"}, {"tag": "first"}, {"version": "first"}):
        df = spark.read.format("lance").options(**options).load(mixed)
        _as_read_by_pylance(df, mixed, version=1)
    df = spark.read.format("lance").options(version="2").load(mixed)
    _as_read_by_pylance(df, mixed, version=2)
    with pytest.raises(Exception, match="version 99 does not exist"):
        spark.read.format("lance").option("version", 99).load(mixed)
    with pytest.raises(Exception, match="give one of the options"):
        spark.read.format("lance").option("version", 1).option("tag", "first").load(mixed)


def test_projection_and_row_ids(spark: SparkSession, mixed: str) -> None:
    df = spark.read.format("lance").option("columns", "s,k").load(mixed)
    assert df.columns == ["s", "k"]
    _as_read_by_pylance(df, mixed)

    ids = spark.read.format("lance").options(with_row_id=True, with_row_address=True)
    got = _sorted(ids.option("columns", '["k"]').load(mixed).toArrow())
    want = _sorted(
        lance.dataset(mixed).to_table(columns=["k"], with_row_id=True, with_row_address=True)
    )
    assert got.column_names == ["k", "_rowid", "_rowaddr"]
    assert got.equals(want.cast(got.schema))

    # A read schema picks columns (and the row address) by name, ignoring case, and
    # casts where Spark can.
    df = spark.read.format("lance").schema("K long, s string, i string, _rowaddr long").load(mixed)
    assert df.columns == ["K", "s", "i", "_rowaddr"]
    got = _sorted(df.toArrow().rename_columns(["k", "s", "i", "_rowaddr"]))
    theirs = lance.dataset(mixed).to_table(columns=["k", "s", "i"], with_row_address=True)
    assert theirs.column("i").null_count > 0
    assert got.equals(_sorted(theirs).cast(got.schema))


def test_missing_column_and_unsupported_type(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "times")
    table = pa.table({"k": [1, 2], "t": pa.array([1, 2], pa.time64("us"))})
    lance.write_dataset(table, uri, data_storage_version=STORAGE_VERSION)
    with pytest.raises(Exception, match=r"column 't'.*time64"):
        spark.read.format("lance").load(uri)
    df = spark.read.format("lance").option("columns", "k").load(uri)
    assert [r.k for r in df.collect()] == [1, 2]
    with pytest.raises(Exception, match="no column named 'nope'"):
        spark.read.format("lance").option("columns", "k,nope").load(uri)
    with pytest.raises(Exception, match="unknown read option"):
        spark.read.format("lance").option("colums", "k").load(uri)


def test_partitions_split_fragments(spark: SparkSession, mixed: str) -> None:
    fragments = lance.dataset(mixed).get_fragments()
    rows = [f.metadata.physical_rows for f in fragments]
    df = spark.read.format("lance").option("rows_per_partition", 16).option("batch_size", 5)
    df = df.load(mixed)
    assert df.rdd.getNumPartitions() == sum(-(-r // 16) for r in rows)
    _as_read_by_pylance(df, mixed)


def test_reader_pins_the_version_it_was_created_at(tmp_path: Path) -> None:
    uri = str(tmp_path / "pinned")
    lance.write_dataset(
        mixed_table(0, 40), uri, data_storage_version=STORAGE_VERSION, max_rows_per_file=15
    )
    options = read_options({"path": uri, "rows_per_partition": "10"})
    schema = dataset_schema(open_dataset(options), options)
    reader = LanceReader(schema, options)
    # Commits after planning: rows deleted, then the whole dataset replaced.
    lance.dataset(uri).delete("k < 20")
    lance.write_dataset(mixed_table(100, 110), uri, mode="overwrite")
    parts = reader.partitions()
    assert len(parts) == 5  # fragments of 15, 15 and 10 rows, in ranges of 10
    got = pa.Table.from_batches([b for p in parts for b in reader.read(p)])
    want = lance.dataset(uri, version=1).to_table()
    assert_same_rows(got, want.cast(got.schema))


def test_type_mapping_refuses_what_spark_cannot_hold() -> None:
    assert spark_type(pa.dictionary(pa.int8(), pa.string()), "c") == st.StringType()
    assert spark_type(pa.duration("ns"), "c") == st.DayTimeIntervalType()
    assert spark_type(pa.map_(pa.string(), pa.int8()), "c") == st.MapType(
        st.StringType(), st.ByteType()
    )
    for dtype in (pa.decimal256(50, 2), pa.time32("s"), pa.dense_union([])):
        with pytest.raises(UnsupportedTypeError, match="column 'c'"):
            spark_type(dtype, "c")


def test_vectors_read_as_arrays(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "vectors")
    k = np.arange(20, dtype=np.int64)
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(np.repeat(k, 4).astype(np.float32)), 4)
    lance.write_dataset(
        pa.table({"k": k, "vec": vectors}), uri, data_storage_version=STORAGE_VERSION
    )
    df = spark.read.format("lance").load(uri)
    assert df.schema.simpleString() == "struct<k:bigint,vec:array<float>>"
    _as_read_by_pylance(df, uri)


def test_filter_option(spark: SparkSession, tmp_path: Path) -> None:
    """The ``filter`` option: the rows pylance's ``to_table(filter=...)`` gives, read
    through lancelet's scanner (late materialization, scalar indices)."""
    uri = str(tmp_path / "ds")
    k = np.arange(0, 5000, dtype=np.int64)
    table = pa.table({"k": k, "v": k * 0.5, "s": pa.array([f"s{i % 97}" for i in k])})
    lance.write_dataset(table, uri, max_rows_per_file=1200, data_storage_version=STORAGE_VERSION)
    dataset = lance.dataset(uri)
    dataset.delete("k % 10 = 3")
    dataset.create_scalar_index("k", "BTREE")
    for sql in ("k >= 1000 AND k < 1100", "s = 's5' OR v < 3", "k = 4999", "k < 0"):
        expected = lance.dataset(uri).to_table(filter=sql)
        for indexed in ("true", "false"):
            reader = spark.read.format("lance").option("filter", sql)
            got = reader.option("use_scalar_index", indexed).load(uri).toArrow()
            assert_same_rows(got, expected)
    pruned = spark.read.format("lance").option("filter", "k < 20").option("columns", "s")
    got = pruned.option("with_row_address", "true").load(uri).toArrow()
    expected = lance.dataset(uri).to_table(columns=["s"], filter="k < 20", with_row_address=True)
    assert sorted(got["_rowaddr"].to_pylist()) == sorted(expected["_rowaddr"].to_pylist())
    assert got.column_names == ["s", "_rowaddr"]
    with pytest.raises(Exception, match="nope"):
        spark.read.format("lance").option("filter", "nope > 1").load(uri).collect()
