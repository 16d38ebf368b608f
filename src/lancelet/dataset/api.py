"""The two entry points: ``write_dataset`` and ``dataset``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Literal

import pyarrow as pa

from lancelet import events
from lancelet.dataset.core.options import (
    DEFAULT_MAX_BYTES_PER_FILE,
    legacy_format_version,
    refuse_unimplemented,
)
from lancelet.dataset.core.progress import FragmentWriteProgress, check_progress
from lancelet.dataset.dataset import LanceDataset, Version
from lancelet.dataset.open_options import check_location
from lancelet.dataset.versions.asof import AsOf
from lancelet.dataset.versions.auto_cleanup import config_values
from lancelet.dataset.versions.bases import DatasetBasePath, WriteBases, plan_write
from lancelet.dataset.versions.committing import commit_transaction
from lancelet.dataset.versions.loading import announce_latest
from lancelet.dataset.versions.transactions import AutoCleanupConfig, commit_properties
from lancelet.dataset.write.data_files import (
    DEFAULT_MAX_ROWS_PER_FILE,
    Prepared,
    check_known_dictionaries,
    discard_data_files,
    prepare,
    write_fragment_files,
)
from lancelet.dataset.write.inputs import as_reader, dataset_store, given_uri
from lancelet.errors import ArgumentError, DatasetAlreadyExistsError
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.naming import ManifestNaming
from lancelet.table.schema import LanceSchema
from lancelet.transaction import operations as ops
from lancelet.transaction.commit import CommitLock, CommitPolicy
from lancelet.transaction.session import Session
from lancelet.transaction.store import DatasetStore

WriteMode = Literal["create", "append", "overwrite"]

# write_dataset's keywords lancelet does not implement: refused unless left at their
# defaults, in this order.
_UNIMPLEMENTED_WRITE_KEYWORDS = (
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


def dataset(
    uri: str | os.PathLike[str] | None = None,
    version: Version | None = None,
    asof: datetime | str | None = None,
    block_size: int | None = None,
    commit_lock: CommitLock | None = None,
    index_cache_size: int | None = None,
    storage_options: dict[str, str] | None = None,
    default_scan_options: dict[str, Any] | None = None,
    metadata_cache_size_bytes: int | None = None,
    index_cache_size_bytes: int | None = None,
    read_params: dict[str, Any] | None = None,
    session: Session | None = None,
    namespace_client: Any = None,
    table_id: list[str] | None = None,
    base_store_params: dict[str, dict[str, str]] | None = None,
) -> LanceDataset:
    """Open a dataset at its latest version, a version number, or a tag name, or the
    latest version committed at or before ``asof``.

    ``storage_options`` configure the object store (pylance's keys: ``endpoint``,
    ``region``, ``aws_access_key_id``, ``allow_http``, ...); ``commit_lock`` is held
    around the commits the dataset makes; ``default_scan_options`` are scan keywords
    applied to every scan that leaves them unset.  ``block_size``,
    ``index_cache_size`` and the cache sizes in bytes only tune speed; namespaces
    (``namespace_client``, ``table_id``) and ``base_store_params`` are not supported."""
    call = "lancelet.dataset"
    check_location(uri, namespace_client, table_id, call)
    assert uri is not None  # check_location refuses None
    if asof is not None and version is not None:
        raise ArgumentError("dataset: give version or asof, not both")
    opened = LanceDataset(
        uri,
        version if asof is None else AsOf(asof),
        block_size=block_size,
        index_cache_size=index_cache_size,
        commit_lock=commit_lock,
        storage_options=storage_options,
        default_scan_options=default_scan_options,
        metadata_cache_size_bytes=metadata_cache_size_bytes,
        index_cache_size_bytes=index_cache_size_bytes,
        read_params=read_params,
        session=session,
        base_store_params=base_store_params,
    )
    return opened


def write_dataset(
    data_obj: Any,
    uri: str | os.PathLike[str] | LanceDataset | None = None,
    schema: pa.Schema | None = None,
    mode: WriteMode = "create",
    *,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_rows_per_group: int = 1024,
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
    data_cache_bytes: int | None = None,
    max_page_bytes: int | None = None,
    commit_lock: CommitLock | None = None,
    progress: FragmentWriteProgress | None = None,
    storage_options: dict[str, str] | None = None,
    data_storage_version: str | None = None,
    use_legacy_format: bool | None = None,
    enable_v2_manifest_paths: bool = True,
    enable_stable_row_ids: bool = False,
    auto_cleanup_options: AutoCleanupConfig | None = None,
    commit_message: str | None = None,
    transaction_properties: dict[str, str] | None = None,
    initial_bases: list[DatasetBasePath] | None = None,
    target_bases: list[str] | None = None,
    target_all_bases: bool | None = None,
    base_store_params: dict[str, dict[str, str]] | None = None,
    external_blob_mode: Literal["reference", "ingest"] = "reference",
    allow_external_blob_outside_bases: bool = False,
    blob_pack_file_size_threshold: int | None = None,
    namespace_client: Any = None,
    table_id: list[str] | None = None,
    session: Session | None = None,
) -> LanceDataset:
    """Create a dataset, append to it, or overwrite it with ``data_obj``.

    ``auto_cleanup_options`` apply to a new dataset only (an existing one keeps its
    config, as in pylance); ``commit_message`` and ``transaction_properties`` are
    recorded with the commit (``LanceDataset.read_transaction``).  ``data_cache_bytes``
    and ``max_page_bytes`` only tune the writer (the rows written are the same);
    namespaces, ``target_all_bases``, ``base_store_params``, external blob modes and
    ``session`` are not supported."""
    # Every parameter by name, taken before any other local exists.
    keywords = dict(locals())
    refuse_unimplemented(
        "write_dataset", **{name: keywords[name] for name in _UNIMPLEMENTED_WRITE_KEYWORDS}
    )
    if uri is None:
        raise ArgumentError("write_dataset: uri is required")
    store = dataset_store(uri, storage_options, "write_dataset")
    version = legacy_format_version(use_legacy_format, data_storage_version)
    options = WriteOptions.of(keywords, data_storage_version=version)
    return write_to_store(store, given_uri(uri), data_obj, schema, mode, options)


def write_to_store(
    store: DatasetStore,
    uri: str,
    data_obj: Any,
    schema: pa.Schema | None = None,
    mode: WriteMode = "create",
    options: WriteOptions = _DEFAULT_OPTIONS,
) -> LanceDataset:
    """:func:`write_dataset` into the dataset of ``store`` (``uri``: its URI as given,
    for the dataset returned and its events)."""
    latest = _latest_to_write(store, uri, mode, options)
    bases = plan_write(latest, mode, options.initial_bases, options.target_bases, store.root)
    data = as_reader(data_obj, schema)
    prepared = prepare(latest, data, mode, options.data_storage_version, store.root)
    fragments, written_schema = _write_files(store, prepared, bases, options)
    operation = _write_operation(prepared, fragments, written_schema, latest, bases, options)
    txn = ops.Transaction(
        latest.version if latest else 0,
        operation,
        properties=commit_properties(options.commit_message, options.transaction_properties),
    )
    manifest = _commit_write(store, uri, txn, mode, prepared.version, options, fragments)
    return LanceDataset(uri, manifest=manifest, _store=store)


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
