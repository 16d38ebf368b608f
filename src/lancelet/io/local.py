"""Local filesystem storage: files read through memory maps, written under a
temporary name and renamed into place."""

from __future__ import annotations

import contextlib
import mmap
import os
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from functools import cache
from typing import TypeVar

import numpy as np
import pyarrow as pa

from lancelet.errors import LanceFileError
from lancelet.io import durability, queue
from lancelet.io.base import ObjectInfo, PublishOnSuccess
from lancelet.io.counters import count_read
from lancelet.io.uri import local_path

_PAGE = mmap.PAGESIZE
# Not on every platform (Windows has none): there, released pages simply stay mapped.
_DONTNEED: int | None = getattr(mmap, "MADV_DONTNEED", None)


# A file of at most this many bytes is read whole at open instead of mapped: one read
# costs less than a mapping's set-up, page faults and unmapping (an index's lookup
# table, opened by every cold lookup, is a kilobyte or two).
_READ_WHOLE_BYTES = 64 * 1024


class LocalInputFile:
    """An immutable local file read through a memory map (a small one read whole).

    Ranges come back as ``pa.Buffer`` views of the mapping, so decoders can wrap
    them in numpy or Arrow arrays without copying.  The map stays alive as long
    as any buffer cut from it does.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = local_path(path)
        self._map: mmap.mmap | None = None
        data: bytes | mmap.mmap = b""
        try:
            with open(self.path, "rb", buffering=0) as file:
                self.size: int = os.fstat(file.fileno()).st_size
                if self.size <= _READ_WHOLE_BYTES:
                    # An empty file cannot be mapped; a small one costs less read.
                    data = file.read()
                    self.size = len(data)
                else:
                    data = self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        except FileNotFoundError as exc:
            raise LanceFileError(f"{self.path}: no such file") from exc
        except (OSError, ValueError) as exc:
            raise LanceFileError(f"{self.path}: cannot open: {exc}") from exc
        # One zero-copy view of the whole file; ranges are slices of it.
        self._whole = pa.py_buffer(data)
        self._array = np.frombuffer(self._whole, dtype=np.uint8)

    def read(self, offset: int, length: int) -> pa.Buffer:
        """The bytes ``[offset, offset + length)``; the caller has range-checked them."""
        count_read(1, length)
        return self._whole.slice(offset, length)

    def read_array(self, offset: int, length: int) -> np.ndarray:
        """:meth:`read` as a numpy view: a slice of one array, several times cheaper
        than a buffer wrapped anew (a compaction reads 5,000 small page buffers)."""
        count_read(1, length)
        return self._array[offset : offset + length]

    def prefetch(self, ranges: Sequence[tuple[int, int]], *, gap: int | None = None) -> None:
        """Nothing to do: the mapping pages bytes in as they are touched."""

    def retain(self, ranges: Sequence[tuple[int, int]]) -> None:
        """Nothing to do: the operating system pages the mapping out as it needs."""

    def release(self, ranges: Sequence[tuple[int, int]]) -> None:
        """Unmap the whole memory pages inside ``ranges`` from this process (they stay
        in the page cache): a scan's decoded pages then stop counting in its resident
        memory.  Buffers still pointing there are unharmed: the file is immutable,
        and a later touch maps its pages in again."""
        if self._map is None or _DONTNEED is None:
            return
        for offset, length in ranges:
            first = -(-offset // _PAGE) * _PAGE
            last = min(offset + length, self.size) // _PAGE * _PAGE
            if last > first:
                with contextlib.suppress(OSError):  # only memory at stake, never the read
                    self._map.madvise(_DONTNEED, first, last - first)

    def close(self) -> None:
        # Buffers handed out may still point into the map; it is unmapped when the last goes.
        self._whole = pa.py_buffer(b"")
        self._array = np.frombuffer(self._whole, dtype=np.uint8)


# While a file is written, its bytes are pushed to disk in the background once this
# many are new, so the fsync that makes it durable at commit has little left to do:
# at first every few MiB (a compaction's 10 MiB file then syncs while its last
# columns encode), then as much as was synced before, up to the largest step.
_FIRST_SYNC_BYTES = 4 << 20
_BACKGROUND_SYNC_BYTES = 64 << 20


@cache
def _sync_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(1, thread_name_prefix="lancelet-sync")


# A forked child has the parent's pool object but not its thread: it makes its own.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_sync_pool.cache_clear)


class LocalOutputFile(PublishOnSuccess):
    """A file written under a temporary name and renamed into place on commit.

    A writer that fails or is abandoned leaves nothing under the final name;
    :meth:`abort` removes the temporary file.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = local_path(path)
        parent = os.path.dirname(self.path)
        self._tmp_path = os.path.join(
            parent, f".{os.path.basename(self.path)}.{uuid.uuid4().hex}.tmp"
        )
        # Closed in commit or abort.
        self._file = _created(self._tmp_path, lambda: open(self._tmp_path, "wb"))  # noqa: SIM115
        self.position = 0
        self._synced = 0
        self._syncing: Future[None] | None = None

    def write(self, data: bytes | bytearray | memoryview | pa.Buffer) -> None:
        view = memoryview(data)
        self._file.write(view)
        self.position += view.nbytes
        step = min(_BACKGROUND_SYNC_BYTES, max(_FIRST_SYNC_BYTES, self._synced))
        if self.position - self._synced >= step:
            self._sync_in_background()

    def _sync_in_background(self) -> None:
        if self._syncing is not None:
            if not self._syncing.done():
                return
            # A failed sync is raised here, not dropped for the next: a later sync on
            # a descriptor opened afterwards need not report the failure.
            self._syncing.result()
        self._file.flush()
        self._synced = self.position
        # On a descriptor of its own, so the file may close while it runs.
        fd = os.dup(self._file.fileno())
        try:
            self._syncing = _sync_pool().submit(durability.sync_and_close, fd)
        except BaseException:
            os.close(fd)
            raise

    def _wait_for_sync(self) -> None:
        syncing, self._syncing = self._syncing, None
        if syncing is not None:
            syncing.result()

    def commit(self) -> None:
        """Flush, then atomically publish the file under its final name, durably (a
        background sync still running is waited for with the last one's)."""
        self._file.flush()
        self._file.close()
        syncing, self._syncing = self._syncing, None
        try:
            durability.durable_rename(self._tmp_path, self.path, begun=syncing)
        except BaseException:
            if syncing is not None:
                wait([syncing])  # nothing left running behind the caller
            raise

    def abort(self) -> None:
        """Discard everything written so far."""
        with contextlib.suppress(OSError):
            self._wait_for_sync()
        if not self._file.closed:
            self._file.close()
        if os.path.exists(self._tmp_path):
            os.remove(self._tmp_path)


