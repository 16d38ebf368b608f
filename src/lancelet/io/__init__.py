"""Storage access: byte ranges in, whole objects out, for local files and object stores.

The interface is deliberately small (pyiceberg's FileIO is the model): readers ask
for byte ranges of an immutable object, writers stream bytes into an object that
only becomes visible under its final name when it is complete, and the commit path
needs one atomic primitive, ``put_if_not_exists``.  Every operation goes through a
:class:`FileIO`, made from a dataset's (or a file's) ``storage_options`` and held by
it; nothing above this package touches files directly.
"""

from __future__ import annotations

import os

from lancelet.errors import StorageError, StorageNotFoundError
from lancelet.io.base import InputFile, ObjectInfo, OutputFile, Storage
from lancelet.io.durability import deferred_syncs, own_syncs
from lancelet.io.fileio import FileIO, Place
from lancelet.io.local import LocalInputFile, LocalOutputFile
from lancelet.io.objects import STATS as REQUEST_STATS
from lancelet.io.uri import is_local, join, local_path, normalize

Location = str | os.PathLike[str]

__all__ = [
    "REQUEST_STATS",
    "FileIO",
    "InputFile",
    "LocalInputFile",
    "LocalOutputFile",
    "Location",
    "ObjectInfo",
    "OutputFile",
    "Place",
    "Storage",
    "deferred_syncs",
    "is_local",
    "join",
    "local_path",
    "normalize",
    "own_syncs",
    "relative",
    "store_failed",
]


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
