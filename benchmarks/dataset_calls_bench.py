"""lancelet vs pylance on dataset-level reads and a merge_insert of TPC-H lineitem.

    python benchmarks/dataset_calls_bench.py --scale 0.1 --runs 5

Each library writes lineitem to its own dataset with default settings; each call is
then timed on both datasets by both libraries (``own``: a library reading what it
wrote; ``cross``: reading the other's), alternating libraries within each run so that
a noisy neighbour slows both alike. Calls:

* ``to_table()``: the whole table;
* ``to_table(filter=...)``: a date range, ``IN`` and ``LIKE`` keeping about 9k rows;
* ``count_rows(filter)`` with the same filter;
* ``merge_insert`` on (l_orderkey, l_linenumber) of 10% of the rows (nine in ten
  matching, with a changed quantity; one in ten new), update-all and insert-all, each
  run on a fresh copy of the dataset (the copy is not timed).

Prints median seconds, the ratio lancelet / pylance (below 1.0: lancelet is faster) and
the peak memory of each call: the MiB the peak RSS rises above the RSS once the dataset
is open, measured in a fresh process per library and call (Linux), for a first call
(which loads compiled kernels too) and a second one (``first/second``).
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from file_bench import lineitem

FILTER = (
    "l_shipdate >= date '1995-01-01' AND l_shipdate < date '1996-01-01'"
    " AND l_shipmode IN ('MAIL', 'SHIP') AND l_comment LIKE '%the%'"
)
KEYS = ["l_orderkey", "l_linenumber"]
LIBS = ("lancelet", "pylance")
CALLS = ("to_table()", "to_table(filter)", "count_rows(filter)", "merge_insert 10%")


def library(name: str) -> Any:
    if name == "lancelet":
        import lancelet

        return lancelet
    import lance

    return lance


def merge_source(table: pa.Table) -> pa.Table:
    """10% of the rows: nine in ten existing keys with one more of each quantity, one in
    ten new keys (order keys above the largest)."""
    picked = table.take(pa.array(range(0, table.num_rows, 10)))
    kind = picked["l_quantity"].type
    quantity = pc.add(picked["l_quantity"], pa.scalar(1, kind)).cast(kind)
    picked = picked.set_column(picked.schema.get_field_index("l_quantity"), "l_quantity", quantity)
    fresh = pa.array([i % 10 == 9 for i in range(picked.num_rows)])
    top = pc.max(table["l_orderkey"]).as_py()
    orderkey = pc.if_else(fresh, pc.add(picked["l_orderkey"], top), picked["l_orderkey"])
    return picked.set_column(0, "l_orderkey", orderkey)


def call(lib: Any, uri: str, name: str, source: pa.Table | None) -> object:
    ds = lib.dataset(uri)
    if name == "to_table()":
        return ds.to_table()
    if name == "to_table(filter)":
        return ds.to_table(filter=FILTER)
    if name == "count_rows(filter)":
        return ds.count_rows(FILTER)
    builder = ds.merge_insert(KEYS).when_matched_update_all().when_not_matched_insert_all()
    return builder.execute(source)


def timed(fn: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run_call(lib_name: str, uri: str, name: str, source: pa.Table, scratch: str) -> float:
    lib = library(lib_name)
    if name != "merge_insert 10%":
        return timed(lambda: call(lib, uri, name, None))
    target = os.path.join(scratch, "merge")
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(uri, target)
    return timed(lambda: call(lib, target, name, source))


def peak_memory(
    lib_name: str, uri: str, name: str, source_path: str, scratch: str
) -> tuple[float, float]:
    """MiB the peak RSS rises above the RSS once the dataset is open, in a fresh process:
    for the first call (which loads the library's kernels too) and for a second one."""
    code = f"""
import os, shutil, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
import pyarrow.feather as feather
from dataset_calls_bench import call, library

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1])

lib = library({lib_name!r})
uri, name = {uri!r}, {name!r}
source = None
if name == "merge_insert 10%":
    source = feather.read_table({source_path!r})
    target = os.path.join({scratch!r}, "merge-mem")
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(uri, target)
    uri = target
lib.dataset(uri).schema
peaks = []
for _ in range(2):
    if source is not None:
        shutil.rmtree(uri)
        shutil.copytree({uri!r}, uri)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the high-water mark to the current RSS
    base = status("VmRSS:")
    result = call(lib, uri, name, source)
    peaks.append((status("VmHWM:") - base) / 1024)
    del result
print(*peaks)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second = out.stdout.split()
    return float(first), float(second)


def check_same(uris: dict[str, str]) -> None:
    """Both libraries give the same answers on both datasets (so the timings compare)."""
    counts = set()
    for lib_name in LIBS:
        lib = library(lib_name)
        for uri in uris.values():
            ds = lib.dataset(uri)
            kept = ds.to_table(filter=FILTER).sort_by([(k, "ascending") for k in KEYS])
            counts.add((ds.count_rows(FILTER), kept.num_rows, hash(kept.to_pydict().__repr__())))
    if len(counts) != 1:
        raise SystemExit(f"the libraries disagree: {counts}")
    print(f"filter keeps {counts.pop()[0]:,} rows in both libraries on both datasets")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=float, default=0.1, help="TPC-H scale factor")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", nargs="*", default=list(CALLS), help="a subset of calls")
    parser.add_argument("--no-cross", action="store_true", help="only own datasets")
    parser.add_argument("--no-memory", action="store_true", help="skip peak memory")
    args = parser.parse_args()
    table = lineitem(args.scale)
    source = merge_source(table)
    print(f"lineitem SF{args.scale}: {table.num_rows:,} rows; median of {args.runs} runs")
    with tempfile.TemporaryDirectory() as root:
        uris = {lib_name: os.path.join(root, lib_name) for lib_name in LIBS}
        for lib_name, uri in uris.items():
            library(lib_name).write_dataset(table, uri)
        source_path = os.path.join(root, "source.feather")
        import pyarrow.feather as feather

        feather.write_feather(source, source_path)
        check_same(uris)
        readers = [("own", lib_name, lib_name) for lib_name in LIBS]
        if not args.no_cross:
            readers += [("cross", "lancelet", "pylance"), ("cross", "pylance", "lancelet")]
        header = f"{'call':<20}{'data':<7}{'lancelet s':>11}{'pylance s':>11}{'ratio':>7}"
        memory = f"{'ll MiB':>11}{'pl MiB':>11}"  # first call / second call
        print(header + ("" if args.no_memory else memory))
        for name in args.calls:
            for kind in ("own", "cross"):
                if kind == "cross" and args.no_cross:
                    continue
                # own: each reads its own; cross: each reads the other's
                data = {
                    lib_name: uris[lib_name if kind == "own" else other]
                    for lib_name, other in zip(LIBS, reversed(LIBS), strict=True)
                }
                times: dict[str, list[float]] = {lib_name: [] for lib_name in LIBS}
                for _ in range(args.runs):
                    for lib_name in LIBS:
                        times[lib_name].append(
                            run_call(lib_name, data[lib_name], name, source, root)
                        )
                ours, theirs = (statistics.median(times[lib_name]) for lib_name in LIBS)
                line = f"{name:<20}{kind:<7}{ours:>11.4f}{theirs:>11.4f}{ours / theirs:>7.2f}"
                if not args.no_memory:
                    mem = [
                        peak_memory(lib_name, data[lib_name], name, source_path, root)
                        for lib_name in LIBS
                    ]
                    line += "".join(f"{f'{a:.0f}/{b:.0f}':>11}" for a, b in mem)
                print(line, flush=True)


if __name__ == "__main__":
    main()
