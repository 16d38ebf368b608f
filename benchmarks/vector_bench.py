"""lancelet vs pylance on vector search, measured in one run.

    python benchmarks/vector_bench.py --scale 1 --runs 3

Data: for each shape (N vectors x D float32; 1,000,000 x 128 and 100,000 x 768 at
``--scale 1``, N scaled by ``--scale``), a seeded Gaussian mixture: 256 centres drawn
from N(0, 1) in D dimensions, each vector a random centre plus N(0, 0.5**2) noise
(``numpy.random.default_rng(seed)``).  Queries come from the same mixture with another
seed.  Each library writes its own copy of the same table (``id``, ``vec``).

Measures, for both libraries:
* flat (exact, no index) search at k=10, metrics l2 and cosine: the p50 and p99
  latency of single queries, and the median time of one batch search of ``--batch``
  queries; the recall of lancelet's answer against pylance's (1.0: the same rows);
* the peak memory of that batch search, in a fresh process (max RSS above baseline;
  RSS counts the pages of a data file a reader maps, so for lancelet most of the
  figure is the vector column's file pages, the rest a batch and its distances);
* with ``--build`` (``vector_build_bench``): each library builds IVF_PQ and IVF_SQ
  (``--types``) on its own copy, in a fresh process: build seconds, the build's peak
  memory, and the recall@10 of each index (both searched by pylance, at
  ``--nprobes``) against the exact answer;
* with ``--ivf``: pylance builds an IVF_PQ index (l2) on its copy; the p50 and p99 of
  both libraries' ``to_table(nearest=...)`` through that index at nprobes=20, with
  the recall@10 of each against the exact answer.

Prints median seconds (or milliseconds) and the ratio lancelet / pylance (below 1.0:
lancelet is faster).

lancelet's matrix products run in numpy's OpenBLAS.  Where the machine image pins
OpenBLAS to an older kernel (``OPENBLAS_CORETYPE``, ``OPENBLAS_L2_SIZE``: set on some
processors for old OpenBLAS builds), a current numpy runs slower than it would for a
user; measure with both unset for that one command:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/vector_bench.py

The scripts say so when they find either set.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

LIBS = ("lancelet", "lance")
K = 10
NPROBES = 20
CENTRES = 256


def library(name: str) -> Any:
    if name == "lancelet":
        import lancelet

        return lancelet
    import lance

    return lance


def mixture(rows: int, dim: int, seed: int) -> np.ndarray:
    """``rows`` vectors of a Gaussian mixture: the centres are fixed by ``dim``, the
    draws by ``seed``."""
    centres = np.random.default_rng(dim).normal(0, 1, (CENTRES, dim)).astype(np.float32)
    rng = np.random.default_rng(seed)
    out = np.empty((rows, dim), np.float32)
    for start in range(0, rows, 65536):  # bounded temporaries
        n = min(65536, rows - start)
        noise = rng.normal(0, 0.5, (n, dim)).astype(np.float32)
        out[start : start + n] = centres[rng.integers(0, CENTRES, n)] + noise
    return out


def vector_table(vectors: np.ndarray) -> pa.Table:
    flat = pa.array(vectors.reshape(-1))
    return pa.table(
        {
            "id": np.arange(len(vectors), dtype=np.int64),
            "vec": pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1]),
        }
    )


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def nearest(ds: Any, q: np.ndarray, metric: str, **extra: Any) -> pa.Table:
    spec = {"column": "vec", "q": q, "k": K, "metric": metric, **extra}
    return ds.to_table(columns=["id", "_distance"], nearest=spec)


def recall(found: pa.Table, truth: pa.Table) -> float:
    """The share of ``truth``'s rows (per query) that ``found`` holds too."""

    def groups(table: pa.Table) -> dict[int, set[int]]:
        ids = table["id"].to_numpy()
        if "query_index" not in table.column_names:
            return {0: set(ids.tolist())}
        out: dict[int, set[int]] = {}
        for q, i in zip(table["query_index"].to_numpy().tolist(), ids.tolist(), strict=True):
            out.setdefault(q, set()).add(i)
        return out

    ours, theirs = groups(found), groups(truth)
    hits = sum(len(ours.get(q, set()) & rows) for q, rows in theirs.items())
    return hits / max(1, sum(len(rows) for rows in theirs.values()))


