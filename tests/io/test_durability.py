"""Deferred syncs: durable local writes inside a commit sync in the background, and a
put-if-not-exists publishes only once they are done."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

import pytest

from lancelet import io
from lancelet.io import durability

FILES = io.FileIO()


def _slow_recording_sync(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """datasync replaced by one that takes a while and records, per call, the thread
    that finished it."""
    done: list[str] = []

    def sync(fd: int) -> None:
        time.sleep(0.05)
        done.append(threading.current_thread().name)

    monkeypatch.setattr(durability, "datasync", sync)
    return done


def test_outside_a_block_a_put_is_synced_before_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = _slow_recording_sync(monkeypatch)
    FILES.put(str(tmp_path / "a"), b"data")
    assert done == [threading.current_thread().name]


def test_a_publish_waits_for_the_syncs_deferred_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = _slow_recording_sync(monkeypatch)
    seen_at_link: list[int] = []
    link = os.link

    def recording_link(src: str, dst: str) -> None:
        seen_at_link.append(len(done))
        link(src, dst)

    monkeypatch.setattr(os, "link", recording_link)
    with io.deferred_syncs():
        FILES.put(str(tmp_path / "data"), b"data")
        FILES.put(str(tmp_path / "txn"), b"txn")
        # Visible at once, synced in the background.
        assert (tmp_path / "data").read_bytes() == b"data"
        assert FILES.put_if_not_exists(str(tmp_path / "manifest"), b"manifest")
    # The two deferred syncs and the manifest's own (in the background too, watched
    # for a rival's manifest) were done before its link.
    assert seen_at_link == [3]
    assert sum(name.startswith("lancelet-durable") for name in done) == 3


def test_a_failed_background_sync_stops_the_publish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(fd: int) -> None:
        if threading.current_thread().name.startswith("lancelet-durable"):
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(durability, "datasync", failing)
    with pytest.raises(OSError, match="Input/output"), io.deferred_syncs():
        FILES.put(str(tmp_path / "data"), b"data")
        FILES.put_if_not_exists(str(tmp_path / "manifest"), b"manifest")
    assert not (tmp_path / "manifest").exists()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_leaving_a_block_waits_for_its_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = _slow_recording_sync(monkeypatch)
    with io.deferred_syncs():
        with io.deferred_syncs():  # nested: the outer block's
            FILES.put(str(tmp_path / "a"), b"a")
        FILES.put(str(tmp_path / "b"), b"b")
    assert len(done) == 2


def test_a_publish_in_its_own_block_waits_only_for_its_own_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reservation's manifest names none of the data files still syncing: within
    ``own_syncs`` it waits for its transaction file only; the data file's sync is
    still waited for by the enclosing block's next publish and at its end."""
    slow = {str(tmp_path / "data")}
    events: list[str] = []
    gate = threading.Event()

    def sync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if path in slow:
            gate.wait(5)  # the data file syncs only once the reservation is published
        events.append(os.path.basename(path))

    monkeypatch.setattr(durability, "datasync", sync)
    with io.deferred_syncs():
        FILES.put(str(tmp_path / "data"), b"data")
        with io.own_syncs():
            FILES.put(str(tmp_path / "txn"), b"txn")
            assert FILES.put_if_not_exists(str(tmp_path / "reserve"), b"reserve")
        assert "data" not in events and "txn" in events
        assert (tmp_path / "reserve").exists()
        gate.set()
        assert FILES.put_if_not_exists(str(tmp_path / "manifest"), b"manifest")
        assert "data" in events


def test_a_hint_is_overwritten_in_place(tmp_path: Path) -> None:
    path = str(tmp_path / "hint.json")
    FILES.put(path, b'{"version":1000}', durable=False)
    inode = os.stat(path).st_ino
    FILES.put(path, b'{"version":7}', durable=False)
    assert Path(path).read_bytes() == b'{"version":7}'
    assert os.stat(path).st_ino == inode


def test_a_publish_that_a_rival_wins_during_its_sync_gives_up_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest's own sync is watched: when another writer's manifest appears under
    the name meanwhile, the loser returns without waiting for a sync that cannot help,
    and leaves the winner's file and no staging file behind."""
    synced = threading.Event()

    def slow(fd: int) -> None:
        time.sleep(0.5)
        synced.set()

    monkeypatch.setattr(durability, "datasync", slow)
    target = tmp_path / "manifest"
    rival = threading.Timer(0.05, lambda: target.write_bytes(b"rival"))
    rival.start()
    started = time.perf_counter()
    assert not FILES.put_if_not_exists(str(target), b"mine")
    assert time.perf_counter() - started < 0.4 and not synced.is_set()
    rival.join()
    assert target.read_bytes() == b"rival"
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    assert synced.wait(2)  # the abandoned sync still ends, closing its descriptor


