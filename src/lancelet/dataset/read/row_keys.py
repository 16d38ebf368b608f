"""Columns of a fragment's physical rows that a scan computes rather than reads:
row ids and row addresses, next to stored columns."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from lancelet.dataset.read.fragment_reader import FragmentReader
from lancelet.dataset.read.projection import ROW_ADDRESS, ROW_ID, SPECIAL
from lancelet.errors import CorruptDatasetError
from lancelet.table import row_address
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore


def key_column(
    store: DatasetStore, manifest: Manifest, fragment: Fragment, column: str, where: str
) -> pa.Array:
    """The values of ``column`` (a stored column, ``_rowid`` or ``_rowaddr``) for every
    physical row of ``fragment``, deleted rows included."""
    rows = fragment.physical_rows
    if column == ROW_ADDRESS or (column == ROW_ID and not manifest.stable_row_ids):
        return pa.array(row_address.of_range(fragment.id, 0, rows))
    if column == ROW_ID:
        ids = store.read_row_ids(fragment)
        if ids is None:
            raise CorruptDatasetError(
                f"{where}: the dataset has stable row ids, but fragment {fragment.id} lists none"
            )
        return pa.array(ids, pa.uint64())
    table = FragmentReader(store, manifest.schema, fragment).read([column], 0, rows)
    return table.column(0).combine_chunks()


def read_physical(
    store: DatasetStore, manifest: Manifest, fragment: Fragment, names: Sequence[str], where: str
) -> pa.Table:
    """Columns ``names`` (stored ones, ``_rowid``, ``_rowaddr``) of every physical row
    of ``fragment``, deleted rows included, in the order asked."""
    stored = [n for n in names if n not in SPECIAL]
    table = FragmentReader(store, manifest.schema, fragment).read(stored, 0, fragment.physical_rows)
    if len(stored) == len(names):
        return table
    columns = [
        key_column(store, manifest, fragment, n, where) if n in SPECIAL else table.column(n)
        for n in names
    ]
    return pa.table(columns, names=list(names))
