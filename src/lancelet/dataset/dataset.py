"""``LanceDataset``: one version of a dataset, with pylance's method names.

A ``LanceDataset`` is a view of a single manifest.  Reads never change it;
operations that commit (delete, restore, config updates) move it to the
version they created, as pylance's do.
"""

from __future__ import annotations

import inspect
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet import events
from lancelet.dataset.arrow_dataset import ArrowDataset
from lancelet.dataset.change_methods import ChangeMethods
from lancelet.dataset.commit_methods import CommitMethods
from lancelet.dataset.core import arguments
from lancelet.dataset.core.options import (
    check_options,
    legacy_format_version,
    refuse_unimplemented,
)
from lancelet.dataset.core.snapshot import DatasetHandle, Snapshot
from lancelet.dataset.fragment import LanceFragment
from lancelet.dataset.fragment_session import describe_data_file
from lancelet.dataset.index_methods import IndexMethods
from lancelet.dataset.mutate import schema_ops
from lancelet.dataset.mutate.delete import plan_delete
from lancelet.dataset.mutate.merge_columns import plan_merge
from lancelet.dataset.mutate.merge_insert import MergeInsertBuilder, Planner
from lancelet.dataset.mutate.udf import discard_checkpoint
from lancelet.dataset.mutate.update import RowRewrite, discard_rewrite, plan_update
from lancelet.dataset.open_options import open_session
from lancelet.dataset.optimizer import DatasetOptimizer
from lancelet.dataset.pylance_only import PylanceOnlyMethods
from lancelet.dataset.read import blob
from lancelet.dataset.read.projection import Columns, projection
from lancelet.dataset.read.sampling import sample_indices
from lancelet.dataset.read.scanner import LanceScanner
from lancelet.dataset.read.take import take_by_row_ids
from lancelet.dataset.scan_defaults import checked_defaults, with_defaults
from lancelet.dataset.scannable import Scannable
from lancelet.dataset.sql_query import SqlMethods
from lancelet.dataset.stats import LanceStats
from lancelet.dataset.version_info import VersionInfo, version_entry
from lancelet.dataset.versions import bases
from lancelet.dataset.versions import transactions as commit_api
from lancelet.dataset.versions.asof import AsOf
from lancelet.dataset.versions.cleanup import CleanupStats, cleanup_old_versions
from lancelet.dataset.versions.committing import commit_transaction
from lancelet.dataset.versions.drop import drop_dataset
from lancelet.dataset.versions.loading import load_manifest, read_version
from lancelet.dataset.versions.tags import Tags
from lancelet.dataset.write.data_files import discard_data_files
from lancelet.dataset.write.dataset_write import (
    WriteMode,
    with_write_defaults,
    write_options,
    write_to_store,
)
from lancelet.dataset.write.inputs import as_reader
from lancelet.errors import (
    ArgumentError,
    ColumnChangeError,
    RetryableCommitConflictError,
    UnsupportedOptionError,
)
from lancelet.table import features
from lancelet.table.fragment import DataFile, Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema_view import LanceSchema as PublicLanceSchema
from lancelet.transaction import operations as ops
from lancelet.transaction.commit import CommitLock, CommitPolicy, check_lock
from lancelet.transaction.session import Session
from lancelet.transaction.store import DatasetStore

Version = int | str


