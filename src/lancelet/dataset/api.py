"""The two entry points: ``write_dataset`` and ``dataset``."""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any, Literal

import pyarrow as pa

from lancelet import events
from lancelet.dataset.asof import version_asof
from lancelet.dataset.auto_cleanup import config_values
from lancelet.dataset.bases import plan_write
from lancelet.dataset.committing import commit_transaction
from lancelet.dataset.dataset import LanceDataset, Version
from lancelet.dataset.inputs import as_reader, dataset_location
from lancelet.dataset.loading import announce_latest
from lancelet.dataset.options import check_options
from lancelet.dataset.progress import FragmentWriteProgress, check_progress
from lancelet.dataset.transactions import AutoCleanupConfig, commit_properties
from lancelet.dataset.write import (
    DEFAULT_MAX_ROWS_PER_FILE,
    check_known_dictionaries,
    discard_data_files,
    prepare,
    write_fragment_files,
)
from lancelet.errors import ArgumentError, DatasetAlreadyExistsError, UnsupportedOptionError
from lancelet.table.naming import ManifestNaming
from lancelet.transaction import operations as ops
from lancelet.transaction.commit import CommitLock, CommitPolicy
from lancelet.transaction.session import Session
from lancelet.transaction.store import DatasetStore

WriteMode = Literal["create", "append", "overwrite"]


def dataset(
    uri: str | os.PathLike[str],
    version: Version | None = None,
    *,
    storage_options: dict[str, str] | None = None,
    asof: datetime | str | None = None,
    commit_lock: CommitLock | None = None,
    **options: Any,
) -> LanceDataset:
    """Open a dataset at its latest version, a version number, or a tag name, or the
    latest version committed at or before ``asof``.

    ``storage_options`` configure the object store (pylance's keys: ``endpoint``,
    ``region``, ``aws_access_key_id``, ``allow_http``, ...); ``commit_lock`` is held
    around the commits the dataset makes; ``default_scan_options`` are scan keywords
    applied to every scan that leaves them unset."""
    scan_defaults = options.pop("default_scan_options", None)
    session = dataset_session(options, "lancelet.dataset")
    check_read_params(options.pop("read_params", None), "lancelet.dataset")
    check_options(options, "dataset")
    if asof is not None:
        if version is not None:
            raise ArgumentError("dataset: give version or asof, not both")
        version = version_asof(DatasetStore(os.fspath(uri), storage_options), asof)
    return LanceDataset(
        uri,
        version,
        storage_options=storage_options,
        default_scan_options=scan_defaults,
        session=session,
        commit_lock=commit_lock,
    )


# File reader options that only tune speed (caching, extra checks while decoding):
# lancelet's results are the same either way, and it always checks what it decodes.
_READ_PARAMS = frozenset({"cache_repetition_index", "validate_on_decode"})


def check_read_params(params: Any, call: str) -> None:
    if params is None:
        return
    if not isinstance(params, dict):
        raise TypeError(f"{call}: read_params must be a dict, not {params!r}")
    for name, value in params.items():
        if name not in _READ_PARAMS:
            raise UnsupportedOptionError(f"{call}: lancelet does not support read_params {name!r}")
        if not isinstance(value, bool):
            raise TypeError(f"{call}: read_params {name!r} must be True or False, not {value!r}")


def dataset_session(options: dict[str, Any], call: str) -> Session | None:
    """The session ``options`` give (taking ``session`` and the cache sizes out of
    them): the one passed, else one with the cache sizes, else None (a new one)."""
    session = options.pop("session", None)
    sizes = {
        name: options.pop(name)
        for name in ("index_cache_size_bytes", "metadata_cache_size_bytes")
        if options.get(name) is not None
    }
    if session is not None and not isinstance(session, Session):
        raise TypeError(f"{call}: session must be a lancelet Session, not {session!r}")
    if session is not None or not sizes:
        return session
    return Session(**sizes)


