"""Fragment Reuse Index on TPC-H lineitem: lancelet vs pylance, measured in one run.

    python benchmarks/frag_reuse_bench.py --rows 200000 --runs 3 --versions 0,10,100

Two measurements, each for both libraries, medians of ``--runs`` runs:

1. Compaction of an indexed dataset of many small fragments, with and without
   ``defer_index_remap``.  The first ``--rows`` rows of lineitem are written by
   pylance as 100 fragments, about 1% of the rows are deleted (``l_orderkey % 97 =
   0``, so the deletion files matter), then each library builds a BTREE index on
   ``l_orderkey`` and a BITMAP index on ``l_shipmode`` on its own copy.  Each run
   compacts a fresh copy of that library's dataset into one fragment, with
   lancelet's process-wide caches emptied first, as for files the process has not
   read (the copies hold the same bytes, which those caches would recognize; pylance
   keeps nothing across datasets); only ``compact_files`` is timed.  Without
   deferral the compaction rewrites both indices' row addresses; with it, it
   records the moves as a reuse version instead.  After each run (untimed), both
   libraries read the result: one fragment, both indices covering every live row, a
   reuse index exactly when deferred, and an equality on each indexed column giving
   the rows pyarrow finds in the source table, with the index and as a scan.
2. Index load with 0, 10 and 100 reuse versions (``--versions``).  lancelet writes
   ``--load-rows`` rows as one fragment and builds a BTREE index on ``l_orderkey``;
   then, per reuse version, it deletes one order and compacts with
   ``defer_index_remap=True``, which rewrites the fragment and records the version.
   The dataset is copied at each requested count (the count is checked by reading
   the reuse index).  A "cold" run opens the copy from scratch (a new dataset
   object, so a new store with empty reuse-map and index caches, and lancelet's
   process-wide caches of decoded manifests, fragments, files' metadata, schemas
   and dictionaries emptied before the timed call, as in a process that opened
   nothing yet; with
   ``--keep-process-caches`` those stay, here and in part 1, as when a process opens
   a dataset again;
   pylance: a new ``lance.dataset`` with its default caches) and runs one indexed
   lookup ``l_orderkey = K`` for an order whose rows every compaction moved; "warm"
   repeats the lookup on an open dataset, back to back (ten times as many runs, no
   garbage collection between, as in ``index_bench.py``).  Each library's indexed
   answer is checked first against its own scan and pyarrow, and the index must
   cover every live row.

Prints the medians in seconds and the ratios lancelet / pylance (below 1.0 means
lancelet is faster), and each compaction's peak memory: the MiB a fresh process's peak
RSS rises while it compacts a copy, after loading the library (see ``peak_rss.py``).
Building the 100 reuse versions is setup, not timed.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).parent))

from file_bench import forget_lancelet_caches, lineitem, median_time
from peak_rss import rise_mib, warm_up

LIBS = ("lancelet", "pylance")
FRAGMENTS = 100
DELETED = "l_orderkey % 97 = 0"
KEY = ["l_orderkey", "l_linenumber"]
LINEITEM_SF1_ROWS = 6_001_215


def _library(name: str) -> Any:
    if name == "lancelet":
        import lancelet

        return lancelet
    import lance

    return lance


def _source(rows: int) -> pa.Table:
    """The first ``rows`` rows of lineitem (generated at the smallest scale holding them)."""
    scale = round(rows / LINEITEM_SF1_ROWS * 1.1 + 0.005, 2)
    table = lineitem(scale)
    if table.num_rows < rows:
        raise SystemExit(f"lineitem sf={scale} has {table.num_rows} rows, fewer than {rows}")
    return table.slice(0, rows)


def _rows(ds: Any, where: str, *, indexed: bool) -> pa.Table:
    """The key columns of the rows matching ``where``, sorted (both libraries accept
    ``use_scalar_index`` on ``to_table``)."""
    found = ds.to_table(columns=KEY, filter=where, use_scalar_index=indexed)
    return found.sort_by([(c, "ascending") for c in KEY])


def _expected(table: pa.Table, mask: pa.Array) -> pa.Table:
    return table.select(KEY).filter(mask).sort_by([(c, "ascending") for c in KEY])


def _check_indexed(ds: Any, columns: list[str], rows: int, what: str) -> None:
    """Each column's index covers all ``rows`` live rows (else a lookup could pass
    by scanning).  Only user indices: pylance also lists ``__lance_frag_reuse``."""
    found = {d.name: d.num_rows_indexed for d in ds.describe_indices()}
    for column in columns:
        if found.get(f"{column}_idx") != rows:
            raise SystemExit(f"{what}: indices {found}, not {rows} rows indexed on {column}")


def _check(ds: Any, where: str, expected: pa.Table, what: str) -> None:
    """The indexed answer and the scan both equal ``expected`` (from pyarrow)."""
    for indexed in (True, False):
        got = _rows(ds, where, indexed=indexed)
        if not got.equals(expected):
            raise SystemExit(
                f"{what}: {where!r} with use_scalar_index={indexed} gives {got.num_rows} rows, "
                f"pyarrow on the source table {expected.num_rows}"
            )


# -- 1. compaction ---------------------------------------------------------------------


def _prepare_compaction(table: pa.Table, root: Path) -> dict[str, str]:
    """Per library, a dataset of 100 fragments with ~1% deleted and its own indices."""
    import lance

    base = str(root / "base")
    per_file = -(-table.num_rows // FRAGMENTS)
    lance.write_dataset(table, base, max_rows_per_file=per_file, max_rows_per_group=per_file)
    ds = lance.dataset(base)
    if len(ds.get_fragments()) != FRAGMENTS:
        raise SystemExit(f"{base}: {len(ds.get_fragments())} fragments, not {FRAGMENTS}")
    ds.delete(DELETED)
    uris = {}
    for name in LIBS:
        uris[name] = str(root / f"prepared-{name}")
        shutil.copytree(base, uris[name])
        ds = _library(name).dataset(uris[name])
        ds.create_scalar_index("l_orderkey", "BTREE")
        ds.create_scalar_index("l_shipmode", "BITMAP")
    return uris


def _live_rows(table: pa.Table) -> int:
    return int((table["l_orderkey"].to_numpy() % 97 != 0).sum())


def _compaction_checks(table: pa.Table) -> dict[str, pa.Table]:
    """Filters on both indexed columns and their rows, from pyarrow."""
    live = pa.array(table["l_orderkey"].to_numpy() % 97 != 0)
    orders = pc.unique(table["l_orderkey"].filter(live))
    key = orders[len(orders) // 2].as_py()
    return {
        f"l_orderkey = {key}": _expected(table, pc.and_(live, pc.equal(table["l_orderkey"], key))),
        "l_shipmode = 'MAIL'": _expected(
            table, pc.and_(live, pc.equal(table["l_shipmode"], "MAIL"))
        ),
    }


def _compact_once(
    name: str, prepared: str, work: Path, defer: bool, checks: dict[str, pa.Table], live: int
) -> float:
    """Seconds one compaction of a fresh copy of ``prepared`` takes, checked after."""
    shutil.copytree(prepared, work)
    try:
        if name == "lancelet" and _FORGET:
            # Every copy holds the same files byte for byte: lancelet's process-wide
            # memos of parsed file metadata would hand a run what an earlier run
            # parsed, which a compaction of files new to the process never gets.
            forget_lancelet_caches()
        ds = _library(name).dataset(str(work))
        start = time.perf_counter()
        ds.optimize.compact_files(target_rows_per_fragment=1_000_000, defer_index_remap=defer)
        elapsed = time.perf_counter() - start
        _check_compacted(name, str(work), defer, checks, live)
        return elapsed
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _check_compacted(
    name: str, uri: str, defer: bool, checks: dict[str, pa.Table], live: int
) -> None:
    import lancelet
    from lancelet.dataset.read.frag_reuse import reuse_index

    what = f"{name} compaction (defer_index_remap={defer})"
    for reader in LIBS:
        ds = _library(reader).dataset(uri)
        if len(ds.get_fragments()) != 1:
            raise SystemExit(f"{what}: {len(ds.get_fragments())} fragments left, not 1")
        _check_indexed(ds, ["l_orderkey", "l_shipmode"], live, f"{what}, read by {reader}")
        for where, expected in checks.items():
            _check(ds, where, expected, f"{what}, read by {reader}")
    recorded = reuse_index(lancelet.dataset(uri)._manifest) is not None
    if recorded != defer:
        raise SystemExit(f"{what}: a fragment reuse index {'is' if recorded else 'is not'} there")


def _compaction_peak(name: str, prepared: str, work: Path, defer: bool) -> float:
    """MiB the peak RSS of a fresh process rises while it compacts a copy of
    ``prepared`` (after loading the library and opening the copy)."""
    module = "lancelet" if name == "lancelet" else "lance"
    setup = warm_up(module) + (
        f"import shutil\n"
        f"shutil.rmtree({str(work)!r}, ignore_errors=True)\n"
        f"shutil.copytree({prepared!r}, {str(work)!r})\n"
        f"import {module} as library\n"
        f"ds = library.dataset({str(work)!r})\n"
        f"ds.count_rows()\n"
    )
    measured = (
        f"ds.optimize.compact_files(target_rows_per_fragment=1_000_000, defer_index_remap={defer})"
    )
    try:
        return rise_mib(setup, measured)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench_compaction(
    table: pa.Table, root: Path, runs: int
) -> tuple[dict[bool, dict[str, float]], dict[bool, dict[str, float]]]:
    """Median seconds and peak MiB of each library's compaction, with and without
    ``defer_index_remap``."""
    prepared = _prepare_compaction(table, root)
    checks = _compaction_checks(table)
    live = _live_rows(table)
    for name in LIBS:  # one-time costs (imports, compiled kernels) are paid untimed
        _compact_once(name, prepared[name], root / "work", True, checks, live)
    times: dict[bool, dict[str, list[float]]] = {d: {n: [] for n in LIBS} for d in (False, True)}
    for defer in (False, True):
        # Alternate the libraries run by run so drift on a shared machine hits both.
        for _ in range(runs):
            for name in LIBS:
                elapsed = _compact_once(name, prepared[name], root / "work", defer, checks, live)
                times[defer][name].append(elapsed)
    medians = {d: {n: statistics.median(t) for n, t in by.items()} for d, by in times.items()}
    peaks = {
        d: {n: _compaction_peak(n, prepared[n], root / "work", d) for n in LIBS}
        for d in (False, True)
    }
    return medians, peaks


# -- 2. index load with reuse versions -------------------------------------------------


def _reuse_versions(uri: str) -> int:
    import lancelet
    from lancelet.dataset.read.frag_reuse import read_details, reuse_index

    ds = lancelet.dataset(uri)
    index = reuse_index(ds._manifest)
    return 0 if index is None else len(read_details(ds._store, index).versions)


def _prepare_load(table: pa.Table, root: Path, counts: list[int]) -> tuple[dict[int, str], int]:
    """Copies of one lancelet dataset after each count of deferred compactions, and
    the order key looked up (one whose rows every compaction moves)."""
    import lancelet

    orders = pc.unique(table["l_orderkey"]).to_pylist()
    if len(orders) < max(counts) + 10:
        raise SystemExit(f"{table.num_rows} rows hold too few orders for {max(counts)} versions")
    uri = str(root / "reuse")
    lancelet.write_dataset(table, uri)
    ds = lancelet.dataset(uri)
    if len(ds.get_fragments()) != 1:
        raise SystemExit(f"{uri}: {len(ds.get_fragments())} fragments, not 1")
    ds.create_scalar_index("l_orderkey", "BTREE")
    copies = {}
    for n in range(max(counts) + 1):
        if n:
            # The earliest orders go, so every later row moves at each compaction.
            ds.delete(f"l_orderkey = {orders[n - 1]}")
            ds.optimize.compact_files(materialize_deletions_threshold=0.0, defer_index_remap=True)
        if n in counts:
            found = _reuse_versions(uri)
            if found != n:
                raise SystemExit(f"{uri}: {found} reuse versions after {n} compactions")
            copies[n] = str(root / f"reuse-{n}")
            shutil.copytree(uri, copies[n])
    return copies, orders[-5]


_FORGET = True  # cold lookups and compactions empty lancelet's process caches (docstring)


def bench_load(
    table: pa.Table, root: Path, counts: list[int], runs: int
) -> dict[int, dict[str, tuple[float, float]]]:
    copies, key = _prepare_load(table, root, counts)
    where = f"l_orderkey = {key}"
    # The order looked up is never deleted: every copy holds all of its rows.
    expected = _expected(table, pc.equal(table["l_orderkey"], key))
    results: dict[int, dict[str, tuple[float, float]]] = {}
    for n, uri in copies.items():
        lookups: dict[str, Callable[[], object]] = {}
        for name in LIBS:
            library = _library(name)
            ds = library.dataset(uri)
            what = f"{name}, {n} reuse versions"
            _check_indexed(ds, ["l_orderkey"], ds.count_rows(), what)
            _check(ds, where, expected, what)
            lookups[name] = _lookup(library, uri, where)
        results[n] = {}
        for name in LIBS:
            # Emptying lancelet's caches is set-up, not the lookup: done untimed.
            forget = forget_lancelet_caches if name == "lancelet" and _FORGET else None
            cold = median_time(lookups[name], runs, setup=forget)
            ds = _library(name).dataset(uri)
            ds.to_table(columns=KEY, filter=where)
            warm = median_time(
                lambda ds=ds: ds.to_table(columns=KEY, filter=where), runs * 10, collect=False
            )
            results[n][name] = (cold, warm)
    return results


def _lookup(library: Any, uri: str, where: str) -> Callable[[], object]:
    def cold() -> object:
        return library.dataset(uri).to_table(columns=KEY, filter=where)

    return cold


# -- report ----------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000, help="rows compacted (part 1)")
    parser.add_argument("--load-rows", type=int, default=100_000, help="rows of part 2")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--versions", default="0,10,100", help="reuse version counts")
    parser.add_argument(
        "--keep-process-caches",
        action="store_true",
        help="cold lookups and compactions keep lancelet's per-process caches of metadata",
    )
    args = parser.parse_args()
    if args.keep_process_caches:
        global _FORGET
        _FORGET = False
    counts = sorted({int(v) for v in args.versions.split(",")})

    t0 = time.perf_counter()
    table = _source(max(args.rows, args.load_rows))
    print(f"lineitem: {table.num_rows:,} rows generated in {time.perf_counter() - t0:.1f}s")
    root = Path(tempfile.mkdtemp(prefix="frag_reuse_bench_"))
    try:
        t0 = time.perf_counter()
        compaction, peaks = bench_compaction(table.slice(0, args.rows), root, args.runs)
        print(f"part 1 done in {time.perf_counter() - t0:.0f}s")
        t0 = time.perf_counter()
        load = bench_load(table.slice(0, args.load_rows), root, counts, args.runs)
        print(f"part 2 done in {time.perf_counter() - t0:.0f}s")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    _report(args, compaction, peaks, load)


def _report(
    args: argparse.Namespace,
    compaction: dict[bool, dict[str, float]],
    peaks: dict[bool, dict[str, float]],
    load: dict[int, dict[str, tuple[float, float]]],
) -> None:
    print()
    print(
        f"1. compact_files of {args.rows:,} rows in {FRAGMENTS} fragments, ~1% deleted, "
        f"BTREE + BITMAP; medians of {args.runs}, seconds"
    )
    print(
        f"{'defer_index_remap':20} {'lancelet':>9} {'pylance':>9} {'ratio':>7} "
        f"{'peak MiB lancelet':>18} {'pylance':>8}"
    )
    for defer, by in compaction.items():
        ours, theirs = by["lancelet"], by["pylance"]
        peak = peaks[defer]
        print(
            f"{defer!s:20} {ours:9.3f} {theirs:9.3f} {ours / theirs:7.2f} "
            f"{peak['lancelet']:18.0f} {peak['pylance']:8.0f}"
        )
    print()
    print(
        f"2. BTREE lookup on {args.load_rows:,} rows (1 fragment) after N deferred "
        f"compactions; cold: open + lookup, medians of {args.runs}; warm: lookup, "
        f"medians of {args.runs * 10}; seconds"
    )
    print(
        f"{'N':>4} {'lancelet cold':>14} {'pylance cold':>13} {'ratio':>7} "
        f"{'lancelet warm':>14} {'pylance warm':>13} {'ratio':>7}"
    )
    for n, by in load.items():
        (oc, ow), (tc, tw) = by["lancelet"], by["pylance"]
        print(f"{n:4} {oc:14.4f} {tc:13.4f} {oc / tc:7.2f} {ow:14.4f} {tw:13.4f} {ow / tw:7.2f}")


if __name__ == "__main__":
    main()
