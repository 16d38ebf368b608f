"""``LanceFragment``: per-fragment reads and writes."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lancelet.dataset.arrow_dataset import ArrowFragment
from lancelet.dataset.core import arguments
from lancelet.dataset.core.options import refuse_unimplemented
from lancelet.dataset.core.progress import FragmentWriteProgress
from lancelet.dataset.fragment_scans import FragmentScans
from lancelet.dataset.fragment_session import FragmentSession, fragment_from_file
from lancelet.dataset.mutate.delete import matching_offsets
from lancelet.dataset.mutate.fragment_columns import merge_columns
from lancelet.dataset.mutate.fragment_update import update_columns
from lancelet.dataset.mutate.merge_columns import plan_merge
from lancelet.dataset.read.fragment_reader import FragmentReader
from lancelet.dataset.read.projection import Columns
from lancelet.dataset.write.fragments import FragmentWrite, write_data, write_fragments
from lancelet.errors import ArgumentError, EmptyWriteError
from lancelet.table import naming
from lancelet.table.fragment import DataFile, Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema_view import LanceSchema as PublicLanceSchema
from lancelet.transaction.store import DatasetStore

if TYPE_CHECKING:
    from lancelet.dataset.dataset import LanceDataset

FragmentMetadata = Fragment


class LanceFragment(FragmentScans, ArrowFragment):
    def __init__(
        self,
        dataset: LanceDataset,
        fragment_id: int | None = None,
        *,
        fragment: Fragment | None = None,
    ) -> None:
        if fragment is None:
            if fragment_id is None:
                raise ArgumentError("either fragment_id or fragment is required")
            found = dataset.snapshot.manifest.fragment(fragment_id)
            if found is None:
                raise ArgumentError(
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
        return self._dataset.snapshot.store, self._dataset.snapshot.manifest, [self._fragment]

    def delete(self, predicate: str) -> Fragment | None:
        """The fragment's metadata with ``predicate``'s rows deleted (not committed);
        None when every row is deleted."""
        store, manifest = self._dataset.snapshot.store, self._dataset.snapshot.manifest
        hits = matching_offsets(store, manifest, self._fragment, predicate)
        if not len(hits):
            return self._fragment
        return store.delete_rows(self._fragment, hits, manifest.version)

    def delete_rows(self, offsets: Iterable[int] | np.ndarray | pa.Array) -> Fragment | None:
        """The fragment's metadata with the rows at physical ``offsets`` (positions in
        its data files, counting deleted rows) deleted too (not committed); None when
        no row is left."""
        call = "LanceFragment.delete_rows"
        given = offsets if isinstance(offsets, (np.ndarray, pa.Array)) else list(offsets)
        rows = arguments.indices(given, call)
        if len(rows) and int(rows.max()) >= self.physical_rows:
            raise ArgumentError(
                f"{call}: offset {int(rows.max())} is out of range for fragment "
                f"{self.fragment_id} with {self.physical_rows} rows"
            )
        if not len(rows):
            return self._fragment
        store, manifest = self._dataset.snapshot.store, self._dataset.snapshot.manifest
        return store.delete_rows(self._fragment, rows, manifest.version)

    def merge_columns(
        self,
        value_func: Any,
        columns: list[str] | None = None,
        batch_size: int | None = None,
        reader_schema: pa.Schema | None = None,
    ) -> tuple[Fragment, PublicLanceSchema]:
        """New columns for this fragment: computed by ``value_func`` (SQL expressions by
        name, or a function mapping batches of ``columns`` to batches of the new
        columns) or read from it (data with a row for each live row), stored in a new
        data file (not committed; commit the fragments with ``LanceOperation.Merge``
        and the schema returned)."""
        store, manifest = self._dataset.snapshot.store, self._dataset.snapshot.manifest
        fragment, schema = merge_columns(
            store, manifest, self._fragment, value_func, columns, batch_size, reader_schema
        )
        return fragment, PublicLanceSchema(schema)

    def merge(
        self,
        data_obj: Any,
        left_on: str,
        right_on: str | None = None,
        schema: pa.Schema | None = None,
    ) -> tuple[Fragment, PublicLanceSchema]:
        """This fragment with the columns of ``data_obj`` joined on ``left_on`` (a column,
        ``_rowid`` or ``_rowaddr``) = ``right_on`` (not committed; commit the fragments
        with ``LanceOperation.Merge`` and the schema returned)."""
        store, manifest = self._dataset.snapshot.store, self._dataset.snapshot.manifest
        where = f"{store.root}: fragment {self.fragment_id}: merge"
        merge = plan_merge(
            store, manifest, data_obj, left_on, right_on, schema, where, [self._fragment]
        )
        return merge.fragments[0], PublicLanceSchema(merge.schema)

    def update_columns(
        self,
        data_obj: Any,
        left_on: str = "_rowid",
        right_on: str | None = None,
        schema: pa.Schema | None = None,
        *,
        with_offsets: bool = False,
    ) -> tuple[Fragment, list[int]]:
        """New values for existing columns, joined on ``left_on`` = ``right_on``; returns
        the fragment and the ids of the fields changed (not committed; commit with
        ``LanceOperation.Update(updated_fragments=..., fields_modified=...)``)."""
        refuse_unimplemented("LanceFragment.update_columns", with_offsets=with_offsets)
        store, manifest = self._dataset.snapshot.store, self._dataset.snapshot.manifest
        return update_columns(store, manifest, self._fragment, data_obj, left_on, right_on, schema)

    def open_session(
        self, columns: Columns | None = None, with_row_address: bool | None = None
    ) -> FragmentSession:
        return FragmentSession(self, columns, bool(with_row_address))

    @staticmethod
    def create_from_file(filename: str, dataset: LanceDataset, fragment_id: int) -> Fragment:
        """A fragment of a data file already written under the dataset's ``data/``."""
        return fragment_from_file(filename, dataset, fragment_id)

    def validate(self) -> None:
        """Open every data file and the deletion file; raise if any is missing or corrupt."""
        dataset = self._dataset
        FragmentReader(
            dataset.snapshot.store, dataset.snapshot.manifest.schema, self._fragment
        ).validate()

    @staticmethod
    def create(
        dataset_uri: str | os.PathLike[str],
        data: Any,
        fragment_id: int | None = None,
        schema: pa.Schema | None = None,
        max_rows_per_group: int = 1024,
        progress: FragmentWriteProgress | None = None,
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
        target = FragmentWrite(
            dataset_uri,
            mode,
            data_storage_version,
            storage_options,
            max_rows_per_file=2**62,
            progress=progress,
            fragment_id=fragment_id or 0,
            max_rows_per_group=max_rows_per_group,
        )
        fragments = write_data(data, schema, target).fragments
        if not fragments:
            raise EmptyWriteError(f"{dataset_uri}: LanceFragment.create: input data was empty")
        return fragments[0]


__all__ = ["FragmentMetadata", "LanceFragment", "write_fragments"]
