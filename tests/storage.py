"""Where the tests' datasets live: local files (the default) or the memory store.

``make test`` runs the dataset tests again with ``LANCELET_TEST_STORAGE_BACKEND=memory``.
Every path under pytest's temporary directory then resolves to lancelet's
``memory://`` store (:func:`memory_backend` patches :meth:`lancelet.io.FileIO.resolve`),
so each read and write lancelet makes goes through the object-store backend (obstore,
ranged reads, conditional puts, listings); lancelet never touches a local file there.

pylance cannot see that store: it has its own.  So that the tests keep checking
lancelet against pylance, :class:`PylanceBridge` gives pylance a local copy of each
dataset it is handed (a *view*, under ``<basetemp>/pylance-view``), and keeps the two
in step as a shared filesystem would:

* every object lancelet writes or deletes below a viewed dataset is copied to (or
  removed from) the view at once, so pylance sees it as soon as it would locally;
* before each storage call lancelet makes below a viewed dataset, the view is
  scanned, and whatever pylance added, replaced or removed there since is taken into
  the store first, so lancelet sees pylance's commits as soon as it would locally.

Tests that look at or damage a dataset's files use the helpers at the end of this
module instead of ``os``, so they hold on both backends.  A test that needs more (it
ages files, makes ``os`` calls fail, or runs other processes) carries the
``local_files`` marker and is skipped in the memory run.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any
from unittest import mock

import pyarrow as pa

from lancelet import io
from lancelet.io.base import InputFile, ObjectInfo, OutputFile, Storage
from lancelet.io.objects import ObjectStorage

STORAGE_BACKEND = os.environ.get("LANCELET_TEST_STORAGE_BACKEND", "local")
if STORAGE_BACKEND not in ("local", "memory"):
    raise ValueError(
        f"LANCELET_TEST_STORAGE_BACKEND={STORAGE_BACKEND!r}: expected 'local' or 'memory'"
    )
MEMORY = STORAGE_BACKEND == "memory"

# The tests' own reads and writes of datasets' files (local, or routed to the memory
# store in the memory run).
FILES = io.FileIO()

# What the view knows of one of its files: (inode, size, modification time in ns).
# pylance never changes a file in place: it writes new names, renames over old ones
# and deletes, each of which changes the inode, the size or the time.
Stamp = tuple[int, int, int]


@dataclass
class _View:
    root: str  # the dataset's path, as lancelet knows it (its objects are in the store)
    local: str  # the directory pylance reads and writes
    known: dict[str, Stamp] = field(default_factory=dict)  # files equal to the store's


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _stamp(path: str) -> Stamp:
    found = os.stat(path)
    return found.st_ino, found.st_size, found.st_mtime_ns


def _scan(local: str) -> dict[str, Stamp]:
    found: dict[str, Stamp] = {}
    pending = [local]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except FileNotFoundError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
            else:
                stat = entry.stat(follow_symlinks=False)
                relative = os.path.relpath(entry.path, local).replace(os.sep, "/")
                found[relative] = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
    return found


class PylanceBridge:
    """Local views of memory-store datasets for pylance, kept in step with the store."""

    def __init__(self, base: str, memory: ObjectStorage) -> None:
        self.base = base
        self.memory = memory
        self.views_dir = os.path.join(base, "pylance-view")
        self._views: dict[str, _View] = {}
        self._lock = threading.RLock()

    def routed(self, uri: object) -> bool:
        """Whether lancelet keeps ``uri`` in the memory store (a path under the base)."""
        if not isinstance(uri, (str, os.PathLike)) or not io.is_local(uri):
            return False
        return _within(io.local_path(uri), self.base)

    @staticmethod
    def key(path: str) -> str:
        """The store's key for a local path."""
        return path.lstrip("/")

    def view(self, uri: str | os.PathLike[str]) -> str:
        """The local directory pylance should open for ``uri``, up to date."""
        root = io.local_path(uri)
        with self._lock:
            found = self._views.get(root)
            if found is None:
                found = self._views[root] = self._export(root)
            else:
                self._take_in(found)
            return found.local

    def file_view(self, path: str | os.PathLike[str]) -> str:
        """A local copy of the one file at ``path``, for pylance's file reader."""
        found = io.local_path(path)
        self.take_in(found)
        local = os.path.join(self.views_dir, "files", os.path.relpath(found, self.base))
        os.makedirs(os.path.dirname(local), exist_ok=True)
        with open(local, "wb") as f:
            f.write(self.memory.read_bytes(self.key(found)))
        return local

    def take_in(self, path: str) -> None:
        """Bring into the store what pylance changed in the views ``path`` touches."""
        with self._lock:
            for view in self._touching(path):
                self._take_in(view)

    def copied(self, path: str) -> None:
        """lancelet wrote the object at ``path``: copy it to the view that holds it."""
        with self._lock:
            views = [v for r, v in self._views.items() if _within(path, r)]
            data = self.memory.read_bytes(self.key(path)) if views else b""
            for view in views:
                relative = os.path.relpath(path, view.root).replace(os.sep, "/")
                local = os.path.join(view.local, relative)
                os.makedirs(os.path.dirname(local), exist_ok=True)
                # Written aside and renamed into place, as pylance's own writes are.
                aside = os.path.join(os.path.dirname(local), f".{os.path.basename(local)}.bridge")
                with open(aside, "wb") as f:
                    f.write(data)
                os.replace(aside, local)
                view.known[relative] = _stamp(local)

    def removed(self, path: str) -> None:
        """lancelet removed ``path`` (an object, or everything below a prefix)."""
        with self._lock:
            for view in self._touching(path):
                below = "" if _within(view.root, path) else os.path.relpath(path, view.root)
                for relative in list(view.known):
                    if below and relative != below and not relative.startswith(below + "/"):
                        continue
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(os.path.join(view.local, relative))
                    del view.known[relative]

    def forget_under(self, prefix: str) -> None:
        """Drop the views of the datasets below ``prefix``, and the store's objects there."""
        with self._lock:
            for root in [r for r in self._views if _within(r, prefix)]:
                shutil.rmtree(self._views.pop(root).local, ignore_errors=True)
            self.memory.remove_tree(self.key(prefix))

    def _touching(self, path: str) -> list[_View]:
        return [v for r, v in self._views.items() if _within(path, r) or _within(r, path)]

    def _export(self, root: str) -> _View:
        local = os.path.join(self.views_dir, os.path.relpath(root, self.base))
        if os.path.lexists(local):
            shutil.rmtree(local)
        os.makedirs(local)
        view = _View(root, local)
        prefix = self.key(root)
        for relative, _ in list(self.memory.list_tree(prefix)):
            path = os.path.join(local, relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(self.memory.read_bytes(f"{prefix}/{relative}"))
            view.known[relative] = _stamp(path)
        return view

    def _take_in(self, view: _View) -> None:
        found = _scan(view.local)
        if found == view.known:
            return
        prefix = self.key(view.root)
        for relative, stamp in found.items():
            if view.known.get(relative) != stamp:
                with open(os.path.join(view.local, relative), "rb") as f:
                    self.memory.put(f"{prefix}/{relative}", f.read())
        for relative in view.known.keys() - found.keys():
            self.memory.delete(f"{prefix}/{relative}")
        view.known = found


class _CopiedOutput:
    """An output file whose object is copied to pylance's view once committed."""

    def __init__(self, inner: OutputFile, bridge: PylanceBridge, path: str) -> None:
        self._inner = inner
        self._bridge = bridge
        self._path = path
        self.path = inner.path

    @property
    def position(self) -> int:
        return self._inner.position

    @position.setter
    def position(self, value: int) -> None:
        self._inner.position = value

    def write(self, data: bytes | bytearray | memoryview | pa.Buffer) -> None:
        self._inner.write(data)

    def commit(self) -> None:
        self._inner.commit()
        self._bridge.copied(self._path)

    def abort(self) -> None:
        self._inner.abort()

    def __enter__(self) -> _CopiedOutput:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


class BridgedStorage:
    """The memory store as lancelet sees it in the memory run: each call first takes
    in what pylance changed in the views it touches, and each change lancelet makes
    is copied to the view holding it."""

    def __init__(self, bridge: PylanceBridge) -> None:
        self._bridge = bridge
        self._memory = bridge.memory

    def _before(self, key: str) -> str:
        path = "/" + key
        self._bridge.take_in(path)
        return path

    def open_input(self, key: str, uri: str) -> InputFile:
        self._before(key)
        return self._memory.open_input(key, uri)

    def open_output(self, key: str, uri: str) -> OutputFile:
        path = self._before(key)
        return _CopiedOutput(self._memory.open_output(key, uri), self._bridge, path)

    def read_bytes(self, key: str) -> bytes:
        self._before(key)
        return self._memory.read_bytes(key)

    def put(self, key: str, data: bytes, *, durable: bool = True) -> None:
        path = self._before(key)
        self._memory.put(key, data, durable=durable)
        self._bridge.copied(path)

    def put_if_not_exists(self, key: str, data: bytes) -> bool:
        path = self._before(key)
        won = self._memory.put_if_not_exists(key, data)
        if won:
            self._bridge.copied(path)
        return won

    def head(self, key: str) -> ObjectInfo | None:
        self._before(key)
        return self._memory.head(key)

    def list_dir(self, key: str) -> list[str]:
        self._before(key)
        return self._memory.list_dir(key)

    def list_tree(self, key: str) -> Iterator[tuple[str, ObjectInfo]]:
        self._before(key)
        return self._memory.list_tree(key)

    def is_dir(self, key: str) -> bool:
        self._before(key)
        return self._memory.is_dir(key)

    def delete(self, key: str) -> None:
        path = self._before(key)
        self._memory.delete(key)
        self._bridge.removed(path)

    def remove_empty_dirs(self, key: str) -> None:
        self._memory.remove_empty_dirs(key)

    def remove_tree(self, key: str) -> None:
        path = self._before(key)
        self._memory.remove_tree(key)
        self._bridge.removed(path)

    def fingerprint(self, key: str) -> tuple[int, int] | None:
        return self._memory.fingerprint(key)

    def writers_turn(self, key: str) -> contextlib.AbstractContextManager[bool]:
        return self._memory.writers_turn(key)


def _bridged(
    bridge: PylanceBridge, call: Callable[..., Any], position: int, name: str
) -> Callable[..., Any]:
    """``call`` (a pylance function taking a dataset location as argument ``position``
    or keyword ``name``) made to open the location's view instead."""

    @functools.wraps(call)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if name in kwargs:
            uri = kwargs[name]
        elif len(args) > position:
            uri = args[position]
        else:
            return call(*args, **kwargs)
        if not bridge.routed(uri):
            return call(*args, **kwargs)
        local = bridge.view(uri)
        if name in kwargs:
            kwargs[name] = local
        else:
            args = (*args[:position], local, *args[position + 1 :])
        return call(*args, **kwargs)

    return wrapper


def _file_reader(bridge: PylanceBridge) -> type[Any]:
    """pylance's file reader, made to open a local copy of a file in the store."""
    import lance.file

    class LanceFileReader(lance.file.LanceFileReader):
        def __init__(self, path: str, *args: Any, **kwargs: Any) -> None:
            super().__init__(
                bridge.file_view(path) if bridge.routed(path) else path, *args, **kwargs
            )

    return LanceFileReader


# The session's bridge, while the tests run against the memory store.
BRIDGE: PylanceBridge | None = None


@contextlib.contextmanager
def memory_backend(base: str) -> Iterator[PylanceBridge]:
    """Route every local path under ``base`` to the memory store (the key is the path
    without its leading "/"; messages still name the path), and give pylance views."""
    global BRIDGE
    outer = BRIDGE
    import lance
    import lance.file
    import lance.fragment

    # One memory store for the run: every FileIO's local paths under the base live there.
    import obstore.store

    memory = ObjectStorage(obstore.store.MemoryStore(), "memory:/")
    bridge = BRIDGE = PylanceBridge(base, memory)
    storage = BridgedStorage(bridge)
    original = io.FileIO.resolve

    def resolve(self: io.FileIO, uri: str | os.PathLike[str]) -> tuple[Storage, str, str]:
        found, key, text = original(self, uri)
        if bridge.routed(uri):
            return storage, bridge.key(key), text
        return found, key, text

    try:
        with contextlib.ExitStack() as patches:
            patches.enter_context(mock.patch.object(io.FileIO, "resolve", resolve))
            # pylance's calls that take a dataset's location, and where they take it.
            for owner, name, position, keyword in [
                (lance, "dataset", 0, "uri"),
                (lance, "write_dataset", 1, "uri"),
                (lance.fragment, "write_fragments", 1, "dataset_uri"),
                (lance.LanceFragment, "create", 0, "dataset_uri"),
                (lance.LanceDataset, "commit", 0, "base_uri"),
            ]:
                call = _bridged(bridge, getattr(owner, name), position, keyword)
                patch = staticmethod(call) if isinstance(owner, type) else call
                patches.enter_context(mock.patch.object(owner, name, patch))
            patches.enter_context(
                mock.patch.object(lance.file, "LanceFileReader", _file_reader(bridge))
            )
            yield bridge
    finally:
        BRIDGE = outer


@contextlib.contextmanager
def scratch_dir(parent: str | os.PathLike[str]) -> Iterator[str]:
    """A fresh directory below ``parent`` (pytest's temporary directory, so that the
    memory run routes it), removed afterwards on either backend."""
    with tempfile.TemporaryDirectory(dir=parent) as root:
        try:
            yield root
        finally:
            if BRIDGE is not None:
                BRIDGE.forget_under(os.path.realpath(root))


def copy_tree(source: str | os.PathLike[str], dest: str | os.PathLike[str]) -> None:
    """Copy every file below ``source`` to ``dest``, on either backend.

    Locally this is :func:`shutil.copytree`, which keeps modification times; in the
    memory run each object is stamped with the time it was put."""
    if not MEMORY:
        shutil.copytree(source, dest)
        return
    source, dest = io.local_path(source), io.local_path(dest)
    for name, _ in list(FILES.list_tree(source)):
        FILES.put(io.join(dest, name), FILES.read_bytes(io.join(source, name)))


# -- files, on either backend ----------------------------------------------------------
#
# Tests that look at or damage a dataset's files do it through these rather than ``os``,
# so that they hold on both backends.


def read_file(path: str | os.PathLike[str]) -> bytes:
    return FILES.read_bytes(path)


def write_file(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace (or create) the file at ``path`` with ``data``."""
    FILES.put(path, data)


def remove_file(path: str | os.PathLike[str]) -> None:
    """Remove the file at ``path``, which must be there (as with ``os.remove``)."""
    if not FILES.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    FILES.delete(path)


def present(path: str | os.PathLike[str]) -> bool:
    """Whether anything is at ``path``: a file, or a folder (a key prefix) with files."""
    return FILES.exists(path) or FILES.is_dir(path)


def list_names(folder: str | os.PathLike[str]) -> list[str]:
    """The names directly in ``folder`` (files and folders), sorted; none if it is missing."""
    return sorted(FILES.list_dir(folder))


def file_names(root: str | os.PathLike[str]) -> set[str]:
    """Every file below ``root``, as a "/"-separated path relative to it."""
    return {name for name, _ in FILES.list_tree(root)}


def file_tree(root: str | os.PathLike[str]) -> dict[str, bytes]:
    """Every file below ``root`` with its bytes."""
    found = io.local_path(root) if io.is_local(root) else str(root)
    return {
        name: FILES.read_bytes(io.join(found, name)) for name, _ in list(FILES.list_tree(found))
    }


def local(path: str | os.PathLike[str]) -> io.Place:
    """A local path as a place the index layer reads and writes (through ``FILES``)."""
    return io.Place(FILES, os.fspath(path))
