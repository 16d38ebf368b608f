"""Full-text search, lancelet vs pylance: INVERTED index build time and peak memory,
match-query and phrase-query latency, in the same run on the same text.

    python benchmarks/fts_bench.py --rows 1000000 --queries 50

Data: the ``l_comment`` column of TPC-H lineitem (duckdb's bundled tpch extension),
the first ``--rows`` rows, short English-like sentences of 10 to 43 characters.
Each library writes its own copy and builds its own index (``with_position=True``,
so phrases can be searched), in a fresh process: the build time and the rise of the
peak RSS during it.  Queries are drawn from the text itself (``--seed``): match
queries of one to three words, phrase queries of two adjacent words, each with
``limit=10``; each library searches its own index, and the answers are compared
(the same rows and scores, as multisets where scores tie) before timing.  Reports
medians and p99 of the per-query times and the ratios lancelet/pylance.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).parent))
from file_bench import lineitem

LIBS = {"lancelet": "lancelet", "pylance": "lance"}


def comments(rows: int) -> pa.Table:
    scale = max(0.01, rows / 6_000_000 * 1.05)
    table = lineitem(scale).select(["l_orderkey", "l_comment"]).slice(0, rows)
    return table.rename_columns(["id", "text"])


def build_in_fresh_process(module: str, uri: str) -> tuple[float, float]:
    """(seconds, peak MiB above the starting RSS) of one create_scalar_index."""
    code = f"""
import time
import {module} as lib

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1])

ds = lib.dataset({uri!r})
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the high-water mark to the current RSS
base = status("VmRSS:")
start = time.perf_counter()
ds.create_scalar_index("text", "INVERTED", with_position=True)
print(time.perf_counter() - start, (status("VmHWM:") - base) / 1024)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    seconds, mib = out.stdout.split()[-2:]
    return float(seconds), float(mib)


def draw_queries(texts: list[str], count: int, seed: int) -> tuple[list[str], list[str]]:
    """Match queries (1 to 3 words) and phrase queries (2 adjacent words)."""
    rng = np.random.default_rng(seed)
    matches: list[str] = []
    phrases: list[str] = []
    while len(matches) < count or len(phrases) < count:
        words = [w for w in texts[int(rng.integers(len(texts)))].split() if w.isalpha()]
        if len(words) < 2:
            continue
        if len(matches) < count:
            matches.append(" ".join(rng.choice(words, int(rng.integers(1, 4)))))
        if len(phrases) < count:
            at = int(rng.integers(len(words) - 1))
            phrases.append(f"{words[at]} {words[at + 1]}")
    return matches, phrases


def answer(ds: Any, query: Any) -> tuple[list[float], list[tuple[float, int]]]:
    """The scores, and the rows scored above the lowest kept score (which rows of
    that score a limit keeps is pylance's arbitrary pick among ties)."""
    table = ds.to_table(columns=["id"], full_text_query=query, limit=10)
    scores = np.round(table["_score"].to_numpy().astype(np.float64), 5)
    rows = sorted(zip(scores.tolist(), table["id"].to_pylist(), strict=True))
    cut = min(scores.tolist(), default=0.0)
    return sorted(scores.tolist()), [row for row in rows if row[0] > cut]


def time_queries(ds: Any, queries: list[Any]) -> list[float]:
    times = []
    for query in queries:
        start = time.perf_counter()
        ds.to_table(columns=["id"], full_text_query=query, limit=10)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()

    import lance
    from lance.query import PhraseQuery

    import lancelet
    from lancelet.query import PhraseQuery as OurPhraseQuery

    table = comments(args.rows)
    libraries = {"lancelet": lancelet, "pylance": lance}
    with tempfile.TemporaryDirectory(prefix="fts_bench_") as root:
        uris = {name: f"{root}/{name}" for name in LIBS}
        for uri in uris.values():
            lance.write_dataset(table, uri)
        builds = {name: build_in_fresh_process(LIBS[name], uris[name]) for name in LIBS}
        matches, phrase_texts = draw_queries(
            table["text"].to_pylist()[:100_000], args.queries, args.seed
        )
        phrases = [PhraseQuery(text, "text") for text in phrase_texts]
        datasets = {name: libraries[name].dataset(uris[name]) for name in LIBS}
        ours_phrases = [OurPhraseQuery(text, "text") for text in phrase_texts]
        for ours, theirs in zip(matches + ours_phrases, matches + phrases, strict=True):
            got, want = answer(datasets["lancelet"], ours), answer(datasets["pylance"], theirs)
            if got != want:
                print(f"answers differ on {theirs!r}: {got} != {want}")
        timings = {
            "match": {
                "lancelet": time_queries(datasets["lancelet"], matches),
                "pylance": time_queries(datasets["pylance"], matches),
            },
            "phrase": {
                "lancelet": time_queries(datasets["lancelet"], ours_phrases),
                "pylance": time_queries(datasets["pylance"], phrases),
            },
        }
    report(args.rows, builds, timings)


def report(
    rows: int, builds: dict[str, tuple[float, float]], timings: dict[str, dict[str, list[float]]]
) -> None:
    print(f"{rows:,} documents (TPC-H l_comment), index with positions")
    ours, theirs = builds["lancelet"], builds["pylance"]
    print(
        f"build      lancelet {ours[0]:7.2f} s {ours[1]:7.0f} MiB | pylance {theirs[0]:7.2f} s "
        f"{theirs[1]:7.0f} MiB | time {ours[0] / theirs[0]:.2f}x memory {ours[1] / theirs[1]:.2f}x"
    )
    for kind, by_library in timings.items():
        p50 = {name: statistics.median(times) * 1e3 for name, times in by_library.items()}
        p99 = {name: float(np.percentile(times, 99)) * 1e3 for name, times in by_library.items()}
        print(
            f"{kind:10} p50 lancelet {p50['lancelet']:7.2f} ms pylance {p50['pylance']:7.2f} ms "
            f"({p50['lancelet'] / p50['pylance']:.2f}x) | p99 {p99['lancelet']:7.2f} / "
            f"{p99['pylance']:7.2f} ms ({p99['lancelet'] / p99['pylance']:.2f}x)"
        )


if __name__ == "__main__":
    main()