def percentiles(times: list[float]) -> tuple[float, float]:
    return float(np.percentile(times, 50)), float(np.percentile(times, 99))


def flat_figures(
    datasets: dict[str, Any], queries: np.ndarray, batch: np.ndarray, metric: str, runs: int
) -> dict[str, dict[str, float]]:
    """Per library: single-query p50/p99 and batch median seconds; lancelet's recall
    against pylance's answer."""
    out: dict[str, dict[str, float]] = {}
    answers: dict[str, list[pa.Table]] = {}
    for name, ds in datasets.items():
        nearest(ds, queries[0], metric)  # warm the caches (file metadata, BLAS threads)
        singles, answers[name] = [], []
        for q in queries:
            start = time.perf_counter()
            answers[name].append(nearest(ds, q, metric))
            singles.append(time.perf_counter() - start)
        p50, p99 = percentiles(singles)
        batch_time = statistics.median(
            timed(lambda ds=ds: nearest(ds, batch, metric)) for _ in range(runs)
        )
        out[name] = {"p50": p50, "p99": p99, "batch": batch_time}
    pairs = zip(answers["lancelet"], answers["lance"], strict=True)
    out["lancelet"]["recall"] = statistics.mean(recall(a, b) for a, b in pairs)
    together = nearest(datasets["lancelet"], batch, metric)
    out["lancelet"]["batch recall"] = recall(together, nearest(datasets["lance"], batch, metric))
    return out


