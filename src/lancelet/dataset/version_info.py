"""What a dataset says about its versions and fragments, and emptying it, under
pylance's names: ``get_version``, ``version_refs``, ``fragment_ids``, the storage
options it was opened with, and ``truncate_table``."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pyroaring import BitMap

from lancelet.table import naming
from lancelet.table.manifest import Manifest
from lancelet.transaction import operations as ops
from lancelet.transaction.store import DatasetStore


def version_entry(manifest: Manifest) -> dict[str, Any]:
    """A version as pylance's ``versions()`` and ``get_version()`` list it: its
    number, its commit time (to the microsecond) and the summary of its manifest."""
    return {
        "version": manifest.version,
        "timestamp": commit_datetime(manifest.timestamp_ns),
        "metadata": summary(manifest),
    }


def commit_datetime(nanos: int) -> datetime:
    """A commit time in nanoseconds as the naive local datetime pylance gives."""
    # pylance divides in floating point, so its microsecond can differ by one from
    # the exact value; the same arithmetic gives the same datetime, which callers
    # compare and pass back as ``timestampAsOf``.
    return datetime.fromtimestamp(nanos // 1e9) + timedelta(microseconds=(nanos % 1e9) // 1e3)


def summary(manifest: Manifest) -> dict[str, str]:
    fragments = manifest.fragments
    deleted = sum(f.num_deleted_rows for f in fragments)
    return {
        "total_data_file_rows": str(sum(f.physical_rows for f in fragments)),
        "total_data_files": str(sum(len(f.files) for f in fragments)),
        "total_deletion_file_rows": str(deleted),
        "total_deletion_files": str(sum(f.deletion_file is not None for f in fragments)),
        "total_files_size": str(sum(d.file_size_bytes or 0 for f in fragments for d in f.files)),
        "total_fragments": str(len(fragments)),
        "total_rows": str(manifest.num_rows),
    }


class VersionInfo:
    """``LanceDataset``'s methods of this module (a mixin over its store and manifest)."""

    _store: DatasetStore
    _manifest: Manifest

    def _commit(self, operation: ops.Operation) -> None:
        raise NotImplementedError

    def get_version(self) -> dict[str, Any]:
        """This version: its number, commit time and manifest summary."""
        return version_entry(self._manifest)

    def version_refs(self) -> list[dict[str, int]]:
        """The numbers of every (attached) version, without reading their manifests."""
        listed = self._store.list_versions()
        return [{"version": v.version} for v in listed if not naming.is_detached(v.version)]

    def fragment_ids(self) -> BitMap:
        """The ids of this version's fragments."""
        return BitMap(f.id for f in self._manifest.fragments)

    @property
    def initial_storage_options(self) -> dict[str, str] | None:
        """The storage options the dataset was opened with (None: none)."""
        return self._store.storage_options

    def latest_storage_options(self) -> dict[str, str] | None:
        """The storage options in use (lancelet has no provider that refreshes them)."""
        return self._store.storage_options

    def truncate_table(self) -> None:
        """Delete every row, keeping the schema (and indices), as a new version."""
        every = tuple(f.id for f in self._manifest.fragments)
        self._commit(ops.Delete((), every, "true"))
