"""A session: the caches datasets keep of what they opened from immutable files
(data file readers, index readers), which datasets opened with the same session
share (pylance's ``lance.Session``).  Index readers go to the session's
:class:`IndexCache`, bounded by bytes as pylance's; the other caches by entries."""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from typing import Any

from lancelet.errors import UnsupportedOptionError
from lancelet.transaction.index_cache import (
    DEFAULT_SIZE_BYTES,
    IndexCache,
    IndexCacheView,
    check_size,
)

# The caches of index readers; every other cache holds file and table metadata.
INDEX_CACHES = frozenset({"scalar_indices", "vector_indices"})


class BoundedCache(OrderedDict[Any, Any]):
    """A dict that forgets its oldest entries beyond ``limit``."""

    def __init__(self, limit: int = 256) -> None:
        super().__init__()
        self.limit = limit
        # Two threads adding at once (the scans of one dataset shared by threads)
        # would otherwise both see it full and both pop, one from nothing.
        self._lock = threading.Lock()

    def __setitem__(self, key: Any, value: Any) -> None:
        with self._lock:
            super().__setitem__(key, value)
            while len(self) > self.limit:
                self.popitem(last=False)


class Session:
    """Caches shared by the datasets opened with it.

    The index cache holds at most ``index_cache_size_bytes`` (pylance's default, 6
    GiB, when None) of index readers, by their estimated size; the metadata caches
    are bounded by entries (a few hundred), a ``metadata_cache_size_bytes`` of 0
    turning them off (a cache only spares work, so results are the same either way)."""

    def __init__(
        self,
        index_cache_size_bytes: int | None = None,
        metadata_cache_size_bytes: int | None = None,
        index_cache_backend: Any = None,
        metadata_cache_backend: Any = None,
    ) -> None:
        for name, value in (
            ("index_cache_backend", index_cache_backend),
            ("metadata_cache_backend", metadata_cache_backend),
        ):
            if value is not None:
                raise UnsupportedOptionError(f"Session: lancelet does not support {name}")
        check_size(index_cache_size_bytes, "index_cache_size_bytes")
        check_size(metadata_cache_size_bytes, "metadata_cache_size_bytes")
        capacity = DEFAULT_SIZE_BYTES if index_cache_size_bytes is None else index_cache_size_bytes
        self.index_cache = IndexCache(capacity)
        self._metadata_off = metadata_cache_size_bytes == 0
        self._caches: dict[str, BoundedCache] = {}

    def cache(self, name: str, limit: int) -> BoundedCache:
        """A metadata cache of at most ``limit`` entries."""
        assert name not in INDEX_CACHES, f"{name}: an index cache (index_cache_view)"
        return self._caches.setdefault(name, self.new_cache(limit))

    def new_cache(self, limit: int) -> BoundedCache:
        """A metadata cache of at most ``limit`` entries that the session does not keep
        (one its owner keeps), off when the session's metadata caches are."""
        return BoundedCache(0 if self._metadata_off else limit)

    def index_cache_view(self, name: str) -> IndexCacheView:
        """The index cache's entries of one kind of reader."""
        return IndexCacheView(self.index_cache, name)

    def size_bytes(self) -> int:
        """An estimate of the memory the cached entries hold: the index cache's, and
        each metadata entry's size and that of its attributes, as Python reports them
        (not what they point to)."""
        metadata = sum(_shallow_size(v) for c in self._caches.values() for v in c.values())
        return metadata + self.index_cache.size_bytes

    def index_cache_size_bytes(self) -> int:
        return self.index_cache.size_bytes

    def is_same_as(self, other: Session) -> bool:
        return self is other

    def __repr__(self) -> str:
        entries = sum(len(c) for c in self._caches.values()) + self.index_cache.entry_count()
        return f"Session(entries={entries}, size_bytes={self.size_bytes()})"


def _shallow_size(value: Any) -> int:
    size = sys.getsizeof(value)
    attributes = getattr(value, "__dict__", None)
    if attributes:
        size += sum(sys.getsizeof(v) for v in attributes.values())
    return size