def write_dataset(
    data_obj: Any,
    uri: str | os.PathLike[str] | LanceDataset,
    schema: pa.Schema | None = None,
    mode: WriteMode = "create",
    *,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_rows_per_group: int = 1024,
    data_storage_version: str | None = None,
    enable_v2_manifest_paths: bool | None = None,
    enable_stable_row_ids: bool = False,
    storage_options: dict[str, str] | None = None,
    commit_lock: CommitLock | None = None,
    auto_cleanup_options: AutoCleanupConfig | None = None,
    commit_message: str | None = None,
    transaction_properties: dict[str, str] | None = None,
    progress: FragmentWriteProgress | None = None,
    max_bytes_per_file: int | None = None,
    **options: Any,
) -> LanceDataset:
    """Create a dataset, append to it, or overwrite it with ``data_obj``.

    ``auto_cleanup_options`` apply to a new dataset only (an existing one keeps its
    config, as in pylance); ``commit_message`` and ``transaction_properties`` are
    recorded with the commit (``LanceDataset.read_transaction``)."""
    initial_bases = options.pop("initial_bases", None)
    target_bases = options.pop("target_bases", None)
    check_options(options, "write_dataset")
    check_progress(progress)
    if mode not in ("create", "append", "overwrite"):
        raise ArgumentError(
            f"write_dataset: mode must be 'create', 'append' or 'overwrite', not {mode!r}"
        )
    uri, storage_options = dataset_location(uri, storage_options, "write_dataset")
    store = DatasetStore(uri, storage_options)
    latest = announce_latest(store, os.fspath(uri))
    events.dataset_event("writing", os.fspath(uri), mode=events.Raw(mode.capitalize()))
    if latest is not None and mode == "create":
        raise DatasetAlreadyExistsError(f"{store.root}: a dataset already exists here")
    if enable_stable_row_ids and latest is not None and not latest.stable_row_ids:
        # pylance ignores the flag here; a dataset cannot start giving rows stable ids.
        raise ArgumentError(
            f"{store.root}: enable_stable_row_ids applies when a dataset is created; this "
            "one exists without stable row ids"
        )
    bases = plan_write(latest, mode, initial_bases, target_bases, store.root)
    prepared = prepare(latest, as_reader(data_obj, schema), mode, data_storage_version, store.root)
    dictionaries = dict(prepared.schema.dictionaries)
    fragments = tuple(
        write_fragment_files(
            store,
            prepared.reader,
            prepared.schema,
            prepared.version,
            max_rows_per_file,
            bases,
            progress=progress,
            max_bytes_per_file=max_bytes_per_file,
            max_rows_per_group=max_rows_per_group,
            dictionaries=dictionaries,
        )
    )
    if prepared.version == "0.1":
        # With no rows there are no dictionary values for the manifest to keep.
        check_known_dictionaries(
            prepared.schema.with_dictionaries(dictionaries),
            [f.id for f in prepared.schema.fields],
            f"{store.root}: write_dataset",
        )
    cleanup = config_values(auto_cleanup_options) if auto_cleanup_options else {}
    operation: ops.Operation = (
        ops.Append(fragments)
        if prepared.appends
        else ops.Overwrite(
            fragments,
            prepared.schema.with_dictionaries(dictionaries),
            cleanup if latest is None else {},
            stable_row_ids=enable_stable_row_ids if latest is None else None,
            initial_bases=bases.initial,
        )
    )
    txn = ops.Transaction(
        latest.version if latest else 0,
        operation,
        properties=commit_properties(commit_message, transaction_properties),
    )
    scheme = ManifestNaming.V1 if enable_v2_manifest_paths is False else ManifestNaming.V2
    try:
        manifest = commit_transaction(
            store,
            txn,
            create_only=mode == "create",
            data_format=("lance", prepared.version),
            new_dataset_naming=scheme,
            policy=CommitPolicy(lock=commit_lock),
            announce_as=os.fspath(uri),
        )
    except BaseException:
        # The commit never happened, so nothing can reference these files.
        discard_data_files(store, fragments)
        raise
    return LanceDataset(uri, manifest=manifest, storage_options=storage_options)
