"""A compaction's moves as a reuse version of the Fragment Reuse Index.

The version lists, per group, the old addresses of the rows that survived, which
are the new fragments' rows in order.  That holds only when the group's old
fragments are rewritten in ascending id order (planning sorts them so under
deferral); any other order is refused rather than recorded wrongly.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from lancelet.errors import CorruptDatasetError, UnsupportedFeatureError
from lancelet.table.frag_reuse import FragmentDigest, ReuseGroup, ReuseVersion, live_rows
from lancelet.table.fragment import Fragment
from lancelet.transaction.operations import RewriteGroup
from lancelet.transaction.store import DatasetStore


def reuse_version(
    store: DatasetStore, dataset_version: int, groups: Sequence[RewriteGroup]
) -> ReuseVersion:
    """The reuse version of ``groups`` (numbered), committed onto ``dataset_version``."""
    return ReuseVersion(dataset_version, tuple(_reuse_group(store, g) for g in groups))


def _reuse_group(store: DatasetStore, group: RewriteGroup) -> ReuseGroup:
    old = group.old_fragments
    ids = [f.id for f in old]
    if any(a >= b for a, b in itertools.pairwise(ids)):
        raise UnsupportedFeatureError(
            f"{store.root}: fragments {ids} were not rewritten in ascending id order, "
            "which a reuse version cannot record; compact without defer_index_remap"
        )
    deleted = [_deleted(store, f) for f in old]
    survivors = live_rows(zip(ids, [f.physical_rows for f in old], deleted, strict=True))
    written = sum(f.physical_rows for f in group.new_fragments)
    if len(survivors) != written:
        raise CorruptDatasetError(
            f"rewrite of fragments {ids}: {len(survivors)} live rows became {written} new rows"
        )
    old_digests = tuple(
        FragmentDigest(f.id, f.physical_rows, len(gone))
        for f, gone in zip(old, deleted, strict=True)
    )
    new_digests = tuple(FragmentDigest(f.id, f.physical_rows, 0) for f in group.new_fragments)
    return ReuseGroup(survivors, old_digests, new_digests)


def _deleted(store: DatasetStore, fragment: Fragment) -> np.ndarray:
    """The fragment's deleted offsets (sorted and unique, as a deletion file holds
    them), each checked to be one of its rows."""
    deleted = store.read_deletions(fragment)
    if len(deleted) and (int(deleted[-1]) >= fragment.physical_rows or int(deleted[0]) < 0):
        raise CorruptDatasetError(
            f"fragment {fragment.id}: its deletion file lists rows past its "
            f"{fragment.physical_rows}"
        )
    return deleted
