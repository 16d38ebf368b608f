"""The engine's small internal API for the layers above the facade (``spark/``, and
later ``namespace/``).

``LanceDataset`` is pylance's API; this module is what an integration that plans
its own jobs (Spark's reads, writes and row-level changes) needs beneath it.  It
names no private class and hands out no private attribute: a caller holds a
:class:`Location` (a URI and its storage options, cheap to pickle into a task) or a
:class:`Snapshot` (one version: its store and manifest), and every call takes one of
them.  The table format's own data types (``Fragment``, ``Manifest``,
``LanceSchema``) travel as they are; the operation types a commit takes are the
transaction layer's, named here.

- Versions: :func:`latest_version`, :func:`open_snapshot`, :func:`versions`,
  :func:`version_record`, :func:`version_change`, :func:`file_sizes`,
  :func:`list_indices`.
- Reading: :func:`plan_read` (fragments, schema, the rows scalar indices leave),
  :class:`FragmentRows` (one fragment's rows in a task, no manifest needed),
  :func:`scan` (a filtered scan of some fragments).
- Writing: :func:`data_format`, :func:`extend_schema`, :func:`write_fragments`,
  :func:`discard_written`.
- Committing: :func:`commit` (one operation, through the commit loop and its
  conflict rules), :func:`fold_into_merge`.
- Row-level changes: :func:`apply_row_change`, :class:`InsertedKeys`.
- The change feed, one commit per task: :func:`change_feed_spec` (checked columns,
  filter, output schema), :func:`change_feed_versions`, :func:`commit_change_count`,
  :func:`commit_changes`.
- Catalogs (``namespace/``), whose tables share the catalog's storage:
  :func:`open_with_storage`, :func:`create_with_storage`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet import io
from lancelet.dataset.changefeed import feed
from lancelet.dataset.core.snapshot import Snapshot
from lancelet.dataset.dataset import LanceDataset
from lancelet.dataset.indices import catalog
from lancelet.dataset.mutate.delete import delete_addresses, discard_deletions
from lancelet.dataset.mutate.merge_insert import KeySet
from lancelet.dataset.mutate.schema_ops import extend_schema
from lancelet.dataset.read import frag_reuse
from lancelet.dataset.read.fragment_reader import FragmentReader, live_mask
from lancelet.dataset.read.index_plan import usable_indices
from lancelet.dataset.read.projection import ROW_ADDRESS, ROW_ID
from lancelet.dataset.read.row_columns import with_row_columns
from lancelet.dataset.read.run_filter import kept_by_runs
from lancelet.dataset.read.scanner import LanceScanner, live_rows
from lancelet.dataset.read.take import created_at, row_ids_at
from lancelet.dataset.versions import changes
from lancelet.dataset.versions.changes import ChangeKind, VersionChange, schema_shape
from lancelet.dataset.versions.committing import commit_transaction
from lancelet.dataset.versions.tags import resolve_version
from lancelet.dataset.write.data_files import (
    DEFAULT_MAX_ROWS_PER_FILE,
    check_writable,
    conform,
    discard_data_files,
    storage_version,
    write_fragment_files,
)
from lancelet.dataset.write.dataset_write import write_to_store
from lancelet.errors import CorruptDatasetError, CorruptIndexError, LanceletError
from lancelet.expr import Predicate
from lancelet.expr.arrow import filter_table
from lancelet.index.planner import plan
from lancelet.table import lineage, row_address
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema
from lancelet.transaction import operations as ops
from lancelet.transaction.operations.folding import FoldContext
from lancelet.transaction.operations.kind import Description
from lancelet.transaction.registry import describe, kind, kind_of
from lancelet.transaction.store import DatasetStore

# The operations a caller commits (the transaction layer's types).
Append = ops.Append
Overwrite = ops.Overwrite
Merge = ops.Merge
Delete = ops.Delete
Update = ops.Update
Operation = ops.Operation

__all__ = [
    "DEFAULT_MAX_ROWS_PER_FILE",
    "ROW_ADDRESS",
    "ROW_ID",
    "Append",
    "CHANGE_FEED_COLUMNS",
    "ChangeFeedSpec",
    "ChangeKind",
    "Delete",
    "FragmentRows",
    "InsertedKeys",
    "Location",
    "Merge",
    "Operation",
    "Overwrite",
    "ReadPlan",
    "RowChange",
    "Snapshot",
    "Update",
    "VersionChange",
    "VersionRecord",
    "apply_row_change",
    "change_feed_spec",
    "change_feed_versions",
    "commit_change_count",
    "commit_changes",
    "commit",
    "data_format",
    "discard_written",
    "extend_schema",
    "file_sizes",
    "fold_into_merge",
    "latest_version",
    "list_indices",
    "open_snapshot",
    "plan_read",
    "scan",
    "schema_shape",
    "version_change",
    "version_record",
    "versions",
    "write_fragments",
]

_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError)


# -- where a dataset is, and its versions -----------------------------------------------


@dataclass(frozen=True)
class Location:
    """Where a dataset is stored: its URI and the storage options that reach it.  What
    a job ships to its tasks, each of which reaches the storage with these options."""

    uri: str
    storage_options: dict[str, str] | None = None

    def check(self) -> None:
        """Build the storage now, so unknown or malformed options fail before any task
        starts."""
        io.FileIO.for_uri(self.uri, self.storage_options)


def _store(at: Location | Snapshot) -> DatasetStore:
    if isinstance(at, Snapshot):
        return at.store
    return DatasetStore(at.uri, at.storage_options)


def latest_version(at: Location | Snapshot) -> int | None:
    """The number of the latest version; None when there is no dataset."""
    location = _store(at).latest_location()
    return None if location is None else location.version


def open_snapshot(at: Location | Snapshot, version: int | str | None = None) -> Snapshot:
    """The dataset at ``version``: a number, a tag's name, or None for the latest
    (``DatasetNotFoundError`` if there is no dataset, ``VersionNotFoundError`` if the
    version is not there).  Given a snapshot, the same storage and its caches are used."""
    store = _store(at)
    number = store.latest_version() if version is None else resolve_version(store, version)
    return Snapshot(store.root, store, store.read_manifest(number))


def versions(at: Location | Snapshot) -> list[int]:
    """The versions on disk, oldest first."""
    return [location.version for location in _store(at).list_versions()]


@dataclass(frozen=True)
class VersionRecord:
    """What a version's manifest and transaction file say of the commit that made it."""

    version: int
    timestamp_ns: int
    operation: str  # the transaction's kind ("unknown" without a transaction file)
    parameters: Mapping[str, str]  # as a table's history shows them
    metrics: Mapping[str, str]
    properties: Mapping[str, str]  # the transaction's properties
    read_version: int | None  # None: a new dataset, or no transaction file
    blind_append: bool  # an Append: added rows without reading any


