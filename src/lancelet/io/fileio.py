"""The storage one dataset (or one file) reaches, made from its URI's options.

pyiceberg's ``FileIO`` is the model: a small object built from a table's properties
and held by it, which every reader, writer and commit of that table goes through.
A dataset opened with ``storage_options`` makes one; datasets derived from it (other
versions, fragments, scanners, the dataset a write returns) share it, and nothing
else sees its options.  Two datasets in one bucket opened with different credentials
in one process therefore each sign their requests with their own.

Object stores are built lazily (obstore is imported only when an object-store URI is
used) and shared between ``FileIO``s whose options are equal, so datasets opened with
the same credentials share connections.  A ``memory://`` location lives in a store of
the ``FileIO``'s own, as pylance gives every open of a ``memory://`` URI a new, empty
store: a dataset written there is reached through the dataset object, not by opening
its URI again.
"""

from __future__ import annotations

import itertools
import os
import threading
import weakref
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cache
from typing import Any

from lancelet.errors import ArgumentError, StorageError, UnsupportedOptionError, URIError
from lancelet.io.base import InputFile, ObjectInfo, OutputFile, Storage
from lancelet.io.local import LocalStorage
from lancelet.io.objects import ObjectStorage
from lancelet.io.options import StoreOptions, split_options
from lancelet.io.uri import Location, join, parse

PathLike = str | os.PathLike[str]


@cache
def _local() -> LocalStorage:
    return LocalStorage()


# Object stores by scheme, bucket and options: equal options share one store.
_shared_lock = threading.Lock()
_shared: dict[tuple[str, str, tuple[tuple[str, str], ...]], ObjectStorage] = {}

# The memory stores of this process's FileIOs, by token, kept while a FileIO holds
# one, so that a FileIO pickled and restored in the same process reaches the same
# store (in another process the token finds nothing, and the store is new and empty).
_memory_tokens = itertools.count(1)
_memory_stores: weakref.WeakValueDictionary[int, ObjectStorage] = weakref.WeakValueDictionary()


class FileIO:
    """Reads and writes locations (local paths and URIs) with one set of options.

    ``storage_options`` take pylance's keys (see :mod:`lancelet.io.options`); they are
    checked here, so a bad key fails the call that gave it.  Local paths take none
    that matter (pylance ignores them too)."""

    def __init__(
        self, storage_options: Mapping[str, Any] | None = None, *, where: str = ""
    ) -> None:
        self.options: StoreOptions = split_options(storage_options, where or "storage_options")
        self.storage_options: dict[str, Any] | None = (
            dict(storage_options) if storage_options else None
        )
        self._lock = threading.Lock()
        self._stores: dict[tuple[str, str], ObjectStorage] = {}
        self._memory_token: int | None = None

    @classmethod
    def for_uri(cls, uri: PathLike, storage_options: Mapping[str, Any] | None) -> FileIO:
        """A ``FileIO`` for ``uri``, its store built now, so that options the store
        refuses fail here rather than at the first read."""
        found = cls(storage_options, where=str(uri))
        found.resolve(uri)
        return found

    def __reduce__(self) -> tuple[Any, ...]:
        # Stores and connections stay behind; the options rebuild them elsewhere.
        return _restore, (self.storage_options, self._memory_token)

    def __repr__(self) -> str:
        keys = sorted(self.storage_options) if self.storage_options else []
        return f"FileIO(options={keys})"

    # -- which backend serves a location -------------------------------------------

    def resolve(self, uri: PathLike) -> tuple[Storage, str, str]:
        """The backend for ``uri``, the key it knows the location by, and the
        location's canonical text (for messages)."""
        found = parse(uri)
        if not found.scheme:
            return _local(), found.key, found.key
        storage = self._object_storage(found)
        return storage, found.key, storage.uri(found.key)

    def _object_storage(self, found: Location) -> ObjectStorage:
        place = (found.backend_scheme, found.bucket)
        with self._lock:
            storage = self._stores.get(place)
            if storage is None:
                storage = self._build(*place)
                self._stores[place] = storage
        return storage

    def _build(self, scheme: str, bucket: str) -> ObjectStorage:
        if scheme == "memory":
            return self._memory()
        key = (scheme, bucket, self.options.key())
        with _shared_lock:
            storage = _shared.get(key)
            if storage is None:
                storage = build_object_storage(scheme, bucket, self.options)
                _shared[key] = storage
        return storage

    def _memory(self) -> ObjectStorage:
        if self.options.config or self.options.client or self.options.retry:
            raise UnsupportedOptionError("memory:/: the memory store takes no storage options")
        if self._memory_token is not None:
            restored = _memory_stores.get(self._memory_token)
            if restored is not None:
                return restored
        storage = ObjectStorage(_new_memory_store(), "memory:/")
        self._memory_token = next(_memory_tokens)
        _memory_stores[self._memory_token] = storage
        return storage

    # -- operations ----------------------------------------------------------------

    def open_input(self, uri: PathLike) -> InputFile:
        storage, key, text = self.resolve(uri)
        return storage.open_input(key, text)

    def open_output(self, uri: PathLike) -> OutputFile:
        storage, key, text = self.resolve(uri)
        return storage.open_output(key, text)

    def read_bytes(self, uri: PathLike) -> bytes:
        """The whole object; a missing one raises ``FileNotFoundError``."""
        storage, key, _ = self.resolve(uri)
        return storage.read_bytes(key)

    def put(self, uri: PathLike, data: bytes, *, durable: bool = True) -> None:
        """Write ``data`` under ``uri``, replacing any previous object atomically.
        ``durable=False`` lets a local write skip the fsync, for objects that are
        hints."""
        storage, key, _ = self.resolve(uri)
        storage.put(key, data, durable=durable)

    def put_if_not_exists(self, uri: PathLike, data: bytes) -> bool:
        """Publish ``data`` under ``uri`` only if nothing is there yet; False if
        something was."""
        storage, key, _ = self.resolve(uri)
        return storage.put_if_not_exists(key, data)

    def head(self, uri: PathLike) -> ObjectInfo | None:
        """Size and modification time, None when nothing is there."""
        storage, key, _ = self.resolve(uri)
        return storage.head(key)

    def exists(self, uri: PathLike) -> bool:
        return self.head(uri) is not None

    def size_of(self, uri: PathLike) -> int:
        """The object's size in bytes; a missing object is ``FileNotFoundError``."""
        found = self.head(uri)
        if found is None:
            raise FileNotFoundError(f"{uri}: no such file or object")
        return found.size

    def list_dir(self, uri: PathLike) -> list[str]:
        """Names directly under a directory (or key prefix); empty when there is none."""
        storage, key, _ = self.resolve(uri)
        return storage.list_dir(key)

    def list_tree(self, uri: PathLike) -> Iterator[tuple[str, ObjectInfo]]:
        """Every object below ``uri``, as a "/"-separated path relative to it."""
        storage, key, _ = self.resolve(uri)
        return storage.list_tree(key)

    def is_dir(self, uri: PathLike) -> bool:
        """True when anything lies below ``uri``."""
        storage, key, _ = self.resolve(uri)
        return storage.is_dir(key)

    def delete(self, uri: PathLike) -> None:
        """Remove an object; one that is already gone is not an error."""
        storage, key, _ = self.resolve(uri)
        storage.delete(key)

    def remove_empty_dirs(self, uri: PathLike) -> None:
        """Remove ``uri`` and the empty directories below it (stores have none)."""
        storage, key, _ = self.resolve(uri)
        storage.remove_empty_dirs(key)

    def remove_tree(self, uri: PathLike) -> None:
        """Remove ``uri`` and everything below it; what is already gone is no error."""
        storage, key, _ = self.resolve(uri)
        storage.remove_tree(key)

    def fingerprint(self, uri: PathLike) -> tuple[int, int] | None:
        """What a cache of an immutable file's contents is keyed by (None: not there)."""
        storage, key, _ = self.resolve(uri)
        return storage.fingerprint(key)

    def writers_turn(self, uri: PathLike) -> AbstractContextManager[bool]:
        """A block in which this writer has its turn among the writers on this machine
        that take turns on the directory ``uri`` (local disk only, see
        :mod:`lancelet.io.queue`); it yields whether the turn is held."""
        storage, key, _ = self.resolve(uri)
        return storage.writers_turn(key)


