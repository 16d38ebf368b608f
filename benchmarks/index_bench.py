"""Scalar index lookups on TPC-H lineitem: lancelet vs its own scan and vs pylance.

    python benchmarks/index_bench.py --scale 1 --runs 5

One dataset (written by pylance, file format ``--version``) gets a BTREE index on
``l_orderkey`` and a BITMAP index on ``l_shipmode``, built by each library in turn
(build times compared, each index's and their sum; each build runs once, and the
BTREE build is lancelet's first of the process: it includes loading the file
writer's compiled kernels, where pylance's library is loaded by the writes before).
Then, with each library's own indices:

* equality on ``l_orderkey`` (BTREE), a narrow range on it (about 0.01% of rows);
* equality on ``l_shipmode`` (BITMAP; about 1/7 of the rows);

each timed with the index, and for lancelet also as a plain scan
(``use_scalar_index=False``).  Every result is checked against the scan before
timing.  Prints medians of ``--runs`` runs (ten times as many for the indexed
lookups) and the ratios.  Lookups are timed twice: back to back, as ``timeit`` does,
and with a full garbage collection before each run ("(gc)"), which leaves the CPU
caches cold and costs lancelet's Python about a millisecond more than pylance.

Each build's peak memory is measured too: the MiB the peak RSS rises above the RSS once
the dataset is open, for one build in a fresh process per library and index (a copy
of the dataset, so the timed builds' indices are not replaced; a small write and read
first, so that loading lancelet's compiled kernels is not counted).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from file_bench import lineitem, median_time
from peak_rss import rise_mib, warm_up

QUERIES = {
    "btree equality": "l_orderkey = 1234567",
    "btree narrow range": "l_orderkey >= 3000000 AND l_orderkey < 3000600",
    "bitmap equality": "l_shipmode = 'MAIL'",
}
COLUMNS = ["l_orderkey", "l_partkey", "l_shipmode", "l_extendedprice"]


INDICES = {"BTREE": "l_orderkey", "BITMAP": "l_shipmode"}


def _build(library: object, uri: str) -> dict[str, float]:
    """Each index's build time (one build each, the dataset opened first)."""
    ds = library.dataset(uri)  # type: ignore[attr-defined]
    return {
        kind: median_time(
            lambda kind=kind, column=column: ds.create_scalar_index(column, kind, replace=True),
            1,
        )
        for kind, column in INDICES.items()
    }


def _build_peaks(name: str, uri: str, root: Path) -> dict[str, float]:
    """Each index build's peak memory rise, one fresh process each."""
    peaks = {}
    for kind, column in INDICES.items():
        copy = str(root / "memory-copy")
        module = "lancelet" if name == "lancelet" else "lance"
        setup = (
            warm_up(module)
            + f"""
import shutil
shutil.rmtree({copy!r}, ignore_errors=True)
shutil.copytree({uri!r}, {copy!r})
import {module} as library
ds = library.dataset({copy!r})
ds.count_rows()
"""
        )
        peaks[kind] = rise_mib(setup, f"ds.create_scalar_index({column!r}, {kind!r}, replace=True)")
        shutil.rmtree(copy, ignore_errors=True)
    return peaks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--version", default="2.2")
    args = parser.parse_args()

    import lance

    import lancelet

    table = lineitem(args.scale)
    root = Path(tempfile.mkdtemp(prefix="index_bench_"))
    try:
        uris = {}
        for name in ("lancelet", "pylance"):
            uris[name] = str(root / name)
            lance.write_dataset(table, uris[name], data_storage_version=args.version)
        libraries = {"lancelet": lancelet, "pylance": lance}
        builds = {name: _build(libraries[name], uris[name]) for name in libraries}
        peaks = {name: _build_peaks(name, uris[name], root) for name in libraries}
        print(f"rows {table.num_rows:,}; file format {args.version}; medians of {args.runs}")
        for kind in [*INDICES, "BTREE + BITMAP"]:
            ours, theirs = (
                sum(builds[name].get(k, 0.0) for k in kind.split(" + ")) for name in libraries
            )
            print(
                f"index build ({kind}) s: lancelet {ours:.3f}  pylance {theirs:.3f}  "
                f"ratio {ours / theirs:.2f}"
            )
        for kind in INDICES:
            ours, theirs = peaks["lancelet"][kind], peaks["pylance"][kind]
            print(f"index build ({kind}) peak MiB: lancelet {ours:.0f}  pylance {theirs:.0f}")
        ours = lancelet.dataset(uris["lancelet"])
        theirs = lance.dataset(uris["pylance"])
        print(f"{'query':27} {'indexed':>9} {'scan':>9} {'speedup':>8} {'pylance':>9} {'vs pl':>7}")
        for label, where in QUERIES.items():
            _compare(label, where, ours, theirs, args.runs)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _compare(label: str, where: str, ours: Any, theirs: Any, runs: int) -> None:
    """Check both libraries' indexed results against the scan, then time them."""
    expected = ours.to_table(columns=COLUMNS, filter=where, use_scalar_index=False)
    got = ours.to_table(columns=COLUMNS, filter=where)
    other = theirs.to_table(columns=COLUMNS, filter=where)
    key = [(c, "ascending") for c in COLUMNS]
    assert got.sort_by(key).equals(expected.sort_by(key)), label
    assert other.sort_by(key).equals(expected.sort_by(key)), label
    # Lookups take milliseconds: many more runs of them steady the median on a noisy
    # machine (the scan takes a hundred times longer, so it gets the plain count).
    lookups = runs * 10
    scan = median_time(
        lambda: ours.to_table(columns=COLUMNS, filter=where, use_scalar_index=False), runs
    )
    for collect in (False, True):
        indexed = median_time(
            lambda: ours.to_table(columns=COLUMNS, filter=where), lookups, collect=collect
        )
        pylance = median_time(
            lambda: theirs.to_table(columns=COLUMNS, filter=where), lookups, collect=collect
        )
        name = f"{label} (gc)" if collect else label
        print(
            f"{name:27} {indexed:9.4f} {scan:9.3f} {scan / indexed:7.0f}x "
            f"{pylance:9.4f} {indexed / pylance:7.2f}"
        )


if __name__ == "__main__":
    main()
