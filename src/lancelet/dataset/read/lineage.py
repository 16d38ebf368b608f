"""Per-row lineage of a fragment: for each row, its id, its address, and the versions
that created and last updated it.  What scans answer for ``_row_created_at_version``
and ``_row_last_updated_at_version``, and what a change feed between two versions
reads (rows created or updated after a version)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lancelet.table import row_address
from lancelet.table.fragment import Fragment
from lancelet.transaction.store import DatasetStore


@dataclass(frozen=True)
class RowLineage:
    """Parallel uint64 arrays, one entry per row, in physical order."""

    # The physical offset of each row in its fragment.
    offsets: np.ndarray
    # Stable row ids, or the rows' addresses when the fragment lists none.
    row_ids: np.ndarray
    addresses: np.ndarray
    created_at: np.ndarray
    last_updated_at: np.ndarray


def fragment_lineage(
    store: DatasetStore, fragment: Fragment, *, include_deleted: bool = False
) -> RowLineage:
    """The lineage of ``fragment``'s live rows (all its rows with ``include_deleted``).
    A fragment recording none answers version 1, as pylance does."""
    offsets = np.arange(fragment.physical_rows, dtype=np.uint64)
    if not include_deleted:
        offsets = np.setdiff1d(offsets, store.read_deletions(fragment).astype(np.uint64))
    addresses = row_address.of_offsets(fragment.id, offsets)
    ids = store.read_row_ids(fragment)
    created, updated = store.read_lineage(fragment)
    at = offsets.astype(np.int64)
    return RowLineage(
        offsets,
        addresses if ids is None else ids[at],
        addresses,
        created[at],
        updated[at],
    )
