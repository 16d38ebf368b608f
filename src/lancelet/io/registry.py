"""Which backend serves a location, and with which options.

Locations are plain strings all the way down, so the options a user passed for a
bucket (``storage_options=``) are remembered here by bucket: opening a dataset
with options configures its bucket, and every later read or write of a key in
that bucket uses them.  Stores are built lazily (obstore is imported only when an
object-store URI is used) and shared by equal options.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from functools import cache
from typing import Any

from lancelet.errors import StorageError, UnsupportedOptionError, URIError
from lancelet.io.base import Storage
from lancelet.io.local import LocalStorage
from lancelet.io.objects import ObjectStorage
from lancelet.io.options import StoreOptions, split_options
from lancelet.io.uri import Location, parse

_lock = threading.Lock()
_configured: dict[tuple[str, str], StoreOptions] = {}
_stores: dict[tuple[str, str, tuple[tuple[str, str], ...]], ObjectStorage] = {}


@cache
def _local() -> LocalStorage:
    return LocalStorage()


def configure(uri: str | os.PathLike[str], options: Mapping[str, Any] | None) -> None:
    """Remember ``options`` for the bucket ``uri`` lies in.  No options (None or an
    empty dict) leaves what an earlier call configured; local paths take none that
    matter (pylance ignores them too), but they are still checked for type."""
    found = parse(uri)
    split = split_options(options, str(uri))
    if not found.scheme or not options:
        return
    place = (found.backend_scheme, found.bucket)
    with _lock:
        # Built before it is remembered: options a store refuses fail the call that
        # gave them and leave the bucket as it was configured.
        key = (*place, split.key())
        if key not in _stores:
            _stores[key] = _build(found.backend_scheme, found.bucket, split)
        _configured[place] = split


def resolve(uri: str | os.PathLike[str]) -> tuple[Storage, str, str]:
    """The backend for ``uri``, the key it knows the location by, and the location's
    canonical text (for messages)."""
    found = parse(uri)
    if not found.scheme:
        return _local(), found.key, found.key
    storage = _object_storage(found)
    return storage, found.key, storage.uri(found.key)


def _object_storage(found: Location) -> ObjectStorage:
    scheme = found.backend_scheme
    with _lock:
        options = _configured.get((scheme, found.bucket), StoreOptions())
        key = (scheme, found.bucket, options.key())
        storage = _stores.get(key)
        if storage is None:
            storage = _build(scheme, found.bucket, options)
            _stores[key] = storage
    return storage


def _build(scheme: str, bucket: str, options: StoreOptions) -> ObjectStorage:
    label = f"{scheme}://{bucket}" if bucket else "memory:/"
    try:
        import obstore.store as stores
        from obstore.exceptions import BaseError, UnknownConfigurationKeyError
    except ImportError:
        raise URIError(
            f"{label}: object stores need the obstore package (pip install 'lancelet[cloud]')"
        ) from None
    if scheme == "memory":
        if options.config or options.client or options.retry:
            raise UnsupportedOptionError(f"{label}: the memory store takes no storage options")
        return ObjectStorage(_memory_store(), "memory:/")
    try:
        store = stores.from_url(
            f"{scheme}://{bucket}",
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


@cache
def _memory_store() -> Any:
    """The process's one memory store: ``memory://`` locations all live in it."""
    import obstore.store as stores

    return stores.MemoryStore()
