"""Writing a whole dataset: data written as new fragments and committed as one
Append or Overwrite (the work behind ``write_dataset`` and ``LanceDataset.insert``).

Nothing is visible until the commit; when it fails, the data files written for it
are deleted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

import pyarrow as pa

from lancelet import events, io
from lancelet.dataset.core.options import DEFAULT_MAX_BYTES_PER_FILE, refuse_unimplemented
from lancelet.dataset.core.progress import FragmentWriteProgress, check_progress
from lancelet.dataset.core.terminal_progress import progress_bar
from lancelet.dataset.versions.auto_cleanup import AutoCleanupConfig, config_values
from lancelet.dataset.versions.bases import DatasetBasePath, WriteBases, plan_write
from lancelet.dataset.versions.committing import commit_transaction
from lancelet.dataset.versions.loading import announce_latest
from lancelet.dataset.versions.transactions import commit_properties
from lancelet.dataset.write.data_files import (
    DEFAULT_MAX_ROWS_PER_FILE,
    Prepared,
    check_known_dictionaries,
    discard_data_files,
    prepare,
    write_fragment_files,
)
from lancelet.dataset.write.inputs import as_reader, known_rows
from lancelet.errors import ArgumentError, DatasetAlreadyExistsError
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.naming import ManifestNaming
from lancelet.table.schema import LanceSchema
from lancelet.transaction import operations as ops
from lancelet.transaction.commit import CommitLock, CommitPolicy
from lancelet.transaction.store import DatasetStore

WriteMode = Literal["create", "append", "overwrite"]

# write_dataset's keywords lancelet does not implement: refused unless left at their
# defaults, in this order.
UNIMPLEMENTED_WRITE_KEYWORDS = (
    "target_all_bases",
    "base_store_params",
    "external_blob_mode",
    "allow_external_blob_outside_bases",
    "blob_pack_file_size_threshold",
    "namespace_client",
    "table_id",
    "session",
)


@dataclass(frozen=True)
class WriteOptions:
    """How :func:`write_to_store` cuts data into files and commits it: the keywords of
    ``write_dataset`` it implements, with pylance's defaults (``data_storage_version``
    as resolved from ``use_legacy_format``)."""

    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE
    max_rows_per_group: int = 1024
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE
    commit_lock: CommitLock | None = None
    progress: FragmentWriteProgress | None = None
    data_storage_version: str | None = None
    enable_v2_manifest_paths: bool = True
    enable_stable_row_ids: bool = False
    auto_cleanup_options: AutoCleanupConfig | None = None
    commit_message: str | None = None
    transaction_properties: dict[str, str] | None = None
    initial_bases: list[DatasetBasePath] | None = None
    target_bases: list[str] | None = None

    @classmethod
    def of(cls, keywords: Mapping[str, Any], *, data_storage_version: str | None) -> WriteOptions:
        """The options among ``write_dataset``'s ``keywords`` (all its parameters, by
        name), with the file format version resolved from them."""
        chosen = {f.name: keywords[f.name] for f in fields(cls)}
        return cls(**{**chosen, "data_storage_version": data_storage_version})


_DEFAULT_OPTIONS = WriteOptions()


# write_dataset's keywords beyond WriteOptions, with their defaults (a test checks the
# two together against write_dataset's signature).
_OTHER_WRITE_KEYWORDS: dict[str, Any] = {
    "schema": None,
    "data_cache_bytes": None,
    "max_page_bytes": None,
    "storage_options": None,
    "use_legacy_format": None,
    "target_all_bases": None,
    "base_store_params": None,
    "external_blob_mode": "reference",
    "allow_external_blob_outside_bases": False,
    "blob_pack_file_size_threshold": None,
    "namespace_client": None,
    "table_id": None,
    "session": None,
}


def write_keyword_defaults() -> dict[str, Any]:
    """Every keyword ``write_dataset`` takes after its data, URI and mode, with its
    default."""
    options = {f.name: f.default for f in fields(WriteOptions)}
    return {**options, **_OTHER_WRITE_KEYWORDS}


def with_write_defaults(given: Mapping[str, Any], call: str) -> dict[str, Any]:
    """``given`` keywords of ``write_dataset``, the others at their defaults; a name it
    does not take is a TypeError, as Python's own."""
    defaults = write_keyword_defaults()
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise TypeError(f"{call}() got an unexpected keyword argument {unknown[0]!r}")
    return {**defaults, **given}


def write_options(
    keywords: Mapping[str, Any], data_storage_version: str | None, call: str
) -> WriteOptions:
    """The options of a call taking ``write_dataset``'s keywords (``keywords``: each
    by name), with the keywords lancelet does not implement refused unless left at
    their defaults."""
    refuse_unimplemented(call, **{name: keywords[name] for name in UNIMPLEMENTED_WRITE_KEYWORDS})
    return WriteOptions.of(keywords, data_storage_version=data_storage_version)