def peak_search_memory(lib: str, uri: str, batch_file: str, metric: str) -> float:
    """MiB the peak RSS rises during one batch search, measured in a fresh process."""
    code = f"""
import sys
import numpy as np
sys.path.insert(0, {str(Path(__file__).parent)!r})
from vector_bench import library, nearest

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1])

ds = library({lib!r}).dataset({uri!r})
batch = np.load({batch_file!r})
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the high-water mark to the current RSS
base = status("VmRSS:")
nearest(ds, batch, {metric!r})
print((status("VmHWM:") - base) / 1024)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def ivf_figures(uri: str, queries: np.ndarray, partitions: int, sub_vectors: int) -> dict[str, Any]:
    """pylance builds IVF_PQ on ``uri``; both libraries answer the same nearest=
    queries through it at the dataset level (what a user calls)."""
    import lance

    import lancelet

    ds = lance.dataset(uri)
    build = timed(
        lambda: ds.create_index(
            "vec",
            index_type="IVF_PQ",
            metric="l2",
            num_partitions=partitions,
            num_sub_vectors=sub_vectors,
        )
    )
    opened = {"lancelet": lancelet.dataset(uri), "lance": lance.dataset(uri)}
    truth = [
        set(nearest(opened["lance"], q, "l2", use_index=False)["id"].to_numpy().tolist())
        for q in queries
    ]
    times: dict[str, list[float]] = {"lancelet": [], "lance": []}
    hits: dict[str, int] = {"lancelet": 0, "lance": 0}
    for data in opened.values():
        nearest(data, queries[0], "l2", nprobes=NPROBES)  # opens the index
    for q, exact in zip(queries, truth, strict=True):
        for name, data in opened.items():
            start = time.perf_counter()
            found = nearest(data, q, "l2", nprobes=NPROBES)
            times[name].append(time.perf_counter() - start)
            hits[name] += len(set(found["id"].to_numpy().tolist()) & exact)
    return {
        "build": build,
        **{name: (*percentiles(t), hits[name] / (K * len(queries))) for name, t in times.items()},
    }


def report_flat(shape: str, metric: str, figures: dict[str, dict[str, float]]) -> None:
    ours, theirs = figures["lancelet"], figures["lance"]
    print(f"flat {metric}, {shape}")
    for key, label in (("p50", "1 query p50"), ("p99", "1 query p99"), ("batch", "batch")):
        a, b = ours[key] * 1000, theirs[key] * 1000
        print(f"  {label:<22}{a:>12.2f}{b:>12.2f}{a / b:>8.2f}")
    print(f"  recall vs pylance: single {ours['recall']:.4f}, batch {ours['batch recall']:.4f}")


def report_ivf(shape: str, figures: dict[str, Any], partitions: int, sub_vectors: int) -> None:
    print(
        f"IVF_PQ l2, {shape}, {partitions} partitions, {sub_vectors} sub-vectors "
        f"(pylance build {figures['build']:.1f} s), nprobes={NPROBES}"
    )
    ours, theirs = figures["lancelet"], figures["lance"]
    for i, label in ((0, "1 query p50"), (1, "1 query p99")):
        a, b = ours[i] * 1000, theirs[i] * 1000
        print(f"  {label:<22}{a:>12.2f}{b:>12.2f}{a / b:>8.2f}")
    print(f"  recall@10 vs exact: lancelet {ours[2]:.4f}, pylance {theirs[2]:.4f}")


def run_shape(rows: int, dim: int, args: argparse.Namespace, root: str) -> None:
    shape = f"{rows:,} x {dim}"
    vectors = mixture(rows, dim, seed=1)
    table = vector_table(vectors)
    del vectors
    queries = mixture(args.queries, dim, seed=2)
    batch = mixture(args.batch, dim, seed=3)
    uris = {name: os.path.join(root, f"{name}-{dim}") for name in LIBS}
    for name in LIBS:
        library(name).write_dataset(table, uris[name], max_rows_per_file=1 << 20)
    del table
    datasets = {name: library(name).dataset(uris[name]) for name in LIBS}
    batch_file = os.path.join(root, f"batch-{dim}.npy")
    np.save(batch_file, batch)
    print(f"\n{shape} float32: {args.queries} single queries, batch of {args.batch}, k={K}")
    print(f"  {'':<22}{'lancelet ms':>12}{'pylance ms':>12}{'ratio':>8}")
    for metric in ("l2", "cosine"):
        report_flat(shape, metric, flat_figures(datasets, queries, batch, metric, args.runs))
    memory = {name: peak_search_memory(name, uris[name], batch_file, "l2") for name in LIBS}
    print(
        f"  peak MiB of the l2 batch search: lancelet {memory['lancelet']:.0f}, "
        f"pylance {memory['lance']:.0f}, ratio {memory['lancelet'] / max(memory['lance'], 1):.2f}"
    )
    if args.ivf:
        # About sqrt(N) partitions, but no fewer than 256 rows each (pylance trains
        # no more partitions than that).
        partitions = max(1, min(int(np.sqrt(rows)), rows // 256))
        sub_vectors = dim // 8
        figures = ivf_figures(uris["lance"], queries, partitions, sub_vectors)
        report_ivf(shape, figures, partitions, sub_vectors)
    if args.build:
        # Imported here: vector_build_bench imports this module.
        from vector_build_bench import compare_builds

        compare_builds(uris, queries, rows, dim, args)


def warn_pinned_blas() -> None:
    pinned = [name for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if name in os.environ]
    if pinned:
        print(
            f"note: {', '.join(pinned)} set: numpy's OpenBLAS runs a pinned kernel "
            "(see the module docstring)",
            file=sys.stderr,
        )


def main() -> None:
    warn_pinned_blas()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the row counts")
    parser.add_argument("--runs", type=int, default=3, help="runs of each batch search")
    parser.add_argument("--queries", type=int, default=100, help="single queries timed")
    parser.add_argument("--batch", type=int, default=100, help="queries in the batch search")
    parser.add_argument("--ivf", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument(
        "--build",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="build time, build peak memory and recall (vector_build_bench)",
    )
    parser.add_argument(
        "--shapes", default="1000000x128,100000x768", help="comma-separated NxD at scale 1"
    )
    from vector_build_bench import add_arguments

    add_arguments(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        for shape in args.shapes.split(","):
            rows, dim = (int(part) for part in shape.lower().split("x"))
            run_shape(max(K, int(rows * args.scale)), dim, args, root)


if __name__ == "__main__":
    main()
