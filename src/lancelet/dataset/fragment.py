"""``LanceFragment`` and ``write_fragments``: per-fragment reads and distributed writes."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lancelet.dataset.delete import matching_offsets
from lancelet.dataset.fragment_reader import FragmentReader
from lancelet.dataset.inputs import as_reader, dataset_location
from lancelet.dataset.options import check_options, refuse_unimplemented
from lancelet.dataset.projection import Columns
from lancelet.dataset.scannable import Filter, Scannable
from lancelet.dataset.schema_ops import extend_schema, new_data_files
from lancelet.dataset.write import (
    DEFAULT_MAX_ROWS_PER_FILE,
    prepare,
    storage_version,
    write_fragment_files,
)
from lancelet.errors import ArgumentError
from lancelet.table import naming
from lancelet.table.fragment import DataFile, Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema_view import LanceSchema as PublicLanceSchema
from lancelet.transaction import operations as ops
from lancelet.transaction.store import DatasetStore

if TYPE_CHECKING:
    from lancelet.dataset.dataset import LanceDataset

FragmentMetadata = Fragment


class LanceFragment(Scannable):
    def __init__(
        self,
        dataset: LanceDataset,
        fragment_id: int | None = None,
        *,
        fragment: Fragment | None = None,
    ) -> None:
        if fragment is None:
            if fragment_id is None:
                raise ValueError("either fragment_id or fragment is required")
            found = dataset._manifest.fragment(fragment_id)
            if found is None:
                raise ValueError(
                    f"{dataset.uri}: version {dataset.version} has no fragment {fragment_id}"
                )
            fragment = found
        self._dataset = dataset
        self._fragment = fragment

    @property
    def fragment_id(self) -> int:
        return self._fragment.id

    @property
    def metadata(self) -> Fragment:
        return self._fragment

    @property
    def physical_rows(self) -> int:
        return self._fragment.physical_rows

    @property
    def num_deletions(self) -> int:
        return self._fragment.num_deleted_rows

    @property
    def schema(self) -> pa.Schema:
        return self._dataset.schema

    def data_files(self) -> list[DataFile]:
        return list(self._fragment.files)

    def deletion_file(self) -> str | None:
        file = self._fragment.deletion_file
        if file is None:
            return None
        name = naming.deletion_file_name(self.fragment_id, file.read_version, file.id, file.kind)
        return f"{naming.DELETIONS_DIR}/{name}"

    def __repr__(self) -> str:
        return f"LanceFragment(id={self.fragment_id}, physical_rows={self.physical_rows})"

    def _source(self) -> tuple[DatasetStore, Manifest, list[Fragment] | None]:
        return self._dataset._store, self._dataset._manifest, [self._fragment]

    def to_table(  # type: ignore[override]  # pylance's positional order for fragments
        self,
        columns: Columns | None = None,
        filter: Filter | None = None,
        limit: int | None = None,
        offset: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        **kwargs: Any,
    ) -> pa.Table:
        return self.scanner(
            columns,
            filter,
            limit,
            offset,
            with_row_id=with_row_id,
            with_row_address=with_row_address,
            **kwargs,
        ).to_table()

    def delete(self, predicate: str) -> Fragment | None:
        """The fragment's metadata with ``predicate``'s rows deleted (not committed);
        None when every row is deleted."""
        store, manifest = self._dataset._store, self._dataset._manifest
        hits = matching_offsets(store, manifest, self._fragment, predicate)
        if not len(hits):
            return self._fragment
        return store.delete_rows(self._fragment, hits, manifest.version)

    def merge_columns(
        self,
        value_func: Callable[[pa.RecordBatch], pa.RecordBatch],
        columns: list[str] | None = None,
        batch_size: int | None = None,
        reader_schema: pa.Schema | None = None,
    ) -> tuple[Fragment, PublicLanceSchema]:
        """New columns for this fragment: ``value_func`` maps batches of ``columns`` to
        batches of the new columns, stored in a new data file (not committed; commit the
        fragments with ``LanceOperation.Merge`` and the schema returned)."""
        where = "LanceFragment.merge_columns"
        refuse_unimplemented(where, reader_schema=reader_schema)
        if batch_size is not None and batch_size <= 0:
            raise ArgumentError(f"{where}: batch_size must be positive, not {batch_size}")
        store, manifest = self._dataset._store, self._dataset._manifest
        reads = list(columns) if columns is not None else manifest.schema.to_arrow().names
        rows = self._fragment.physical_rows
        # Deleted rows too, so that the new file lines up with the fragment's others.
        table = FragmentReader(store, manifest.schema, self._fragment).read(reads, 0, rows)
        batches = table.to_batches(max_chunksize=batch_size or max(rows, 1))
        results = [value_func(batch) for batch in batches]
        for result in results:
            if not isinstance(result, pa.RecordBatch):
                raise TypeError(f"{where}: value_func must return a pyarrow RecordBatch")
        values = pa.Table.from_batches(results)
        if values.num_rows != rows:
            raise ArgumentError(f"{where}: value_func returned {values.num_rows} rows for {rows}")
        with new_data_files(store, manifest) as files:
            schema = extend_schema(manifest, values.schema, where)
            return files.add(self._fragment, values, schema), PublicLanceSchema(schema)

    def validate(self) -> None:
        """Open every data file and the deletion file; raise if any is missing or corrupt."""
        dataset = self._dataset
        FragmentReader(dataset._store, dataset._manifest.schema, self._fragment).validate()

    @staticmethod
    def create(
        dataset_uri: str | os.PathLike[str],
        data: Any,
        fragment_id: int | None = None,
        schema: pa.Schema | None = None,
        max_rows_per_group: int = 1024,
        progress: Any = None,
        mode: str = "append",
        *,
        data_storage_version: str | None = None,
        use_legacy_format: bool | None = None,
        storage_options: dict[str, str] | None = None,
        namespace_client: Any = None,
        table_id: list[str] | None = None,
        session: Any = None,
    ) -> Fragment:
        """Write ``data`` as the data file of one new fragment (not committed)."""
        if (namespace_client is None) != (table_id is None):
            raise ValueError("Both 'namespace_client' and 'table_id' must be provided together.")
        refuse_unimplemented(
            "LanceFragment.create",
            progress=progress,
            namespace_client=namespace_client,
            table_id=table_id,
            session=session,
        )
        if use_legacy_format is not None:
            warnings.warn(
                "use_legacy_format is deprecated, use data_storage_version instead",
                DeprecationWarning,
                stacklevel=2,
            )
            data_storage_version = "legacy" if use_legacy_format else "stable"
        fragments = write_fragments(
            data,
            dataset_uri,
            schema,
            mode=mode,
            max_rows_per_file=2**62,
            max_rows_per_group=max_rows_per_group,
            data_storage_version=data_storage_version,
            storage_options=storage_options,
        )
        if not fragments:
            raise ValueError("LanceFragment.create needs at least one row")
        assert isinstance(fragments, list)
        return fragments[0].with_id(fragment_id or 0)


def write_fragments(
    data: Any,
    dataset_uri: str | os.PathLike[str] | LanceDataset,
    schema: pa.Schema | None = None,
    *,
    return_transaction: bool = False,
    mode: str = "append",
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_rows_per_group: int = 1024,
    data_storage_version: str | None = None,
    storage_options: dict[str, str] | None = None,
    **options: Any,
) -> list[Fragment] | ops.Transaction:
    """Write data files for a later single commit (``LanceDataset.commit``).

    Fragments come back with id 0; the commit assigns real ids.
    """
    check_options(options, "write_fragments")
    if mode not in ("append", "overwrite"):
        raise ArgumentError(f"write_fragments: mode must be 'append' or 'overwrite', not {mode!r}")
    storage_version(data_storage_version)
    dataset_uri, storage_options = dataset_location(dataset_uri, storage_options, "write_fragments")
    store = DatasetStore(dataset_uri, storage_options)
    found = store.latest_manifest()
    latest = found[0] if found else None
    prepared = prepare(latest, as_reader(data, schema), mode, data_storage_version, store.root)
    lance_schema = prepared.schema
    fragments = write_fragment_files(
        store, prepared.reader, lance_schema, prepared.version, max_rows_per_file
    )
    if not return_transaction:
        return fragments
    read_version = latest.version if latest else 0
    operation: ops.Operation = (
        ops.Append(tuple(fragments))
        if mode == "append"
        else ops.Overwrite(tuple(fragments), lance_schema)
    )
    return ops.Transaction(read_version, operation)