class LocalStorage:
    """The local filesystem; keys are absolute paths."""

    def open_input(self, key: str, uri: str) -> LocalInputFile:
        return LocalInputFile(key)

    def open_output(self, key: str, uri: str) -> LocalOutputFile:
        return LocalOutputFile(key)

    def read_bytes(self, key: str) -> bytes:
        with open(key, "rb") as f:
            data = f.read()
        count_read(1, len(data))
        return data

    def put(self, key: str, data: bytes, *, durable: bool = True) -> None:
        """Write ``data`` under ``key``, replacing any previous file atomically.

        ``durable=False`` is for hints, objects readers verify and can do without:
        no fsync, and the file is overwritten in place, which a reader may see
        half-done.  Replacing an existing file by renaming over it makes ext4 write
        the new file's blocks out at once (its ``auto_da_alloc``), which costs as
        much as the fsync skipped.
        """
        if not durable:
            _write_in_place(key, data)
            return
        tmp = _write_temp(key, data, durable=False)
        durability.durable_rename(tmp, key)

    def put_if_not_exists(self, key: str, data: bytes) -> bool:
        """Publish ``data`` under ``key`` only if nothing is there yet; False if something was.

        The complete file is written under a private name first and then hard-linked
        to ``key``: ``link`` fails atomically when the target exists, so two writers
        racing for one name can never both win, and a reader never sees a partial
        file under the final name.
        """
        if os.path.lexists(key):
            return False  # lost already: skip writing and syncing a file that cannot win
        tmp = _write_temp(key, data, durable=False)
        try:
            # The sync takes most of a commit's window: a writer whose rival publishes
            # meanwhile gives up at once, rather than once a useless sync is done.
            if not durability.sync_unless(tmp, lambda: os.path.lexists(key)):
                return False
            # What it names (a manifest's data and transaction files) first.
            durability.wait_for_deferred()
            os.link(tmp, key)
        except FileExistsError:
            return False
        finally:
            os.remove(tmp)
        return True

    def head(self, key: str) -> ObjectInfo | None:
        try:
            found = os.stat(key)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return ObjectInfo(found.st_size, found.st_mtime_ns)

    def list_dir(self, key: str) -> list[str]:
        try:
            return os.listdir(key)
        except (FileNotFoundError, NotADirectoryError):
            return []

    def list_tree(self, key: str) -> Iterator[tuple[str, ObjectInfo]]:
        for parent, _dirs, files in os.walk(key):
            for name in files:
                path = os.path.join(parent, name)
                found = self.head(path)
                if found is not None:
                    yield os.path.relpath(path, key).replace(os.sep, "/"), found

    def is_dir(self, key: str) -> bool:
        return os.path.isdir(key)

    def delete(self, key: str) -> None:
        """Remove a file; a file that is already gone is not an error."""
        with contextlib.suppress(FileNotFoundError):
            os.remove(key)

    def remove_empty_dirs(self, key: str) -> None:
        """Remove ``key`` and the directories below it that are empty."""
        for parent, _dirs, _files in os.walk(key, topdown=False):
            # Fails harmlessly when a file remains or was just added.
            with contextlib.suppress(OSError):
                os.rmdir(parent)

    def remove_tree(self, key: str) -> None:
        shutil.rmtree(key, ignore_errors=True)

    def writers_turn(self, key: str) -> contextlib.AbstractContextManager[bool]:
        return queue.turn(key)

    def fingerprint(self, key: str) -> tuple[int, int] | None:
        """(size, modification time in ns), None if the file does not exist: what a
        cache of an immutable file's contents is keyed by, so a file replaced or
        damaged in place is opened afresh."""
        found = self.head(key)
        return None if found is None else (found.size, found.modified_ns)


_T = TypeVar("_T")


def _created(path: str, create: Callable[[], _T]) -> _T:
    """``create()``, which makes the file ``path``, after making its missing parent
    folders if it fails for want of them.  Tried first: a ``mkdir`` of a folder that
    exists still waits for the filesystem's journal, which an fsync running in the
    background holds, and nearly every write goes to a folder that exists."""
    try:
        return create()
    except FileNotFoundError:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        return create()


def _write_temp(path: str, data: bytes, durable: bool = True) -> str:
    parent = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(parent, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    with _created(tmp, lambda: open(tmp, "wb")) as f:
        f.write(data)
        if durable:
            f.flush()
            durability.datasync(f.fileno())
    return tmp


def _write_in_place(path: str, data: bytes) -> None:
    fd = _created(path, lambda: os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))
    try:
        # Never truncated to nothing first: that too makes ext4 flush at close.
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)
