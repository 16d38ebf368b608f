"""``LanceFragment.open_session`` and ``LanceFragment.create_from_file``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lancelet.dataset.core import arguments
from lancelet.dataset.read.projection import ROW_ADDRESS, Columns
from lancelet.dataset.write.data_files import data_file
from lancelet.errors import SchemaError, UnsupportedVersionError
from lancelet.file import version as file_version
from lancelet.file.reader import LanceFileReader
from lancelet.table import row_address
from lancelet.table.fragment import DataFile, Fragment

if TYPE_CHECKING:
    from lancelet.dataset.dataset import LanceDataset
    from lancelet.dataset.fragment import LanceFragment


class FragmentSession:
    """Repeated takes of the same columns from one fragment."""

    def __init__(
        self, fragment: LanceFragment, columns: Columns | None, with_row_address: bool
    ) -> None:
        self._fragment = fragment
        self._columns = columns
        self._with_row_address = with_row_address

    def take(self, indices: Sequence[int] | np.ndarray | pa.Array) -> pa.Table:
        """Rows at ``indices`` (positions among the fragment's live rows)."""
        table = self._fragment.take(indices, columns=self._columns)
        if not self._with_row_address:
            return table
        rows = arguments.indices(indices, "FragmentSession.take")
        fragment = self._fragment.metadata
        dataset = self._fragment._dataset
        deleted = dataset.snapshot.store.read_deletions(fragment).astype(np.int64)
        live = np.delete(np.arange(fragment.physical_rows, dtype=np.uint64), deleted)
        addresses = row_address.of_offsets(fragment.id, live[rows])
        return table.append_column(ROW_ADDRESS, pa.array(addresses, pa.uint64()))


def fragment_from_file(filename: str, dataset: LanceDataset, fragment_id: int) -> Fragment:
    """A fragment of the data file ``filename`` (under the dataset's ``data/``), written
    outside the dataset with columns named and typed as the dataset's."""
    described, rows = _described(dataset, filename, None)
    return Fragment(fragment_id, (described,), rows)


def describe_data_file(dataset: LanceDataset, filename: str, base_id: int | None) -> DataFile:
    """``DataFile.create``: the record of the data file ``filename`` (under the
    ``data/`` of the dataset or of its base path ``base_id``), whose columns are named
    and typed as the dataset's."""
    return _described(dataset, filename, base_id)[0]


def _described(dataset: LanceDataset, filename: str, base_id: int | None) -> tuple[DataFile, int]:
    store, manifest = dataset.snapshot.store, dataset.snapshot.manifest
    path = store.data_path(filename, base_id)
    reader = LanceFileReader(path, file_io=store.io)
    meta = reader.metadata()
    found = file_version.from_footer(meta.major_version, meta.minor_version)
    if found is None or found.name == "0.1":
        raise UnsupportedVersionError(f"{path}: only Lance 2.x data files can be added")
    dataset_schema = manifest.schema.to_arrow()
    for field in reader.schema:
        if field.name not in dataset_schema.names:
            raise SchemaError(f"{path}: column {field.name!r} is not in the dataset")
        if dataset_schema.field(field.name).type != field.type:
            raise SchemaError(
                f"{path}: column {field.name!r} is {field.type}, the dataset's is "
                f"{dataset_schema.field(field.name).type}"
            )
    names = reader.schema.names
    if [n for n in dataset_schema.names if n in names] != names:
        raise SchemaError(f"{path}: columns {names} are not in the dataset's order")
    size = store.io.size_of(path)
    described = data_file(filename, manifest.schema, found.name, size, names, base_id)
    return described, reader.num_rows()
