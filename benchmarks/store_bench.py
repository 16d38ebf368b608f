"""lancelet vs pylance on an S3-compatible store: scan and take of TPC-H lineitem.

    python benchmarks/store_bench.py --scale 0.1 --runs 5

A local S3 server (moto, on 127.0.0.1) serves one dataset written by pylance with
its defaults (file format 2.2).  A counting layer in front of the server records
the requests and the response bytes each operation causes, so both libraries are
measured the same way, from the server's side.  Operations:

* full scan (``to_table()``), a scan of two columns, and a filtered scan;
* ``take`` of 100 random rows (all columns, then two columns).

Each is checked against pylance's result first.  Prints median seconds of ``--runs``
runs, the ratio lancelet / pylance, requests and bytes of one run, and the peak
memory of one run in a fresh process (the MiB the peak RSS rises above the RSS once
the dataset is open, after a small write and read that load each library's kernels).  Each run
opens the dataset afresh, so no library serves a run from what it fetched before.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from file_bench import lineitem, median_time
from peak_rss import rise_mib, warm_up

BUCKET = "bench"
KEY = ("bench-key", "bench-secret")


@dataclass
class Counter:
    requests: int = 0
    bytes_out: int = 0

    def reset(self) -> None:
        self.requests = self.bytes_out = 0


def start_server(counter: Counter) -> str:
    """moto's S3 app behind a WSGI layer that counts requests and response bytes."""
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def counting(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
        with lock:
            counter.requests += 1
        for chunk in app(environ, start_response):
            with lock:
                counter.bytes_out += len(chunk)
            yield chunk

    server = make_server("127.0.0.1", 0, counting, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}"


def options(endpoint: str) -> dict[str, str]:
    return {
        "endpoint": endpoint,
        "region": "us-east-1",
        "aws_access_key_id": KEY[0],
        "aws_secret_access_key": KEY[1],
        "allow_http": "true",
    }


# Each operation as source, so that a fresh process can run it to measure its memory.
OPERATIONS = {
    "scan all columns": "ds.to_table()",
    "scan 2 columns": "ds.to_table(columns=['l_orderkey', 'l_extendedprice'])",
    "filtered scan": (
        "ds.to_table(columns=['l_orderkey', 'l_extendedprice'], filter='l_quantity < 5')"
    ),
    "take 100 rows": "ds.take(rows)",
    "take 100 rows, 2 columns": "ds.take(rows, columns=['l_orderkey', 'l_comment'])",
}


def operations(rows: np.ndarray) -> dict[str, Callable[[Any], Any]]:
    def run(source: str) -> Callable[[Any], Any]:
        return lambda ds: eval(source, {"ds": ds, "rows": rows})

    return {name: run(source) for name, source in OPERATIONS.items()}


def peak_mib(library: str, uri: str, store: dict[str, str], rows: np.ndarray, name: str) -> float:
    """The operation's peak memory rise in a fresh process, the dataset opened first."""
    module = "lancelet" if library == "lancelet" else "lance"
    setup = (
        warm_up(module)
        + f"""
import numpy as np
import {module} as library
rows = np.array({rows.tolist()!r}, dtype=np.int64)
ds = library.dataset({uri!r}, storage_options={store!r})
ds.count_rows()
"""
    )
    return rise_mib(setup, OPERATIONS[name])


def measure(
    open_dataset: Callable[[], Any], op: Callable[[Any], Any], counter: Counter, runs: int
) -> tuple[float, int, int]:
    counter.reset()
    op(open_dataset())
    requests, sent = counter.requests, counter.bytes_out
    seconds = median_time(lambda: op(open_dataset()), runs)
    return seconds, requests, sent


def table_row(cells: Iterable[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    import boto3
    import lance

    import lancelet

    counter = Counter()
    endpoint = start_server(counter)
    boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=KEY[0],
        aws_secret_access_key=KEY[1],
        region_name="us-east-1",
    ).create_bucket(Bucket=BUCKET)
    uri = f"s3://{BUCKET}/lineitem"
    store = options(endpoint)
    data = lineitem(args.scale)
    lance.write_dataset(data, uri, storage_options=store)
    print(f"lineitem SF{args.scale}: {data.num_rows:,} rows, written by pylance (2.2)")
    rows = np.sort(np.random.default_rng(1).choice(data.num_rows, 100, replace=False))

    libraries = {
        "lancelet": lambda: lancelet.dataset(uri, storage_options=store),
        "pylance": lambda: lance.dataset(uri, storage_options=store),
    }
    print(
        table_row(
            [
                "operation",
                "lancelet s",
                "pylance s",
                "ratio",
                "requests (ll / py)",
                "MB (ll / py)",
                "peak MiB (ll / py)",
            ]
        )
    )
    print(table_row(["---"] * 7))
    for name, op in operations(rows).items():
        want = op(libraries["pylance"]())
        got = op(libraries["lancelet"]())
        if not got.equals(want):
            raise SystemExit(f"{name}: lancelet's result differs from pylance's")
        ours = measure(libraries["lancelet"], op, counter, args.runs)
        theirs = measure(libraries["pylance"], op, counter, args.runs)
        peaks = [peak_mib(lib, uri, store, rows, name) for lib in ("lancelet", "pylance")]
        print(
            table_row(
                [
                    name,
                    f"{ours[0]:.3f}",
                    f"{theirs[0]:.3f}",
                    f"{ours[0] / theirs[0]:.2f}",
                    f"{ours[1]} / {theirs[1]}",
                    f"{ours[2] / 1e6:.1f} / {theirs[2] / 1e6:.1f}",
                    f"{peaks[0]:.0f} / {peaks[1]:.0f}",
                ]
            )
        )


if __name__ == "__main__":
    main()
