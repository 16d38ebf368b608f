"""pylance's ``LanceDataset.delta()``: what changed between two versions.

``begin`` is exclusive and ``end`` inclusive.  Rows inserted or updated after
``begin`` are the end version's rows whose lineage (``_row_created_at_version``,
``_row_last_updated_at_version``) says so; deleted row ids are the stable row ids
live at ``begin`` and no longer live at ``end``, read from row id sequences and
deletion files.  Version 0 is the empty dataset before the first commit.

Two deliberate differences from pylance 14, both where it answers wrongly:

* pylance reads inserted and updated rows from the version ``delta()`` was called
  on, filtered by lineage; lancelet reads the end version's rows (the same answer
  when the dataset is at the end version, the common case).
* pylance writes lineage only with stable row ids, and answers no inserted or
  updated rows for a dataset without it; lancelet refuses
  (:class:`~lancelet.errors.ChangeFeedError`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.dataset.core import arguments
from lancelet.dataset.core.snapshot import Snapshot
from lancelet.dataset.read.projection import CREATED_AT, ROW_ID, UPDATED_AT
from lancelet.dataset.read.scanner import LanceScanner
from lancelet.dataset.versions.transactions import Transaction, read_transaction
from lancelet.errors import (
    ArgumentError,
    ChangeFeedError,
    CorruptDatasetError,
    VersionNotFoundError,
)
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest

_CALL = "LanceDataset.delta"
# The version before a dataset's first commit: nothing is live at it.
EMPTY_VERSION = 0
# The rows of one batch of deleted row ids, as pylance's default scan batch.
_ID_BATCH_ROWS = 8192
_ROW_ID_SCHEMA = pa.schema([pa.field(ROW_ID, pa.uint64())])


class DatasetDelta:
    """The changes between ``begin_version`` (exclusive) and ``end_version``
    (inclusive) of a dataset, as pylance's ``DatasetDelta``."""

    def __init__(self, snapshot: Snapshot, begin_version: int, end_version: int) -> None:
        self._snapshot = snapshot
        self.begin_version = begin_version
        self.end_version = end_version

    def __repr__(self) -> str:
        return (
            f"DatasetDelta({self._snapshot.uri!r}, begin_version={self.begin_version}, "
            f"end_version={self.end_version})"
        )

    def list_transactions(self) -> list[Transaction]:
        """The transactions of versions ``begin + 1`` through ``end``, oldest first;
        a version committed without a transaction file is left out, as in pylance."""
        out = []
        for version in range(self.begin_version + 1, self.end_version + 1):
            self._manifest(version)  # a missing version is an error, not a gap
            transaction = read_transaction(self._snapshot.store, version)
            if transaction is not None:
                out.append(transaction)
        return out

    def get_inserted_rows(self) -> pa.RecordBatchReader:
        """The end version's rows created after ``begin``: every column, then
        ``_rowid``, ``_row_created_at_version`` and ``_row_last_updated_at_version``."""
        begin, end = self.begin_version, self.end_version
        return self._rows(f"{CREATED_AT} > {begin} AND {CREATED_AT} <= {end}", "inserted")

    def get_updated_rows(self) -> pa.RecordBatchReader:
        """The end version's rows that existed at ``begin`` and were updated after
        it, with the columns of :meth:`get_inserted_rows`."""
        begin, end = self.begin_version, self.end_version
        where = f"{CREATED_AT} <= {begin} AND {UPDATED_AT} > {begin} AND {UPDATED_AT} <= {end}"
        return self._rows(where, "updated")

    def get_deleted_row_ids(self) -> pa.RecordBatchReader:
        """The stable row ids (``_rowid``, uint64, ascending) live at ``begin`` and
        not at ``end``: a row inserted and deleted within the range is in neither."""
        if self.begin_version == EMPTY_VERSION:
            return _id_reader(np.empty(0, dtype=np.uint64))
        begin = self._manifest(self.begin_version)
        end = self._manifest(self.end_version)
        for manifest in (begin, end):
            if not manifest.stable_row_ids:
                raise ChangeFeedError(
                    f"{self._snapshot.uri}: deleted row ids require stable row ids, "
                    f"version {manifest.version} does not use them"
                )
        return _id_reader(self._deleted_ids(begin, end))

    # -- reading -----------------------------------------------------------------------

    def _manifest(self, version: int) -> Manifest:
        if version == self._snapshot.version:
            return self._snapshot.manifest
        try:
            return self._snapshot.store.read_manifest(version)
        except VersionNotFoundError as exc:
            raise VersionNotFoundError(
                f"{self._snapshot.uri}: version {version} is not found "
                "(cleaned up, or newer than the latest version)"
            ) from exc

    def _rows(self, where: str, what: str) -> pa.RecordBatchReader:
        manifest = self._manifest(self.end_version)
        self._require_lineage(manifest, what)
        columns = [field.name for field in manifest.schema.fields]
        scanner = LanceScanner(
            self._snapshot.store,
            manifest,
            columns=[*columns, ROW_ID, CREATED_AT, UPDATED_AT],
            filter=where,
        )
        return scanner.to_reader()

    def _require_lineage(self, manifest: Manifest, what: str) -> None:
        """Refuse where a live row records no lineage: its versions would read as 1,
        and the rows inserted or updated since could not be told apart."""
        for fragment in manifest.fragments:
            if fragment.num_rows and not _records_lineage(fragment):
                raise ChangeFeedError(
                    f"{self._snapshot.uri}: {what} rows need row lineage, which fragment "
                    f"{fragment.id} of version {manifest.version} does not record: "
                    "datasets record it only with stable row ids "
                    "(enable_stable_row_ids=True when the dataset is created)"
                )

    def _deleted_ids(self, begin: Manifest, end: Manifest) -> np.ndarray:
        """The ids live at ``begin`` and not at ``end``.  A fragment both versions
        hold alike kept all its rows; only the others are read."""
        unchanged = {
            fragment.id
            for fragment in begin.fragments
            if _same_rows(fragment, end.fragment(fragment.id))
        }
        was_live = self._live_ids(f for f in begin.fragments if f.id not in unchanged)
        still_live = self._live_ids(f for f in end.fragments if f.id not in unchanged)
        return np.setdiff1d(was_live, still_live)  # sorted, as pylance answers

    def _live_ids(self, fragments: Iterator[Fragment]) -> np.ndarray:
        store = self._snapshot.store
        parts = [np.empty(0, dtype=np.uint64)]
        for fragment in fragments:
            ids = store.read_row_ids(fragment)
            if ids is None:
                if not fragment.physical_rows:
                    continue
                raise CorruptDatasetError(
                    f"{self._snapshot.uri}: fragment {fragment.id} lists no row ids "
                    "in a dataset that uses stable row ids"
                )
            live = np.delete(ids, store.read_deletions(fragment).astype(np.int64))
            parts.append(live.astype(np.uint64, copy=False))
        return np.concatenate(parts)


