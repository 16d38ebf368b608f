"""Concurrent writers in separate OS processes: no commit is lost, none is applied twice.

Each writer is ``_proc_concurrent.py`` in its own interpreter, so the only thing
the writers share is the dataset directory, as with real independent clients.
Every writer reports which version each of its commits became; the test then
replays those commits in version order and checks that every version, read by
lancelet and by pylance, holds exactly the rows the replay predicts.  That is
stronger than checking the final table alone: a commit that overwrote another
(a lost update) or a version built on a stale base would show up at the version
where it happened.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.transaction.store import DatasetStore

# Other processes cannot see this process's memory store.
pytestmark = pytest.mark.local_files("writers run in other processes")

WORKER = Path(__file__).with_name("_proc_concurrent.py")
# Generous: a slow shared machine may take seconds just to start four interpreters.
PROCESS_TIMEOUT_S = 180.0

Row = tuple[int, int, int]  # (writer, seq, k)


@dataclass(frozen=True)
class Pred:
    """A delete predicate, as SQL for the writer and as Python for the oracle."""

    writer: int | None = None
    seq: int | None = None
    k_lo: int | None = None
    k_hi: int | None = None  # exclusive

    def sql(self) -> str:
        parts = []
        if self.writer is not None:
            parts.append(f"writer = {self.writer}")
        if self.seq is not None:
            parts.append(f"seq = {self.seq}")
        if self.k_lo is not None:
            parts.append(f"k >= {self.k_lo}")
        if self.k_hi is not None:
            parts.append(f"k < {self.k_hi}")
        return " AND ".join(parts)

    def matches(self, row: Row) -> bool:
        writer, seq, k = row
        return (
            (self.writer is None or writer == self.writer)
            and (self.seq is None or seq == self.seq)
            and (self.k_lo is None or k >= self.k_lo)
            and (self.k_hi is None or k < self.k_hi)
        )


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


def _run_workers(tmp_path: Path, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Start one process per spec, release them together, and return their reports."""
    sync = tmp_path / "sync"
    sync.mkdir()
    procs = []
    # Readers and pylance writers never reach the (lancelet-only) commit barrier.
    committers = sum(spec["role"] != "read" and spec.get("impl") != "pylance" for spec in specs)
    for spec in specs:
        spec = {**spec, "sync": str(sync), "parties": committers}
        spec["result"] = str(tmp_path / f"result-{spec['name']}.json")
        procs.append(
            (
                spec,
                subprocess.Popen(
                    [sys.executable, str(WORKER), json.dumps(spec)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
            )
        )
    try:
        # Release everyone only once all have paid the interpreter start-up cost.
        deadline = time.monotonic() + PROCESS_TIMEOUT_S
        while sum(p.name.startswith("ready-") for p in sync.iterdir()) < len(specs):
            exited = [p for _, p in procs if p.poll() is not None]
            assert not exited, f"a worker died during start-up: {exited[0].communicate()}"
            assert time.monotonic() < deadline, "workers did not start in time"
            time.sleep(0.01)
        (sync / "go").touch()
        reports = []
        # Readers last: they run until every writer is done and the stop file exists.
        for spec, proc in sorted(procs, key=lambda sp: sp[0]["role"] == "read"):
            if spec["role"] == "read":
                (sync / "stop").touch()
            out, err = proc.communicate(timeout=PROCESS_TIMEOUT_S)
            assert proc.returncode == 0, f"worker {spec['name']} failed:\n{out}\n{err}"
            reports.append(json.loads(Path(spec["result"]).read_text()))
    finally:
        for _, proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return reports


def _replay(
    base: list[Row], commits: list[dict[str, Any]], preds: dict[str, Pred]
) -> list[list[Row]]:
    """The rows of every version (index 0 is version 1), from the reported commits."""
    states = [sorted(base, key=lambda r: r[2])]
    rows = set(base)
    for commit in sorted(commits, key=lambda c: c["version"]):
        if commit["op"] == "append":
            added = set(commit["rows"])
            assert not added & rows, f"version {commit['version']} re-added existing rows"
            rows |= added
        else:
            pred = preds[commit["predicate"]]
            rows = {r for r in rows if not pred.matches(r)}
        states.append(sorted(rows, key=lambda r: r[2]))
    return states


def _check_history(uri: str, states: list[list[Row]]) -> None:
    """Every version, read by both implementations, holds exactly the replayed rows."""
    latest = len(states)
    assert ll.dataset(uri).version == latest
    assert [v["version"] for v in ll.dataset(uri).versions()] == list(range(1, latest + 1))
    assert [v["version"] for v in lance.dataset(uri).versions()] == list(range(1, latest + 1))
    for version, expected in enumerate(states, start=1):
        ours = ll.dataset(uri, version=version)
        theirs = lance.dataset(uri, version=version)
        assert _rows_of(ours.to_table()) == expected, f"lancelet, version {version}"
        assert _rows_of(theirs.to_table()) == expected, f"pylance, version {version}"
        assert ours.count_rows() == theirs.count_rows() == len(expected)
    final = lance.dataset(uri)
    final.validate()
    ll.dataset(uri).validate()
    assert ll.dataset(uri).to_table().sort_by("k").equals(final.to_table().sort_by("k"))


def _commits(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for report in reports:
        assert report["error"] is None, f"{report['name']}: {report.get('traceback')}"
    return [c for report in reports for c in report["commits"]]


def _check_versions_distinct(commits: list[dict[str, Any]]) -> None:
    # Each successful commit became its own version: none overwrote another's manifest.
    versions = sorted(c["version"] for c in commits)
    assert versions == list(range(2, 2 + len(commits)))


@pytest.mark.parametrize(
    ("sync_commit", "pylance_writers"),
    [(True, ()), (False, ()), (False, (0, 3))],
    ids=["same-read-version", "free-running", "mixed-with-pylance"],
)
def test_concurrent_appends_and_deletes(
    tmp_path: Path, sync_commit: bool, pylance_writers: tuple[int, ...]
) -> None:
    uri = str(tmp_path / "ds")
    base = [(-1, 0, k) for k in range(-20, 0)]
    ll.write_dataset(_table(base), uri, max_rows_per_file=7)
    writers, appends, per = 4, 5, 6
    # Writers 2 and 3 delete some of their own rows while everyone keeps appending:
    # a whole append's fragment (removed) and part of one (a deletion vector).
    own_deletes = {
        2: [(1, Pred(writer=2, seq=1)), (3, Pred(writer=2, seq=3, k_lo=2032, k_hi=2035))],
        3: [(0, Pred(writer=3, seq=0, k_hi=3002)), (4, Pred(writer=3, seq=2))],
    }
    preds = {p.sql(): p for plans in own_deletes.values() for _, p in plans}
    specs = [
        {
            "role": "append",
            "name": f"w{w}",
            "uri": uri,
            "writer": w,
            "appends": appends,
            "rows_per_append": per,
            "deletes": [{"after": a, "predicate": p.sql()} for a, p in own_deletes.get(w, [])],
            "sync_commit": sync_commit,
            "impl": "pylance" if w in pylance_writers else "lancelet",
        }
        for w in range(writers)
    ]
    # A reader opens the latest version again and again while the writers commit.
    specs.append({"role": "read", "name": "r", "uri": uri, "sync_commit": sync_commit})
    reports = _run_workers(tmp_path, specs)
    commits = _commits(reports)
    assert len(commits) == writers * appends + sum(len(d) for d in own_deletes.values())
    _check_versions_distinct(commits)
    for c in commits:
        if c["op"] == "append":
            c["rows"] = [tuple(r) for r in c["rows"]]  # JSON made them lists
    # A delete of a writer's own rows sees exactly the rows it appended earlier.
    appended = [r for c in commits if c["op"] == "append" for r in c["rows"]]
    for c in commits:
        if c["op"] == "delete":
            assert c["deleted"] == sum(preds[c["predicate"]].matches(r) for r in appended)
    if sync_commit:
        # All first commits targeted version 2, so all but one lost that race and rebased.
        assert sum(r["lost_races"] for r in reports) >= writers - 1
    states = _replay(base, commits, preds)
    final = states[-1]
    assert len({r[2] for r in final}) == len(final)
    deleted = sum(p.matches(r) for p in preds.values() for r in appended)
    assert len(final) == len(base) + writers * appends * per - deleted
    _check_history(uri, states)
    # Every snapshot the reader saw was exactly some committed version, never a mix.
    (reads,) = [r["reads"] for r in reports if r["name"] == "r"]
    assert reads and reads[-1]["version"] == len(states)
    for read in reads:
        assert read["keys"] == [r[2] for r in states[read["version"] - 1]], read["reader"]
    # The result is an ordinary dataset: it takes a further append.
    ll.write_dataset(_table([(9, 9, 10_000)]), uri, mode="append")
    assert lance.dataset(uri).count_rows() == len(final) + 1


@pytest.mark.parametrize("pylance_writers", [(), ("d1", "d2")], ids=["lancelet", "with-pylance"])
def test_concurrent_deletes_on_same_fragment_merge(
    tmp_path: Path, pylance_writers: tuple[str, ...]
) -> None:
    uri = str(tmp_path / "ds")
    base = [(-1, 0, k) for k in range(200)]
    # Two fragments: k 0..99 and k 100..199.
    ll.write_dataset(_table(base), uri, max_rows_per_file=100)
    plans = {
        "d0": [Pred(k_lo=0, k_hi=10), Pred(k_lo=100, k_hi=150)],
        "d1": [Pred(k_lo=20, k_hi=30), Pred(k_lo=150, k_hi=200)],
        # Overlaps d0's and d1's first deletes: the union must not double count.
        "d2": [Pred(k_lo=40, k_hi=50), Pred(k_lo=5, k_hi=25)],
        "d3": [Pred(k_lo=60, k_hi=70), Pred(k_lo=99, k_hi=100)],
    }
    preds = {p.sql(): p for ps in plans.values() for p in ps}
    specs = [
        {
            "role": "delete",
            "name": name,
            "uri": uri,
            "predicates": [p.sql() for p in ps],
            "impl": "pylance" if name in pylance_writers else "lancelet",
            # Every first delete is planned on version 1.  With only lancelet writers they
            # then race for version 2; alongside pylance, lancelet's wait until all of
            # pylance's deletes (which cannot be held back) are in, then merge with them.
            "read_version": 1,
            "sync_commit": not pylance_writers,
            "hold_until_version": 1 + 2 * len(pylance_writers) if pylance_writers else None,
        }
        for name, ps in plans.items()
    ]
    reports = _run_workers(tmp_path, specs)
    commits = _commits(reports)
    assert len(commits) == 8
    _check_versions_distinct(commits)
    if pylance_writers:
        # Each lancelet delete found fragment 0 changed by pylance and merged with that.
        assert all(r["lost_races"] >= 1 for r in reports if r["name"] not in pylance_writers)
    else:
        # All four first deletes target version 2 and touch fragment 0.
        assert sum(r["lost_races"] for r in reports) >= 3
    states = _replay(base, commits, preds)
    survivors = [r for r in base if not any(p.matches(r) for p in preds.values())]
    assert states[-1] == survivors
    _check_history(uri, states)
    # Fragment 1 lost its two halves to two different writers: it is gone entirely, and
    # fragment 0 carries one deletion vector holding the union of all the others.
    fragments = lance.dataset(uri).get_fragments()
    assert [f.fragment_id for f in fragments] == [0]
    assert fragments[0].count_rows() == len(survivors)
    deletion = fragments[0].metadata.deletion_file
    assert deletion is not None and deletion.num_deleted_rows == 100 - len(survivors)


@pytest.mark.parametrize("sync_commit", [True, False], ids=["same-read-version", "free-running"])
def test_concurrent_create_exactly_one_wins(tmp_path: Path, sync_commit: bool) -> None:
    uri = str(tmp_path / "ds")
    creators = 6
    specs = [
        {
            "role": "create",
            "name": f"c{w}",
            "uri": uri,
            "writer": w,
            "rows": 3 + w,
            "sync_commit": sync_commit,
        }
        for w in range(creators)
    ]
    reports = _run_workers(tmp_path, specs)
    winners = [r for r in reports if r["error"] is None]
    losers = [r for r in reports if r["error"] is not None]
    assert len(winners) == 1, reports
    assert {r["error"] for r in losers} == {"DatasetAlreadyExistsError"}, losers
    if sync_commit:
        # The losers got as far as publishing version 1 and lost that race.
        assert all(r["lost_races"] == 1 for r in losers)
    (commit,) = winners[0]["commits"]
    assert commit["version"] == 1
    writer = int(winners[0]["name"][1:])
    expected = [(writer, 0, k) for k in commit["keys"]]
    assert len(expected) == 3 + writer
    _check_history(uri, [expected])
    # Whatever the losers left behind, cleanup removes it and keeps the winner's files.
    data = Path(uri) / "data"
    ll.dataset(uri).cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    live = {f.path for f in DatasetStore(uri).read_manifest(1).fragments[0].files}
    assert {p.name for p in data.iterdir()} == live
    _check_history(uri, [expected])
