"""Building vector indices, lancelet vs pylance: build time, build peak memory and the
recall@10 of the index each builds, at the same parameters.

    python benchmarks/vector_build_bench.py --rows 100000 --dim 128 --types IVF_PQ,IVF_SQ
    python benchmarks/vector_build_bench.py --types IVF_HNSW_FLAT,IVF_HNSW_SQ,IVF_HNSW_PQ --ef 40

Data: ``vector_bench.mixture`` (256 centres drawn from N(0, 1) in D dimensions with
``numpy.random.default_rng(D)``, each vector a random centre plus N(0, 0.5**2) noise
drawn with ``default_rng(1)``); queries from the same mixture with seed 2.  Each
library writes its own copy of the table and builds its index on it, in a fresh
process: the time of ``create_index`` and the rise of the peak RSS during it
(``VmHWM`` after resetting it, less the RSS before).  Both indices are then searched
by pylance (the same reader for both, so only the build differs) at k=10 and
``--nprobes`` (and ``--ef`` for IVF_HNSW_* indices), and each answer is compared
with pylance's exact (flat) answer.  With ``--answer own`` each library answers
its own index with its own query defaults instead (``--defaults --answer own``:
what a user of either library gets without tuning).
Several builds (``--builds``) are averaged: k-means starts at random, so one
build's recall varies a little with either library.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from lancelet.errors import UnsupportedVectorIndexError

sys.path.insert(0, str(Path(__file__).parent))
from vector_bench import LIBS, K, library, mixture, vector_table, warn_pinned_blas


def build_in_fresh_process(
    lib: str, uri: str, index_type: str, params: dict[str, Any]
) -> tuple[float, float]:
    """(seconds, peak MiB above the starting RSS) of one create_index."""
    code = f"""
import sys, time
sys.path.insert(0, {str(Path(__file__).parent)!r})
from vector_bench import library

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1])

ds = library({lib!r}).dataset({uri!r})
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the high-water mark to the current RSS
base = status("VmRSS:")
start = time.perf_counter()
ds.create_index("vec", {index_type!r}, replace=True, **{params!r})
seconds = time.perf_counter() - start
print(seconds, (status("VmHWM:") - base) / 1024)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    seconds, mib = out.stdout.split()[-2:]
    return float(seconds), float(mib)


def recall_at_k(
    uri: str,
    queries: np.ndarray,
    truth: list[set[int]],
    nprobes: int | None,
    ef: int | None = None,
    answer: str = "lance",
) -> float:
    """recall@K of ``answer``'s (a library's name) nearest= through the index;
    ``nprobes`` / ``ef`` None: the library's defaults."""
    ds = library(answer).dataset(uri)
    hits = refused = 0
    for q, exact in zip(queries, truth, strict=True):
        spec: dict[str, Any] = {"column": "vec", "q": q, "k": K}
        if nprobes is not None:
            spec["nprobes"] = nprobes
        if ef is not None:
            spec["ef"] = ef
        try:
            found = ds.to_table(columns=["id"], nearest=spec)["id"].to_numpy().tolist()
        except UnsupportedVectorIndexError:  # lancelet's refusal of ties at the cut
            refused += 1
            continue
        hits += len(set(found) & exact)
    if refused:
        print(f"  {answer} refused {refused} of {len(queries)} queries (ties at the cut)")
    return hits / (K * max(1, len(queries) - refused))


def exact_answers(uri: str, queries: np.ndarray, metric: str) -> list[set[int]]:
    import lance

    ds = lance.dataset(uri)
    out = []
    for q in queries:
        spec = {"column": "vec", "q": q, "k": K, "metric": metric, "use_index": False}
        out.append(set(ds.to_table(columns=["id"], nearest=spec)["id"].to_numpy().tolist()))
    return out