def version_record(snapshot: Snapshot) -> VersionRecord:
    manifest = snapshot.manifest
    txn = _transaction(snapshot.store, manifest)
    operation = txn.operation if txn is not None else None
    described = describe(operation) if operation is not None else Description()
    return VersionRecord(
        manifest.version,
        manifest.timestamp_ns,
        kind_of(operation),
        dict(described.parameters),
        dict(described.metrics),
        dict(txn.properties) if txn is not None else {},
        txn.read_version if txn is not None and txn.read_version else None,
        isinstance(operation, ops.Append),
    )


def _transaction(store: DatasetStore, manifest: Manifest) -> ops.Transaction | None:
    if not manifest.transaction_file:
        return None
    try:
        return store.read_transaction(manifest.transaction_file)
    except CorruptDatasetError:
        return None  # removed by a cleanup that kept the manifest: the record says less


def version_change(at: Location | Snapshot, version: int) -> VersionChange:
    """What ``version`` changed relative to the version before it."""
    return changes.version_change(_store(at), version)


# -- the change feed --------------------------------------------------------------------

ChangeFeedSpec = feed.FeedSpec
# The columns every change row carries after the data: (name, Arrow type) each.
CHANGE_FEED_COLUMNS = tuple((f.name, f.type) for f in feed.CHANGE_FIELDS)


