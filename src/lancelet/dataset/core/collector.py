"""Python's cyclic garbage collector held off while a compaction runs.

A compaction makes tens of thousands of container objects (parsed metadata, page
decoders, tuples), most of them short-lived.  With the collector running, each 700
of them start a collection of the young objects, and those still in use at that
moment (the readers of the files being rewritten) move to older generations, which
are walked again and again, and every few compactions a full collection walks every
object of the process (about 90 ms in one that has imported pyarrow and numba).
Paused, the objects die by reference counting and are never scanned: over a loop of
compactions of a hundred small files and reads of the result, the collector's time
fell from 38 to 9 ms per compaction, in all (not moved to after the call).  lancelet
leaves no cyclic garbage behind (``tests/dataset/test_compaction_garbage.py``), so a
pause frees nothing later than it would have been.

The pause is reference counted across threads: the collector runs again when the
last paused call returns, if it was running when the first began (an application
that turned it off keeps it off).  Short calls (an indexed lookup) gain nothing
from it: it is for calls that make many objects and end, never for generators that
hand batches back to the caller.
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

__all__ = ["collector_paused", "pauses_collector"]

P = ParamSpec("P")
R = TypeVar("R")

_lock = threading.Lock()
_depth = 0  # calls inside a pause, on any thread
_resume = False  # whether the collector was running when the outermost pause began


@contextmanager
def collector_paused() -> Iterator[None]:
    """The collector paused for the ``with`` block (see the module's docstring)."""
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()


def pauses_collector(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run with the collector paused."""

    @functools.wraps(fn)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        with collector_paused():
            return fn(*args, **kwargs)

    return paused
