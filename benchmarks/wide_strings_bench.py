"""lancelet vs pylance writing large strings (full-zip pages), measured in one run.

    python benchmarks/wide_strings_bench.py --rows 10240 102400 --runs 3

The workload of pylance's own ``test_file.py::test_writer_maintains_order``: a table of
``f"{i}" * 1024`` (1 to 6 KiB each), written with each library's ``LanceFileWriter``
(default file version) and read back by the other library.  Values this wide go to
full-zip pages; every value gets a length and, where the strings compress, FSST.

Prints per row count the median write seconds of each library and the ratio
lancelet / pylance (below 1.0 means lancelet is faster), the peak memory of one write
measured in a fresh subprocess (max RSS above the baseline once the table is built)
and the file sizes.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

LIBS = ("pylance", "lancelet")


def strings(rows: int) -> pa.Table:
    return pa.table({"big_strings": [f"{i}" * 1024 for i in range(rows)]})


def writer_class(lib: str) -> type:
    if lib == "lancelet":
        from lancelet.file import LanceFileWriter
    else:
        from lance.file import LanceFileWriter
    return LanceFileWriter  # type: ignore[no-any-return]


def reader_class(lib: str) -> type:
    if lib == "lancelet":
        from lancelet.file import LanceFileReader
    else:
        from lance.file import LanceFileReader
    return LanceFileReader  # type: ignore[no-any-return]


def write(lib: str, path: str, table: pa.Table) -> None:
    with writer_class(lib)(path) as writer:
        writer.write_batch(table)


def read(lib: str, path: str) -> pa.Table:
    return reader_class(lib)(path).read_all().to_table()  # type: ignore[no-any-return]


def timed(fn: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def peak_write_memory(lib: str, rows: int, path: str) -> float:
    """MiB the peak RSS rises during one write, measured in a fresh process (Linux)."""
    code = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from wide_strings_bench import strings, write, writer_class

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1])

writer_class({lib!r})
table = strings({rows})
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the high-water mark to the current RSS
base = status("VmRSS:")
write({lib!r}, {path!r}, table)
print((status("VmHWM:") - base) / 1024)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def bench(rows: int, runs: int, tmp: str) -> None:
    table = strings(rows)
    paths = {lib: os.path.join(tmp, f"{lib}-{rows}.lance") for lib in LIBS}
    # Imports and lancelet's numba kernels (compiled once, then cached) are paid first.
    warm = strings(2000)
    for lib in LIBS:
        write(lib, os.path.join(tmp, f"warm-{lib}.lance"), warm)
    times: dict[str, list[float]] = {lib: [] for lib in LIBS}
    for _ in range(runs):  # alternate run by run, so drift on a shared machine hits both
        for lib in LIBS:
            times[lib].append(timed(lambda lib=lib: write(lib, paths[lib], table)))
    for lib, other in (("lancelet", "pylance"), ("pylance", "lancelet")):
        assert read(other, paths[lib]).equals(table), f"{other} does not read {lib}'s file back"
    median = {lib: statistics.median(times[lib]) for lib in LIBS}
    peak = {lib: peak_write_memory(lib, rows, paths[lib] + ".mem") for lib in LIBS}
    size = {lib: os.path.getsize(paths[lib]) for lib in LIBS}
    data_mib = table.nbytes / 2**20
    print(f"{rows:,} rows, {data_mib:.0f} MiB of strings; {runs} runs each")
    print(f"  {'':<16}{'lancelet':>12}{'pylance':>12}{'ratio':>8}")
    rows_out = (
        ("write s (median)", median, ".3f"),
        ("write peak MiB", peak, ".0f"),
        ("file MiB", {lib: size[lib] / 2**20 for lib in LIBS}, ".1f"),
    )
    for name, values, fmt in rows_out:
        ours, theirs = values["lancelet"], values["pylance"]
        ratio = ours / theirs if theirs else float("nan")
        print(f"  {name:<16}{format(ours, fmt):>12}{format(theirs, fmt):>12}{ratio:>8.2f}")
    print(f"  all write times: lancelet {times['lancelet']}, pylance {times['pylance']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, nargs="+", default=[10_240, 102_400])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for rows in args.rows:
            bench(rows, args.runs, tmp)


if __name__ == "__main__":
    main()