def _records_lineage(fragment: Fragment) -> bool:
    return (
        fragment.created_at_version_meta is not None
        and fragment.last_updated_at_version_meta is not None
    )


def _same_rows(before: Fragment, after: Fragment | None) -> bool:
    """Whether ``after`` has ``before``'s live row ids without reading them: the same
    id sequence and the same deletion file (a fragment id alone might be reused)."""
    return (
        after is not None
        and after.row_id_meta == before.row_id_meta
        and after.deletion_file == before.deletion_file
    )


def _id_reader(ids: np.ndarray) -> pa.RecordBatchReader:
    column = pa.array(ids, pa.uint64())
    batches = [
        pa.record_batch([column.slice(start, _ID_BATCH_ROWS)], schema=_ROW_ID_SCHEMA)
        for start in range(0, len(column), _ID_BATCH_ROWS)
    ]
    return pa.RecordBatchReader.from_batches(_ROW_ID_SCHEMA, batches)


# -- arguments ---------------------------------------------------------------------------


def dataset_delta(
    snapshot: Snapshot,
    compared_against: Any,
    *,
    begin_version: Any = None,
    end_version: Any = None,
) -> DatasetDelta:
    """The delta of ``snapshot``'s dataset: its own version against
    ``compared_against`` (the older of the two begins, as in pylance), or the range
    ``begin_version`` (exclusive) to ``end_version`` (inclusive)."""
    begin, end = _range(snapshot.version, compared_against, begin_version, end_version)
    return DatasetDelta(snapshot, begin, end)


def _range(current: int, compared_against: Any, begin: Any, end: Any) -> tuple[int, int]:
    ranged = begin is not None or end is not None
    if compared_against is not None:
        if ranged:
            # pylance ignores the range here; lancelet never drops an argument.
            raise ArgumentError(
                f"{_CALL}: give either compared_against or begin_version and end_version, not both"
            )
        other = arguments.unsigned(compared_against, "compared_against", _CALL)
        return min(other, current), max(other, current)
    if not ranged:
        raise ArgumentError(
            f"{_CALL}: must specify either compared_against or both begin_version and end_version"
        )
    if begin is None or end is None:
        raise ArgumentError(f"{_CALL}: must specify both begin_version and end_version")
    first = arguments.unsigned(begin, "begin_version", _CALL)
    last = arguments.unsigned(end, "end_version", _CALL)
    if first > last:
        raise ArgumentError(f"{_CALL}: begin version {first} is newer than end version {last}")
    return first, last
