"""A fragment's rows with the row id, row address and row offset pylance names
``_rowid``, ``_rowaddr`` and ``_rowoffset``, and their lineage
(``_row_created_at_version``, ``_row_last_updated_at_version``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelet.dataset.read.fragment_reader import FragmentReader
from lancelet.dataset.read.projection import CREATED_AT, ROW_ADDRESS, ROW_ID, UPDATED_AT
from lancelet.table import row_address
from lancelet.table.manifest import Manifest


def with_row_columns(
    reader: FragmentReader, table: pa.Table, offsets: np.ndarray, *, lineage: bool = False
) -> pa.Table:
    """``table``, the given physical rows of a fragment, with their id and address, and
    with ``lineage`` the versions that created and last updated them."""
    address = row_address.of_offsets(reader.fragment.id, offsets)
    ids = reader.row_ids
    row_id = address if ids is None else ids[offsets]
    table = table.append_column(ROW_ID, pa.array(row_id)).append_column(
        ROW_ADDRESS, pa.array(address)
    )
    if lineage:
        created, updated = reader.lineage
        table = table.append_column(CREATED_AT, pa.array(created[offsets], pa.uint64()))
        table = table.append_column(UPDATED_AT, pa.array(updated[offsets], pa.uint64()))
    return table


def live_rows_before(manifest: Manifest) -> dict[int, int]:
    """Per fragment id, the live rows of the dataset's fragments before it: the
    ``_rowoffset`` of its first live row."""
    counts = np.array([f.num_rows for f in manifest.fragments], dtype=np.int64)
    starts = np.cumsum(counts) - counts
    return dict(zip((f.id for f in manifest.fragments), starts.tolist(), strict=True))


def row_offsets(offsets: np.ndarray, deleted: np.ndarray, first: int) -> pa.Array:
    """The ``_rowoffset`` of a fragment's physical rows ``offsets``, its first live row
    being ``first``; a deleted row has that of the next live row, as in pylance."""
    position = offsets.astype(np.uint64) - np.searchsorted(deleted, offsets).astype(np.uint64)
    return pa.array(position + np.uint64(first))
