"""A compaction's moves as a reuse version of the Fragment Reuse Index.

The version lists, per group, the old addresses of the rows that survived, which
are the new fragments' rows in order.  That holds only when the group's old
fragments are rewritten in ascending id order (planning sorts them so under
deferral); any other order is refused rather than recorded wrongly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lancelet.dataset.compaction.moves import group_moves
from lancelet.errors import UnsupportedFeatureError
from lancelet.index.remapping import DELETED
from lancelet.table.frag_reuse import FragmentDigest, ReuseGroup, ReuseVersion
from lancelet.transaction.operations import RewriteGroup
from lancelet.transaction.store import DatasetStore


def reuse_version(
    store: DatasetStore, dataset_version: int, groups: Sequence[RewriteGroup]
) -> ReuseVersion:
    """The reuse version of ``groups`` (numbered), committed onto ``dataset_version``."""
    return ReuseVersion(dataset_version, tuple(_reuse_group(store, g) for g in groups))


def _reuse_group(store: DatasetStore, group: RewriteGroup) -> ReuseGroup:
    old, new = group_moves(group, store.read_deletions)
    changed = old[new != DELETED]
    if len(changed) > 1 and not (changed[1:] > changed[:-1]).all():
        ids = [f.id for f in group.old_fragments]
        raise UnsupportedFeatureError(
            f"{store.root}: fragments {ids} were not rewritten in ascending id order, "
            "which a reuse version cannot record; compact without defer_index_remap"
        )
    old_digests = tuple(
        FragmentDigest(f.id, f.physical_rows, int(np.count_nonzero(part == DELETED)))
        for f, part in zip(group.old_fragments, _per_fragment(group, new), strict=True)
    )
    new_digests = tuple(FragmentDigest(f.id, f.physical_rows, 0) for f in group.new_fragments)
    return ReuseGroup(changed, old_digests, new_digests)


def _per_fragment(group: RewriteGroup, new: np.ndarray) -> list[np.ndarray]:
    bounds = np.cumsum([f.physical_rows for f in group.old_fragments])[:-1]
    return np.split(new, bounds)