def parameters(
    index_type: str, rows: int, dim: int, metric: str, defaults: bool = False
) -> dict[str, Any]:
    """About sqrt(N) partitions, no more than one per 256 rows (pylance's IVF_PQ
    cap); with ``defaults``, only what create_index requires (each library then
    picks its partition count from its target partition size)."""
    partitions = max(1, min(int(np.sqrt(rows)), rows // 256))
    params: dict[str, Any] = {"metric": metric}
    if not defaults:
        params["num_partitions"] = partitions
    if index_type in ("IVF_PQ", "IVF_HNSW_PQ"):
        params["num_sub_vectors"] = dim // 8
    return params


def run(args: argparse.Namespace, root: str) -> None:
    vectors = mixture(args.rows, args.dim, seed=1)
    table = vector_table(vectors)
    del vectors
    queries = mixture(args.queries, args.dim, seed=2)
    uris = {name: os.path.join(root, name) for name in LIBS}
    for name in LIBS:
        library(name).write_dataset(table, uris[name], max_rows_per_file=1 << 20)
    del table
    compare_builds(uris, queries, args.rows, args.dim, args)


def compare_builds(
    uris: dict[str, str], queries: np.ndarray, rows: int, dim: int, args: argparse.Namespace
) -> None:
    """Build each of ``args.types`` for each of ``args.metrics`` with both libraries
    (each on its own copy, ``uris``) and report time, memory and recall."""
    shape = f"{rows:,} x {dim}"
    for metric in args.metrics.split(","):
        truth = exact_answers(uris["lance"], queries, metric)
        for index_type in args.types.split(","):
            params = parameters(index_type, rows, dim, metric, args.defaults)
            figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in LIBS}
            for _ in range(args.builds):
                for name in LIBS:
                    seconds, mib = build_in_fresh_process(name, uris[name], index_type, params)
                    ef = args.ef if "HNSW" in index_type else None
                    if args.answer == "own":  # each library answers its own index
                        found = recall_at_k(uris[name], queries, truth, None, ef, name)
                    else:
                        found = recall_at_k(uris[name], queries, truth, args.nprobes, ef)
                    figures[name].append((seconds, mib, found))
            report(shape, index_type, params, args.nprobes, figures)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--types", default="IVF_PQ,IVF_SQ", help="index types built")
    parser.add_argument("--metrics", default="l2", help="metrics built")
    parser.add_argument("--nprobes", type=int, default=20)
    parser.add_argument("--builds", type=int, default=1, help="builds averaged")
    parser.add_argument("--ef", type=int, default=None, help="ef of IVF_HNSW_* queries")
    parser.add_argument(
        "--answer",
        choices=["pylance", "own"],
        default="pylance",
        help="who answers the queries: pylance on both indices (at --nprobes), or each "
        "library on its own index with its own query defaults (nprobes and ef unset "
        "unless --ef is given)",
    )
    parser.add_argument(
        "--defaults",
        action="store_true",
        help="build with create_index's default partition count (and other defaults)",
    )


def report(
    shape: str,
    index_type: str,
    params: dict[str, Any],
    nprobes: int,
    figures: dict[str, list[tuple[float, float, float]]],
) -> None:
    mean = {name: np.mean(np.asarray(rows), axis=0) for name, rows in figures.items()}
    ours, theirs = mean["lancelet"], mean["lance"]
    print(f"{index_type} {shape} {params}, {len(figures['lance'])} build(s), nprobes={nprobes}")
    print(f"  {'':<18}{'lancelet':>10}{'pylance':>10}{'ratio':>8}")
    for i, label in ((0, "build s"), (1, "build peak MiB")):
        print(
            f"  {label:<18}{ours[i]:>10.2f}{theirs[i]:>10.2f}{ours[i] / max(theirs[i], 1e-9):>8.2f}"
        )
    print(f"  {'recall@10':<18}{ours[2]:>10.4f}{theirs[2]:>10.4f}{ours[2] - theirs[2]:>+8.4f}")
    sys.stdout.flush()


def main() -> None:
    warn_pinned_blas()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--queries", type=int, default=100)
    add_arguments(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        run(args, root)


if __name__ == "__main__":
    main()
