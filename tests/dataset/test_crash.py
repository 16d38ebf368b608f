"""A writer killed at any point leaves the dataset readable and never half-committed.

Each case runs ``_proc_crash.py``, which dies with ``os._exit`` (no cleanup code
runs, as under ``kill -9``) at one step of the commit path, or is SIGKILLed for
real while streaming a large append.  Afterwards the dataset must show exactly
the versions it had before (plus the new one when the manifest had already been
published), each with exactly its rows, to lancelet and to pylance; take a new
commit; and ``cleanup_old_versions(delete_unverified=True)`` must remove what the
dead writer left behind without touching any file a manifest still names.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.table import naming
from lancelet.transaction.store import DatasetStore
from tests.dataset._proc_crash import APPEND_KEYS, APPEND_WRITER, CRASH_STATUS

# Other processes cannot see this process's memory store.
pytestmark = pytest.mark.local_files("the crashing writer runs in another process")

CHILD = Path(__file__).with_name("_proc_crash.py")
CHILD_TIMEOUT_S = 120.0

Row = tuple[int, int, int]  # (writer, seq, k)


def _table(rows: list[Row]) -> pa.Table:
    return pa.table(
        {
            name: pa.array([r[i] for r in rows], pa.int64())
            for i, name in enumerate(("writer", "seq", "k"))
        }
    )


def _rows_of(table: pa.Table) -> list[Row]:
    table = table.select(["writer", "seq", "k"]).sort_by("k")
    columns = [table.column(c).to_pylist() for c in ("writer", "seq", "k")]
    return list(zip(*columns, strict=True))


def _build(uri: str) -> dict[int, list[Row]]:
    """Three versions with several fragments and a deletion file; returns their rows."""
    base = [(0, 0, k) for k in range(30)]
    ll.write_dataset(_table(base), uri, max_rows_per_file=10)  # fragments k 0-9, 10-19, 20-29
    more = [(1, 0, k) for k in range(100, 110)]
    ll.write_dataset(_table(more), uri, mode="append")
    ll.dataset(uri).delete("k >= 3 AND k < 5")
    v3 = [r for r in base + more if not 3 <= r[2] < 5]
    return {1: base, 2: base + more, 3: v3}


# -- files on disk versus files the manifests name -------------------------------------------


def _files_on_disk(uri: str) -> set[str]:
    found = set()
    for parent, _dirs, files in os.walk(uri):
        for name in files:
            found.add(os.path.relpath(os.path.join(parent, name), uri))
    return found


def _referenced(uri: str) -> set[str]:
    """Every file some manifest on disk needs (the manifests and the hint included)."""
    store = DatasetStore(uri)
    names = {os.path.join(naming.VERSIONS_DIR, naming.VERSION_HINT)}
    for location in store.list_versions():
        manifest = store.read_manifest(location.version)
        names.add(os.path.join(naming.VERSIONS_DIR, location.name))
        if manifest.transaction_file:
            names.add(os.path.join(naming.TRANSACTIONS_DIR, manifest.transaction_file))
        for fragment in manifest.fragments:
            names.update(os.path.join(naming.DATA_DIR, f.path) for f in fragment.files)
            if fragment.deletion_file is not None:
                path = store.deletion_path(fragment.id, fragment.deletion_file)
                names.add(os.path.relpath(path, uri))
    return names


def _orphan_kinds(uri: str) -> dict[str, set[str]]:
    """Unreferenced files, grouped as "<top directory>" or "<top directory>-temp"."""
    missing = (
        _referenced(uri)
        - _files_on_disk(uri)
        - {os.path.join(naming.VERSIONS_DIR, naming.VERSION_HINT)}
    )
    assert not missing, f"manifests name files that do not exist: {missing}"
    kinds: dict[str, set[str]] = {}
    for orphan in _files_on_disk(uri) - _referenced(uri):
        top = orphan.split(os.sep)[0]
        kind = f"{top}-temp" if orphan.endswith(".tmp") else top
        kinds.setdefault(kind, set()).add(orphan)
    return kinds


# -- reading every version both ways ---------------------------------------------------------


def _check_versions(uri: str, expected: dict[int, list[Row]]) -> None:
    latest = max(expected)
    assert ll.dataset(uri).version == latest
    assert lance.dataset(uri).version == latest
    assert [v["version"] for v in ll.dataset(uri).versions()] == sorted(expected)
    assert [v["version"] for v in lance.dataset(uri).versions()] == sorted(expected)
    for version, rows in expected.items():
        ours = ll.dataset(uri, version=version)
        theirs = lance.dataset(uri, version=version)
        assert _rows_of(ours.to_table()) == sorted(rows, key=lambda r: r[2]), version
        assert _rows_of(theirs.to_table()) == sorted(rows, key=lambda r: r[2]), version
        theirs.validate()
        ours.validate()


# -- the child ------------------------------------------------------------------------------


def _crash(uri: str, point: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(CHILD), uri, point],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
    )
    assert proc.returncode == CRASH_STATUS, (
        f"{point}: expected the child to die at the crash point, got status "
        f"{proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    )


def _sigkill_during_append(uri: str, ready: Callable[[set[str], set[str]], bool]) -> None:
    """Start a slow streaming append and SIGKILL it once ``ready(complete, temp)`` holds,
    given the new data files so far: finished ones and ones still being written."""
    data = Path(uri) / naming.DATA_DIR
    before = {p.name for p in data.iterdir()}
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), uri, "slow_append"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + CHILD_TIMEOUT_S
        while True:
            new = {p.name for p in data.iterdir()} - before
            temp = {n for n in new if n.endswith(".tmp")}
            if ready(new - temp, temp):
                break
            assert proc.poll() is None, f"the append ended on its own: {proc.communicate()}"
            assert time.monotonic() < deadline, "the append never got far enough"
            time.sleep(0.002)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=CHILD_TIMEOUT_S)
        assert proc.returncode == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- after the crash -------------------------------------------------------------------------


def _check_recovery(uri: str, expected: dict[int, list[Row]], orphans: set[str]) -> None:
    """The checks every crash shares, from "readable" to "cleaned up"."""
    kinds = _orphan_kinds(uri)
    assert set(kinds) == orphans, kinds
    _check_versions(uri, expected)

    # A new commit on top works, and does not disturb the older versions.
    latest = max(expected)
    extra = [(8, 0, k) for k in range(900, 905)]
    ds = ll.write_dataset(_table(extra), uri, mode="append")
    assert ds.version == latest + 1
    expected = {**expected, latest + 1: expected[latest] + extra}
    _check_versions(uri, expected)

    # A cleanup that keeps every version, promised that nobody is writing, removes every
    # file the dead writer left and no file any version needs (pylance 14 would leave
    # the transaction, deletion and staging files newer than the oldest kept version).
    referenced = _referenced(uri)
    ll.dataset(uri).cleanup_old_versions(
        older_than=timedelta(0), retain_versions=1000, delete_unverified=True
    )
    assert _orphan_kinds(uri) == {}
    assert referenced <= _files_on_disk(uri)
    _check_versions(uri, expected)

    # ...and the usual one also drops the old versions, leaving only what the latest needs.
    ll.dataset(uri).cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    assert _orphan_kinds(uri) == {}
    assert _files_on_disk(uri) == _referenced(uri)
    _check_versions(uri, {latest + 1: expected[latest + 1]})


# (crash point, whether the new version landed, the leftovers it must leave)
CRASH_POINTS = [
    ("before_transaction", False, {"data"}),
    ("mid_transaction_temp", False, {"data", "_transactions-temp"}),
    ("before_publish", False, {"data", "_transactions"}),
    ("mid_manifest_temp", False, {"data", "_transactions", "_versions-temp"}),
    # The staging file is a second hard link to the published manifest.
    ("after_manifest_link", True, {"_versions-temp"}),
    ("before_hint", True, set()),
    # The hint is overwritten in place: a torn one is left, which readers must check.
    ("mid_hint_write", True, set()),
    ("delete_before_transaction", False, {"_deletions"}),
    ("rebased_delete_before_transaction", False, {"_deletions", "_transactions"}),
]


@pytest.mark.parametrize(
    ("point", "landed", "orphans"), CRASH_POINTS, ids=[p[0] for p in CRASH_POINTS]
)
def test_crash_at_commit_step(tmp_path: Path, point: str, landed: bool, orphans: set[str]) -> None:
    uri = str(tmp_path / "ds")
    expected = _build(uri)
    _crash(uri, point)
    if landed:
        # The manifest was published before the crash: the commit happened.
        expected[4] = expected[3] + [(APPEND_WRITER, 0, k) for k in APPEND_KEYS]
    if point == "rebased_delete_before_transaction":
        # Both the planned deletion file and the one merged with version 3's were left.
        assert len(_orphan_kinds(uri)["_deletions"]) == 2
    _check_recovery(uri, expected, orphans)


@pytest.mark.parametrize("point", ["create_before_publish", "create_mid_manifest_temp"])
def test_crash_while_creating(tmp_path: Path, point: str) -> None:
    uri = str(tmp_path / "ds")
    _crash(uri, point)
    # Files were left, but no manifest: there is no dataset, for either implementation.
    assert (Path(uri) / naming.DATA_DIR).is_dir()
    with pytest.raises(ll.errors.DatasetNotFoundError):
        ll.dataset(uri)
    with pytest.raises(ValueError, match="not found"):
        lance.dataset(uri)
    # So mode="create" still works there, and the usual checks apply from then on.
    rows = [(0, 0, k) for k in range(10)]
    ll.write_dataset(_table(rows), uri, mode="create")
    orphans = {"data", "_transactions"}
    if point == "create_mid_manifest_temp":
        orphans.add("_versions-temp")
    _check_recovery(uri, {1: rows}, orphans)


# When to SIGKILL the appender, given the new data files: finished ones and ones being written.
SIGKILL_POINTS: dict[str, Callable[[set[str], set[str]], bool]] = {
    "first-file-open": lambda done, temp: bool(temp),
    "after-two-files": lambda done, temp: len(done) >= 2,
}


@pytest.mark.parametrize("when", list(SIGKILL_POINTS))
def test_sigkill_during_large_append(tmp_path: Path, when: str) -> None:
    uri = str(tmp_path / "ds")
    expected = _build(uri)
    _sigkill_during_append(uri, SIGKILL_POINTS[when])
    # The append never reached its commit, so it can only have left data files behind.
    orphans = set(_orphan_kinds(uri))
    assert orphans and orphans <= {"data", "data-temp"}, orphans
    if when == "after-two-files":
        assert "data" in orphans
    _check_recovery(uri, expected, orphans)
