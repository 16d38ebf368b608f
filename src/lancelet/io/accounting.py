"""Counters of one scan's work, for pylance's ``scan_stats_callback``.

A scan that wants its statistics makes a :class:`Counters` and runs each step of its
work inside :func:`collecting`; the reads and index loads made meanwhile, on this
thread or on the decoding threads it hands work to (which run in a copy of its
context), are added to it.  Work outside such a step (other scans, writes) is not.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, fields

__all__ = ["Counters", "add", "add_reads", "collecting"]


@dataclass
class Counters:
    # Read requests made of storage (as :mod:`.counters` counts them; a local read is
    # one), counted as both iops and requests, and the bytes they returned.
    iops: int = 0
    requests: int = 0
    bytes_read: int = 0
    # Index segments opened from storage (not found open in the dataset's cache).
    indices_loaded: int = 0
    # Index pages read from storage, and those found already in memory.
    parts_loaded: int = 0
    index_cache_hits: int = 0
    # Index segments searched, one per filter condition and segment.
    index_comparisons: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}


_CURRENT: ContextVar[Counters | None] = ContextVar("lancelet_scan_counters", default=None)
# Set while an index is opened or searched: see :func:`index_work`.
_INDEX_WORK: ContextVar[bool] = ContextVar("lancelet_index_work", default=False)
_READS = frozenset({"iops", "requests", "bytes_read"})


def add(**amounts: int) -> None:
    """Add to the counters of the scan being run, if it collects any."""
    counters = _CURRENT.get()
    if counters is None:
        return
    if _INDEX_WORK.get():
        amounts = {k: v for k, v in amounts.items() if k not in _READS}
    with counters._lock:
        for name, amount in amounts.items():
            setattr(counters, name, getattr(counters, name) + amount)


def add_reads(requests: int, nbytes: int) -> None:
    """:func:`add` of read requests and their bytes, cheap when no scan collects: it
    runs for every range a read cuts from a file."""
    if _CURRENT.get() is not None and not _INDEX_WORK.get():
        add(iops=requests, requests=requests, bytes_read=nbytes)


@contextmanager
def collecting(counters: Counters | None) -> Iterator[None]:
    """Count the work done inside into ``counters`` (nothing when None)."""
    if counters is None:
        yield
        return
    token = _CURRENT.set(counters)
    try:
        yield
    finally:
        _CURRENT.reset(token)


@contextmanager
def index_work() -> Iterator[None]:
    """Reads made inside are of index files.  A scan counts them as pylance's scan
    statistics do: as index segments and pages loaded (``indices_loaded``,
    ``parts_loaded``), not in ``iops``, ``requests`` or ``bytes_read``, which count the
    data the scan read.  The process-wide counters (:mod:`.counters`) count them all."""
    token = _INDEX_WORK.set(True)
    try:
        yield
    finally:
        _INDEX_WORK.reset(token)
