"""Object stores (S3, GCS, Azure, memory) through obstore.

obstore wraps the Rust ``object_store`` crate that pylance itself uses: one
library for S3, GCS, Azure and an in-memory store, with conditional puts
(``If-None-Match``), ranged and multi-range gets, and multipart uploads.
fsspec's S3 backend has no portable create-only put, and ``pyarrow.fs`` has none
at all, so neither could commit a manifest safely.

Reads go through :class:`ObjectInputFile`, which keeps the ranges it fetched: a
file's tail (footer and metadata) arrives with the first request, and the pages
a reader announces with :meth:`ObjectInputFile.prefetch` arrive coalesced and
concurrently.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

import pyarrow as pa

from lancelet.errors import StorageError, StorageNotFoundError
from lancelet.io.base import ObjectInfo, PublishOnSuccess
from lancelet.io.counters import count_read

T = TypeVar("T")

# The first request for a file takes this much of its end: the footer, and for most
# files the column metadata too, in one round trip.
TAIL_BYTES = 64 << 10
# Ranges closer than this are fetched as one; the bytes between cost less than a
# second round trip.
COALESCE_BYTES = 1 << 20
# obstore keeps at most this many of one call's requests in flight; a fetch of more
# ranges (a take's scattered chunks: a hundred or more) is cut into calls on up to
# FETCH_THREADS threads, so that it costs a few round trips, not one per ten ranges.
RANGES_PER_CALL = 10
FETCH_THREADS = 8
# The least a read of bytes not yet fetched asks for, so a reader walking a file in
# small steps does not pay one request per step.
MIN_FETCH_BYTES = 256 << 10
# Files are written to a local spool first (in memory up to this size) and uploaded
# whole on commit, so an aborted write leaves nothing in the store.
SPOOL_MEMORY_BYTES = 32 << 20
# Fetched bytes are placed in memory at an address congruent to their file offset
# modulo this, as a memory map places them: Lance pads pages to 64 bytes, so arrays
# decoded in place are aligned as Arrow (and Acero, which warns otherwise) expects.
ALIGNMENT = 64


@dataclass
class RequestStats:
    """Requests made and bytes fetched since the last :meth:`reset` (all stores)."""

    requests: int = 0
    bytes_read: int = 0
    bytes_written: int = 0

    def reset(self) -> None:
        self.requests = self.bytes_read = self.bytes_written = 0


STATS = RequestStats()
_stats_lock = threading.Lock()


def _count(requests: int = 1, read: int = 0, written: int = 0) -> None:
    with _stats_lock:
        STATS.requests += requests
        STATS.bytes_read += read
        STATS.bytes_written += written
    if read:
        count_read(requests, read)


def _call(uri: str, work: Callable[[], T]) -> T:
    """Run one store request, turning obstore's errors into lancelet's."""
    from obstore.exceptions import BaseError, NotFoundError

    try:
        return work()
    except (NotFoundError, FileNotFoundError) as exc:  # obstore raises either for a 404
        raise StorageNotFoundError(f"{uri}: no such object") from exc
    except BaseError as exc:
        raise StorageError(f"{uri}: {type(exc).__name__}: {_reason(exc)}") from exc


# The error an S3-style XML body carries, and the operating system's word for a
# failed connection, which obstore's message holds only on later lines.
_XML_ERROR = re.compile(r"<Code>([^<]*)</Code>\s*(?:<Message>([^<]*)</Message>)?")
_OS_MESSAGE = re.compile(r'\bmessage: "([^"]+)"')


def _reason(exc: BaseException) -> str:
    """The first line of a store error, with what later lines say that matters: the
    S3 error code (``NoSuchBucket``) or why a connection failed."""
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    first = text.splitlines()[0]
    found = _XML_ERROR.search(text)
    if found:
        detail = found[1] + (f": {found[2]}" if found[2] else "")
        return first.split("<?xml")[0].rstrip() + " " + detail
    failed = _OS_MESSAGE.findall(text)
    if failed:
        return f"{first} ({failed[-1]})"
    return first


class ObjectStorage:
    """One bucket of an object store (or the process's memory store)."""

    def __init__(self, store: Any, label: str) -> None:
        self.store = store
        self.label = label  # "s3://bucket", for messages

    def uri(self, key: str) -> str:
        return f"{self.label}/{key}"

    def open_input(self, key: str, uri: str) -> ObjectInputFile:
        return ObjectInputFile(self, key, uri)

    def open_output(self, key: str, uri: str) -> ObjectOutputFile:
        return ObjectOutputFile(self, key, uri)

    def read_bytes(self, key: str) -> bytes:
        import obstore

        data = _call(self.uri(key), lambda: obstore.get(self.store, key).bytes())
        _count(read=len(data))
        return bytes(data)

    def put(self, key: str, data: bytes, *, durable: bool = True) -> None:
        # Every put is durable once acknowledged; ``durable`` matters only locally.
        import obstore

        _call(self.uri(key), lambda: obstore.put(self.store, key, data))
        _count(written=len(data))

    def put_if_not_exists(self, key: str, data: bytes) -> bool:
        """A conditional put (``If-None-Match: *``): the store itself decides the race."""
        import obstore
        from obstore.exceptions import AlreadyExistsError, NotSupportedError, PreconditionError

        uri = self.uri(key)

        def attempt() -> bool:
            try:
                obstore.put(self.store, key, data, mode="create")
            except (AlreadyExistsError, PreconditionError):
                return False
            except NotSupportedError as exc:
                raise StorageError(
                    f"{uri}: this store does not support conditional writes, which commits "
                    "need (lancelet never falls back to an unsafe check-then-write)"
                ) from exc
            return True

        won = _call(uri, attempt)
        _count(written=len(data) if won else 0)
        return won

    def head(self, key: str) -> ObjectInfo | None:
        import obstore

        try:
            meta = _call(self.uri(key), lambda: obstore.head(self.store, key))
        except StorageNotFoundError:
            return None
        finally:
            _count()
        return _info(meta)

    def list_dir(self, key: str) -> list[str]:
        import obstore

        prefix = _dir_prefix(key)
        found = _call(
            self.uri(key), lambda: obstore.list_with_delimiter(self.store, prefix or None)
        )
        _count()
        names = [p.rstrip("/").rsplit("/", 1)[-1] for p in found["common_prefixes"]]
        names += [o["path"].rsplit("/", 1)[-1] for o in found["objects"]]
        return names

    def list_tree(self, key: str) -> Iterator[tuple[str, ObjectInfo]]:
        import obstore

        prefix = _dir_prefix(key)
        stream = _call(self.uri(key), lambda: obstore.list(self.store, prefix or None))
        for chunk in stream:
            _count()
            for meta in chunk:
                yield meta["path"][len(prefix) :], _info(meta)

    def is_dir(self, key: str) -> bool:
        import obstore

        prefix = _dir_prefix(key)
        stream = _call(
            self.uri(key), lambda: obstore.list(self.store, prefix or None, chunk_size=1)
        )
        _count()
        return any(len(chunk) > 0 for chunk in stream)

    def delete(self, key: str) -> None:
        import obstore

        try:
            _call(self.uri(key), lambda: obstore.delete(self.store, key))
        except StorageNotFoundError:
            pass  # already gone, as locally
        finally:
            _count()

    def remove_empty_dirs(self, key: str) -> None:
        """Nothing to do: a store has no directories, only keys."""

    def remove_tree(self, key: str) -> None:
        prefix = _dir_prefix(key)
        for relative, _ in list(self.list_tree(key)):
            self.delete(prefix + relative)

    def writers_turn(self, key: str) -> contextlib.AbstractContextManager[bool]:
        # Writers of an object store race (put-if-not-exists decides); none queue.
        return contextlib.nullcontext(False)

    def fingerprint(self, key: str) -> tuple[int, int] | None:
        """Always the same: lancelet and pylance never replace a data or index file in
        place (each name carries a fresh uuid), so a cached reader cannot go stale, and
        checking would cost a request per file per scan."""
        return (0, 0)

    def get_range(self, key: str, uri: str, start: int, end: int) -> pa.Buffer:
        import obstore

        data = _call(uri, lambda: obstore.get_range(self.store, key, start=start, end=end))
        _count(read=end - start)
        return _placed(data, start)

    def get_ranges(self, key: str, uri: str, starts: list[int], ends: list[int]) -> list[pa.Buffer]:
        import obstore

        def fetch(part: slice) -> list[Any]:
            # The ranges come coalesced as the caller wants them: obstore's own
            # coalescing (of ranges up to 1 MiB apart) would undo a take's smaller gap.
            return _call(
                uri,
                lambda: obstore.get_ranges(
                    self.store, key, starts=starts[part], ends=ends[part], coalesce=0
                ),
            )

        parts = _parts(len(starts))
        if len(parts) == 1:
            found = fetch(parts[0])
        else:
            found = [b for done in _fetch_pool().map(fetch, parts) for b in done]
        # Counted here, on the caller's thread, whose scan the counts belong to.
        _count(requests=len(starts), read=sum(e - s for s, e in zip(starts, ends, strict=True)))
        return [_placed(b, start) for b, start in zip(found, starts, strict=True)]

    def get_tail(self, key: str, uri: str, length: int) -> tuple[int, pa.Buffer]:
        """The object's size and its last ``length`` bytes (all of it if smaller)."""
        import obstore

        def fetch() -> tuple[int, Any]:
            result = obstore.get(self.store, key, options={"range": {"suffix": length}})
            return int(result.meta["size"]), result.bytes()

        size, data = _call(uri, fetch)
        _count(read=len(data))
        return size, _placed(data, size - len(data))


@cache
def _fetch_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(FETCH_THREADS, thread_name_prefix="lancelet-fetch")


# A forked child has the parent's pool object but not its threads: it makes its own.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fetch_pool.cache_clear)


def _parts(count: int) -> list[slice]:
    """``count`` ranges cut into one call's worth per fetching thread (at least
    :data:`RANGES_PER_CALL` each), in order."""
    calls = min(FETCH_THREADS, -(-count // RANGES_PER_CALL))
    if calls <= 1:
        return [slice(0, count)]
    size = -(-count // calls)
    return [slice(at, min(at + size, count)) for at in range(0, count, size)]


def _placed(data: Any, start: int) -> pa.Buffer:
    """``data``, the object's bytes from offset ``start`` on, at an address congruent
    to ``start`` modulo :data:`ALIGNMENT` (copied there unless they already are)."""
    buffer = pa.py_buffer(data)
    if (buffer.address - start) % ALIGNMENT == 0:
        return buffer
    pad = start % ALIGNMENT
    placed = pa.allocate_buffer(pad + buffer.size)  # pyarrow allocates 64-byte aligned
    memoryview(placed).cast("B")[pad:] = memoryview(buffer).cast("B")
    return placed.slice(pad)


def _dir_prefix(key: str) -> str:
    return key.rstrip("/") + "/" if key.strip("/") else ""


def _info(meta: Any) -> ObjectInfo:
    modified = meta["last_modified"]
    return ObjectInfo(int(meta["size"]), int(modified.timestamp() * 1_000_000_000))


class ObjectInputFile:
    """An object read by ranges, keeping what it fetched while it lives.

    Fetched ranges are kept as buffers sorted by start; a read inside one is a
    zero-copy slice.  No kept block lies inside another (a new block that covers
    older ones replaces them), so ends ascend with starts and the one block that can
    hold a range is the last that starts at or before it.  Readers on several threads
    share one file, so the list is guarded by a lock, and fetching happens outside it.
    """

    def __init__(self, storage: ObjectStorage, key: str, uri: str) -> None:
        self.path = uri
        self._storage = storage
        self._key = key
        self._lock = threading.Lock()
        self.size, tail = storage.get_tail(key, uri, TAIL_BYTES)
        self._tail_start = self.size - tail.size
        self._starts: list[int] = [self._tail_start]
        self._blocks: list[pa.Buffer] = [tail]

    def _find(self, offset: int, length: int) -> pa.Buffer | None:
        with self._lock:
            i = bisect.bisect_right(self._starts, offset) - 1
            if i >= 0:
                start, block = self._starts[i], self._blocks[i]
                if offset + length <= start + block.size:
                    return block.slice(offset - start, length)
        return None

    def _keep(self, start: int, block: pa.Buffer) -> None:
        end = start + block.size
        with self._lock:
            starts, blocks = self._starts, self._blocks
            lo = bisect.bisect_left(starts, start)
            if lo > 0 and starts[lo - 1] + blocks[lo - 1].size >= end:
                return  # an earlier block holds all of it (another thread fetched it)
            if lo < len(starts) and starts[lo] == start and blocks[lo].size >= block.size:
                return
            hi = lo
            while hi < len(starts) and starts[hi] + blocks[hi].size <= end:
                hi += 1  # blocks inside the new one: it replaces them
            starts[lo:hi] = [start]
            blocks[lo:hi] = [block]

    def read(self, offset: int, length: int) -> pa.Buffer:
        if length == 0:
            return pa.py_buffer(b"")  # an empty buffer, wherever it is, needs no request
        found = self._find(offset, length)
        if found is not None:
            return found
        end = min(self.size, offset + max(length, MIN_FETCH_BYTES))
        block = self._storage.get_range(self._key, self.path, offset, end)
        if block.size != end - offset:
            raise StorageError(f"{self.path}: asked for {end - offset} bytes, got {block.size}")
        self._keep(offset, block)
        return block.slice(0, length)

    def prefetch(self, ranges: Sequence[tuple[int, int]], *, gap: int | None = None) -> None:
        wanted = sorted((o, o + n) for o, n in ranges if n > 0 and self._find(o, n) is None)
        if not wanted:
            return
        starts, ends = _coalesce(wanted, COALESCE_BYTES if gap is None else gap)
        blocks = self._storage.get_ranges(self._key, self.path, starts, ends)
        for start, end, block in zip(starts, ends, blocks, strict=True):
            if block.size != end - start:
                raise StorageError(f"{self.path}: asked for {end - start} bytes, got {block.size}")
            self._keep(start, block)

    def retain(self, ranges: Sequence[tuple[int, int]]) -> None:
        def wanted(start: int, block: pa.Buffer) -> bool:
            end = start + block.size
            return start == self._tail_start or any(o < end and start < o + n for o, n in ranges)

        with self._lock:
            kept = [(s, b) for s, b in zip(self._starts, self._blocks, strict=True) if wanted(s, b)]
            self._starts = [s for s, _ in kept]
            self._blocks = [b for _, b in kept]

    def release(self, ranges: Sequence[tuple[int, int]]) -> None:
        """Nothing to do: :meth:`retain` lets go of fetched blocks."""

    def close(self) -> None:
        with self._lock:
            self._starts, self._blocks = [], []


def _coalesce(ranges: list[tuple[int, int]], gap: int) -> tuple[list[int], list[int]]:
    starts, ends = [ranges[0][0]], [ranges[0][1]]
    for start, end in ranges[1:]:
        if start - ends[-1] <= gap:
            ends[-1] = max(ends[-1], end)
        else:
            starts.append(start)
            ends.append(end)
    return starts, ends


class ObjectOutputFile(PublishOnSuccess):
    """An object written to a local spool and uploaded whole on :meth:`commit`.

    The upload is one put (multipart when large), so the object appears complete or
    not at all, and an aborted write never reaches the store.
    """

    def __init__(self, storage: ObjectStorage, key: str, uri: str) -> None:
        self.path = uri
        self._storage = storage
        self._key = key
        self._spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES)  # noqa: SIM115
        self.position = 0

    def write(self, data: bytes | bytearray | memoryview | pa.Buffer) -> None:
        view = memoryview(data)
        self._spool.write(view)
        self.position += view.nbytes

    def commit(self) -> None:
        import obstore

        self._spool.seek(0)
        spool = self._spool
        _call(self.path, lambda: obstore.put(self._storage.store, self._key, spool))
        _count(written=self.position)
        self._spool.close()

    def abort(self) -> None:
        self._spool.close()
