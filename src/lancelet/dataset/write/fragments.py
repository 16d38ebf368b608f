"""``write_fragments``: data files written for a later commit (distributed writes)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa

from lancelet.dataset.core.options import (
    DEFAULT_MAX_BYTES_PER_FILE,
    legacy_format_version,
    refuse_unimplemented,
)
from lancelet.dataset.core.progress import FragmentWriteProgress, check_progress
from lancelet.dataset.core.snapshot import DatasetHandle
from lancelet.dataset.core.terminal_progress import progress_bar
from lancelet.dataset.versions.loading import announce_latest
from lancelet.dataset.versions.transactions import Transaction, public_transaction
from lancelet.dataset.write.data_files import (
    DEFAULT_MAX_ROWS_PER_FILE,
    DEFAULT_MAX_ROWS_PER_GROUP,
    prepare,
    storage_version,
    write_fragment_files,
)
from lancelet.dataset.write.inputs import as_reader, dataset_store, given_uri, known_rows
from lancelet.errors import ArgumentError, EmptyWriteError
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema
from lancelet.transaction import operations as ops

# write_fragments' keywords lancelet does not implement: refused unless left at their
# defaults, in this order.
_UNIMPLEMENTED_KEYWORDS = (
    "enable_stable_row_ids",
    "target_bases",
    "target_all_bases",
    "initial_bases",
    "base_store_params",
    "external_blob_mode",
    "allow_external_blob_outside_bases",
    "namespace_client",
    "table_id",
    "session",
)


@dataclass(frozen=True)
class FragmentWrite:
    """Where and how to write: the dataset, the mode, the file format version, and
    how data is cut into files."""

    dataset_uri: str | os.PathLike[str] | DatasetHandle
    mode: str = "append"
    data_storage_version: str | None = None
    storage_options: dict[str, str] | None = None
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE
    max_bytes_per_file: int | None = None
    progress: FragmentWriteProgress | None = None
    fragment_id: int = 0
    max_rows_per_group: int = DEFAULT_MAX_ROWS_PER_GROUP  # legacy (0.1) files' batches


@dataclass(frozen=True)
class Written:
    fragments: list[Fragment]
    schema: LanceSchema
    latest: Manifest | None


def write_data(data: Any, schema: pa.Schema | None, target: FragmentWrite) -> Written:
    """Write ``data`` as new fragments' data files (not committed)."""
    check_progress(target.progress)
    if target.mode not in ("append", "overwrite"):
        raise ArgumentError(
            f"write_fragments: mode must be 'append' or 'overwrite', not {target.mode!r}"
        )
    storage_version(target.data_storage_version)
    store = dataset_store(target.dataset_uri, target.storage_options, "write_fragments")
    latest = announce_latest(store, given_uri(target.dataset_uri))
    prepared = prepare(
        latest, as_reader(data, schema), target.mode, target.data_storage_version, store.root
    )
    if not len(prepared.reader.schema):
        raise EmptyWriteError(f"{store.root}: cannot write data with an empty schema")
    dictionaries = dict(prepared.schema.dictionaries)
    with progress_bar("Writing fragments", total=known_rows(data), unit="rows") as bar:
        fragments = write_fragment_files(
            store,
            bar.tracked_batches(prepared.reader),
            prepared.schema,
            prepared.version,
            target.max_rows_per_file,
            progress=target.progress,
            fragment_id=target.fragment_id,
            max_bytes_per_file=target.max_bytes_per_file,
            max_rows_per_group=target.max_rows_per_group,
            dictionaries=dictionaries,
            audited=False,  # pylance reports the files of dataset writes only
        )
    return Written(fragments, prepared.schema.with_dictionaries(dictionaries), latest)


def write_fragments(
    data: Any,
    dataset_uri: str | os.PathLike[str] | DatasetHandle,
    schema: pa.Schema | None = None,
    *,
    return_transaction: bool = False,
    mode: str = "append",
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_rows_per_group: int = 1024,
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
    data_cache_bytes: int | None = None,
    max_page_bytes: int | None = None,
    progress: FragmentWriteProgress | None = None,
    data_storage_version: str | None = None,
    use_legacy_format: bool | None = None,
    storage_options: dict[str, str] | None = None,
    enable_stable_row_ids: bool = False,
    target_bases: list[str] | None = None,
    target_all_bases: bool | None = None,
    initial_bases: list[Any] | None = None,
    base_store_params: dict[str, dict[str, str]] | None = None,
    external_blob_mode: Literal["reference", "ingest"] = "reference",
    allow_external_blob_outside_bases: bool = False,
    namespace_client: Any = None,
    table_id: list[str] | None = None,
    session: Any = None,
) -> list[Fragment] | Transaction:
    """Write data files for a later single commit (``LanceDataset.commit``).

    Fragments come back with id 0; the commit assigns real ids. ``progress`` is told
    as each fragment's data file is opened and finished; a file is closed once its
    flushed pages reach ``max_bytes_per_file``.  With ``return_transaction`` the
    result is the ``Transaction`` to commit: an append, or an overwrite when
    ``mode="overwrite"`` or no dataset exists yet (as pylance's).  ``data_cache_bytes``
    and ``max_page_bytes`` only tune the writer; the other keywords lancelet does not
    implement are refused unless given their defaults.
    """
    # Every parameter by name, taken before any other local exists.
    keywords = dict(locals())
    refuse_unimplemented(
        "write_fragments", **{name: keywords[name] for name in _UNIMPLEMENTED_KEYWORDS}
    )
    data_storage_version = legacy_format_version(use_legacy_format, data_storage_version)
    target = FragmentWrite(
        dataset_uri,
        mode,
        data_storage_version,
        storage_options,
        max_rows_per_file,
        max_bytes_per_file,
        progress,
        max_rows_per_group=max_rows_per_group,
    )
    written = write_data(data, schema, target)
    if not return_transaction:
        return written.fragments
    return _transaction(written, mode)


def _transaction(written: Written, mode: str) -> Transaction:
    """The transaction that commits ``written``: an append, or an overwrite when
    ``mode="overwrite"`` or no dataset exists yet (as pylance's)."""
    read_version = written.latest.version if written.latest else 0
    fragments = tuple(written.fragments)
    operation: ops.Operation = (
        ops.Append(fragments)
        if mode == "append" and written.latest is not None
        else ops.Overwrite(fragments, written.schema)
    )
    return public_transaction(ops.Transaction(read_version, operation))