def change_feed_spec(
    at: Location | Snapshot,
    end_version: int,
    columns: Sequence[str] | None = None,
    filter: str | None = None,
    *,
    with_row_id: bool = False,
    batch_size: int | None = None,
) -> ChangeFeedSpec:
    """How a change feed ending at ``end_version`` reads rows (its schema is that
    version's), checked; ``spec.output_schema()`` is the feed's Arrow schema."""
    return feed.feed_spec(_store(at), end_version, columns, filter, with_row_id, batch_size)


def change_feed_versions(at: Location | Snapshot, start: int, end: int) -> range:
    """The commits a feed from ``start`` to ``end`` (inclusive) covers, checked."""
    return feed.feed_versions(_store(at), start, end)


def commit_changes(
    spec: ChangeFeedSpec, version: int, part: tuple[int, int] = (0, 1)
) -> Iterator[pa.RecordBatch]:
    """The row changes one commit made, as the feed's batches (none for a commit that
    changed no rows); raises ``ChangeFeedError`` where its metadata cannot say.
    ``part`` ``(k, n)``: only the k-th of n near-equal shares of them (n tasks reading
    one large commit; see :func:`commit_change_count`)."""
    return feed.commit_batches(spec, version, part)


def commit_change_count(at: Location | Snapshot, version: int) -> int:
    """How many change rows a commit makes (an update two), from metadata alone (row
    ids, lineage and deletion files): what a job sizes its reads of the commit by;
    raises as :func:`commit_changes` does."""
    return feed.change_count(_store(at), version)


def file_sizes(snapshot: Snapshot) -> dict[str, int]:
    """The version's data and deletion files, by path, with their sizes in bytes (0
    for a file that cannot be sized)."""
    store = snapshot.store
    out: dict[str, int] = {}
    for fragment in snapshot.manifest.fragments:
        for data_file in fragment.files:
            path = store.data_path(data_file.path, data_file.base_id)
            out[path] = _size(store, path, data_file.file_size_bytes)
        if fragment.deletion_file is not None:
            path = store.deletion_path(fragment.id, fragment.deletion_file)
            out[path] = _size(store, path)
    return out


def _size(store: DatasetStore, path: str, recorded: int | None = None) -> int:
    if recorded:
        return recorded
    try:
        return store.io.size_of(path)
    except OSError:
        return 0


def list_indices(snapshot: Snapshot) -> list[dict[str, Any]]:
    """The version's index segments, as pylance's ``list_indices`` describes them (the
    fragments each covers read through the Fragment Reuse Index)."""
    return catalog.list_indices(frag_reuse.with_coverage(snapshot.store, snapshot.manifest))


# -- reading -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadPlan:
    """What a read of one version works from: its fragments and schema, and when
    scalar indices bound the pushed predicate, the physical rows (sorted offsets) each
    fragment they cover may match in (a superset of the matches)."""

    fragments: tuple[Fragment, ...]
    schema: LanceSchema
    candidates: Mapping[int, np.ndarray] | None = None
    # The columns a read's ``filter`` tests.
    filter_columns: frozenset[str] = frozenset()


def plan_read(
    snapshot: Snapshot, *, predicate: Predicate | None = None, filter: str | None = None
) -> ReadPlan:
    """Plan a read of ``snapshot``: ``predicate`` is searched in the version's scalar
    indices; ``filter`` (pylance's filter dialect, for :func:`scan`) is checked now, so
    one that does not parse fails before any task runs."""
    store, manifest = snapshot.store, snapshot.manifest
    tested: frozenset[str] = frozenset()
    if filter is not None:
        tested = LanceScanner(store, manifest, filter=filter, fragments=[]).filter_columns
    candidates = None
    if predicate is not None and manifest.indices:
        present = frozenset(f.id for f in manifest.fragments)
        columns = usable_indices(store, manifest, present)
        candidates = plan(predicate, columns) if columns else None
        if candidates is not None:
            _check_bounds(snapshot, candidates)
    return ReadPlan(manifest.fragments, manifest.schema, candidates, tested)