class LanceDataset(
    ArrowDataset,
    VersionInfo,
    SqlMethods,
    CommitMethods,
    IndexMethods,
    ChangeMethods,
    PylanceOnlyMethods,
    DatasetHandle,
):
    def __init__(
        self,
        uri: str | os.PathLike[str],
        version: Version | AsOf | None = None,
        block_size: int | None = None,
        index_cache_size: int | None = None,
        metadata_cache_size: int | None = None,
        commit_lock: CommitLock | None = None,
        storage_options: dict[str, str] | None = None,
        serialized_manifest: bytes | None = None,
        default_scan_options: Mapping[str, Any] | None = None,
        metadata_cache_size_bytes: int | None = None,
        index_cache_size_bytes: int | None = None,
        read_params: dict[str, Any] | None = None,
        session: Session | None = None,
        namespace_client: Any = None,
        table_id: list[str] | None = None,
        namespace_client_managed_versioning: bool = False,
        base_store_params: dict[str, dict[str, str]] | None = None,
        *,
        manifest: Manifest | None = None,
        _store: DatasetStore | None = None,
    ) -> None:
        """``_store``: the store (and storage) of another view of the same dataset,
        which this one shares (lancelet's own calls pass it; users give
        ``storage_options``)."""
        # block_size and the metadata cache size in entries only tune speed; the index
        # cache's sizes bound the session's index cache (see open_options).
        session = open_session(
            "LanceDataset",
            serialized_manifest=serialized_manifest,
            metadata_cache_size_bytes=metadata_cache_size_bytes,
            index_cache_size_bytes=index_cache_size_bytes,
            read_params=read_params,
            session=session,
            index_cache_size=index_cache_size,
            namespace_client=namespace_client,
            table_id=table_id,
            namespace_client_managed_versioning=namespace_client_managed_versioning,
            base_store_params=base_store_params,
        )
        self._uri = os.fspath(uri)
        self._scan_defaults = checked_defaults(
            default_scan_options, Scannable.scanner, "lancelet.dataset"
        )
        check_lock(commit_lock)
        self._commit_lock = commit_lock
        if _store is None:
            self._store = DatasetStore(self._uri, storage_options, session)
        elif storage_options or session is not None:
            raise ArgumentError(f"{self._uri}: a dataset sharing a store takes no options")
        else:
            self._store = _store
        if manifest is None:
            manifest = load_manifest(self._store, self._uri, version)
        features.check_readable(
            manifest.reader_feature_flags, f"{self._uri} version {manifest.version}"
        )
        self._manifest = manifest

    # -- identity and metadata ------------------------------------------------------------

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def version(self) -> int:
        return self._manifest.version

    @property
    def latest_version(self) -> int:
        return self._store.latest_version()

    @property
    def schema(self) -> pa.Schema:
        if self._scan_defaults is not None:
            return self.scanner().projected_schema
        return self._manifest.schema.to_arrow()

    @property
    def lance_schema(self) -> PublicLanceSchema:
        """The schema with Lance field ids."""
        return PublicLanceSchema(self._manifest.schema)

    @property
    def data_storage_version(self) -> str:
        return self._manifest.data_storage_version

    @property
    def max_field_id(self) -> int:
        # Counts ids data files still hold for dropped columns, as pylance does.
        return schema_ops.next_field_id(self._manifest) - 1

    def session(self) -> Session:
        """The caches this dataset shares with others opened with the same session."""
        return self._store.session

    def index_cache_entry_count(self) -> int:
        """Index readers in the session's index cache (pylance's ``_ds`` has it)."""
        return self._store.session.index_cache.entry_count()

    def index_cache_hit_rate(self) -> float:
        """Index cache lookups that found their index, over all (0.0 before any)."""
        return self._store.session.index_cache.hit_rate()

    @property
    def tags(self) -> Tags:
        return Tags(self._store, self.version)

    def config(self) -> dict[str, str]:
        return dict(self._manifest.config)

    def versions(self) -> list[dict[str, Any]]:
        """Every version still on disk, oldest first, as pylance lists them."""
        return [
            version_entry(self._store.read_manifest(location.version))
            for location in self._store.list_versions()
        ]

    def __len__(self) -> int:
        return self.count_rows()

    def __repr__(self) -> str:
        return f"LanceDataset(uri={self._uri!r}, version={self.version})"

    # -- reads -----------------------------------------------------------------------

    def _source(self) -> tuple[DatasetStore, Manifest, list[Fragment] | None]:
        return self._store, self._manifest, None

    def scanner(self, *args: Any, **kwargs: Any) -> LanceScanner:
        if self._scan_defaults is None:
            return super().scanner(*args, **kwargs)
        merged = with_defaults(Scannable.scanner, args, kwargs, self._scan_defaults)
        return super().scanner(**merged)

    @property
    def has_stable_row_ids(self) -> bool:
        return self._manifest.stable_row_ids

    def _take_rows(
        self,
        row_ids: Sequence[int] | pa.Array,
        columns: Sequence[str] | Mapping[str, str] | None = None,
        *,
        ignore_deletions: bool = False,
        **kargs: Any,
    ) -> pa.Table:
        """Rows by row id (stable ids, or addresses without them), in the order asked
        for; an id of no live row is left out, as in pylance."""
        call = "LanceDataset._take_rows"
        if kargs:
            raise UnsupportedOptionError(f"{call}: options {sorted(kargs)} are not supported")
        ids = arguments.indices(row_ids, call)
        if len(ids) and int(ids.min()) < 0:
            raise ArgumentError(f"{call}: row id {int(ids.min())} is negative")
        shape = projection(columns, self.schema, f"{self._uri}: _take_rows")
        if shape.special_outputs or shape.special_reads:
            asked = sorted(shape.special_outputs | shape.special_reads)
            raise UnsupportedOptionError(f"{call}: system columns {asked} cannot be taken yet")
        table = take_by_row_ids(
            self._store,
            self._manifest,
            ids.astype(np.uint64),
            list(shape.reads),
            ignore_deletions=ignore_deletions,
        )
        return shape.apply(table, f"{self._uri}: _take_rows")

    def take_blobs(
        self,
        blob_column: str,
        ids: Sequence[int] | pa.Array | None = None,
        addresses: Sequence[int] | pa.Array | None = None,
        indices: Sequence[int] | pa.Array | None = None,
        *,
        buffer_size: int = blob.DEFAULT_BLOB_BUFFER_SIZE,
    ) -> list[blob.BlobFile | None]:
        """The blobs of ``blob_column`` at rows chosen by exactly one of ``ids``,
        ``addresses`` or ``indices``, as file-like objects (None for a null blob)."""
        selection = (ids, addresses, indices)
        return blob.take_blobs(self._store, self._manifest, blob_column, selection, buffer_size)

    def sample(
        self,
        num_rows: int,
        columns: Columns | None = None,
        randomize_order: bool = True,
    ) -> pa.Table:
        """``num_rows`` distinct rows chosen uniformly at random."""
        return self.take(sample_indices(num_rows, self.count_rows(), randomize_order), columns)

    def get_fragments(self, filter: str | pc.Expression | None = None) -> list[LanceFragment]:
        if filter is not None:
            # pylance refuses it too; returning every fragment would ignore the filter.
            raise UnsupportedOptionError("get_fragments: filter is not supported")
        return [LanceFragment(self, fragment=f) for f in self._manifest.fragments]

    def get_fragment(self, fragment_id: int) -> LanceFragment | None:
        fragment = self._manifest.fragment(fragment_id)
        return None if fragment is None else LanceFragment(self, fragment=fragment)

    def describe_data_file(self, path: str, base_id: int | None = None) -> DataFile:
        """The record of a Lance data file written under this dataset's ``data/`` (or
        base path ``base_id``'s) with its columns; ``DataFile.create`` asks for it."""
        return describe_data_file(self, path, base_id)

    # -- versions ---------------------------------------------------------------------

    def checkout_version(self, version: Version) -> LanceDataset:
        return LanceDataset(
            self._uri,
            manifest=read_version(self._store, version),
            default_scan_options=self._scan_defaults,
            _store=self._store,
        )

    def checkout_latest(self) -> None:
        """Move this object to the dataset's latest version."""
        manifest = self._store.read_manifest(self._store.latest_version())
        where = f"{self._uri} version {manifest.version}"
        features.check_readable(manifest.reader_feature_flags, where)
        self._manifest = manifest

    def _commit(self, operation: ops.Operation, announce: bool = False) -> None:
        txn = ops.Transaction(self.version, operation)
        policy = CommitPolicy(lock=self._commit_lock)
        announce_as = self._uri if announce else None  # as pylance's commit builder reports
        self._manifest = commit_transaction(
            self._store, txn, policy=policy, announce_as=announce_as
        )

    def read_transaction(self, version: int) -> commit_api.Transaction | None:
        """The transaction that made ``version`` (its operation and properties)."""
        return commit_api.read_transaction(self._store, version)

    def get_transactions(
        self, recent_transactions: int = 10
    ) -> list[commit_api.Transaction | None]:
        """The transactions of this version and those before it, newest first."""
        return commit_api.recent_transactions(self._store, self.version, recent_transactions)

    # -- base paths (dataset/bases.py) ------------------------------------------------

    def base_paths(self) -> dict[int, bases.DatasetBasePath]:
        """The base paths registered for data files, by id."""
        return bases.base_paths(self._manifest)

    def add_bases(
        self,
        new_bases: list[bases.DatasetBasePath],
        transaction_properties: dict[str, str] | None = None,
    ) -> LanceDataset:
        """Register more base paths (as a new version); returns this dataset."""
        self._manifest = bases.add_bases(
            self._store, self._manifest, new_bases, transaction_properties
        )
        return self

    @property
    def _ds(self) -> LanceDataset:
        # pylance's tests reach its native dataset as ``_ds`` for ``base_paths()``.
        return self

    def restore(self) -> None:
        """Make this (old) version the latest, as a new version."""
        self._commit(ops.Restore(self.version))

    # -- changes ----------------------------------------------------------------------

    def delete(
        self,
        predicate: str | pc.Expression,
        *,
        conflict_retries: int = 10,
        retry_timeout: timedelta = timedelta(seconds=30),
    ) -> dict[str, int]:
        """Delete the rows matching ``predicate``; re-run on the new latest version when a
        concurrent commit changed the fragments it read."""

        def plan(manifest: Manifest) -> RowRewrite[ops.Delete]:
            operation, count = plan_delete(self._store, manifest, predicate)
            return RowRewrite(operation, {"num_deleted_rows": count})

        return self._rewrite_rows(plan, conflict_retries, retry_timeout)

    # -- update and merge_insert (dataset/update.py, dataset/merge_insert.py) ----------

    def update(
        self,
        updates: dict[str, str],
        where: str | pc.Expression | None = None,
        conflict_retries: int = 10,
        retry_timeout: timedelta = timedelta(seconds=30),
        data_storage_version: str | None = None,
    ) -> dict[str, int]:
        """Set columns to SQL expressions (``{"price": "price * 1.1"}``) in the rows
        matching ``where``; the rows are rewritten as new fragments."""
        arguments.string_mapping(updates, "updates", "update", nullable=False)
        return self._rewrite_rows(
            lambda manifest: plan_update(
                self._store, manifest, updates, where, data_storage_version
            ),
            conflict_retries,
            retry_timeout,
        )

    def insert(self, data: Any, *, mode: str = "append", **kwargs: Any) -> None:
        """``write_dataset(data, this dataset, mode=mode, **kwargs)``; this object then
        shows the version written."""
        keywords = with_write_defaults(kwargs, "insert")
        version = legacy_format_version(
            keywords["use_legacy_format"], keywords["data_storage_version"]
        )
        options = write_options(keywords, version, "insert")
        given = keywords["storage_options"]
        store = self._store if given is None else DatasetStore(self._uri, given)
        schema = keywords["schema"]
        self.advance_to(
            write_to_store(store, self._uri, data, schema, cast("WriteMode", mode), options)
        )

    def merge_insert(self, on: str | Sequence[str] | None = None) -> MergeInsertBuilder:
        """A builder for an upsert, insert-if-absent or replace-by-source, joined on
        ``on`` (default: the schema's primary key)."""
        return MergeInsertBuilder(
            self._store, self._manifest.schema, on, self._rewrite_rows, manifest=self._manifest
        )

    def _rewrite_rows(
        self, plan: Planner, conflict_retries: int, retry_timeout: timedelta
    ) -> dict[str, int]:
        """Plan on this version and commit; re-plan on the new latest version when a
        concurrent commit changed what the plan read.  An uncommitted plan's files go."""
        conflict_retries = arguments.unsigned(conflict_retries, "conflict_retries", self._uri)
        if not isinstance(retry_timeout, timedelta):
            raise TypeError(
                f"{self._uri}: retry_timeout must be a timedelta, not {retry_timeout!r}"
            )
        deadline = time.monotonic() + retry_timeout.total_seconds()
        for attempt in range(conflict_retries + 1):
            planned = plan(self._manifest)
            try:
                self._commit(planned.operation, announce=True)
                return planned.counts
            except BaseException as exc:
                discard_rewrite(self._store, self._manifest, planned.operation)
                retry = isinstance(exc, RetryableCommitConflictError)
                if not retry or attempt == conflict_retries or time.monotonic() > deadline:
                    raise
                self._manifest = self._store.read_manifest(self._store.latest_version())
        raise AssertionError("unreachable")

    # -- compaction (dataset/compaction/) --------------------------------------------

    @property
    def optimize(self) -> DatasetOptimizer:
        """Table maintenance: ``optimize.compact_files(...)``."""
        return DatasetOptimizer(self)

    @property
    def snapshot(self) -> Snapshot:
        """The version this object shows, as the engine reads it (lancelet's own)."""
        return Snapshot(self._uri, self._store, self._manifest)

    def advance_to(self, manifest: Manifest) -> None:
        """Become the version a commit made on this dataset's behalf (lancelet's own)."""
        self._manifest = manifest

    @property
    def stats(self) -> LanceStats:
        return LanceStats(self)

    # -- schema evolution and metadata (dataset/schema_ops.py) ----------------------

    def drop_columns(self, columns: Sequence[str]) -> None:
        """Remove columns (or nested fields, ``"a.b"``) from the schema; their data stays
        until compaction rewrites it."""
        events.dataset_event("dropping_column", self._uri, columns=",".join(columns))
        self._commit(schema_ops.drop_columns(self._manifest, columns, self._uri))

    def alter_columns(self, *alterations: Mapping[str, Any]) -> None:
        """Rename columns, change their nullability or cast them to another type
        (``{"path", "name", "nullable", "data_type"}``); a cast rewrites the column."""
        plan = schema_ops.plan_alterations(self._manifest, alterations, self._uri)
        for path in plan.made_required:
            self._check_no_nulls(path)
        self._commit_new_columns(
            schema_ops.alter_columns(self._store, self._manifest, plan, self._uri)
        )

    def _check_no_nulls(self, path: str) -> None:
        top, *nested = path.split(".")
        values = self.to_table(columns=[top]).column(0)
        for name in nested:
            is_struct = pa.types.is_struct(values.type)
            values = pc.struct_field(values, name) if is_struct else pc.list_flatten(values)
        if values.null_count:
            raise ColumnChangeError(
                f"{self._uri}: column {path!r} holds nulls, it cannot be non-nullable"
            )

    def add_columns(
        self,
        transforms: schema_ops.NewColumns | Any,
        read_columns: Sequence[str] | None = None,
        reader_schema: pa.Schema | None = None,
        batch_size: int | None = None,
        **options: Any,
    ) -> None:
        """New columns from SQL expressions (``{"name": "sql"}``), from a function over
        record batches, as all-null columns (``pa.Field``s or a ``pa.Schema``), or read
        from data of any kind ``write_dataset`` takes (a table, a reader, batches under
        ``reader_schema``, ...), one value for each live row in the dataset's order."""
        check_options(options, "add_columns")
        if schema_ops.is_transform(transforms):
            if reader_schema is not None:
                raise ArgumentError(
                    f"{self._uri}: add_columns: reader_schema applies only to columns "
                    "read from data, not to SQL, a function or fields"
                )
            operation = schema_ops.add_columns(
                self._store, self._manifest, transforms, read_columns, self._uri, batch_size
            )
        else:
            if read_columns is not None:
                raise ArgumentError(
                    f"{self._uri}: add_columns: read_columns applies only to SQL or a "
                    "function, not to columns read from data"
                )
            operation = schema_ops.add_columns_from_reader(
                self._store, self._manifest, as_reader(transforms, reader_schema), self._uri
            )
        self._commit_new_columns(operation)
        discard_checkpoint(transforms)

    def merge(
        self,
        data_obj: Any,
        left_on: str,
        right_on: str | None = None,
        schema: pa.Schema | None = None,
    ) -> None:
        """Add the columns of ``data_obj``, joined on ``left_on`` (the dataset's column)
        = ``right_on`` (the data's, by default the same name); rows without a match get
        nulls."""
        self._commit_new_columns(
            plan_merge(self._store, self._manifest, data_obj, left_on, right_on, schema, self._uri)
        )

    def _commit_new_columns(self, operation: ops.Project | ops.Merge) -> None:
        try:
            self._commit(operation)
        except BaseException:
            if isinstance(operation, ops.Merge):
                discard_new_files(self._store, self._manifest, operation)
            raise

    def update_config(
        self, values: Mapping[str, str | None], *, replace: bool = False
    ) -> dict[str, str]:
        arguments.string_mapping(values, "values", "update_config", nullable=True)

        def change(manifest: Manifest) -> ops.UpdateConfig:
            upserts = {k: v for k, v in values.items() if v is not None}
            removed = [k for k, v in values.items() if v is None and not replace]
            if replace:
                removed = [k for k in manifest.config if k not in upserts]
            return ops.UpdateConfig(upserts, tuple(removed))

        self._commit_config(change)
        return self.config()

    def delete_config_keys(self, keys: Sequence[str]) -> None:
        if isinstance(keys, str) or not all(isinstance(k, str) for k in keys):
            raise TypeError(f"delete_config_keys: keys must be a list of strings, not {keys!r}")
        self._commit_config(lambda manifest: ops.UpdateConfig({}, tuple(keys)))

    def _commit_config(self, change: Callable[[Manifest], ops.UpdateConfig]) -> None:
        """Commit a config change; when the versions since this one cannot be checked
        against it (cleaned up meanwhile), make it again on the latest version, as a
        caller re-reading the dataset would."""
        for attempt in range(3):
            try:
                self._commit(change(self._manifest))
                return
            except RetryableCommitConflictError:
                if attempt == 2:
                    raise
                self._manifest = self._store.read_manifest(self._store.latest_version())

    @property
    def metadata(self) -> dict[str, str]:
        """The table metadata (kept in the manifest, apart from the schema)."""
        return dict(self._manifest.table_metadata)

    @property
    def schema_metadata(self) -> dict[str, str]:
        return {k: v.decode() for k, v in self._manifest.schema.metadata.items()}

    def update_metadata(
        self, values: Mapping[str, str | None], *, replace: bool = False
    ) -> dict[str, str]:
        """Set table metadata keys (``None`` removes one); ``replace`` drops the others."""
        update = schema_ops.map_update(values, replace, self._uri)
        self._commit(ops.UpdateConfig(table_metadata=update))
        return self.metadata

    def update_schema_metadata(
        self, values: Mapping[str, str | None], *, replace: bool = False
    ) -> dict[str, str]:
        """Set schema metadata keys (``None`` removes one); ``replace`` drops the others."""
        update = schema_ops.map_update(values, replace, self._uri)
        self._commit(ops.UpdateConfig(schema_metadata=update))
        return self.schema_metadata

    def update_field_metadata(
        self,
        field_updates: Mapping[str, Mapping[str, str | None]],
        *,
        replace: bool = False,
    ) -> None:
        """Set metadata keys of fields named by path (``"a"``, ``"a.b"``, ``"l.item"``)."""
        updates = schema_ops.field_metadata_updates(
            self._manifest.schema, field_updates, replace, self._uri
        )
        self._commit(ops.UpdateConfig(field_metadata=updates))

    def replace_schema_metadata(self, new_metadata: Mapping[str, str]) -> None:
        warnings.warn(
            "replace_schema_metadata is deprecated; use "
            "update_schema_metadata(metadata, replace=True)",
            DeprecationWarning,
            stacklevel=2,
        )
        self.update_schema_metadata(new_metadata, replace=True)

    def replace_field_metadata(self, field_name: str, new_metadata: Mapping[str, str]) -> None:
        warnings.warn(
            "replace_field_metadata is deprecated; use "
            "update_field_metadata({field: metadata}, replace=True)",
            DeprecationWarning,
            stacklevel=2,
        )
        self.update_field_metadata({field_name: new_metadata}, replace=True)

    def cleanup_old_versions(
        self,
        older_than: timedelta | None = None,
        retain_versions: int | None = None,
        *,
        delete_unverified: bool = False,
        error_if_tagged_old_versions: bool = True,
        delete_rate_limit: int | None = None,
        versions: list[int] | None = None,
        delete_concurrency: int | None = None,
    ) -> CleanupStats:
        # delete_rate_limit and delete_concurrency only pace the deletes.
        refuse_unimplemented("cleanup_old_versions", versions=versions)
        events.dataset_event("cleaning", self._uri)
        call = "cleanup_old_versions"
        return cleanup_old_versions(
            self._store,
            arguments.duration(older_than, "older_than", call),
            None
            if retain_versions is None
            else arguments.unsigned(retain_versions, "retain_versions", call),
            delete_unverified=delete_unverified,
            error_if_tagged_old_versions=error_if_tagged_old_versions,
        )

    @staticmethod
    def drop(
        base_uri: str | os.PathLike[str],
        storage_options: dict[str, str] | None = None,
        ignore_not_found: bool | None = None,
    ) -> None:
        """Delete the dataset at ``base_uri`` and everything under it."""
        drop_dataset(base_uri, storage_options, ignore_not_found)

    def validate(self) -> None:
        """Read every data and deletion file's metadata; raise if any is missing or corrupt."""
        for fragment in self.get_fragments():
            fragment.validate()


# Introspection (help(), pylance-compatibility checks) sees the parameters the override
# takes and passes on to Scannable.scanner.
LanceDataset.scanner.__signature__ = inspect.signature(Scannable.scanner)  # type: ignore[attr-defined]


def discard_new_files(store: DatasetStore, base: Manifest, operation: ops.Merge) -> None:
    """Remove the data files an uncommitted Merge added."""
    known = {d.path for f in base.fragments for d in f.files}
    for fragment in operation.fragments:
        fresh = tuple(d for d in fragment.files if d.path not in known)
        discard_data_files(store, [Fragment(fragment.id, fresh, fragment.physical_rows)])
