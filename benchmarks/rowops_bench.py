"""lancelet vs pylance on row-level and schema operations, measured in one run.

    python benchmarks/rowops_bench.py --scale 1 --runs 5

On TPC-H lineitem (Lance 2.0 files for both libraries, each on its own copy):
* update of 1% of the rows (a different 1% each run);
* merge_insert of 100,000 rows keyed on (l_orderkey, l_linenumber): half of them
  existing rows with a new quantity, half new keys;
* add a computed column (SQL expression);
* compaction of 100 small fragments into one.

The two libraries alternate run by run so that machine noise hits both alike.
Prints the median seconds and the ratio lancelet / pylance (below 1.0: lancelet is faster),
and each operation's peak memory: the MiB the peak RSS rises above the RSS once the
dataset is open, for one call in a fresh process per library (after a small write and
read there, so that loading lancelet's compiled kernels is not counted).
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
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.feather as feather

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dataset_bench import library
from file_bench import forget_lancelet_caches, lineitem
from peak_rss import rise_mib, warm_up

LIBRARIES = ("lancelet", "pylance")
MERGE_ROWS = 100_000
SMALL_FRAGMENTS = 100


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def upsert_source(table: pa.Table, run: int) -> pa.Table:
    """Half existing rows with a changed quantity, half rows under new order keys."""
    half = MERGE_ROWS // 2
    start = (run * half) % max(1, table.num_rows - half)
    existing = table.slice(start, half)
    existing = existing.set_column(
        existing.schema.get_field_index("l_quantity"),
        "l_quantity",
        pc.add(existing["l_quantity"], pa.scalar(Decimal(1), existing["l_quantity"].type)),
    ).cast(table.schema)
    fresh = table.slice(0, half)
    offset = pc.max(table["l_orderkey"]).as_py() + 1 + run * half
    fresh = fresh.set_column(
        fresh.schema.get_field_index("l_orderkey"),
        "l_orderkey",
        pc.add(fresh["l_orderkey"], pa.scalar(offset, fresh["l_orderkey"].type)),
    )
    return pa.concat_tables([existing, fresh])


def update(lib: Any, uri: str, run: int) -> float:
    ds = lib.dataset(uri)
    where = f"l_orderkey % 100 = {run}"
    return timed(lambda: ds.update({"l_quantity": "l_quantity + 1"}, where=where))


def merge_insert(lib: Any, uri: str, run: int, table: pa.Table) -> float:
    ds = lib.dataset(uri)
    source = upsert_source(table, run)

    def go() -> None:
        builder = ds.merge_insert(["l_orderkey", "l_linenumber"])
        builder.when_matched_update_all().when_not_matched_insert_all().execute(source)

    return timed(go)


def add_column(lib: Any, uri: str, run: int) -> float:
    ds = lib.dataset(uri)
    return timed(lambda: ds.add_columns({f"net_{run}": "l_extendedprice * (1 - l_discount)"}))


def compact(lib: Any, template: str, root: str, run: int) -> float:
    uri = os.path.join(root, f"compact-{run}")
    shutil.copytree(template, uri)
    if lib.__name__ == "lancelet":
        # Each run's copy holds the same files: read them as new to the process.
        forget_lancelet_caches()
    ds = lib.dataset(uri)
    seconds = timed(lambda: ds.optimize.compact_files(target_rows_per_fragment=1 << 30))
    shutil.rmtree(uri)
    return seconds


def small_fragments(lib: Any, table: pa.Table, uri: str) -> None:
    per = max(1, min(table.num_rows, 1_000_000) // SMALL_FRAGMENTS)
    for i in range(SMALL_FRAGMENTS):
        mode = "create" if i == 0 else "append"
        lib.write_dataset(table.slice(i * per, per), uri, mode=mode, data_storage_version="2.0")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    table = lineitem(args.scale)
    print(f"lineitem SF{args.scale}: {table.num_rows:,} rows; median of {args.runs} runs")
    times: dict[str, dict[str, list[float]]] = {name: {} for name in LIBRARIES}
    with tempfile.TemporaryDirectory() as root:
        libs = {name: library(name) for name in LIBRARIES}
        for name, lib in libs.items():
            lib.write_dataset(table, os.path.join(root, name), data_storage_version="2.0")
            small_fragments(lib, table, os.path.join(root, f"small-{name}"))
        for run in range(args.runs):
            for name, lib in libs.items():
                uri = os.path.join(root, name)
                record = times[name]
                record.setdefault("update 1% of rows", []).append(update(lib, uri, run))
                record.setdefault(f"merge_insert {MERGE_ROWS:,} rows", []).append(
                    merge_insert(lib, uri, run, table)
                )
                record.setdefault("add computed column", []).append(add_column(lib, uri, run))
                record.setdefault(f"compact {SMALL_FRAGMENTS} fragments", []).append(
                    compact(lib, os.path.join(root, f"small-{name}"), root, run)
                )
        peaks = {name: peak_memory(name, root, table) for name in LIBRARIES}
    ours, theirs = times["lancelet"], times["pylance"]
    print(
        f"{'operation':<28}{'lancelet s':>12}{'pylance s':>12}{'ratio':>8}"
        f"{'lancelet MiB':>14}{'pylance MiB':>13}"
    )
    for key in ours:
        a, b = statistics.median(ours[key]), statistics.median(theirs[key])
        mine, peer = peaks["lancelet"][key], peaks["pylance"][key]
        print(f"{key:<28}{a:>12.4f}{b:>12.4f}{a / b:>8.2f}{mine:>14.0f}{peer:>13.0f}")


def peak_memory(name: str, root: str, table: pa.Table) -> dict[str, float]:
    """Each operation's peak memory rise for library ``name``, one fresh process each,
    on a fresh copy of the dataset the timed runs used."""
    source = os.path.join(root, "merge-source.arrow")
    if not os.path.exists(source):
        feather.write_feather(upsert_source(table, 0), source)
    steps = {
        "update 1% of rows": (name, "ds.update({'l_quantity': 'l_quantity + 1'}, where=UPDATED)"),
        f"merge_insert {MERGE_ROWS:,} rows": (
            name,
            "ds.merge_insert(KEYS).when_matched_update_all()"
            ".when_not_matched_insert_all().execute(source)",
        ),
        "add computed column": (name, "ds.add_columns({'net_m': NET})"),
        f"compact {SMALL_FRAGMENTS} fragments": (
            f"small-{name}",
            "ds.optimize.compact_files(target_rows_per_fragment=1 << 30)",
        ),
    }
    peaks = {}
    for key, (template, step) in steps.items():
        scratch = os.path.join(root, "memory-copy")
        setup = (
            warm_up("lancelet" if name == "lancelet" else "lance")
            + f"""
import shutil, sys
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
import pyarrow.feather as feather
from dataset_bench import library
KEYS = ["l_orderkey", "l_linenumber"]
UPDATED = "l_orderkey % 100 = 7"
NET = "l_extendedprice * (1 - l_discount)"
source = feather.read_table({source!r})
shutil.rmtree({scratch!r}, ignore_errors=True)
shutil.copytree({os.path.join(root, template)!r}, {scratch!r})
ds = library({name!r}).dataset({scratch!r})
ds.count_rows()
"""
        )
        peaks[key] = rise_mib(setup, step)
        shutil.rmtree(scratch, ignore_errors=True)
    return peaks


if __name__ == "__main__":
    main()
