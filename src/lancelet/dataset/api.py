"""The two entry points: ``write_dataset`` and ``dataset`` (the writing itself is
:mod:`lancelet.dataset.write.dataset_write`)."""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any, Literal

import pyarrow as pa

from lancelet.dataset.core.options import (
    DEFAULT_MAX_BYTES_PER_FILE,
    legacy_format_version,
    refuse_unimplemented,
)
from lancelet.dataset.core.progress import FragmentWriteProgress
from lancelet.dataset.dataset import LanceDataset, Version
from lancelet.dataset.open_options import check_location
from lancelet.dataset.versions.asof import AsOf
from lancelet.dataset.versions.auto_cleanup import AutoCleanupConfig
from lancelet.dataset.versions.bases import DatasetBasePath
from lancelet.dataset.write.data_files import (
    DEFAULT_MAX_ROWS_PER_FILE,
)
from lancelet.dataset.write.dataset_write import (
    UNIMPLEMENTED_WRITE_KEYWORDS,
    WriteMode,
    WriteOptions,
    write_to_store,
)
from lancelet.dataset.write.inputs import dataset_store, given_uri
from lancelet.errors import ArgumentError
from lancelet.transaction.commit import CommitLock
from lancelet.transaction.session import Session


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
        "write_dataset", **{name: keywords[name] for name in UNIMPLEMENTED_WRITE_KEYWORDS}
    )
    if uri is None:
        raise ArgumentError("write_dataset: uri is required")
    store = dataset_store(uri, storage_options, "write_dataset")
    version = legacy_format_version(use_legacy_format, data_storage_version)
    options = WriteOptions.of(keywords, data_storage_version=version)
    manifest = write_to_store(store, given_uri(uri), data_obj, schema, mode, options)
    return LanceDataset(given_uri(uri), manifest=manifest, _store=store)
