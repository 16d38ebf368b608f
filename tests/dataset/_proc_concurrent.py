"""Subprocess entry point for tests/dataset/test_concurrency.py: one concurrent writer.

Run as ``python _proc_concurrent.py SPEC_JSON``.  The spec says what to do:

* ``role``: ``"append"`` (appends, each optionally followed by deletes of rows this
  writer owns), ``"delete"`` (deletes by predicate), ``"create"`` (one
  ``mode="create"`` write) or ``"read"`` (opens the latest version repeatedly until
  the parent creates a ``stop`` file).  For appends and deletes, ``impl: "pylance"``
  makes pylance the writer.
* ``uri``, ``sync`` (a directory used for the barriers), ``name``, ``parties``,
  ``result`` (where the JSON report goes), ``sync_commit``, plus role-specific keys.
  ``parties`` counts the processes that meet at the commit barrier: lancelet writers.

Two barriers make the overlap real rather than hoped for on a busy 2-core machine:
every process first waits for a ``go`` file the parent creates once all of them
have imported lancelet, and with ``sync_commit`` the first commit of each process
also waits, once its manifest is built on the latest version and before it is
published, until all parties got that far.  They then all race for the same version, so all but one
must lose ``put_if_not_exists`` and rebase (or, for creates, fail).  With
``hold_until_version`` the first commit instead waits until other writers (which
cannot be hooked, such as pylance) have committed up to that version.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import pyarrow as pa

import lancelet as ll
from lancelet.transaction.store import DatasetStore

BARRIER_TIMEOUT_S = 90.0


def _wait_for(sync: str, prefix: str, count: int) -> None:
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while sum(name.startswith(prefix) for name in os.listdir(sync)) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"barrier {prefix!r}: fewer than {count} parties arrived")
        time.sleep(0.002)


def _arrive(sync: str, marker: str) -> None:
    with open(os.path.join(sync, marker), "w"):
        pass


def _instrument(spec: dict[str, Any], report: dict[str, Any]) -> None:
    """Count lost publish races, and hold the first commit at the commit barrier."""
    publish = DatasetStore.publish_manifest
    checked_bytes = DatasetStore.checked_manifest_bytes
    held = {"done": False}

    def counting_publish(self: DatasetStore, manifest: Any, *args: Any) -> bool:
        won = publish(self, manifest, *args)
        if not won:
            report["lost_races"] += 1
        return won

    def synced_checked_bytes(self: DatasetStore, manifest: Any) -> bytes:
        # Called once the latest version was read and the manifest built, just before
        # it is published.
        data = checked_bytes(self, manifest)
        if held["done"]:
            return data
        held["done"] = True
        if spec["sync_commit"]:
            _arrive(spec["sync"], f"commit-{spec['name']}")
            _wait_for(spec["sync"], "commit-", spec["parties"])
        if spec.get("hold_until_version"):
            # Wait for writers we cannot hook into (pylance) to commit on top of the
            # version this manifest was built on, so that it has to rebase over theirs.
            deadline = time.monotonic() + BARRIER_TIMEOUT_S
            while self.latest_version() < spec["hold_until_version"]:
                if time.monotonic() > deadline:
                    raise TimeoutError("the other writers never committed")
                time.sleep(0.002)
        return data

    DatasetStore.publish_manifest = counting_publish  # type: ignore[method-assign]
    DatasetStore.checked_manifest_bytes = synced_checked_bytes  # type: ignore[method-assign]
    # These writers race, as writers on different machines (or beside pylance) do: the
    # turns local writers otherwise take (tests/io/test_writers_queue.py) would keep
    # them from the conflicts these tests are about, and a writer held at the barrier
    # in its turn would hold the others back.
    DatasetStore.writers_turn = lambda self: contextlib.nullcontext(False)  # type: ignore[method-assign]


def _rows(writer: int, seq: int, keys: list[int]) -> pa.Table:
    n = len(keys)
    return pa.table(
        {"writer": pa.array([writer] * n, pa.int64()), "seq": [seq] * n, "k": pa.array(keys)}
    )


def _run_append(spec: dict[str, Any], report: dict[str, Any]) -> None:
    writer, per = spec["writer"], spec["rows_per_append"]
    # pylance as a writer too: both implementations must honour each other's commits.
    # (Imported only here, so lancelet-only workers start faster.)
    write: Callable[..., Any] = ll.write_dataset
    if spec.get("impl") == "pylance":
        import lance

        write = lance.write_dataset
    for seq in range(spec["appends"]):
        keys = [writer * 1000 + seq * 10 + i for i in range(per)]
        ds = write(_rows(writer, seq, keys), spec["uri"], mode="append")
        rows = [[writer, seq, k] for k in keys]
        report["commits"].append({"op": "append", "version": ds.version, "rows": rows})
        for delete in spec["deletes"]:
            if delete["after"] == seq:
                result = ds.delete(delete["predicate"])
                report["commits"].append(
                    {
                        "op": "delete",
                        "version": ds.version,
                        "predicate": delete["predicate"],
                        "deleted": result["num_deleted_rows"],
                    }
                )


def _run_delete(spec: dict[str, Any], report: dict[str, Any]) -> None:
    ds: Any
    if spec.get("impl") == "pylance":
        import lance

        ds = lance.dataset(spec["uri"])
    else:
        ds = ll.dataset(spec["uri"], version=spec.get("read_version"))
    for predicate in spec["predicates"]:
        result = ds.delete(predicate)
        report["commits"].append(
            {
                "op": "delete",
                "version": ds.version,
                "predicate": predicate,
                "deleted": result["num_deleted_rows"],
            }
        )


def _run_create(spec: dict[str, Any], report: dict[str, Any]) -> None:
    keys = [spec["writer"] * 100 + i for i in range(spec["rows"])]
    ds = ll.write_dataset(_rows(spec["writer"], 0, keys), spec["uri"], mode="create")
    report["commits"].append({"op": "create", "version": ds.version, "keys": keys})


def _run_read(spec: dict[str, Any], report: dict[str, Any]) -> None:
    """Open the latest version over and over while the others commit, alternately with
    lancelet and pylance, and report what each snapshot held (the parent checks it
    against the version's expected rows)."""
    import lance

    reads = report["reads"] = []
    stop = os.path.join(spec["sync"], "stop")
    while True:
        for reader in ("lancelet", "pylance"):
            ds = ll.dataset(spec["uri"]) if reader == "lancelet" else lance.dataset(spec["uri"])
            keys = ds.to_table(columns=["k"]).column("k").to_pylist()
            reads.append({"reader": reader, "version": ds.version, "keys": sorted(keys)})
        if os.path.exists(stop):
            break
        time.sleep(0.02)


def main() -> None:
    spec = json.loads(sys.argv[1])
    report: dict[str, Any] = {"name": spec["name"], "commits": [], "lost_races": 0, "error": None}
    try:
        _instrument(spec, report)
        _arrive(spec["sync"], f"ready-{spec['name']}")
        _wait_for(spec["sync"], "go", 1)
        run = {
            "append": _run_append,
            "delete": _run_delete,
            "create": _run_create,
            "read": _run_read,
        }
        run[spec["role"]](spec, report)
    except Exception as exc:
        report["error"] = type(exc).__name__
        report["traceback"] = traceback.format_exc()
    # Written last and renamed into place, so the parent never reads half a report.
    tmp = spec["result"] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f)
    os.replace(tmp, spec["result"])


if __name__ == "__main__":
    main()
