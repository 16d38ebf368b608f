"""Spark with lancelet's ``lance`` source vs Spark's built-in Parquet, in one run.

    python benchmarks/spark_bench.py --scale 1 --runs 3 [--bridge both|on|off]

Runs once with lancelet's JVM bridge (column pruning, per-query filter pushdown,
``COUNT(*)`` from metadata, limits; :mod:`lancelet.spark.bridge`) and once without it
(the pure-Python data source), each in its own process and Spark, each against
Parquet in the same run.

On Spark local[2], TPC-H lineitem is first staged as Parquet; from that one DataFrame:
* ingest: ``df.write.format("lance")`` vs ``df.write.parquet`` (target: within 1.2x);
* scan with an aggregate (TPC-H Q1's grouping) over what each wrote; without the
  bridge Spark gives Python data sources no column pruning, so it is also timed with
  the ``columns`` option naming the four columns the query uses;
* a one-column aggregate (``sum(l_extendedprice)``; the ``columns`` option without
  the bridge);
* a selective filter (``l_orderkey`` in a narrow range, about 0.01% of rows, another
  range each call so that no answer the bridge's planning process keeps is reused), as
  Spark's ``where`` (pushed per query with the bridge, and its few rows answered while
  the query is planned; without it Spark 4.x evaluates it itself) and as lance's
  ``filter`` read option;
* ``count()``;
* ``limit(20)``, what ``df.show()`` runs: with the bridge only (without it Spark has
  the worker of a limited read killed, which the next query would pay for).

With the bridge, lance reads are timed twice: as columnar batches (the bridge's
default) and as rows (``spark.lancelet.bridge.columnar`` false, Spark's own Python
partition reader).

After one untimed warm-up round, the formats alternate run by run so machine noise
hits them alike.  Prints the median seconds and the ratio lance / parquet.

Where a lance scan's time goes is measured after: lancelet decoding the dataset in
this process (no Spark), and Spark reading the Parquet files through a minimal Python
data source that decodes them with pyarrow (so: Python data source transfer + Spark,
with a fast decoder).  The scan's time is roughly the second plus lancelet's decode
spread over Spark's two Python workers.  Likewise for ingest: Spark handing the rows
to a Python sink that drops them, and lancelet writing the same table in-process.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from file_bench import lineitem

Q1_COLUMNS = ("l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice")
COLUMNAR = "spark.lancelet.bridge.columnar"
ROWS = "lance rows"  # the bridge's row reads of the lance dataset


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bridge", choices=("both", "on", "off"), default="both")
    args = parser.parse_args()
    if args.bridge == "both":
        for mode in ("on", "off"):
            command = [sys.executable, __file__, "--scale", str(args.scale), "--runs"]
            command += [str(args.runs), "--bridge", mode]
            subprocess.run(command, check=True)
        return
    os.environ["LANCELET_SPARK_BRIDGE"] = "1" if args.bridge == "on" else "0"

    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    import lancelet.spark

    spark = lancelet.spark.session("lancelet-bench", "local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    root = tempfile.mkdtemp()
    staged = os.path.join(root, "staged.parquet")
    pq.write_table(lineitem(args.scale), staged)
    source = spark.read.parquet(staged)
    rows = source.count()
    print(
        f"lineitem SF{args.scale}: {rows:,} rows on Spark local[2]; median of {args.runs} "
        f"runs; bridge {args.bridge}"
    )

    formats = ("lance", ROWS, "parquet") if args.bridge == "on" else ("lance", "parquet")

    def path_of(fmt: str) -> str:
        return os.path.join(root, "out.parquet" if fmt == "parquet" else "out.lance")

    def write(fmt: str, path: str) -> None:
        if fmt == "lance":
            source.write.format("lance").mode("overwrite").save(path)
        else:
            source.write.mode("overwrite").parquet(path)

    def lance_mode(fmt: str) -> None:  # the session setting the next lance read plans with
        spark.conf.set(COLUMNAR, str(fmt != ROWS).lower())

    def read(fmt: str, path: str, pruned: bool = False) -> DataFrame:
        if fmt != "parquet":
            lance_mode(fmt)
            reader = spark.read.format("lance")
            if pruned:  # Python data sources get no column pruning from Spark
                reader = reader.option("columns", ",".join(Q1_COLUMNS))
            return reader.load(path)
        return spark.read.parquet(path)

    def aggregate(fmt: str, path: str, pruned: bool = False) -> None:
        df = read(fmt, path, pruned)
        df.groupBy("l_returnflag", "l_linestatus").agg(
            F.sum("l_quantity"), F.avg("l_extendedprice"), F.count("*")
        ).collect()

    def one_column(fmt: str, path: str) -> None:
        if fmt != "parquet" and args.bridge == "off":  # no column pruning: name it
            df = spark.read.format("lance").option("columns", "l_extendedprice").load(path)
        else:
            df = read(fmt, path)
        df.agg(F.sum("l_extendedprice")).collect()

    calls = {fmt: itertools.count() for fmt in formats}

    def narrow(fmt: str) -> str:
        """Each call of a format its own order-key range, the same for every format:
        no answer a planning process may keep for a read repeats."""
        start = 3_000_000 + 6016 * next(calls[fmt])  # orders come 8 in every 32 keys
        return f"l_orderkey >= {start} AND l_orderkey < {start + 600}"

    def selective(fmt: str, path: str) -> None:
        read(fmt, path).where(narrow(fmt)).collect()

    def selective_option(fmt: str, path: str) -> None:
        where = narrow(fmt)
        if fmt != "parquet":  # the filter named in the read: lancelet skips the data
            lance_mode(fmt)
            spark.read.format("lance").option("filter", where).load(path).collect()
        else:
            spark.read.parquet(path).where(where).collect()

    def count(fmt: str, path: str) -> None:
        read(fmt, path).count()

    def first_rows(fmt: str, path: str) -> None:  # what df.show() runs
        read(fmt, path).limit(20).collect()

    def every_column(fmt: str, path: str) -> None:  # each column decoded in each worker
        df = read(fmt, path)
        df.agg(*(F.max(c) for c in df.columns)).collect()

    queries: tuple[tuple[str, Callable[[str, str], None]], ...] = (
        ("scan + aggregate", aggregate),
        ("same, columns option", lambda f, p: aggregate(f, p, pruned=True)),
        ("one-column agg", one_column),
        ("selective filter", selective),
        ("same, filter option", selective_option),
        ("count()", count),
        ("limit(20)", first_rows),
    )

    def timed_queries(fmt: str) -> tuple[tuple[str, Callable[[str, str], None]], ...]:
        # Without the bridge Spark has a limited read's worker killed: the next query
        # would pay for a new one, not the limit.
        limited = fmt != "parquet" and args.bridge == "off"
        return tuple(q for q in queries if not (limited and q[0] == "limit(20)"))

    # One untimed round first: Python workers start and load (or, on a fresh install,
    # compile) the kernels of every column's decoding, the JVM warms up; the runs then
    # time steady state.
    for fmt in formats:
        if fmt != ROWS:
            write(fmt, path_of(fmt))
        every_column(fmt, path_of(fmt))
        for _, query in timed_queries(fmt):
            query(fmt, path_of(fmt))
    times: dict[str, dict[str, list[float]]] = {fmt: {} for fmt in formats}
    for _ in range(args.runs):
        for fmt in formats:
            path = path_of(fmt)
            if fmt != ROWS:  # the row reads read what the columnar run wrote
                shutil.rmtree(path, ignore_errors=True)
                took = timed(lambda f=fmt, p=path: write(f, p))
                times[fmt].setdefault("ingest", []).append(took)
            for name, query in timed_queries(fmt):
                took = timed(lambda q=query, f=fmt, p=path: q(f, p))
                times[fmt].setdefault(name, []).append(took)
    assert read("lance", os.path.join(root, "out.lance")).count() == rows
    chosen = "l_orderkey >= 3000000 AND l_orderkey < 3000600"
    lance_rows = read("lance", os.path.join(root, "out.lance")).where(chosen).count()
    assert lance_rows == read("parquet", os.path.join(root, "out.parquet")).where(chosen).count()
    _report(times)
    if args.bridge == "off":
        _where_time_goes(spark, root, args.runs)
    spark.stop()
    shutil.rmtree(root)


def _report(times: dict[str, dict[str, list[float]]]) -> None:
    """Median seconds per format, then each lance format's time over Parquet's."""
    lances = [fmt for fmt in times if fmt != "parquet"]
    header = "".join(f"{fmt + ' s':>13}" for fmt in (*lances, "parquet"))
    print(f"{'operation':<20}{header}" + "".join(f"{fmt + ' ratio':>17}" for fmt in lances))
    for key in times["lance"]:
        median = {fmt: statistics.median(times[fmt].get(key, [math.nan])) for fmt in times}
        line = "".join(f"{median[fmt]:>13.2f}" for fmt in (*lances, "parquet"))
        ratios = "".join(f"{median[fmt] / median['parquet']:>17.2f}" for fmt in lances)
        print(f"{key:<20}{line}{ratios}")


def _where_time_goes(spark: object, root: str, runs: int) -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import lancelet

    assert isinstance(spark, SparkSession)
    lance_path, parquet_path = os.path.join(root, "out.lance"), os.path.join(root, "out.parquet")
    spark.dataSource.register(_arrow_parquet_source())

    def decode(columns: tuple[str, ...] | None) -> None:
        for _ in lancelet.dataset(lance_path).to_batches(columns=columns):
            pass

    def through_python_source(pruned: bool) -> None:
        df = spark.read.format("pyarrow_parquet").load(parquet_path)
        if pruned:
            df = df.select(*Q1_COLUMNS)
        df.groupBy("l_returnflag", "l_linestatus").agg(
            F.sum("l_quantity"), F.avg("l_extendedprice"), F.count("*")
        ).collect()

    def discard_through_python_source() -> None:
        spark.read.parquet(parquet_path).write.format("discard").mode("append").save()

    table = pq.read_table(parquet_path)

    def encode() -> None:
        lancelet.write_dataset(table, os.path.join(root, "encode.lance"), mode="overwrite")

    spark.dataSource.register(_discarding_source())
    parts = {
        "rows to a no-op Python sink (ingest transfer)": discard_through_python_source,
        "lancelet write_dataset (1 process, Arrow in)": encode,
        "lancelet decode, all columns (1 process)": lambda: decode(None),
        "lancelet decode, Q1 columns (1 process)": lambda: decode(Q1_COLUMNS),
        "pyarrow Parquet via a Python source + Q1 agg": lambda: through_python_source(False),
    }
    print("where the time goes (median seconds):")
    for name, fn in parts.items():
        print(f"  {name:<48}{statistics.median(timed(fn) for _ in range(runs)):>8.2f}")


def _discarding_source() -> type:
    """A Python data source whose writer drops every batch: what handing rows from
    Spark to Python costs on its own."""
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

    class Writer(DataSourceArrowWriter):
        def write(self, iterator):  # type: ignore[no-untyped-def]
            for _ in iterator:
                pass
            return WriterCommitMessage()

    class Source(DataSource):
        @classmethod
        def name(cls) -> str:
            return "discard"

        def writer(self, schema, overwrite):  # type: ignore[no-untyped-def]
            return Writer()

    return Source


def _arrow_parquet_source() -> type:
    """A Python data source reading Parquet files with pyarrow, one partition per file:
    what Spark's Python data source path costs with a fast decoder."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class Reader(DataSourceReader):
        def __init__(self, path: str) -> None:
            self.files = sorted(
                os.path.join(path, f) for f in os.listdir(path) if f.endswith(".parquet")
            )

        def partitions(self) -> list[InputPartition]:
            return [InputPartition(f) for f in self.files]

        def read(self, partition: InputPartition):  # type: ignore[no-untyped-def]
            yield from pq.ParquetFile(partition.value).iter_batches(batch_size=1 << 16)

    class Source(DataSource):
        @classmethod
        def name(cls) -> str:
            return "pyarrow_parquet"

        def schema(self):  # type: ignore[no-untyped-def]
            from pyspark.sql.pandas.types import from_arrow_schema

            path = self.options["path"]
            first = next(f for f in sorted(os.listdir(path)) if f.endswith(".parquet"))
            return from_arrow_schema(pq.read_schema(os.path.join(path, first)))

        def reader(self, schema):  # type: ignore[no-untyped-def]
            return Reader(self.options["path"])

    return Source


if __name__ == "__main__":
    main()
