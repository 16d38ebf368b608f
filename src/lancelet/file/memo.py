"""A small bounded memo shared by threads: what decoding works out from immutable
bytes (a file's schema, an encoding description) kept for the next file alike."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Memo"]

V = TypeVar("V")


class Memo(Generic[V]):
    """At most ``limit`` values by key, the oldest dropped first.  A failure to make
    a value is raised to each caller, never kept."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._values: dict[Hashable, V] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], V]) -> V:
        found = self._values.get(key)
        if found is not None:
            return found
        made = make()  # outside the lock: two threads may both make it, alike
        with self._lock:
            if len(self._values) >= self._limit:
                del self._values[next(iter(self._values))]
            self._values[key] = made
        return made

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
