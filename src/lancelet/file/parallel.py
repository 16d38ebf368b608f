"""Decoding columns on several threads.

Numpy, Arrow's kernels and lancelet's compiled kernels release the GIL, so the
columns of one read decode in parallel.  One pool serves the process; work that a
pool thread starts runs on that thread, so nested reads never wait on themselves.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from functools import cache
from typing import TypeVar

__all__ = ["WORKERS", "map_columns", "serial"]

WORKERS = min(8, os.cpu_count() or 1)

T = TypeVar("T")
R = TypeVar("R")

_local = threading.local()


def _mark_worker() -> None:
    _local.worker = True


@cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(
        WORKERS, thread_name_prefix="lancelet-decode", initializer=_mark_worker
    )


# A forked child has the parent's pool object but none of its threads: it makes its own.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool.cache_clear)


def map_columns(
    fn: Callable[[T], R], items: Sequence[T], costs: Sequence[int] | None = None
) -> list[R]:
    """``[fn(item) for item in items]``, on the pool when that can help.

    ``costs`` (one per item, any unit) start the costliest jobs first: a big job
    started last runs alone at the end while the other threads idle (a compaction's
    one long text column among fifteen small ones).

    Returns or raises only once no job runs any more: a job still reading a file's
    mapping after the caller has moved on (and perhaps deleted the file) would crash
    the interpreter.  After a failure, jobs not yet started are cancelled."""
    if len(items) < 2 or serial():
        return [fn(item) for item in items]
    order = (
        range(len(items)) if costs is None else sorted(range(len(items)), key=lambda i: -costs[i])
    )
    # Each job runs in a copy of the caller's context, which carries its scan counters.
    started = {i: _pool().submit(contextvars.copy_context().run, fn, items[i]) for i in order}
    jobs = [started[i] for i in range(len(items))]
    _, pending = wait(jobs, return_when=FIRST_EXCEPTION)
    if pending:  # something failed: stop what has not started, let the rest finish
        for job in pending:
            job.cancel()
        wait(pending)
        # A job listed before the failed one may have been cancelled too (taken off the
        # queue but not yet marked running): raise the failure, not that cancellation.
        failed = next(j for j in jobs if not j.cancelled() and j.exception() is not None)
        failed.result()
    return [job.result() for job in jobs]


def serial() -> bool:
    """True when :func:`map_columns` runs its items one after another here (one
    worker, or called on a pool thread): work split for threads gains nothing."""
    return WORKERS < 2 or bool(getattr(_local, "worker", False))
