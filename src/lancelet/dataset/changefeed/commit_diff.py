"""Which rows one commit inserted, updated and deleted, from metadata alone.

A commit's rows are told apart by their stable row ids: a row that left a fragment
of the previous version (the fragment went away, or the row was newly deleted) and
one that arrived in the new version (a new fragment, or a row no longer deleted)
with the same id was moved (compaction) or rewritten (update, upsert); its
last-updated-at version tells the two apart.  An id that only left was deleted; an
id that only arrived was inserted (or restored).  Fragments the commit did not touch
are not opened: only the touched fragments' row ids, lineage and deletion files
are read, never their data.

What the metadata cannot say is refused: rows without stable ids or lineage, a
commit that replaced column data in place (``DataReplacement``: new values, no new
lineage), a version that is gone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lancelet.errors import ChangeFeedError, VersionNotFoundError
from lancelet.table import row_address
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction import operations as ops
from lancelet.transaction.store import DatasetStore

# Commits that change columns, not rows: a fragment they touch keeps its rows,
# ids, deletions and lineage (checked), so it has no row changes to report.
_COLUMN_ONLY = (ops.Merge, ops.Project)

_EMPTY = np.zeros(0, dtype=np.uint64)


@dataclass(frozen=True)
class CommitDiff:
    """The rows one commit changed, as row addresses: ``inserted`` in the new
    version, ``deleted`` in the previous one, and each updated row's address before
    (``updated_before``, previous version) and after (``updated_after``, new
    version), pairwise.  Each kind is sorted by the rows' stable ids; the ids are
    kept alongside."""

    version: int
    timestamp_ns: int
    previous: Manifest | None
    current: Manifest
    inserted: np.ndarray
    inserted_ids: np.ndarray
    deleted: np.ndarray
    deleted_ids: np.ndarray
    updated_before: np.ndarray
    updated_after: np.ndarray
    updated_ids: np.ndarray

    @property
    def num_changes(self) -> int:
        return len(self.inserted) + len(self.deleted) + 2 * len(self.updated_ids)


@dataclass(frozen=True)
class _Rows:
    """Rows that left or arrived: parallel uint64 arrays."""

    ids: np.ndarray
    addresses: np.ndarray
    last_updated: np.ndarray

    @staticmethod
    def concat(parts: list[_Rows]) -> _Rows:
        if not parts:
            return _Rows(_EMPTY, _EMPTY, _EMPTY)
        return _Rows(
            np.concatenate([p.ids for p in parts]),
            np.concatenate([p.addresses for p in parts]),
            np.concatenate([p.last_updated for p in parts]),
        )


def read_manifest(store: DatasetStore, version: int, why: str) -> Manifest:
    try:
        return store.read_manifest(version)
    except VersionNotFoundError as exc:
        raise VersionNotFoundError(
            f"{store.root}: version {version} is not found (cleaned up?), so {why} cannot be read"
        ) from exc


def commit_diff(store: DatasetStore, version: int) -> CommitDiff:
    """What ``version`` changed relative to ``version - 1`` (version 1 inserted its
    rows)."""
    current = read_manifest(store, version, f"what version {version} changed")
    previous = (
        read_manifest(store, version - 1, f"what version {version} changed")
        if version > 1
        else None
    )
    operation = _operation(store, current)
    if isinstance(operation, ops.DataReplacement):
        raise ChangeFeedError(
            f"{store.root}: version {version} replaced column data in place "
            "(DataReplacement), which records no row lineage: which rows it changed "
            "cannot be told; read the change feed in ranges that do not include it"
        )
    left, arrived = _moved_rows(store, previous, current, operation)
    return _pair(version, current, previous, left, arrived)


def _operation(store: DatasetStore, manifest: Manifest) -> ops.Operation | None:
    if not manifest.transaction_file:
        return None
    return store.read_transaction(manifest.transaction_file).operation


def _moved_rows(
    store: DatasetStore,
    previous: Manifest | None,
    current: Manifest,
    operation: ops.Operation | None,
) -> tuple[_Rows, _Rows]:
    before = {f.id: f for f in previous.fragments} if previous is not None else {}
    after = {f.id: f for f in current.fragments}
    left: list[_Rows] = []
    arrived: list[_Rows] = []
    for fid, old in before.items():
        new = after.get(fid)
        if new is None:
            left.append(_live(store, old, current.version - 1))
        elif new != old:
            gone, came = _changed_in_place(store, old, new, current.version, operation)
            left.append(gone)
            arrived.append(came)
    for fid in after.keys() - before.keys():
        arrived.append(_live(store, after[fid], current.version))
    return _Rows.concat(left), _Rows.concat(arrived)


def _changed_in_place(
    store: DatasetStore,
    old: Fragment,
    new: Fragment,
    version: int,
    operation: ops.Operation | None,
) -> tuple[_Rows, _Rows]:
    """A fragment both versions list, changed: rows newly deleted leave, rows no
    longer deleted (a restore) arrive; when its files or lineage changed, every
    row is compared."""
    same_rows = (
        old.physical_rows == new.physical_rows
        and old.row_id_meta == new.row_id_meta
        and old.created_at_version_meta == new.created_at_version_meta
        and old.last_updated_at_version_meta == new.last_updated_at_version_meta
    )
    if same_rows and old.files != new.files and not isinstance(operation, _COLUMN_ONLY):
        raise ChangeFeedError(
            f"{store.root}: version {version} rewrote the data files of fragment "
            f"{new.id} without recording which rows changed; its changes cannot be told"
        )
    if not same_rows:
        return _live(store, old, version - 1), _live(store, new, version)
    was_deleted = store.read_deletions(old)
    now_deleted = store.read_deletions(new)
    gone = _missing_from(now_deleted, was_deleted)
    came = _missing_from(was_deleted, now_deleted)
    return _rows_at(store, old, gone, version - 1), _rows_at(store, new, came, version)


def _missing_from(values: np.ndarray, other: np.ndarray) -> np.ndarray:
    """The entries of sorted ``values`` not in sorted ``other`` (deletion offsets:
    sorted and unique, so no hashing is needed)."""
    if not len(other) or not len(values):
        return values
    at = np.searchsorted(other, values).clip(max=len(other) - 1)
    out: np.ndarray = values[other[at] != values]
    return out


def _live(store: DatasetStore, fragment: Fragment, version: int) -> _Rows:
    keep = np.ones(fragment.physical_rows, dtype=bool)
    keep[store.read_deletions(fragment).astype(np.int64)] = False
    return _rows_at(store, fragment, np.flatnonzero(keep), version)


def _rows_at(store: DatasetStore, fragment: Fragment, offsets: np.ndarray, version: int) -> _Rows:
    offsets = np.asarray(offsets, dtype=np.int64)
    if not len(offsets):
        return _Rows(_EMPTY, _EMPTY, _EMPTY)
    ids = store.read_row_ids(fragment)
    if ids is None:
        raise ChangeFeedError(
            f"{store.root}: fragment {fragment.id} of version {version} has no stable row "
            "ids; the change feed needs them (create the dataset with "
            "enable_stable_row_ids=True)"
        )
    if fragment.last_updated_at_version_meta is None:
        raise ChangeFeedError(
            f"{store.root}: fragment {fragment.id} of version {version} records no row "
            "lineage (written before lineage was recorded), so updated rows cannot be "
            "told from moved ones"
        )
    _, last_updated = store.read_lineage(fragment)
    return _Rows(
        ids[offsets].astype(np.uint64),
        row_address.of_offsets(fragment.id, offsets.astype(np.uint64)),
        last_updated[offsets].astype(np.uint64),
    )


def _pair(
    version: int, current: Manifest, previous: Manifest | None, left: _Rows, arrived: _Rows
) -> CommitDiff:
    left = _sorted_unique(left, version - 1)
    arrived = _sorted_unique(arrived, version)
    both, li, ai = np.intersect1d(left.ids, arrived.ids, assume_unique=True, return_indices=True)
    rewritten = left.last_updated[li] != arrived.last_updated[ai]
    only_left = np.ones(len(left.ids), dtype=bool)
    only_left[li] = False
    only_arrived = np.ones(len(arrived.ids), dtype=bool)
    only_arrived[ai] = False
    return CommitDiff(
        version=version,
        timestamp_ns=current.timestamp_ns,
        previous=previous,
        current=current,
        inserted=arrived.addresses[only_arrived],
        inserted_ids=arrived.ids[only_arrived],
        deleted=left.addresses[only_left],
        deleted_ids=left.ids[only_left],
        updated_before=left.addresses[li[rewritten]],
        updated_after=arrived.addresses[ai[rewritten]],
        updated_ids=both[rewritten],
    )


def _sorted_unique(rows: _Rows, version: int) -> _Rows:
    order = np.argsort(rows.ids, kind="stable")
    ids = rows.ids[order]
    if len(ids) > 1 and bool(np.any(ids[1:] == ids[:-1])):
        raise ChangeFeedError(
            f"version {version} lists a stable row id on more than one live row; its "
            "row ids are damaged"
        )
    return _Rows(ids, rows.addresses[order], rows.last_updated[order])
