"""A session: the caches datasets keep of what they opened from immutable files
(data file readers, index readers), which datasets opened with the same session
share (pylance's ``lance.Session``)."""

from __future__ import annotations

import sys
from collections import OrderedDict
from typing import Any

from lancelet.errors import UnsupportedOptionError

# The caches of index readers; every other cache holds file and table metadata.
INDEX_CACHES = frozenset({"scalar_indices"})


class BoundedCache(OrderedDict[Any, Any]):
    """A dict that forgets its oldest entries beyond ``limit``."""

    def __init__(self, limit: int = 256) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        while len(self) > self.limit:
            self.popitem(last=False)


class Session:
    """Caches shared by the datasets opened with it.

    lancelet bounds its caches by entries (a few hundred), not bytes: a size of 0
    turns a cache off; any other size keeps the default bounds (a cache only spares
    work, so results are the same either way)."""

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
        self._index_off = index_cache_size_bytes == 0
        self._metadata_off = metadata_cache_size_bytes == 0
        self._caches: dict[str, BoundedCache] = {}

    def cache(self, name: str, limit: int) -> BoundedCache:
        off = self._index_off if name in INDEX_CACHES else self._metadata_off
        return self._caches.setdefault(name, BoundedCache(0 if off else limit))

    def size_bytes(self) -> int:
        """An estimate of the memory the cached entries hold: each entry's size and
        that of its attributes, as Python reports them (not what they point to)."""
        return sum(_shallow_size(v) for c in self._caches.values() for v in c.values())

    def index_cache_size_bytes(self) -> int:
        caches = [c for name, c in self._caches.items() if name in INDEX_CACHES]
        return sum(_shallow_size(v) for c in caches for v in c.values())

    def is_same_as(self, other: Session) -> bool:
        return self is other

    def __repr__(self) -> str:
        entries = sum(len(c) for c in self._caches.values())
        return f"Session(entries={entries}, size_bytes={self.size_bytes()})"


def _shallow_size(value: Any) -> int:
    size = sys.getsizeof(value)
    attributes = getattr(value, "__dict__", None)
    if attributes:
        size += sum(sys.getsizeof(v) for v in attributes.values())
    return size
