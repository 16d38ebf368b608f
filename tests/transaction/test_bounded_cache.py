"""A session's metadata cache (``BoundedCache``): bounded by entries, and safe to fill
from two threads at once (a compaction opens files on a second thread)."""

from __future__ import annotations

import threading
import time
from typing import Any

from lancelet.transaction.session import BoundedCache


def test_the_oldest_entries_go_beyond_the_limit() -> None:
    cache = BoundedCache(2)
    for key in "abc":
        cache[key] = key.upper()
    assert list(cache.items()) == [("b", "B"), ("c", "C")]
    off = BoundedCache(0)  # a metadata cache turned off keeps nothing
    off["a"] = 1
    assert not off


class _SlowToForget(BoundedCache):
    """Hands the interpreter to another thread while it drops an entry: the moment
    two threads adding at once both find the cache over its limit."""

    def popitem(self, last: bool = True) -> tuple[Any, Any]:
        time.sleep(0.001)
        return super().popitem(last=last)


def test_two_threads_adding_at_once_never_drop_from_nothing() -> None:
    cache = _SlowToForget(0)
    errors: list[BaseException] = []

    def fill(name: str) -> None:
        try:
            for i in range(50):
                cache[(name, i)] = i
        except BaseException as exc:  # reported by the test, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=fill, args=(name,)) for name in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert not cache
