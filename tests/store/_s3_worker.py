"""One writer of the S3 concurrency tests, run in a pool of processes started with
the spawn context (pylance is not fork-safe) and reused by the tests.

:func:`run` takes a spec: ``impl`` ("lancelet" or "pylance"), ``uri``, ``options``
and ``ops``, a list of ``{"op": "append", "keys": [...]}``, ``{"op": "delete",
"lo": .., "hi": .., "mod": .., "rem": ..}`` or ``{"op": "create", "keys": [...]}``.
Writers meet at a barrier (files in ``sync``) before they start, so they overlap;
lancelet writers with ``sync_commit`` meet again with their first manifest built
and not yet published, so that they race for one version.  Each committed operation
is reported as ``(version, op)``; a failed one as the error's class and message.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

CONFLICT_RETRIES = 8
BARRIER_TIMEOUT_S = 60.0


def warm() -> None:
    """Pool initializer: the imports, once per process rather than once per test."""
    import lance  # noqa: F401

    import lancelet  # noqa: F401


def barrier(sync: str, name: str, me: str, parties: int) -> None:
    """Wait until ``parties`` writers arrived at barrier ``name``."""
    open(os.path.join(sync, f"{name}-{me}"), "w").close()
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while sum(f.startswith(f"{name}-") for f in os.listdir(sync)) < parties:
        if time.monotonic() > deadline:
            raise TimeoutError(f"barrier {name!r}: fewer than {parties} writers arrived")
        time.sleep(0.002)


def delete_sql(op: dict[str, Any]) -> str:
    return f"k >= {op['lo']} AND k < {op['hi']} AND k % {op['mod']} = {op['rem']}"


def deleted(op: dict[str, Any], k: int) -> bool:
    return bool(op["lo"] <= k < op["hi"] and k % op["mod"] == op["rem"])


def table(keys: list[int], tag: str) -> Any:
    from tests.store import rows

    return rows.table(rows.make(keys, tag))


@contextmanager
def _first_commit_held(wait: Callable[[], None]) -> Iterator[None]:
    """Make the first manifest this writer publishes wait for the other parties."""
    from lancelet.transaction.store import DatasetStore

    checked = DatasetStore.checked_manifest_bytes
    held = {"done": False}

    def synced(self: DatasetStore, manifest: Any) -> bytes:
        data = checked(self, manifest)
        if not held["done"]:
            held["done"] = True
            wait()
        return data

    DatasetStore.checked_manifest_bytes = synced  # type: ignore[method-assign]
    try:
        yield
    finally:
        DatasetStore.checked_manifest_bytes = checked  # type: ignore[method-assign]


def _lancelet(spec: dict[str, Any], op: dict[str, Any]) -> int:
    import lancelet as ll

    uri, opts, tag = spec["uri"], spec["options"], spec["tag"]
    if op["op"] == "create":
        return ll.write_dataset(table(op["keys"], tag), uri, storage_options=opts).version
    if op["op"] == "append":
        data = table(op["keys"], tag)
        return ll.write_dataset(data, uri, mode="append", storage_options=opts).version
    ds = ll.dataset(uri, storage_options=opts)
    ds.delete(delete_sql(op))
    return ds.version


def _pylance(spec: dict[str, Any], op: dict[str, Any]) -> int:
    import lance

    uri, opts, tag = spec["uri"], spec["options"], spec["tag"]
    if op["op"] == "create":
        return lance.write_dataset(table(op["keys"], tag), uri, storage_options=opts).version
    if op["op"] == "append":
        data = table(op["keys"], tag)
        return lance.write_dataset(data, uri, mode="append", storage_options=opts).version
    for attempt in range(CONFLICT_RETRIES):
        ds = lance.dataset(uri, storage_options=opts)
        try:
            ds.delete(delete_sql(op))
        except (OSError, ValueError, RuntimeError) as exc:
            # pylance does not rebase every delete; a conflict is retried by the caller.
            if "onflict" not in str(exc) or attempt == CONFLICT_RETRIES - 1:
                raise
            time.sleep(0.05)
            continue
        return int(ds.version)
    raise AssertionError("unreachable")


def run(spec: dict[str, Any]) -> dict[str, Any]:
    report: dict[str, Any] = {"name": spec["name"], "commits": [], "error": None}
    me, sync = spec["name"], spec["sync"]
    try:
        do = _pylance if spec["impl"] == "pylance" else _lancelet
        if spec.get("sync_commit"):
            held = _first_commit_held(lambda: barrier(sync, "commit", me, spec["commit_parties"]))
        else:
            held = _first_commit_held(lambda: None)
        with held:
            barrier(sync, "start", me, spec["parties"])
            for op in spec["ops"]:
                report["commits"].append((do(spec, op), op))
    except BaseException as exc:  # reported to the parent, which decides
        report["error"] = (type(exc).__name__, str(exc), traceback.format_exc())
    return report
