"""A queue for the writers of one local dataset: an advisory lock on a directory.

Writers commit optimistically: each tries to create the next version's manifest
with put-if-not-exists, and one that loses waits a random while and tries again.
On one machine that race is avoidable.  A commit holds an exclusive ``flock`` on
the dataset's ``_versions`` directory from looking up the latest version until
its manifest is published, so lancelet writers on one host take turns instead of
losing to one another and sleeping.

The lock only orders; it never decides.  Put-if-not-exists still decides who
wins, so writers that do not take the lock (pylance, other hosts sharing the
disk, a filesystem without ``flock``) stay correct, and a writer that cannot have
the lock within ``patience_s`` (its holder stopped, say) goes ahead without it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, writers race as before
    fcntl = None  # type: ignore[assignment]

# How long a writer waits for its turn before it commits without one.
_PATIENCE_S = 2.0

# The descriptors this process holds a turn through (or waits for one), with the id of
# the process that opened each.  A lock belongs to the open file, which a fork shares:
# a child keeping the copies (a pool worker forked mid-commit) would hold the parent's
# turn for its whole life, so it closes them; a block the child inherited mid-turn then
# leaves alone the number, which the child may have given another file since.
_HELD: dict[int, int] = {}
_HELD_LOCK = threading.Lock()


def _forget_in_child() -> None:
    global _HELD_LOCK
    _HELD_LOCK = threading.Lock()  # another thread may have held it at the fork
    for fd in _HELD:
        with suppress(OSError):
            os.close(fd)
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def _opened(fd: int) -> int:
    with _HELD_LOCK:
        _HELD[fd] = os.getpid()
    return fd


def _close(fd: int) -> None:
    with _HELD_LOCK:
        if _HELD.get(fd) != os.getpid():
            return  # opened by the parent of this forked process, and closed at the fork
        del _HELD[fd]
    os.close(fd)


@contextmanager
def turn(directory: str, patience_s: float | None = None) -> Iterator[bool]:
    """Hold the writers' lock of ``directory`` for the block; yields whether it is
    held (False: no such directory, no ``flock`` here, or no turn within
    ``patience_s``, two seconds unless given)."""
    fd = _open(directory)
    if fd is None:
        yield False
        return
    try:
        yield _acquire(fd, _PATIENCE_S if patience_s is None else patience_s)
    finally:
        _close(fd)  # closing releases the lock


def _open(directory: str) -> int | None:
    if fcntl is None:
        return None
    try:
        return _opened(os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)))
    except OSError:
        return None


def _acquire(fd: int, patience_s: float) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return _wait_for(fd, patience_s)
    except OSError:
        return False  # a filesystem without flock (some network mounts)


def _wait_for(fd: int, patience_s: float) -> bool:
    """Wait up to ``patience_s`` for the lock another writer holds.

    A blocked ``flock`` costs no processor time and wakes as the lock is let go, where
    polling would either wake often or notice late (and favour whoever polls most).
    It cannot time out, so it blocks on a thread of its own, through a duplicate of
    ``fd`` (the same open file: a lock taken through either is the block's).  Given
    up on, that thread lets go of the lock as soon as it gets it."""
    waiter = _opened(os.dup(fd))
    decided = threading.Lock()
    done = threading.Event()
    outcome: list[bool] = []

    def block() -> None:
        try:
            fcntl.flock(waiter, fcntl.LOCK_EX)
            held = True
        except OSError:
            held = False
        with decided:
            if outcome:  # given up on: the block went ahead without its turn
                _close(waiter)
            else:
                outcome.append(held)
                done.set()

    threading.Thread(target=block, name="lancelet-writers-turn", daemon=True).start()
    done.wait(patience_s)
    with decided:
        if not outcome:
            outcome.append(False)
            return False
    _close(waiter)
    return outcome[0]
