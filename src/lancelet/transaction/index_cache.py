"""A session's index cache: the index segments datasets opened (vector and scalar
index readers, by uuid), least recently used first out, bounded by the bytes they
hold as pylance's is (``index_cache_size_bytes``; 0 keeps nothing), with the hit and
miss counts behind pylance's ``index_cache_hit_rate``.

lancelet reads a vector index segment whole when it opens it, so an entry is a
segment (pylance caches its partitions one by one): a query probing partitions no
query probed before is a hit here once its segment is open.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import OrderedDict
from collections.abc import Iterator, MutableMapping
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.errors import NumberOutOfRangeError

# pylance's default index cache size (6 GiB), and the bytes its deprecated
# ``index_cache_size`` (in entries) stands for per entry.
DEFAULT_SIZE_BYTES = 6 * 1024 * 1024 * 1024
BYTES_PER_ENTRY = 20 * 1024 * 1024

# How deep :func:`estimated_bytes` follows attributes and containers.
_DEPTH = 8


def check_size(size: Any, name: str) -> None:
    """A cache size is a count of bytes or entries (None: the default); pylance's
    binding raises TypeError for another type and OverflowError for a negative one."""
    if size is None:
        return
    if not isinstance(size, int):
        raise TypeError(
            f"argument {name!r}: {type(size).__name__!r} object cannot be interpreted as an integer"
        )
    if size < 0:
        raise NumberOutOfRangeError(f"argument {name!r}: can't convert negative int to unsigned")


class IndexCache:
    """Entries keyed by (cache name, key), with their estimated sizes."""

    def __init__(self, capacity_bytes: int = DEFAULT_SIZE_BYTES) -> None:
        self.capacity_bytes = capacity_bytes
        self.hits = 0
        self.misses = 0
        self.size_bytes = 0
        self._entries: OrderedDict[tuple[str, Any], tuple[Any, int]] = OrderedDict()

    def lookup(self, name: str, key: Any) -> Any | None:
        """The entry (now the most recently used), or None; counted as a hit or a miss."""
        found = self._entries.get((name, key))
        if found is None:
            self.misses += 1
            return None
        self.hits += 1
        self._entries.move_to_end((name, key))
        return found[0]

    def store(self, name: str, key: Any, value: Any) -> None:
        """Keep ``value`` unless it alone exceeds the capacity; drop the least recently
        used entries until the rest fit."""
        self.discard(name, key)
        size = estimated_bytes(value)
        if size > self.capacity_bytes:
            return
        self._entries[(name, key)] = (value, size)
        self.size_bytes += size
        while self.size_bytes > self.capacity_bytes:
            _, (_, dropped) = self._entries.popitem(last=False)
            self.size_bytes -= dropped

    def discard(self, name: str, key: Any) -> None:
        found = self._entries.pop((name, key), None)
        if found is not None:
            self.size_bytes -= found[1]

    def keys_of(self, name: str) -> list[Any]:
        return [key for entry, key in self._entries if entry == name]

    def peek(self, name: str, key: Any) -> Any | None:
        """The entry, without counting a lookup or refreshing it."""
        found = self._entries.get((name, key))
        return None if found is None else found[0]

    def entry_count(self) -> int:
        return len(self._entries)

    def hit_rate(self) -> float:
        """Hits over lookups (0.0 before any lookup), as pylance reports it."""
        lookups = self.hits + self.misses
        return 0.0 if lookups == 0 else self.hits / lookups


class IndexCacheView(MutableMapping[Any, Any]):
    """One named cache of a session's :class:`IndexCache`, as the dict the layers
    above use (``get`` and ``[]`` count a lookup; ``in`` does not)."""

    def __init__(self, cache: IndexCache, name: str) -> None:
        self._cache = cache
        self._name = name

    def get(self, key: Any, default: Any = None) -> Any:
        found = self._cache.lookup(self._name, key)
        return default if found is None else found

    def __getitem__(self, key: Any) -> Any:
        found = self._cache.lookup(self._name, key)
        if found is None:
            raise KeyError(key)
        return found

    def __setitem__(self, key: Any, value: Any) -> None:
        self._cache.store(self._name, key, value)

    def __delitem__(self, key: Any) -> None:
        if self._cache.peek(self._name, key) is None:
            raise KeyError(key)
        self._cache.discard(self._name, key)

    def __contains__(self, key: object) -> bool:
        return self._cache.peek(self._name, key) is not None

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cache.keys_of(self._name))

    def __len__(self) -> int:
        return len(self._cache.keys_of(self._name))


def estimated_bytes(value: Any) -> int:
    """The memory ``value`` holds: its own ``cache_bytes()`` when it has one, else its
    arrays' buffers (numpy and Arrow) and the Python objects reachable through
    attributes and containers (a walk of an opened BTREE took 7% of a cold lookup)."""
    sized = getattr(value, "cache_bytes", None)
    if callable(sized):
        return int(sized())
    return _walk(value, set(), _DEPTH)


def _walk(value: Any, seen: set[int], depth: int) -> int:
    if id(value) in seen or depth < 0:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (pa.Array, pa.ChunkedArray, pa.Table, pa.RecordBatch)):
        return int(value.nbytes)
    size = sys.getsizeof(value)
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return size
    if isinstance(value, dict):
        items: list[Any] = [*value.keys(), *value.values()]
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [getattr(value, f.name) for f in dataclasses.fields(value)]
    else:
        items = list(getattr(value, "__dict__", {}).values())
    return size + sum(_walk(item, seen, depth - 1) for item in items)
