"""When local files reach the disk: at once, or in the background until a publish.

A local write is made durable with an fsync before it counts as written.  A commit
writes several files (data files, deletion files, its transaction file) and then
publishes the one that names them all, the manifest; only that publish needs the
others on disk.  Within :func:`deferred_syncs` a durable local write therefore
renames its file into place at once and syncs it in a background thread, and
:func:`wait_for_deferred` (called by every put-if-not-exists, before the new name
appears) waits for those syncs: the files sync side by side, while the commit goes
on preparing its manifest, instead of one after another.

What may wait is scoped on purpose: a file written outside such a block (say, data
files another process will commit) is synced before its writer returns, as before.
Leaving the block waits for every sync begun inside it, so nothing written in it is
left unsynced when the call that opened it returns.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache

# fdatasync: a new file's data and the metadata needed to read it back (its size),
# without the timestamps fsync also flushes.
datasync = getattr(os, "fdatasync", os.fsync)


# Syncs (each holding an open descriptor) one block may have in flight.
_MAX_PENDING = 64


class _Pending:
    """The syncs begun within one :func:`deferred_syncs` block, not yet waited for."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._futures: list[Future[None]] = []

    def add(self, future: Future[None]) -> None:
        with self._lock:
            self._futures.append(future)
            backlog = len(self._futures) > _MAX_PENDING
        if backlog:
            # A write of many small files outpacing the disk: hold no more open
            # descriptors than this.
            self.wait()

    def wait(self) -> None:
        """Wait for every sync begun so far; the first failure is raised (after all
        have finished, so no file is left open behind the caller)."""
        with self._lock:
            futures, self._futures = self._futures, []
        errors = [exc for f in futures if (exc := f.exception()) is not None]
        if errors:
            raise errors[0]


_PENDING: ContextVar[_Pending | None] = ContextVar("lancelet_pending_syncs", default=None)


@cache
def _pool() -> ThreadPoolExecutor:
    # A few threads: the files of one commit sync side by side (the filesystem
    # journals them together); more would only queue on the same disk.
    return ThreadPoolExecutor(4, thread_name_prefix="lancelet-durable")


# A forked child has the parent's pool object but not its threads: it makes its own.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool.cache_clear)


@contextmanager
def deferred_syncs() -> Iterator[None]:
    """A block whose durable local writes may sync in the background until the next
    put-if-not-exists (or the block's end).  Nested blocks share the outer one."""
    if _PENDING.get() is not None:
        yield
        return
    with _own_block():
        yield


@contextmanager
def own_syncs() -> Iterator[None]:
    """Within :func:`deferred_syncs`, a block whose publishes wait only for the syncs
    begun inside it, not for the enclosing block's: for a commit whose manifest names
    none of the files still syncing (a fragment-id reservation, which names the
    files of the version before).  Leaving it waits for its own syncs."""
    if _PENDING.get() is None:
        yield
        return
    with _own_block():
        yield


@contextmanager
def _own_block() -> Iterator[None]:
    """A block with syncs of its own, all waited for when it is left."""
    pending = _Pending()
    token = _PENDING.set(pending)
    try:
        yield
    except BaseException:
        # The block failed already: its own error is the one to report.
        with contextlib.suppress(OSError):
            pending.wait()
        raise
    finally:
        _PENDING.reset(token)
    pending.wait()


def wait_for_deferred() -> None:
    """Wait until every sync deferred in the current block is done (raising the
    first that failed): what is published next may name those files."""
    pending = _PENDING.get()
    if pending is not None:
        pending.wait()


def sync_and_close(fd: int) -> None:
    """Make the file open as ``fd`` durable; the descriptor is closed either way."""
    try:
        datasync(fd)
    finally:
        os.close(fd)


# How often a sync that may turn out useless checks whether it still matters.
_POLL_S = 0.0005


def sync_unless(path: str, lost: Callable[[], bool]) -> bool:
    """Make the complete file ``path`` durable, unless ``lost()`` turns true first
    (asked every half millisecond while the sync runs in the background): True once
    synced, False when lost.  A lost sync finishes in the background, closing its
    descriptor there; one that fails raises here."""
    fd = os.open(path, os.O_RDONLY)
    try:
        future = _pool().submit(sync_and_close, fd)
    except BaseException:
        os.close(fd)
        raise
    while True:
        try:
            future.result(timeout=_POLL_S)
            return True
        except FutureTimeout:
            if lost():
                return False


def durable_rename(tmp: str, final: str, begun: Future[None] | None = None) -> None:
    """Make the complete file ``tmp`` durable and rename it to ``final``.  Within
    :func:`deferred_syncs` it is renamed first and synced in the background: nothing
    names it until the next publish, which waits for the sync.  ``begun``: a sync of
    part of the file already running, waited for (and its error raised) alike."""
    fd = os.open(tmp, os.O_RDONLY)
    pending = _PENDING.get()
    if pending is None:
        try:
            if begun is not None:
                begun.result()
        except BaseException:
            os.close(fd)
            raise
        sync_and_close(fd)
        os.replace(tmp, final)
        return
    try:
        os.replace(tmp, final)
    except BaseException:
        os.close(fd)
        raise
    if begun is not None:
        pending.add(begun)
    pending.add(_pool().submit(sync_and_close, fd))