@dataclass(frozen=True)
class Place:
    """A location and the :class:`FileIO` that reaches it, for layers that address
    files by directory (an index's files, say): ``os.fspath`` and ``str`` give the
    location, so it reads as one in messages."""

    file_io: FileIO
    path: str

    def join(self, *parts: str) -> Place:
        return Place(self.file_io, join(self.path, *parts))

    def __fspath__(self) -> str:
        return self.path

    def __str__(self) -> str:
        return self.path


def file_io_for(
    path: PathLike, storage_options: Mapping[str, Any] | None, file_io: FileIO | None
) -> FileIO:
    """The storage a file is read or written through: the one given (a dataset's),
    else one made from ``storage_options`` (both at once would leave the options
    unused)."""
    if file_io is None:
        return FileIO.for_uri(path, storage_options)
    if storage_options:
        raise ArgumentError(f"{os.fspath(path)}: give storage_options or file_io, not both")
    return file_io


def _restore(storage_options: dict[str, Any] | None, memory_token: int | None) -> FileIO:
    restored = FileIO(storage_options)
    restored._memory_token = memory_token
    return restored


def _new_memory_store() -> Any:
    try:
        import obstore.store as stores
    except ImportError:
        raise URIError(
            "memory://: the memory store needs the obstore package (pip install 'lancelet[cloud]')"
        ) from None
    return stores.MemoryStore()


def build_object_storage(scheme: str, bucket: str, options: StoreOptions) -> ObjectStorage:
    """A store for one bucket of ``scheme`` with ``options``; obstore's refusals become
    lancelet errors naming the bucket."""
    label = f"{scheme}://{bucket}"
    try:
        import obstore.store as stores
        from obstore.exceptions import BaseError, UnknownConfigurationKeyError
    except ImportError:
        raise URIError(
            f"{label}: object stores need the obstore package (pip install 'lancelet[cloud]')"
        ) from None
    try:
        store = stores.from_url(
            label,
            config=options.config or None,  # type: ignore[arg-type]
            client_options=options.client or None,  # type: ignore[arg-type]
            retry_config=options.retry or None,  # type: ignore[arg-type]
        )
    except UnknownConfigurationKeyError as exc:
        raise UnsupportedOptionError(f"{label}: unknown storage option: {exc}") from exc
    except BaseError as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StorageError(f"{label}: cannot configure the store: {text}") from exc
    return ObjectStorage(store, label)
