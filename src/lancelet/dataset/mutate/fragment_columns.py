"""``LanceFragment.merge_columns``: new columns for one fragment, computed (SQL, a
function over batches) or read from data, written as a new data file."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.dataset.mutate.schema_ops import (
    ColumnComputer,
    extend_schema,
    is_transform,
    new_data_files,
)
from lancelet.dataset.mutate.udf import BatchUDF
from lancelet.dataset.read.row_keys import read_physical
from lancelet.dataset.write.inputs import as_reader
from lancelet.errors import ArgumentError, RowCountMismatchError
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema
from lancelet.transaction.store import DatasetStore


def _computed(
    store: DatasetStore,
    manifest: Manifest,
    fragment: Fragment,
    transform: Any,
    columns: Sequence[str] | None,
    batch_size: int | None,
    where: str,
) -> pa.Table:
    if isinstance(transform, BatchUDF) and transform.checkpoint_file is not None:
        raise ArgumentError(f"{where}: A checkpoint file cannot be used to add columns to a "
                            "fragment")  # fmt: skip
    computer = ColumnComputer(manifest, transform, columns, where, batch_size)
    # Deleted rows too, so that the new file lines up with the fragment's others.
    table = read_physical(store, manifest, fragment, computer.reads, where)
    return computer.compute(table, fragment.id)


def _read(store: DatasetStore, fragment: Fragment, data: Any, schema: pa.Schema | None) -> pa.Table:
    """One row of ``data`` per live row of the fragment; deleted rows get nulls."""
    values = as_reader(data, schema).read_all()
    deleted = store.read_deletions(fragment).astype(np.int64)
    live = fragment.physical_rows - len(deleted)
    if values.num_rows != live:
        raise RowCountMismatchError(
            f"{store.root}: fragment {fragment.id}: merge_columns: the data holds "
            f"{values.num_rows} rows for the fragment's {live}"
        )
    if not len(deleted):
        return values
    keep = np.ones(fragment.physical_rows, dtype=bool)
    keep[deleted] = False
    positions = np.zeros(fragment.physical_rows, dtype=np.int64)
    positions[keep] = np.arange(live, dtype=np.int64)
    return values.take(pa.array(positions, mask=~keep))


def merge_columns(
    store: DatasetStore,
    manifest: Manifest,
    fragment: Fragment,
    value_func: Any,
    columns: Sequence[str] | None,
    batch_size: int | None,
    reader_schema: pa.Schema | None,
) -> tuple[Fragment, LanceSchema]:
    where = f"{store.root}: fragment {fragment.id}: merge_columns"
    if is_transform(value_func):
        if reader_schema is not None:
            raise ArgumentError(f"{where}: reader_schema applies only to data, not to SQL "
                                "or a function")  # fmt: skip
        values = _computed(store, manifest, fragment, value_func, columns, batch_size, where)
    else:
        if columns is not None:
            raise ArgumentError(f"{where}: columns applies only to SQL or a function")
        values = _read(store, fragment, value_func, reader_schema)
    with new_data_files(store, manifest) as files:
        schema = extend_schema(manifest, values.schema, where)
        return files.add(fragment, values, schema), schema
