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
    old = _addresses(group.old_fragments)
    fragments = group.old_fragments
    gone = [deleted(f) for f in fragments]
    counts = [len(g) for g in gone]
    rows = np.repeat([f.physical_rows for f in fragments], counts).astype(np.int64)
    offsets = np.concatenate(gone).astype(np.int64) if gone else np.zeros(0, np.int64)
    outside = (offsets < 0) | (offsets >= rows)
    if outside.any():
        fragment = fragments[int(np.searchsorted(np.cumsum(counts), np.argmax(outside), "right"))]
        raise CorruptDatasetError(
            f"fragment {fragment.id}: its deletion file lists rows past its "
            f"{fragment.physical_rows}"
        )
    firsts = np.cumsum([0] + [f.physical_rows for f in fragments])[:-1]
    live = np.ones(len(old), dtype=bool)
    live[offsets + np.repeat(firsts, counts)] = False
    moved_to = _addresses(group.new_fragments)
    if int(live.sum()) != len(moved_to):
        old_ids = [f.id for f in group.old_fragments]
        raise CorruptDatasetError(
            f"rewrite of fragments {old_ids}: {int(live.sum())} live rows became "
            f"{len(moved_to)} new rows"
        )
    new = np.full(len(old), DELETED, dtype=np.uint64)
    new[live] = moved_to
    return old, new


def _addresses(fragments: Sequence[Fragment]) -> np.ndarray:
    """The address of every physical row of ``fragments``, in order: built at once,
    not fragment by fragment (a compaction of small fragments has a hundred)."""
    sizes = np.array([f.physical_rows for f in fragments], dtype=np.int64)
    total = int(sizes.sum())
    starts = np.cumsum(sizes) - sizes
    ids = np.array([f.id for f in fragments], dtype=np.uint64)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(starts, sizes)
    return row_address.pack(np.repeat(ids, sizes), offsets)


def rewrite_moves(groups: Sequence[RewriteGroup], deleted: Deletions) -> AddressMapping:
    """The moves of every group of one Rewrite, as one mapping."""
    pairs = [group_moves(g, deleted) for g in groups]
    if not pairs:
        return AddressMapping(np.zeros(0, np.uint64), np.zeros(0, np.uint64))
    return AddressMapping(
        np.concatenate([old for old, _ in pairs]), np.concatenate([new for _, new in pairs])
    )
