"""A commit storm: several processes append small batches to one dataset at once.

    python benchmarks/commit_storm.py --writers 8 --appends 20 --runs 3

Each writer is its own interpreter (spawned, so nothing is shared but the dataset
folder); all start appending together once every one has imported its library, and
each times every ``write_dataset(mode="append")`` call it makes.  Reported per
library: commits per second over the storm and the median and 95th-percentile latency
of one append, and the most any writer's peak RSS rose during its appends (MiB),
medians over the runs.  The final row count is checked, so a lost or
doubled commit fails the run rather than flattering it.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import tempfile
import time
from typing import Any

import pyarrow as pa

ROWS_PER_APPEND = 10


def _library(name: str) -> Any:
    if name == "lancelet":
        import lancelet

        return lancelet
    import lance

    return lance


def _rows(writer: int, seq: int) -> pa.Table:
    keys = [writer * 1_000_000 + seq * ROWS_PER_APPEND + i for i in range(ROWS_PER_APPEND)]
    return pa.table({"k": pa.array(keys, pa.int64()), "s": [str(k) for k in keys]})


def _writer(
    name: str, uri: str, writer: int, appends: int, barrier: Any, out: Any
) -> None:  # pragma: no cover - runs in a child process
    from peak_rss import reset_peak, rise_since

    lib = _library(name)
    barrier.wait()
    base = reset_peak()
    latencies = []
    for seq in range(appends):
        start = time.perf_counter()
        lib.write_dataset(_rows(writer, seq), uri, mode="append")
        latencies.append(time.perf_counter() - start)
    out.put((latencies, rise_since(base)))


def storm(name: str, root: str, writers: int, appends: int, fragments: int = 1) -> dict[str, float]:
    """One storm on a fresh dataset of ``fragments`` fragments: commits/s, and the
    median, p95 and slowest append latency (s)."""
    lib = _library(name)
    uri = os.path.join(root, f"storm-{name}-{time.monotonic_ns()}")
    first = pa.concat_tables([_rows(writers + 1, seq) for seq in range(fragments)])
    lib.write_dataset(first, uri, data_storage_version="2.0", max_rows_per_file=ROWS_PER_APPEND)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(writers + 1)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(name, uri, w, appends, barrier, out))
        for w in range(writers)
    ]
    for proc in procs:
        proc.start()
    barrier.wait()
    start = time.perf_counter()
    reports = [out.get(timeout=600) for _ in procs]
    elapsed = time.perf_counter() - start
    latencies = [x for times, _ in reports for x in times]
    peaks = [peak for _, peak in reports]
    for proc in procs:
        proc.join()
        assert proc.exitcode == 0, f"a {name} writer failed"
    rows = lib.dataset(uri).count_rows()
    assert rows == ROWS_PER_APPEND * (fragments + writers * appends), f"{name}: {rows} rows"
    latencies.sort()
    return {
        "commits/s": len(latencies) / elapsed,
        "median s": statistics.median(latencies),
        "p95 s": latencies[int(0.95 * (len(latencies) - 1))],
        "max s": latencies[-1],
        "peak MiB": max(peaks),
    }


def compare(
    writers: int, appends: int, runs: int, fragments: int = 1
) -> dict[str, dict[str, float]]:
    """Median of ``runs`` storms per library, the libraries taking turns."""
    results: dict[str, list[dict[str, float]]] = {"lancelet": [], "pylance": []}
    with tempfile.TemporaryDirectory() as root:
        for _ in range(runs):
            for name in results:
                results[name].append(storm(name, root, writers, appends, fragments))
    return {
        name: {key: statistics.median(r[key] for r in runs_) for key in runs_[0]}
        for name, runs_ in results.items()
    }


def report(figures: dict[str, dict[str, float]], writers: int, fragments: int = 1) -> None:
    print(
        f"{writers} writers appending {ROWS_PER_APPEND} rows at a time to one dataset "
        f"of {fragments} fragment(s)"
    )
    print(
        f"{'library':<12}{'commits/s':>12}{'median s':>12}{'p95 s':>12}{'max s':>12}"
        f"{'peak MiB':>10}"
    )
    for name, row in figures.items():
        cells = [f"{row['commits/s']:>12.1f}"] + [
            f"{row[k]:>12.3f}" for k in ("median s", "p95 s", "max s")
        ]
        print(f"{name:<12}" + "".join(cells) + f"{row['peak MiB']:>10.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--appends", type=int, default=20, help="appends per writer")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fragments", type=int, default=1, help="fragments to start with")
    args = parser.parse_args()
    figures = compare(args.writers, args.appends, args.runs, args.fragments)
    report(figures, args.writers, args.fragments)


if __name__ == "__main__":
    main()