def _write_each_kind(root: Path, tag: str) -> dict[Path, bytes]:
    """One file by each kind of local write, in four folders under ``root``; the
    files and the bytes each should hold."""
    files = {root / d / "x" / tag: f"{tag}-{d}".encode() for d in ("a/b", "c/d", "e/f", "g/h")}
    (put, hint, once, stream) = files
    FILES.put(str(put), files[put])
    FILES.put(str(hint), files[hint], durable=False)
    assert FILES.put_if_not_exists(str(once), files[once])
    out = FILES.open_output(str(stream))
    out.write(files[stream])
    out.commit()
    return files


def test_writes_make_missing_folders_and_no_mkdir_where_they_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every kind of local write, first into folders that do not exist yet...
    first = _write_each_kind(tmp_path, "first")
    # ...then into those folders, which exist: no mkdir is tried.
    made: list[str] = []
    real_mkdir = os.mkdir

    def mkdir(path: str, *args: object, **kwargs: object) -> None:
        made.append(str(path))
        real_mkdir(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "mkdir", mkdir)
    second = _write_each_kind(tmp_path, "second")
    assert made == []
    for path, data in {**first, **second}.items():
        assert path.read_bytes() == data


# The thread that syncs a file while it is written.
_WRITER_SYNC = "lancelet-sync"


def test_a_written_file_syncs_in_the_background_and_the_next_publish_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file written past the first step (4 MiB) starts a sync of what it holds
    while it is written; its commit does not wait for that sync, the next publish
    does."""
    gate = threading.Event()
    finished: list[str] = []

    def sync(fd: int) -> None:
        if threading.current_thread().name.startswith(_WRITER_SYNC):
            gate.wait(5)
        finished.append(threading.current_thread().name)

    monkeypatch.setattr(durability, "datasync", sync)
    with io.deferred_syncs():
        out = FILES.open_output(str(tmp_path / "data"))
        out.write(b"x" * (5 << 20))
        out.commit()  # returns with the background sync held at the gate
        assert (tmp_path / "data").stat().st_size == 5 << 20
        assert not any(n.startswith(_WRITER_SYNC) for n in finished)
        threading.Timer(0.1, gate.set).start()
        assert FILES.put_if_not_exists(str(tmp_path / "manifest"), b"manifest")
        assert any(n.startswith(_WRITER_SYNC) for n in finished)


@pytest.mark.parametrize("deferred", [True, False])
def test_a_failed_sync_while_writing_stops_the_publish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deferred: bool
) -> None:
    def failing(fd: int) -> None:
        if threading.current_thread().name.startswith(_WRITER_SYNC):
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(durability, "datasync", failing)
    block = io.deferred_syncs() if deferred else contextlib.nullcontext()
    with pytest.raises(OSError, match="Input/output"), block:
        out = FILES.open_output(str(tmp_path / "data"))
        out.write(b"x" * (5 << 20))
        out.commit()
        FILES.put_if_not_exists(str(tmp_path / "manifest"), b"manifest")
    assert not (tmp_path / "manifest").exists()


def test_a_sync_that_failed_while_writing_is_not_dropped_for_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first background sync fails, the next would succeed: the failure still
    stops the file (a later sync on another descriptor need not report it)."""
    calls: list[int] = []

    def first_fails(fd: int) -> None:
        if threading.current_thread().name.startswith(_WRITER_SYNC):
            calls.append(fd)
            if len(calls) == 1:
                raise OSError(5, "Input/output error")

    monkeypatch.setattr(durability, "datasync", first_fails)
    out = FILES.open_output(str(tmp_path / "data"))
    with pytest.raises(OSError, match="Input/output"):
        out.write(b"x" * (5 << 20))  # past the first step: a sync begins, and fails
        deadline = time.monotonic() + 5
        while not calls and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
        out.write(b"x" * (5 << 20))  # past the next step
        out.commit()
    out.abort()
    assert not (tmp_path / "data").exists()