def _check_bounds(snapshot: Snapshot, found: Mapping[int, np.ndarray]) -> None:
    for fragment in snapshot.manifest.fragments:
        rows = found.get(fragment.id)
        if rows is not None and len(rows) and int(rows[-1]) >= fragment.physical_rows:
            raise CorruptIndexError(
                f"{snapshot.uri} version {snapshot.version}: an index lists row "
                f"{int(rows[-1])} of fragment {fragment.id}, which has "
                f"{fragment.physical_rows} rows"
            )


_FEW_KEPT = 8  # a slice keeping under 1/8 of its rows reads its other columns by row
_KEPT_OFFSET = "_lancelet_kept_offset"  # a slice's physical offsets, carried through a filter


class FragmentRows:
    """One fragment's rows, read where no manifest is at hand (a task): the fragment
    and the schema travel with the work."""

    def __init__(self, at: Location | Snapshot, schema: LanceSchema, fragment: Fragment) -> None:
        self._reader = FragmentReader(_store(at), schema, fragment)
        self.fragment = fragment

    @property
    def deleted(self) -> np.ndarray:
        """Physical offsets of the fragment's deleted rows, sorted."""
        return self._reader.deleted

    def live_range(
        self, columns: list[str], start: int, stop: int, *, with_addresses: bool
    ) -> pa.Table:
        """The live rows among physical rows ``[start, stop)``, with the row id and
        address columns (``ROW_ID``, ``ROW_ADDRESS``) when asked for."""
        table = self._reader.read(columns, start, stop)
        return live_rows(self._reader, table, start, stop, with_addresses=with_addresses)

    def live_matching(
        self,
        columns: list[str],
        start: int,
        stop: int,
        filtered: tuple[list[str], pc.Expression],
        predicate: Predicate | None = None,
    ) -> pa.Table:
        """The live rows among physical rows ``[start, stop)`` that an expression keeps
        (``filtered``: the columns it tests, the row id and address among them when it
        tests those, and it), with the row id and address columns: the tested columns
        are read for every row, the others only for the rows kept when they are few (as
        pylance's scanner reads late columns).  ``predicate``: the same filter as a
        predicate tree that selects exactly the expression's rows, evaluated with
        Arrow's kernels where it can be."""
        tested, expression = filtered
        data = [c for c in tested if c not in (ROW_ID, ROW_ADDRESS)]
        if len(data) < len(tested):
            first = self.live_range(data, start, stop, with_addresses=True)
            first = filter_table(first, predicate, expression)
            kept = row_address.offsets(first.column(ROW_ADDRESS).to_numpy())
        else:
            # The row id and address of the kept rows only: a selective filter keeps a
            # few of a slice's rows, and packing every row's address cost a fifth of
            # the read.
            first, kept = self._kept(data, start, stop, predicate, expression)
            first = with_row_columns(self._reader, first, kept)
        if not len(kept) or len(data) == len(columns):
            return first
        if len(kept) * _FEW_KEPT > stop - start:
            table = self.live_range(columns, start, stop, with_addresses=True)
            return filter_table(table, predicate, expression)
        table = self.take(columns, kept, with_addresses=True)
        return filter_table(table, predicate, expression)

    def _kept(
        self,
        tested: list[str],
        start: int,
        stop: int,
        predicate: Predicate | None,
        expression: pc.Expression,
    ) -> tuple[pa.Table, np.ndarray]:
        """The ``tested`` columns of the live rows among ``[start, stop)`` the filter
        keeps, and those rows' physical offsets (uint32)."""
        if predicate is not None and len(tested) == 1:
            found = kept_by_runs(self._reader, tested[0], start, stop, predicate)
            if found is not None:
                return found
        table = self._reader.read(tested, start, stop)
        offsets = np.arange(start, stop, dtype=np.uint32)
        live = live_mask(self._reader, start, stop)
        if live is not None:
            table, offsets = table.filter(pa.array(live)), offsets[live]
        table = table.append_column(_KEPT_OFFSET, pa.array(offsets))
        table = filter_table(table, predicate, expression)
        kept = table.column(_KEPT_OFFSET).to_numpy()
        return table.drop_columns([_KEPT_OFFSET]), kept

    def take(self, columns: list[str], offsets: np.ndarray, *, with_addresses: bool) -> pa.Table:
        """The rows at physical ``offsets`` (sorted uint32; deleted ones are not
        dropped), with the row id and address columns when asked for."""
        table = self._reader.take(columns, offsets.astype(np.int64))
        return with_row_columns(self._reader, table, offsets) if with_addresses else table


