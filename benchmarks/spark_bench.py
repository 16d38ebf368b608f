"""Spark with lancelet's ``lance`` source vs Spark's built-in Parquet, in one run.

    python benchmarks/spark_bench.py --scale 1 --runs 3

On Spark local[2], TPC-H lineitem is first staged as Parquet; from that one DataFrame:
* ingest: ``df.write.format("lance")`` vs ``df.write.parquet`` (target: within 1.2x);
* scan with an aggregate (TPC-H Q1's grouping) over what each wrote; Spark gives
  Python data sources no column pruning, so it is also timed with the ``columns``
  option naming the four columns the query uses;
* a one-column aggregate (``sum(l_extendedprice)``, with the ``columns`` option);
* a selective filter (``l_orderkey`` in a narrow range, about 0.01% of rows; its
  filter pushed down);
* ``count()``.

The formats alternate run by run so machine noise hits both alike.  Prints the
median seconds and the ratio lance / parquet.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from file_bench import lineitem

Q1_COLUMNS = ("l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice")


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

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
    print(f"lineitem SF{args.scale}: {rows:,} rows on Spark local[2]; median of {args.runs} runs")

    def write(fmt: str, path: str) -> None:
        if fmt == "lance":
            source.write.format("lance").mode("overwrite").save(path)
        else:
            source.write.mode("overwrite").parquet(path)

    def read(fmt: str, path: str, pruned: bool = False) -> DataFrame:
        if fmt == "lance":
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
        reader = spark.read.format("lance").option("columns", "l_extendedprice")
        df = reader.load(path) if fmt == "lance" else spark.read.parquet(path)
        df.agg(F.sum("l_extendedprice")).collect()

    def selective(fmt: str, path: str) -> None:
        read(fmt, path).where("l_orderkey >= 3000000 AND l_orderkey < 3000600").collect()

    def count(fmt: str, path: str) -> None:
        read(fmt, path).count()

    times: dict[str, dict[str, list[float]]] = {"lance": {}, "parquet": {}}
    for _ in range(args.runs):
        for fmt in ("lance", "parquet"):
            path = os.path.join(root, f"out.{fmt}")
            shutil.rmtree(path, ignore_errors=True)
            times[fmt].setdefault("ingest", []).append(timed(lambda f=fmt, p=path: write(f, p)))
            times[fmt].setdefault("scan + aggregate", []).append(
                timed(lambda f=fmt, p=path: aggregate(f, p))
            )
            times[fmt].setdefault("same, columns option", []).append(
                timed(lambda f=fmt, p=path: aggregate(f, p, pruned=True))
            )
            for name, query in (
                ("one-column agg", one_column),
                ("selective filter", selective),
                ("count()", count),
            ):
                took = timed(lambda q=query, f=fmt, p=path: q(f, p))
                times[fmt].setdefault(name, []).append(took)
    assert read("lance", os.path.join(root, "out.lance")).count() == rows
    chosen = "l_orderkey >= 3000000 AND l_orderkey < 3000600"
    lance_rows = read("lance", os.path.join(root, "out.lance")).where(chosen).count()
    assert lance_rows == read("parquet", os.path.join(root, "out.parquet")).where(chosen).count()
    print(f"{'operation':<20}{'lance s':>10}{'parquet s':>11}{'ratio':>8}")
    for key in times["lance"]:
        a, b = statistics.median(times["lance"][key]), statistics.median(times["parquet"][key])
        print(f"{key:<20}{a:>10.2f}{b:>11.2f}{a / b:>8.2f}")
    spark.stop()
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
