"""Local writers of one dataset take turns on an advisory lock of its ``_versions``
directory while they commit; the lock orders commits but never decides them."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pytest

import lancelet
from lancelet.io import queue
from lancelet.transaction import commit as commit_module
from lancelet.transaction.store import DatasetStore


def _rows(start: int, count: int = 3) -> pa.Table:
    return pa.table({"k": pa.array(range(start, start + count), pa.int64())})


@contextmanager
def _held(directory: Path) -> Iterator[None]:
    """The directory's lock held, as another writer would hold it: its own open file."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def _free_within(directory: Path, seconds: float) -> bool:
    """Whether the lock is free at some moment within ``seconds`` (a holder that is
    letting go, a forked child closing its copies, may take a moment)."""
    deadline = time.monotonic() + seconds
    while not _free(directory):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _free(directory: Path) -> bool:
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_a_turn_holds_the_directory_until_the_block_ends(tmp_path: Path) -> None:
    with queue.turn(str(tmp_path)) as held:
        assert held
        assert not _free(tmp_path)
    assert _free(tmp_path)


def test_a_turn_waits_for_the_holder(tmp_path: Path) -> None:
    released = threading.Event()

    def release_later() -> None:
        time.sleep(0.2)
        released.set()

    with _held(tmp_path):
        threading.Thread(target=release_later).start()
        released.wait()
    # The holder is gone: the turn comes at once.
    start = time.monotonic()
    with queue.turn(str(tmp_path)) as held:
        assert held and time.monotonic() - start < 0.5


def test_a_turn_given_up_after_its_patience(tmp_path: Path) -> None:
    with _held(tmp_path):
        start = time.monotonic()
        with queue.turn(str(tmp_path), patience_s=0.1) as held:
            waited = time.monotonic() - start
            assert not held
    assert 0.1 <= waited < 1.0


def test_no_directory_no_turn(tmp_path: Path) -> None:
    with queue.turn(str(tmp_path / "missing")) as held:
        assert not held


def test_a_commit_waits_for_the_writer_whose_turn_it_is(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    lancelet.write_dataset(_rows(0), uri)
    done = threading.Event()

    def append() -> None:
        lancelet.write_dataset(_rows(10), uri, mode="append")
        done.set()

    with _held(tmp_path / "ds" / "_versions"):
        writer = threading.Thread(target=append)
        writer.start()
        # The append's data and transaction files are written; its commit waits.
        assert not done.wait(0.4)
        assert lancelet.dataset(uri).version == 1
    writer.join(5)
    assert done.is_set()
    ds = lancelet.dataset(uri)
    assert ds.version == 2
    assert sorted(ds.to_table()["k"].to_pylist()) == [0, 1, 2, 10, 11, 12]


def test_a_commit_goes_ahead_when_its_turn_does_not_come(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A holder that never lets go (a stopped process) delays commits, never stops
    them: put-if-not-exists still decides."""
    uri = str(tmp_path / "ds")
    lancelet.write_dataset(_rows(0), uri)
    monkeypatch.setattr(queue, "_PATIENCE_S", 0.2)
    with _held(tmp_path / "ds" / "_versions"):
        start = time.monotonic()
        lancelet.write_dataset(_rows(10), uri, mode="append")
        assert time.monotonic() - start >= 0.2
    assert lancelet.dataset(uri).count_rows() == 6


def test_a_writer_that_lost_waits_out_of_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that lost to one outside the queue sleeps with the lock free, so the
    others commit meanwhile."""
    uri = str(tmp_path / "ds")
    lancelet.write_dataset(_rows(0), uri)
    versions = tmp_path / "ds" / "_versions"
    publish = DatasetStore.publish_manifest
    lost = []

    def lose_once(self: DatasetStore, *args: object, **kwargs: object) -> bool:
        if not lost:
            lost.append(True)
            # Another writer, outside the queue, takes the version first.
            lancelet.write_dataset(_rows(20), uri, mode="append")
            return False
        return publish(self, *args, **kwargs)  # type: ignore[arg-type]

    free_while_waiting = []
    wait = commit_module._wait_to_retry

    def checked_wait(*args: object) -> None:
        free_while_waiting.append(_free_within(versions, 0.5))
        wait(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(DatasetStore, "publish_manifest", lose_once)
    monkeypatch.setattr(commit_module, "_wait_to_retry", checked_wait)
    monkeypatch.setattr(queue, "_PATIENCE_S", 0.2)
    lancelet.write_dataset(_rows(10), uri, mode="append")
    assert free_while_waiting == [True]
    ds = lancelet.dataset(uri)
    assert ds.version == 3
    assert sorted(ds.to_table()["k"].to_pylist()) == [0, 1, 2, 10, 11, 12, 20, 21, 22]


def _append_several(uri: str, writer: int, appends: int, start: object, out: object) -> None:
    # In a child process: appends, all writers at once, counting the races this one lost.
    lost = []
    wait = commit_module._wait_to_retry

    def counted(*args: object) -> None:
        lost.append(True)
        wait(*args)  # type: ignore[arg-type]

    commit_module._wait_to_retry = counted  # type: ignore[assignment]
    start.wait()  # type: ignore[attr-defined]
    for seq in range(appends):
        lancelet.write_dataset(_rows(1000 * writer + 10 * seq), uri, mode="append")
    out.put(len(lost))  # type: ignore[attr-defined]


APPENDS = 15


def test_writer_processes_take_turns_and_lose_nothing(tmp_path: Path) -> None:
    import multiprocessing

    uri = str(tmp_path / "ds")
    lancelet.write_dataset(_rows(0), uri)
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Barrier(3), ctx.Queue()
    writers = [
        ctx.Process(target=_append_several, args=(uri, w, APPENDS, start, out)) for w in (1, 2, 3)
    ]
    for proc in writers:
        proc.start()
    lost = [out.get(timeout=120) for _ in writers]
    for proc in writers:
        proc.join(30)
        assert proc.exitcode == 0
    # Every commit had its turn: none lost a race, so none slept.
    assert lost == [0, 0, 0]
    ds = lancelet.dataset(uri)
    assert ds.version == 1 + 3 * APPENDS
    expected = [0, 1, 2] + [
        1000 * w + 10 * s + i for w in (1, 2, 3) for s in range(APPENDS) for i in range(3)
    ]
    assert sorted(ds.to_table()["k"].to_pylist()) == sorted(expected)
    assert [v["version"] for v in ds.versions()] == list(range(1, 2 + 3 * APPENDS))


def test_a_child_forked_during_a_turn_does_not_keep_it(tmp_path: Path) -> None:
    with queue.turn(str(tmp_path)) as held:
        assert held
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child: outlive the parent's turn a while
            time.sleep(1.0)
            os._exit(0)
    try:
        # The parent's turn is over; the child, alive for a second, holds nothing.
        assert _free_within(tmp_path, 0.5)
    finally:
        os.waitpid(pid, 0)


def test_a_child_forked_mid_turn_leaves_its_own_files_open(tmp_path: Path) -> None:
    """The block a child inherits mid-turn ends without closing the descriptor number
    it held: the fork closed that, and the child may have reused the number."""
    with queue.turn(str(tmp_path)) as held:
        assert held
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            reused = os.open(tmp_path, os.O_RDONLY)  # likely the number the turn held
    if pid == 0:  # pragma: no cover - the child, after its inherited block ended
        try:
            os.fstat(reused)
            os._exit(0)
        except OSError:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
