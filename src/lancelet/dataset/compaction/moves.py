"""Where compaction moved each row: old row address -> new one, or gone.

A rewrite group's new fragments hold the live rows of its old fragments in the
same order, so the move follows from the old fragments' deletion vectors and the
new fragments' ids and sizes alone; nothing needs to travel with a task's result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from lancelet.errors import CorruptDatasetError
from lancelet.index.remapping import DELETED, AddressMapping
from lancelet.table import row_address
from lancelet.table.fragment import Fragment
from lancelet.transaction.operations import RewriteGroup

Deletions = Callable[[Fragment], np.ndarray]


def group_moves(group: RewriteGroup, deleted: Deletions) -> tuple[np.ndarray, np.ndarray]:
    """(old addresses of every physical row of the old fragments, their new
    addresses, ``DELETED`` for rows that were deleted)."""
    old_parts, live_parts = [], []
    for fragment in group.old_fragments:
        old_parts.append(row_address.of_range(fragment.id, 0, fragment.physical_rows))
        live = np.ones(fragment.physical_rows, dtype=bool)
        gone = deleted(fragment).astype(np.int64)
        if len(gone) and (int(gone.min()) < 0 or int(gone.max()) >= fragment.physical_rows):
            raise CorruptDatasetError(
                f"fragment {fragment.id}: its deletion file lists rows past its "
                f"{fragment.physical_rows}"
            )
        live[gone] = False
        live_parts.append(live)
    old = np.concatenate(old_parts) if old_parts else np.zeros(0, np.uint64)
    live = np.concatenate(live_parts) if live_parts else np.zeros(0, bool)
    new_parts = [row_address.of_range(f.id, 0, f.physical_rows) for f in group.new_fragments]
    moved_to = np.concatenate(new_parts) if new_parts else np.zeros(0, np.uint64)
    if int(live.sum()) != len(moved_to):
        old_ids = [f.id for f in group.old_fragments]
        raise CorruptDatasetError(
            f"rewrite of fragments {old_ids}: {int(live.sum())} live rows became "
            f"{len(moved_to)} new rows"
        )
    new = np.full(len(old), DELETED, dtype=np.uint64)
    new[live] = moved_to
    return old, new


def rewrite_moves(groups: Sequence[RewriteGroup], deleted: Deletions) -> AddressMapping:
    """The moves of every group of one Rewrite, as one mapping."""
    pairs = [group_moves(g, deleted) for g in groups]
    if not pairs:
        return AddressMapping(np.zeros(0, np.uint64), np.zeros(0, np.uint64))
    return AddressMapping(
        np.concatenate([old for old, _ in pairs]), np.concatenate([new for _, new in pairs])
    )