def scan(
    snapshot: Snapshot,
    fragments: Sequence[Fragment],
    *,
    columns: list[str],
    filter: str | None,
    with_row_id: bool = False,
    with_row_address: bool = False,
    batch_size: int | None = None,
    use_scalar_index: bool = True,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``fragments`` that ``filter`` selects, read as pylance's scanner
    reads them: filter columns first, the others for matching rows only, scalar
    indices where they cover the fragments."""
    scanner = LanceScanner(
        snapshot.store,
        snapshot.manifest,
        columns=columns,
        filter=filter,
        fragments=list(fragments),
        with_row_id=with_row_id,
        with_row_address=with_row_address,
        batch_size=batch_size,
        use_scalar_index=use_scalar_index,
    )
    return iter(scanner.to_batches())


# -- writing -----------------------------------------------------------------------------


def data_format(requested: str | None, appending_to: Manifest | None = None) -> str:
    """The file format version ("2.0", ...) data files are written in: the one asked
    for (lancelet's default for None; a name of no version is refused), or, appending
    to a dataset, its own (another one asked for is refused, as is a dataset whose
    format lancelet cannot write)."""
    if appending_to is not None:
        return check_writable(appending_to, requested)
    return storage_version(requested)


def write_fragments(
    at: Location | Snapshot,
    data: pa.RecordBatchReader,
    schema: LanceSchema,
    file_format: str,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    *,
    conform_as: str | None = None,
) -> list[Fragment]:
    """Write ``data`` as data files of ``schema`` for a later :func:`commit`; the
    fragments come back with id 0 (assigned at commit).  ``data`` has the schema's
    columns in its types, or, with ``conform_as`` (what error messages name), is
    checked and cast to them first.  Files written before a failure are removed."""
    if conform_as is not None:
        data = conform(data, schema.to_arrow(), conform_as)
    return write_fragment_files(_store(at), data, schema, file_format, max_rows_per_file)


def discard_written(
    at: Location | Snapshot,
    data_of: Iterable[Fragment] = (),
    *,
    deletions_of: Iterable[Fragment] = (),
) -> None:
    """Remove files nothing will reference (a write or change that did not commit):
    the data files of ``data_of``, and the deletion files ``deletions_of`` gained since
    the version ``at`` (then a snapshot) shows."""
    store = _store(at)
    discard_data_files(store, data_of)
    gained = tuple(deletions_of)
    if gained:
        if not isinstance(at, Snapshot):
            raise TypeError("discarding deletion files needs the snapshot they were made on")
        discard_deletions(store, at.manifest, gained)


# -- committing --------------------------------------------------------------------------


def commit(
    at: Location | Snapshot,
    operation: ops.Operation,
    read_version: int,
    *,
    properties: Mapping[str, str] | None = None,
    create_only: bool = False,
    file_format: str | None = None,
) -> Snapshot:
    """Commit ``operation`` as read at ``read_version`` (0: no dataset was read),
    through the commit loop: rebased onto commits made since, or refused by the
    conflict rules.  ``create_only``: fail if another writer created the dataset
    meanwhile; ``file_format``: the data format a new dataset records (lancelet's
    default for None).  Returns the new version."""
    store = _store(at)
    txn = ops.Transaction(read_version, operation, properties=dict(properties or {}))
    fmt = ("lance", storage_version(file_format))
    manifest = commit_transaction(store, txn, create_only=create_only, data_format=fmt)
    return Snapshot(store.root, store, manifest)


def fold_into_merge(snapshot: Snapshot, operation: ops.Operation, schema: LanceSchema) -> ops.Merge:
    """``operation``'s fragments as applied to ``snapshot``, as a Merge that also sets
    ``schema``: one commit that changes rows and adds columns (any commit made since
    ``snapshot`` is then a conflict)."""
    context = FoldContext(snapshot.store.read_manifest)
    folded = kind(operation).fold(snapshot.manifest, operation, context)
    return ops.Merge(folded.fragments, schema)


# -- row-level changes -------------------------------------------------------------------


@dataclass(frozen=True)
class RowChange:
    """A row-level change applied to a snapshot's files, to commit as a Delete or
    Update read at that snapshot."""

    updated: tuple[Fragment, ...]  # existing fragments whose deletion vectors grew
    removed: tuple[int, ...]  # ids of fragments left without live rows
    rewritten: tuple[Fragment, ...] = field(default=())  # new homes of moved rows


def apply_row_change(
    snapshot: Snapshot,
    *,
    deleted: np.ndarray,
    rewritten: Sequence[Fragment] = (),
    moved_from: np.ndarray | None = None,
) -> RowChange:
    """Delete the rows at addresses ``deleted`` and ``moved_from``, and, when the
    dataset has stable row ids, give the rows of ``rewritten`` (new fragments, written
    in the order of ``moved_from``) the ids of the rows they replace.  The deletion
    files are written now (removed again on failure); see :func:`discard_written`."""
    moved = np.empty(0, np.uint64) if moved_from is None else moved_from
    new = list(rewritten)
    if snapshot.manifest.stable_row_ids:
        store, manifest = snapshot.store, snapshot.manifest
        ids = row_ids_at(store, manifest, moved)
        new = lineage.carried(new, ids, created_at(store, manifest, moved))
    addresses = np.concatenate([np.asarray(moved, np.uint64), np.asarray(deleted, np.uint64)])
    updated, removed = delete_addresses(snapshot.store, snapshot.manifest, addresses)
    return RowChange(updated, removed, tuple(new))


@dataclass(frozen=True)
class InsertedKeys:
    """The keys (columns ``on``) a change inserted in ``fragments``, read back only if
    a concurrent commit added rows, so that two changes cannot both insert one new key
    (pass as ``Update.inserted_keys``).  Without keys, any row added meanwhile counts."""

    snapshot: Snapshot
    on: tuple[str, ...]
    fragments: tuple[Fragment, ...]

    def found_in(self, fragments: tuple[Fragment, ...], schema: LanceSchema) -> bool:
        if not self.on:
            return any(f.physical_rows for f in fragments)
        store = self.snapshot.store
        try:
            mine = pa.concat_tables(
                FragmentReader(store, schema, f).read(list(self.on), 0, f.physical_rows)
                for f in self.fragments
            )
        except (LanceletError, *_ARROW_ERRORS):
            return True  # keys that cannot be compared: assume the worst
        return KeySet(store, self.on, mine).found_in(fragments, schema)


def open_with_storage(uri: str, file_io: io.FileIO) -> LanceDataset:
    """The latest version of the dataset at ``uri``, reached through ``file_io`` (a
    catalog's own storage, which the tables it lists share)."""
    return LanceDataset(uri, _store=DatasetStore(uri, file_io=file_io))


def create_with_storage(uri: str, file_io: io.FileIO, data: Any) -> Snapshot:
    """A new dataset at ``uri`` holding ``data``, written through ``file_io``
    (``DatasetAlreadyExistsError`` if one is there)."""
    store = DatasetStore(uri, file_io=file_io)
    return Snapshot(uri, store, write_to_store(store, uri, data, mode="create"))
