"""lancelet vs pylance writing and reading a JSON column, measured in one run.

    python benchmarks/json_bench.py --rows 100000 --runs 5

A table of one ``pa.json_()`` column of small records (an id, a name, a random float,
a short list, a bool and a nested object), written with each library's
``write_dataset`` and read back whole with ``to_table``.  Writing parses every
document into Lance's JSONB; reading prints it back as JSON text.

Prints the median seconds of each library for the write and the read and the ratio
lancelet / pylance (below 1.0 means lancelet is faster), then the peak memory of one
write and one read, each measured in a fresh subprocess (max RSS above the baseline
once the table is built or the dataset opened).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from peak_rss import rise_mib  # the script's own folder is on the path

LIBS = ("pylance", "lancelet")
# Documents written before anything is measured: over 1 MiB of text, so lancelet's
# compiled kernels (used from that size on) are compiled or loaded by then.
WARM_ROWS = 10_000


def documents(rows: int) -> pa.Table:
    rng = random.Random(0)
    texts = [
        json.dumps(
            {
                "id": i,
                "name": f"user{i}",
                "score": rng.random() * 100,
                "tags": ["a", "b", str(i % 7)],
                "active": i % 2 == 0,
                "nested": {"x": i * 3, "y": None, "z": [1.5, -2, 3e20]},
            }
        )
        for i in range(rows)
    ]
    return pa.table({"doc": pa.array(texts, pa.json_())})


def library(lib: str) -> Any:
    if lib == "lancelet":
        import lancelet

        return lancelet
    import lance

    return lance


def write(lib: str, uri: str, table: pa.Table) -> None:
    library(lib).write_dataset(table, uri, mode="overwrite")


def read(lib: str, uri: str) -> pa.Table:
    return library(lib).dataset(uri).to_table()  # type: ignore[no-any-return]


def timed(fn: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def peak_memory(lib: str, rows: int, uri: str, action: str) -> float:
    """MiB the peak RSS rises during one write or read, in a fresh process (Linux)."""
    setup = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from json_bench import documents, library, read, write

library({lib!r})
table = documents({rows})
# Imports and compiled kernels loaded first (the kernels take columns of 1 MiB or more).
write({lib!r}, {uri!r}, documents({WARM_ROWS}))
read({lib!r}, {uri!r})
if {action!r} == "read":
    write({lib!r}, {uri!r}, table)
"""
    step = "write" if action == "write" else "read"
    table = ", table" if action == "write" else ""
    return rise_mib(setup, f"{step}({lib!r}, {uri!r}{table})")


def bench(rows: int, runs: int, tmp: str) -> None:
    table = documents(rows)
    uris = {lib: str(Path(tmp) / f"{lib}-{rows}") for lib in LIBS}
    # Imports and lancelet's numba kernels (compiled once, then cached) are paid first.
    warm = documents(WARM_ROWS)
    for lib in LIBS:
        write(lib, str(Path(tmp) / f"warm-{lib}"), warm)
        read(lib, str(Path(tmp) / f"warm-{lib}"))
    times: dict[str, dict[str, list[float]]] = {a: {lib: [] for lib in LIBS} for a in ("w", "r")}
    for _ in range(runs):  # alternate run by run, so drift on a shared machine hits both
        for lib in LIBS:
            times["w"][lib].append(timed(lambda lib=lib: write(lib, uris[lib], table)))
            times["r"][lib].append(timed(lambda lib=lib: read(lib, uris[lib])))
    texts = {lib: read(lib, uris[lib]).column("doc").to_pylist() for lib in LIBS}
    for lib in LIBS:
        crossed = read("lancelet" if lib == "pylance" else "pylance", uris[lib])
        assert crossed.column("doc").to_pylist() == texts[lib], f"{lib}'s dataset reads apart"
    assert texts["lancelet"] == texts["pylance"], "the libraries print different text"
    median = {a: {lib: statistics.median(times[a][lib]) for lib in LIBS} for a in times}
    peak = {
        a: {lib: peak_memory(lib, rows, uris[lib] + f"-{a}", action) for lib in LIBS}
        for a, action in (("w", "write"), ("r", "read"))
    }
    print(f"{rows:,} JSON documents, {table.nbytes / 2**20:.0f} MiB of text; {runs} runs each")
    print(f"  {'':<18}{'lancelet':>12}{'pylance':>12}{'ratio':>8}")
    lines = (
        ("write s (median)", median["w"], ".3f"),
        ("read s (median)", median["r"], ".3f"),
        ("write peak MiB", peak["w"], ".0f"),
        ("read peak MiB", peak["r"], ".0f"),
    )
    for name, values, fmt in lines:
        ours, theirs = values["lancelet"], values["pylance"]
        ratio = ours / theirs if theirs else float("nan")
        print(f"  {name:<18}{format(ours, fmt):>12}{format(theirs, fmt):>12}{ratio:>8.2f}")
    for a, name in (("w", "write"), ("r", "read")):
        rounded = {lib: [round(t, 3) for t in times[a][lib]] for lib in LIBS}
        print(f"  all {name} times: lancelet {rounded['lancelet']}, pylance {rounded['pylance']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp()
    try:
        for rows in args.rows:
            bench(rows, args.runs, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
