"""A small bounded memo shared by threads: what decoding works out from immutable
bytes (a file's schema, an encoding description) kept for the next file alike."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

__all__ = ["Memo", "forget_all"]

V = TypeVar("V")

_EVERY: weakref.WeakSet[Memo[Any]] = weakref.WeakSet()


def forget_all() -> None:
    """Empty every memo: the process decodes as if it had opened no file yet (what a
    benchmark of a cold open starts from)."""
    for memo in list(_EVERY):
        memo.clear()


class Memo(Generic[V]):
    """At most ``limit`` values by key, the oldest dropped first.  A failure to make
    a value is raised to each caller, never kept."""

    def __init__(self, limit: int) -> None:
        _EVERY.add(self)
        self._limit = limit
        self._values: dict[Hashable, V] = {}
        self._lock = threading.Lock()
        # The value kept for a key, or None: the dict's own method, called without a
        # Python frame of its own (a compaction asks memos some 50,000 times).
        self.find: Callable[[Hashable], V | None] = self._values.get

    def get(self, key: Hashable, make: Callable[[], V]) -> V:
        found = self._values.get(key)
        if found is not None:
            return found
        made = make()  # outside the lock: two threads may both make it, alike
        self.put(key, made)
        return made

    def put(self, key: Hashable, value: V) -> None:
        """Keep ``value`` for ``key``, dropping the oldest value when full."""
        with self._lock:
            if len(self._values) >= self._limit:
                del self._values[next(iter(self._values))]
            self._values[key] = value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