def write_to_store(
    store: DatasetStore,
    uri: str,
    data_obj: Any,
    schema: pa.Schema | None = None,
    mode: WriteMode = "create",
    options: WriteOptions = _DEFAULT_OPTIONS,
) -> Manifest:
    """``write_dataset`` into the dataset of ``store`` (``uri``: its URI as given, for
    events); the version it committed."""
    # The data files sync in the background while the commit is prepared; its
    # manifest is published only once they are on disk.
    with io.deferred_syncs():
        return _write_and_commit(store, uri, data_obj, schema, mode, options)


def _write_and_commit(
    store: DatasetStore,
    uri: str,
    data_obj: Any,
    schema: pa.Schema | None,
    mode: WriteMode,
    options: WriteOptions,
) -> Manifest:
    latest = _latest_to_write(store, uri, mode, options)
    bases = plan_write(latest, mode, options.initial_bases, options.target_bases, store.root)
    data = as_reader(data_obj, schema)
    prepared = prepare(latest, data, mode, options.data_storage_version, store.root)
    with progress_bar("Writing", total=known_rows(data_obj), unit="rows") as bar:
        counted = replace(prepared, reader=bar.tracked_batches(prepared.reader))
        fragments, written_schema = _write_files(store, counted, bases, options)
    operation = _write_operation(prepared, fragments, written_schema, latest, bases, options)
    txn = ops.Transaction(
        latest.version if latest else 0,
        operation,
        properties=commit_properties(options.commit_message, options.transaction_properties),
    )
    return _commit_write(store, uri, txn, mode, prepared.version, options, fragments)


def _latest_to_write(
    store: DatasetStore, uri: str, mode: WriteMode, options: WriteOptions
) -> Manifest | None:
    """The latest version of the dataset a write in ``mode`` goes to (None: there is
    none yet), the write's arguments checked against it."""
    check_progress(options.progress)
    if mode not in ("create", "append", "overwrite"):
        raise ArgumentError(
            f"write_dataset: mode must be 'create', 'append' or 'overwrite', not {mode!r}"
        )
    latest = announce_latest(store, uri)
    events.dataset_event("writing", os.fspath(uri), mode=events.Raw(mode.capitalize()))
    if latest is not None and mode == "create":
        raise DatasetAlreadyExistsError(f"{store.root}: a dataset already exists here")
    if options.enable_stable_row_ids and latest is not None and not latest.stable_row_ids:
        # pylance ignores the flag here; a dataset cannot start giving rows stable ids.
        raise ArgumentError(
            f"{store.root}: enable_stable_row_ids applies when a dataset is created; this "
            "one exists without stable row ids"
        )
    return latest


def _write_files(
    store: DatasetStore, prepared: Prepared, bases: WriteBases, options: WriteOptions
) -> tuple[tuple[Fragment, ...], LanceSchema]:
    """The data files of ``prepared`` written as new fragments, and the schema they
    were written under with the dictionaries the writing found."""
    dictionaries = dict(prepared.schema.dictionaries)
    fragments = tuple(
        write_fragment_files(
            store,
            prepared.reader,
            prepared.schema,
            prepared.version,
            options.max_rows_per_file,
            bases,
            progress=options.progress,
            max_bytes_per_file=options.max_bytes_per_file,
            max_rows_per_group=options.max_rows_per_group,
            dictionaries=dictionaries,
        )
    )
    written_schema = prepared.schema.with_dictionaries(dictionaries)
    if prepared.version == "0.1":
        # With no rows there are no dictionary values for the manifest to keep.
        check_known_dictionaries(
            written_schema,
            [f.id for f in prepared.schema.fields],
            f"{store.root}: write_dataset",
        )
    return fragments, written_schema


def _write_operation(
    prepared: Prepared,
    fragments: tuple[Fragment, ...],
    written_schema: LanceSchema,
    latest: Manifest | None,
    bases: WriteBases,
    options: WriteOptions,
) -> ops.Operation:
    """The operation that commits ``fragments``: an append, or an overwrite that
    starts the schema (and, for a new dataset, its config and row ids) anew."""
    if prepared.appends:
        return ops.Append(fragments)
    config = options.auto_cleanup_options
    cleanup = config_values(config) if config else {}
    return ops.Overwrite(
        fragments,
        written_schema,
        cleanup if latest is None else {},
        stable_row_ids=options.enable_stable_row_ids if latest is None else None,
        initial_bases=bases.initial,
    )


def _commit_write(
    store: DatasetStore,
    uri: str,
    txn: ops.Transaction,
    mode: WriteMode,
    file_version: str,
    options: WriteOptions,
    fragments: tuple[Fragment, ...],
) -> Manifest:
    """Commit the write's ``txn``; its data ``fragments`` are deleted if it fails."""
    paths = options.enable_v2_manifest_paths
    scheme = ManifestNaming.V1 if paths is False else ManifestNaming.V2
    try:
        return commit_transaction(
            store,
            txn,
            create_only=mode == "create",
            data_format=("lance", file_version),
            new_dataset_naming=scheme,
            policy=CommitPolicy(lock=options.commit_lock),
            announce_as=os.fspath(uri),
        )
    except BaseException:
        # The commit never happened, so nothing can reference these files.
        discard_data_files(store, fragments)
        raise
