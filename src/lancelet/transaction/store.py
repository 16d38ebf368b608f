"""A dataset directory's metadata objects, read and written by name.

:class:`DatasetStore` knows where manifests, transactions and deletion files
live and how their bytes look; it holds no policy about what to commit.
Manifests are immutable once published, so they are cached by version.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import posixpath
import threading
from collections import OrderedDict
from collections.abc import MutableMapping
from dataclasses import replace
from typing import Any

import numpy as np

from lancelet import events, io
from lancelet.errors import (
    CorruptDatasetError,
    DatasetNotFoundError,
    StorageError,
    VersionNotFoundError,
)
from lancelet.table import deletion, lineage, naming, row_ids, sorted_sets
from lancelet.table.base_paths import BasePath
from lancelet.table.fragment import DELETION_KIND_NAMES, DeletionFile, Fragment, Sequence
from lancelet.table.fragment_check import check_fragments
from lancelet.table.index_layout import with_inferred_details
from lancelet.table.manifest import Manifest
from lancelet.table.manifest_file import (
    ManifestSummary,
    check_manifest_indices,
    decode_manifest,
    decode_summary,
    encode_manifest,
)
from lancelet.table.naming import ManifestLocation, ManifestNaming
from lancelet.table.validate import check_manifest
from lancelet.transaction.operations import Transaction
from lancelet.transaction.registry import decode_transaction, encode_transaction
from lancelet.transaction.session import Session

# Manifests decoded in this process, by content.  Every commit re-reads the latest
# manifest, often through a new DatasetStore (one per write_dataset call), and a writer
# that lost a race re-reads the winners'; reading a manifest's bytes and hashing them
# costs far less than decoding and checking it.  Keyed by what the file holds, a
# dataset deleted and written again under the same path can never get an old answer.
_DECODED: OrderedDict[tuple[str, bytes], Manifest] = OrderedDict()
_DECODED_MAX = 256


def _content_key(path: str, data: bytes) -> tuple[str, bytes]:
    return path, hashlib.blake2b(data, digest_size=20).digest()


def _remember(key: tuple[str, bytes], manifest: Manifest) -> None:
    _DECODED[key] = manifest
    _DECODED.move_to_end(key)
    while len(_DECODED) > _DECODED_MAX:
        try:
            _DECODED.popitem(last=False)
        except KeyError:  # another thread emptied it first
            break


# Decoded manifests a store keeps, by version.
_MANIFESTS_KEPT = 64

# Decoded deletion files a store keeps: at most this many, of at most this many rows.
_KEPT_DELETIONS = 1024
_KEPT_DELETION_ROWS = 1 << 16


class DatasetStore:
    """A dataset's metadata objects by name, read and written through its
    :class:`~lancelet.io.FileIO` (``file_io``: one shared with another view of the
    same dataset; by default one made from ``storage_options``)."""

    def __init__(
        self,
        uri: str | os.PathLike[str],
        storage_options: dict[str, str] | None = None,
        session: Session | None = None,
        *,
        file_io: io.FileIO | None = None,
    ) -> None:
        self.root = io.normalize(uri)
        self.io = io.FileIO.for_uri(self.root, storage_options) if file_io is None else file_io
        self.storage_options = self.io.storage_options
        # Decoded manifests by version, the newest used last.  Not an lru_cache of
        # the bound method: that would make a reference cycle, and the store with
        # every reader its session caches would wait for a full garbage collection.
        self._manifests: OrderedDict[int, Manifest] = OrderedDict()
        self._manifests_lock = threading.Lock()
        self.session = Session() if session is None else session
        self._own_caches: dict[str, dict[Any, Any]] = {}
        self._bases: dict[int, BasePath] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        # Distributed jobs ship datasets to other processes, which build the same
        # storage from the options; the caches stay behind.
        return _restore_store, (self.root, self.io)

    def with_session(self, session: Session) -> DatasetStore:
        """This dataset's store (its storage) with another session's caches."""
        return DatasetStore(self.root, session=session, file_io=self.io)

    def cache(self, name: str, limit: int = 256) -> dict[Any, Any]:
        """A dictionary kept as long as this store, for what the layers above open
        from immutable files (index readers by uuid, data file readers); it holds at
        most ``limit`` entries (a few hundred), the oldest dropped first."""
        return self.session.cache(name, limit)

    def own_cache(self, name: str, limit: int) -> dict[Any, Any]:
        """A cache this store object keeps alone, not its session (which other stores
        may share): for entries that point back to the store, weakly (a strong
        reference would make a cycle), which in a shared cache would outlive it."""
        found = self._own_caches.get(name)
        if found is None:
            found = self._own_caches.setdefault(name, self.session.new_cache(limit))
        return found

    def index_cache(self, name: str) -> MutableMapping[str, Any]:
        """The session's index cache for readers of one kind (``vector_indices``,
        ``scalar_indices``), by index uuid: bounded by bytes, lookups counted."""
        return self.session.index_cache_view(name)

    def path(self, *parts: str) -> str:
        return io.join(self.root, *parts)

    def place(self, *parts: str) -> io.Place:
        """A location below the dataset's root, with the storage that reaches it."""
        return io.Place(self.io, self.path(*parts))

    def data_path(self, name: str, base_id: int | None = None) -> str:
        """Where a data file is: under the dataset's ``data/``, or under the base path
        ``base_id`` of the dataset's manifests."""
        if base_id is None:
            return self.path(naming.DATA_DIR, name)
        return io.join(self._base(base_id).data_dir(), name)

    def remember_bases(self, manifest: Manifest) -> None:
        """Learn the manifest's base paths.  Ids are not reused within a dataset's
        history (short of a restore that dropped a base): the last manifest seen wins."""
        for base in manifest.base_paths:
            self._bases[base.id] = base

    def _base(self, base_id: int) -> BasePath:
        if base_id not in self._bases:
            found = self.latest_manifest()  # a base added since this store last looked
            if found is not None:
                self.remember_bases(found[0])
        base = self._bases.get(base_id)
        if base is None:
            raise CorruptDatasetError(f"{self.root}: a data file names base path {base_id}, "
                                      "which no manifest registers")  # fmt: skip
        return base

    # -- versions ---------------------------------------------------------------------

    def list_versions(self) -> list[ManifestLocation]:
        found = (
            naming.parse_manifest_name(n) for n in self.io.list_dir(self.path(naming.VERSIONS_DIR))
        )
        return sorted((loc for loc in found if loc is not None), key=lambda loc: loc.version)

    def manifest_location(self, version: int) -> ManifestLocation | None:
        if naming.is_detached(version):
            name = naming.detached_manifest_name(version)
            found = self.io.exists(self.path(naming.VERSIONS_DIR, name))
            return ManifestLocation(version, name, ManifestNaming.V2) if found else None
        for scheme in (ManifestNaming.V2, ManifestNaming.V1):
            name = naming.manifest_name(version, scheme)
            if self.io.exists(self.path(naming.VERSIONS_DIR, name)):
                return ManifestLocation(version, name, scheme)
        return None

    def _hinted_location(self) -> ManifestLocation | None:
        try:
            hint = json.loads(
                self.io.read_bytes(self.path(naming.VERSIONS_DIR, naming.VERSION_HINT))
            )
            version = int(hint["version"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return self.manifest_location(version) if version > 0 else None

    def writers_turn(self) -> contextlib.AbstractContextManager[bool]:
        """The block in which this writer's commit has its turn among the local
        writers of the dataset (see :mod:`lancelet.io.queue`)."""
        return self.io.writers_turn(self.path(naming.VERSIONS_DIR))

    def latest_location(self) -> ManifestLocation | None:
        """The newest version: from the hint, probing forward past writers that died
        before updating it; a full listing only when the hint is missing or wrong."""
        location = self._hinted_location()
        if location is None:
            versions = self.list_versions()
            return versions[-1] if versions else None
        while True:
            # A dataset names its manifests one way, so only that name is probed (a
            # request each on an object store).
            name = naming.manifest_name(location.version + 1, location.scheme)
            if not self.io.exists(self.path(naming.VERSIONS_DIR, name)):
                return location
            location = ManifestLocation(location.version + 1, name, location.scheme)

    def latest_version(self) -> int:
        location = self.latest_location()
        if location is None:
            raise DatasetNotFoundError(
                f"{self.root}: no Lance dataset here: dataset not found (no manifest)"
            )
        return location.version

    def latest_manifest(self) -> tuple[Manifest, ManifestNaming] | None:
        """The newest manifest and the naming scheme its file uses; None: no dataset yet."""
        location = self.latest_location()
        if location is None:
            return None
        return self.read_manifest(location.version), location.scheme

    def read_manifest(self, version: int) -> Manifest:
        with self._manifests_lock:
            found = self._manifests.get(version)
            if found is not None:
                self._manifests.move_to_end(version)
                return found
        manifest = self._load_manifest(version)  # failures are not kept
        with self._manifests_lock:
            self._manifests[version] = manifest
            if len(self._manifests) > _MANIFESTS_KEPT:
                self._manifests.popitem(last=False)
        return manifest

    def _manifest_bytes(self, version: int) -> tuple[str, bytes] | None:
        """The manifest file of ``version`` and its bytes, under either naming scheme.

        Reading and failing costs an object store what asking whether the file is there
        would, so each name is simply read."""
        names = (
            [naming.detached_manifest_name(version)]
            if naming.is_detached(version)
            else [naming.manifest_name(version, s) for s in (ManifestNaming.V2, ManifestNaming.V1)]
        )
        for name in names:
            path = self.path(naming.VERSIONS_DIR, name)
            try:
                return path, self.io.read_bytes(path)
            except FileNotFoundError:
                continue
            except StorageError:
                raise  # the store failed (credentials, network): not a damaged dataset
            except OSError as exc:
                raise CorruptDatasetError(f"{path}: cannot read manifest: {exc}") from exc
        return None

    def _load_manifest(self, version: int) -> Manifest:
        found = self._manifest_bytes(version)
        if found is None:
            if not self.list_versions():
                raise DatasetNotFoundError(f"{self.root}: no Lance dataset here")
            raise VersionNotFoundError(f"{self.root}: version {version} does not exist")
        path, data = found
        key = _content_key(path, data)
        manifest = _DECODED.get(key)
        if manifest is None:
            manifest = with_inferred_details(decode_manifest(data, path), self.io, self.root)
            _remember(key, manifest)
        if manifest.version != version:
            raise CorruptDatasetError(
                f"{path}: file name says version {version}, the manifest says {manifest.version}"
            )
        self.remember_bases(manifest)
        return manifest

    def read_summary(self, version: int) -> ManifestSummary:
        """What a commit rebasing over ``version`` needs of its manifest (the version's
        transaction file, its writer features), read without decoding the manifest."""
        found = self._manifest_bytes(version)
        if found is None:
            raise VersionNotFoundError(f"{self.root}: version {version} does not exist")
        path, data = found
        summary = decode_summary(data, path)
        if summary.version != version:
            raise CorruptDatasetError(
                f"{path}: file name says version {version}, the manifest says {summary.version}"
            )
        return summary

    def checked_manifest_bytes(self, manifest: Manifest) -> bytes:
        """The file bytes of a manifest about to be published, once it passed the checks
        a reader makes: a commit never writes a manifest readers would refuse."""
        where = f"{self.root}: version {manifest.version} (not committed)"
        check_manifest(manifest, check_fragments(manifest.fragments, where), where)
        check_manifest_indices(manifest, where)
        return encode_manifest(manifest, where)

    def publish_manifest(
        self, manifest: Manifest, scheme: ManifestNaming, data: bytes | None = None
    ) -> bool:
        """Atomically create the manifest of a new version (``data``: its bytes, when
        encoded already); False if that version exists."""
        name = naming.manifest_name(manifest.version, scheme)
        path = self.path(naming.VERSIONS_DIR, name)
        data = encode_manifest(manifest, self.root) if data is None else data
        self.remember_bases(manifest)
        if not self.io.put_if_not_exists(path, data):
            return False
        if self._other_scheme_has(manifest.version, scheme):
            # Two creators naming the version differently did not race for one name.
            # Whoever sees the other's file steps back, so at most one of them wins.
            self.io.delete(path)
            return False
        _remember(_content_key(path, data), with_inferred_details(manifest, self.io, self.root))
        self._write_hint(manifest.version)
        return True

    def publish_detached(self, manifest: Manifest) -> bool:
        """Create the manifest of a detached version; False if that number is taken."""
        path = self.path(naming.VERSIONS_DIR, naming.detached_manifest_name(manifest.version))
        data = self.checked_manifest_bytes(manifest)
        if not self.io.put_if_not_exists(path, data):
            return False
        _remember(_content_key(path, data), manifest)
        return True

    def _other_scheme_has(self, version: int, scheme: ManifestNaming) -> bool:
        other = ManifestNaming.V1 if scheme is ManifestNaming.V2 else ManifestNaming.V2
        return self.io.exists(self.path(naming.VERSIONS_DIR, naming.manifest_name(version, other)))

    def _write_hint(self, version: int) -> None:
        # Only a hint: readers verify it, so a stale or lost hint costs a listing at worst.
        hint = json.dumps({"version": version}, separators=(",", ":")).encode()
        with contextlib.suppress(OSError):
            self.io.put(self.path(naming.VERSIONS_DIR, naming.VERSION_HINT), hint, durable=False)

    # -- transactions -----------------------------------------------------------------

    def transaction_path(self, name: str) -> str:
        return self.path(naming.TRANSACTIONS_DIR, name)

    def write_transaction(self, txn: Transaction) -> str:
        name = naming.transaction_file_name(txn.read_version)
        self.io.put(self.transaction_path(name), encode_transaction(txn))
        return name

    def read_transaction(self, name: str) -> Transaction:
        path = self.transaction_path(name)
        try:
            data = self.io.read_bytes(path)
        except OSError as exc:
            if io.store_failed(exc):
                raise
            raise CorruptDatasetError(f"{path}: cannot read transaction file: {exc}") from exc
        return decode_transaction(data, path)

    # -- row id sequences -------------------------------------------------------------

    def read_row_ids(self, fragment: Fragment) -> np.ndarray | None:
        """The stable row id of each physical row of ``fragment`` (uint64), or None
        when it lists none (row ids are then its row addresses)."""
        sequence = fragment.row_id_meta
        if sequence is None:
            return None
        data, where = self._sequence_bytes(sequence, fragment, "row ids")
        return row_ids.decode(data, fragment.physical_rows, where)

    def read_lineage(self, fragment: Fragment) -> tuple[np.ndarray, np.ndarray]:
        """The version that created each physical row of ``fragment`` and the one that
        last updated it (uint64 each); a fragment that records none answers version 1
        for its rows, as pylance does."""
        return self._versions(fragment, "created_at_version_meta", "created-at versions"), (
            self._versions(fragment, "last_updated_at_version_meta", "last-updated-at versions")
        )

    def _versions(self, fragment: Fragment, attribute: str, what: str) -> np.ndarray:
        sequence: Sequence | None = getattr(fragment, attribute)
        if sequence is None:
            return np.full(fragment.physical_rows, lineage.UNKNOWN_VERSION, dtype=np.uint64)
        data, where = self._sequence_bytes(sequence, fragment, what)
        return lineage.decode(data, fragment.physical_rows, where)

    def version_runs(self, fragment: Fragment, attribute: str) -> list[lineage.Run] | None:
        """The runs of one of the fragment's version sequences (``attribute``:
        ``created_at_version_meta`` or ``last_updated_at_version_meta``), as stored;
        None when it records none."""
        sequence: Sequence | None = getattr(fragment, attribute)
        if sequence is None:
            return None
        data, where = self._sequence_bytes(sequence, fragment, attribute)
        return lineage.runs(data, fragment.physical_rows, where)

    def _sequence_bytes(
        self, sequence: Sequence, fragment: Fragment, what: str
    ) -> tuple[bytes, str]:
        """A sequence's bytes, inline or from its file, and where they are (for errors)."""
        where = f"{self.root}: fragment {fragment.id}"
        external = sequence.external
        if external is None:
            return sequence.inline or b"", where
        clean = posixpath.normpath(external.path)
        if clean.startswith(("/", "..")) or not external.path:
            raise CorruptDatasetError(
                f"{where}: the {what} file {external.path!r} is outside the dataset"
            )
        path = self.path(clean)
        where = f"{path}: {what} of fragment {fragment.id}"
        try:
            data = self.io.read_bytes(path)[external.offset : external.offset + external.size]
        except OSError as exc:
            if io.store_failed(exc):
                raise
            raise CorruptDatasetError(f"{where}: cannot read: {exc}") from exc
        if len(data) != external.size:
            raise CorruptDatasetError(f"{where}: the file ends before the sequence does")
        return data, where

    # -- deletion files ---------------------------------------------------------------

    def deletion_path(self, fragment_id: int, file: DeletionFile) -> str:
        name = naming.deletion_file_name(fragment_id, file.read_version, file.id, file.kind)
        return self.path(naming.DELETIONS_DIR, name)

    def read_deletions(self, fragment: Fragment) -> np.ndarray:
        """Deleted row offsets of a fragment, sorted; a missing file is an error."""
        file = fragment.deletion_file
        if file is None:
            return np.empty(0, dtype=np.uint32)
        path = self.deletion_path(fragment.id, file)
        # Deletion files never change once written; a compaction reads each twice
        # (its rows, then where they moved).  Small ones are kept, handed out as copies.
        decoded = self.cache("deletions", _KEPT_DELETIONS)
        key = (path, fragment.physical_rows)
        kept: np.ndarray | None = decoded.get(key)
        if kept is None:
            kept = self._decode_deletions(path, fragment, file)
            if len(kept) <= _KEPT_DELETION_ROWS:
                decoded[key] = kept
        rows: np.ndarray = kept.copy()
        if len(rows) != file.num_deleted_rows:
            raise CorruptDatasetError(
                f"{path}: holds {len(rows)} deleted rows, the manifest says {file.num_deleted_rows}"
            )
        return rows

    def _decode_deletions(self, path: str, fragment: Fragment, file: DeletionFile) -> np.ndarray:
        try:
            data = self.io.read_bytes(path)
        except OSError as exc:
            if io.store_failed(exc):
                raise
            raise CorruptDatasetError(
                f"{path}: cannot read the deletion file of fragment {fragment.id}: {exc}"
            ) from exc
        return deletion.decode(data, file.kind, fragment.physical_rows, path)

    def delete_rows(
        self, fragment: Fragment, rows: np.ndarray, read_version: int
    ) -> Fragment | None:
        """``fragment`` with ``rows`` deleted on top of what it already deletes, as a new
        deletion file; None when no row would be left (the fragment goes instead)."""
        union = sorted_sets.union(
            [self.read_deletions(fragment).astype(np.uint32), np.asarray(rows, np.uint32)]
        )
        if len(union) >= fragment.physical_rows:
            return None
        return replace(
            fragment, deletion_file=self.write_deletions(fragment.id, read_version, union)
        )

    def write_deletions(
        self, fragment_id: int, read_version: int, rows: np.ndarray
    ) -> DeletionFile:
        kind, data = deletion.encode(rows)
        file_type = DELETION_KIND_NAMES[kind]
        file = DeletionFile(read_version, naming.new_deletion_file_id(), file_type, len(rows))
        path = self.deletion_path(fragment_id, file)
        self.io.put(path, data)
        events.file_created("deletion", events.object_path(path))
        return file


def _restore_store(root: str, file_io: io.FileIO) -> DatasetStore:
    return DatasetStore(root, file_io=file_io)
