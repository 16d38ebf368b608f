"""lancelet vs pylance on datasets, measured in one run.

    python benchmarks/dataset_bench.py --scale 1 --runs 5

Measures, for both libraries on their own copies of the same data:
* commit latency of a small (10-row) append;
* a commit storm: 8 writer processes appending 10-row batches to one dataset at once,
  as commits per second and the median and 95th-percentile latency of one append
  (``commit_storm.py``; ``--writers`` and ``--storm-appends`` size it);
* open time of a dataset with 10 versions and with 1,000 versions (it must stay flat);
* a filtered count and a delete on TPC-H lineitem.

Prints median seconds, and the ratio lancelet / pylance (below 1.0: lancelet is faster).
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
from typing import Any

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from commit_storm import compare as commit_storm
from commit_storm import report as report_storm
from file_bench import lineitem

COUNT_FILTER = "l_quantity > 40 AND l_shipmode = 'AIR'"


def library(name: str) -> Any:
    if name == "lancelet":
        import lancelet

        return lancelet
    import lance

    return lance


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def small_append_latency(lib: Any, root: str, runs: int) -> float:
    uri = os.path.join(root, "append")
    rows = pa.table({"k": list(range(10)), "s": [str(i) for i in range(10)]})
    lib.write_dataset(rows, uri, data_storage_version="2.0")
    times = [timed(lambda: lib.write_dataset(rows, uri, mode="append")) for _ in range(runs * 4)]
    return statistics.median(times)


def dataset_with_versions(lib: Any, uri: str, versions: int) -> None:
    ds = lib.write_dataset(pa.table({"k": list(range(100))}), uri, data_storage_version="2.0")
    for _ in range(versions - 1):
        ds.delete("k < 0")  # matches nothing, but commits a new version


def open_time(lib: Any, uri: str, runs: int) -> float:
    return statistics.median(timed(lambda: lib.dataset(uri).schema) for _ in range(runs * 4))


def lineitem_ops(lib: Any, name: str, table: pa.Table, root: str, runs: int) -> dict[str, float]:
    uri = os.path.join(root, f"lineitem-{name}")
    lib.write_dataset(table, uri, data_storage_version="2.0")
    ds = lib.dataset(uri)
    count = statistics.median(timed(lambda: ds.count_rows(COUNT_FILTER)) for _ in range(runs))
    deletes = []
    for i in range(runs):
        fresh = lib.dataset(uri)
        deletes.append(timed(lambda fresh=fresh, i=i: fresh.delete(f"l_orderkey % 97 = {i}")))
    shutil.rmtree(uri)
    return {"filtered count": count, "delete": statistics.median(deletes)}


def measure(name: str, table: pa.Table, runs: int, root: str) -> dict[str, float]:
    lib = library(name)
    out = {"small append commit": small_append_latency(lib, os.path.join(root, name), runs)}
    for versions in (10, 1000):
        uri = os.path.join(root, name, f"v{versions}")
        dataset_with_versions(lib, uri, versions)
        out[f"open, {versions} versions"] = open_time(lib, uri, runs)
    out.update(lineitem_ops(lib, name, table, root, runs))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--writers", type=int, default=8, help="processes in the commit storm")
    parser.add_argument("--storm-appends", type=int, default=20, help="appends per writer")
    args = parser.parse_args()
    table = lineitem(args.scale)
    print(f"lineitem SF{args.scale}: {table.num_rows:,} rows; median of {args.runs} runs")
    with tempfile.TemporaryDirectory() as root:
        ours = measure("lancelet", table, args.runs, root)
        theirs = measure("pylance", table, args.runs, root)
    print(f"{'operation':<24}{'lancelet s':>12}{'pylance s':>12}{'ratio':>8}")
    for key in ours:
        print(f"{key:<24}{ours[key]:>12.4f}{theirs[key]:>12.4f}{ours[key] / theirs[key]:>8.2f}")
    flat = ours["open, 1000 versions"] / ours["open, 10 versions"]
    print(f"lancelet open time, 1000 vs 10 versions: {flat:.2f}x")
    print()
    report_storm(commit_storm(args.writers, args.storm_appends, args.runs), args.writers)


if __name__ == "__main__":
    main()
