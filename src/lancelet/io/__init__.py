"""Storage access: byte ranges in, whole objects out, for local files and object stores.

The interface is deliberately small (pyiceberg's FileIO is the model): readers ask
for byte ranges of an immutable object, writers stream bytes into an object that
only becomes visible under its final name when it is complete, and the commit path
needs one atomic primitive, :func:`put_if_not_exists`.  Every function takes a
location (a local path or a URI) and hands it to the backend its scheme names
(:mod:`lancelet.io.registry`); nothing above this package touches files directly.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from lancelet.errors import StorageError, StorageNotFoundError
from lancelet.io.base import InputFile, ObjectInfo, OutputFile, Storage
from lancelet.io.local import LocalInputFile, LocalOutputFile
from lancelet.io.objects import STATS as REQUEST_STATS
from lancelet.io.registry import configure, resolve
from lancelet.io.uri import is_local, join, local_path, normalize

Location = str | os.PathLike[str]

__all__ = [
    "REQUEST_STATS",
    "InputFile",
    "LocalInputFile",
    "LocalOutputFile",
    "ObjectInfo",
    "OutputFile",
    "Storage",
    "configure",
    "delete",
    "exists",
    "fingerprint",
    "head",
    "is_dir",
    "is_local",
    "join",
    "list_dir",
    "list_tree",
    "local_path",
    "normalize",
    "open_input",
    "open_output",
    "put",
    "put_if_not_exists",
    "read_bytes",
    "relative",
    "remove_empty_dirs",
    "remove_tree",
    "resolve",
    "size_of",
    "store_failed",
]


def open_input(uri: Location) -> InputFile:
    storage, key, text = resolve(uri)
    return storage.open_input(key, text)


def open_output(uri: Location) -> OutputFile:
    storage, key, text = resolve(uri)
    return storage.open_output(key, text)


def read_bytes(uri: Location) -> bytes:
    """The whole object; a missing one raises ``FileNotFoundError``."""
    storage, key, _ = resolve(uri)
    return storage.read_bytes(key)


def put(uri: Location, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` under ``uri``, replacing any previous object atomically.
    ``durable=False`` lets a local write skip the fsync, for objects that are hints."""
    storage, key, _ = resolve(uri)
    storage.put(key, data, durable=durable)


def put_if_not_exists(uri: Location, data: bytes) -> bool:
    """Publish ``data`` under ``uri`` only if nothing is there yet; False if something was."""
    storage, key, _ = resolve(uri)
    return storage.put_if_not_exists(key, data)


def head(uri: Location) -> ObjectInfo | None:
    """Size and modification time, None when nothing is there."""
    storage, key, _ = resolve(uri)
    return storage.head(key)


def exists(uri: Location) -> bool:
    return head(uri) is not None


def list_dir(uri: Location) -> list[str]:
    """Names directly under a directory (or key prefix); empty when there is none."""
    storage, key, _ = resolve(uri)
    return storage.list_dir(key)


def list_tree(uri: Location) -> Iterator[tuple[str, ObjectInfo]]:
    """Every object below ``uri``, as a "/"-separated path relative to it."""
    storage, key, _ = resolve(uri)
    return storage.list_tree(key)


def is_dir(uri: Location) -> bool:
    """True when anything lies below ``uri``."""
    storage, key, _ = resolve(uri)
    return storage.is_dir(key)


def delete(uri: Location) -> None:
    """Remove an object; one that is already gone is not an error."""
    storage, key, _ = resolve(uri)
    storage.delete(key)


def remove_empty_dirs(uri: Location) -> None:
    """Remove ``uri`` and the empty directories below it (stores have none)."""
    storage, key, _ = resolve(uri)
    storage.remove_empty_dirs(key)


def size_of(uri: Location) -> int:
    """The object's size in bytes; a missing object is ``FileNotFoundError``."""
    found = head(uri)
    if found is None:
        raise FileNotFoundError(f"{uri}: no such file or object")
    return found.size


def remove_tree(uri: Location) -> None:
    """Remove ``uri`` and everything below it; what is already gone is no error."""
    storage, key, _ = resolve(uri)
    storage.remove_tree(key)


def fingerprint(uri: Location) -> tuple[int, int] | None:
    """What a cache of an immutable file's contents is keyed by (None: not there)."""
    storage, key, _ = resolve(uri)
    return storage.fingerprint(key)


def relative(uri: str, root: str) -> str:
    """``uri`` relative to ``root`` ("/"-separated); both in canonical form."""
    prefix = root.rstrip("/") + "/"
    if not uri.startswith(prefix):
        raise ValueError(f"{uri} is not below {root}")
    return uri[len(prefix) :]


def store_failed(exc: BaseException) -> bool:
    """Whether ``exc`` is a store failing a request (network, credentials, throttling)
    rather than an object missing: such an error says nothing about the dataset, so
    it must reach the caller as it is, not as a damaged dataset."""
    return isinstance(exc, StorageError) and not isinstance(exc, StorageNotFoundError)
