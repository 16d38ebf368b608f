"""Committing a compaction: fresh fragment ids reserved, then one Rewrite.

Nothing is visible until the commit: a ReserveFragments commit hands out fresh
fragment ids, the index segments holding the rewritten rows are remapped to the
new fragments under new uuids, then one Rewrite, read at the plan's version, swaps
every group for its new fragments and every remapped segment for its new one.
A delete or update of a rewritten fragment committed meanwhile makes the Rewrite
fail as retryable, instead of silently undoing it; appends are kept.  Files of a
Rewrite that does not commit are removed.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from lancelet import io
from lancelet.dataset.compaction.defer import reuse_version
from lancelet.dataset.compaction.options import CompactionMetrics, CompactionSettings
from lancelet.dataset.compaction.planning import plan_bins
from lancelet.dataset.compaction.remap import discard_indices, remap_indices
from lancelet.dataset.compaction.rewrite import rewrite_fragments
from lancelet.dataset.core.collector import pauses_collector
from lancelet.dataset.core.snapshot import Snapshot
from lancelet.dataset.core.terminal_progress import progress_bar
from lancelet.dataset.read import frag_reuse
from lancelet.dataset.versions.committing import commit_transaction
from lancelet.dataset.write.data_files import discard_data_files
from lancelet.errors import ReuseIndexChangedError
from lancelet.table import naming
from lancelet.table.manifest import Manifest
from lancelet.transaction import operations as ops
from lancelet.transaction.store import DatasetStore


def _reserve_ids(
    store: DatasetStore, read_version: int, groups: Sequence[ops.RewriteGroup]
) -> list[ops.RewriteGroup]:
    """The groups with their new fragments numbered from freshly reserved ids."""
    count = sum(len(g.new_fragments) for g in groups)
    if not count:
        return list(groups)
    txn = ops.Transaction(read_version, ops.ReserveFragments(count))
    # The reservation names no new data file: it need not wait for theirs to sync.
    with io.own_syncs():
        reserved = commit_transaction(store, txn)
    assert reserved.max_fragment_id is not None
    ids = iter(range(reserved.max_fragment_id - count + 1, reserved.max_fragment_id + 1))
    return [
        replace(g, new_fragments=tuple(f.with_id(next(ids)) for f in g.new_fragments))
        for g in groups
    ]


def commit_rewrites(
    store: DatasetStore,
    read_version: int,
    groups: Sequence[ops.RewriteGroup],
    defer_index_remap: bool = False,
) -> Manifest:
    """Commit one Rewrite of ``groups`` read at ``read_version``, with the index
    segments it remaps (see :mod:`.remap`), or with ``defer_index_remap`` a new
    reuse version instead (see :mod:`.defer`); if it does not commit, the new data
    files and index segments go.

    With stable row ids nothing is deferred: segments keyed by row id follow their
    rows anyway, and the few keyed by address are remapped (pylance refuses to
    defer on such datasets, so a reuse index there would be lancelet's alone)."""
    rewritten: tuple[ops.RewrittenIndex, ...] = ()
    try:
        numbered = _reserve_ids(store, read_version, groups)
        read = store.read_manifest(read_version)
        if defer_index_remap and not read.stable_row_ids:
            return _commit_deferred(store, read_version, numbered)
        rewritten = remap_indices(store, read, numbered)
        txn = ops.Transaction(read_version, ops.Rewrite(tuple(numbered), rewritten))
        return commit_transaction(store, txn)
    except BaseException:
        discard_data_files(store, [f for g in groups for f in g.new_fragments])
        discard_indices(store, rewritten)
        raise


_REUSE_ATTEMPTS = 5


def _commit_deferred(
    store: DatasetStore, read_version: int, groups: Sequence[ops.RewriteGroup]
) -> Manifest:
    """The Rewrite with a reuse version for its moves, built on the latest reuse
    index; rebuilt when another commit replaces that index first."""
    for attempt in range(_REUSE_ATTEMPTS):
        latest = store.read_manifest(store.latest_version())
        op = ops.Rewrite(tuple(groups), deferred=True)
        reuse = frag_reuse.reuse_map(store, latest)
        old_ids = op.old_ids()
        written: uuid.UUID | None = None
        if frag_reuse.needs_version(latest, reuse, old_ids):
            current = frag_reuse.reuse_index(latest)
            index = frag_reuse.extended(store, latest, reuse_version(store, latest.version, groups))
            written = index.uuid
            op = replace(
                op,
                frag_reuse_index=index,
                frag_reuse_base=current.uuid if current is not None else None,
            )
        try:
            return commit_transaction(store, ops.Transaction(read_version, op))
        except BaseException as exc:
            if written is not None:
                store.io.remove_tree(store.path(naming.INDICES_DIR, str(written)))
            if not isinstance(exc, ReuseIndexChangedError) or attempt + 1 == _REUSE_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


@pauses_collector
def compact(
    snapshot: Snapshot, options: Mapping[str, Any] | None
) -> tuple[CompactionMetrics, Manifest | None]:
    """Plan, rewrite and commit in one go: what it did, and the version it committed
    (None when nothing needed it)."""
    # The new data and index files sync in the background while the work goes on;
    # a commit publishes its manifest only once they are on disk.
    with io.deferred_syncs():
        return _compact(snapshot, options)


def _compact(
    snapshot: Snapshot, options: Mapping[str, Any] | None
) -> tuple[CompactionMetrics, Manifest | None]:
    store, manifest = snapshot.store, snapshot.manifest
    settings = CompactionSettings.resolve(options, manifest.config, store.root)
    groups: list[ops.RewriteGroup] = []
    bins = plan_bins(store, manifest, settings)
    try:
        with progress_bar("Compacting", total=len(bins), unit="tasks") as bar:
            for old in bar.tracked(bins):
                rewritten = rewrite_fragments(store, manifest, old, settings)
                groups.append(ops.RewriteGroup(old, rewritten))
    except BaseException:
        discard_data_files(store, [f for g in groups for f in g.new_fragments])
        raise
    if not groups:
        return CompactionMetrics(), None
    committed = commit_rewrites(store, manifest.version, groups, settings.defer_index_remap)
    metrics = [CompactionMetrics.of(g.old_fragments, g.new_fragments) for g in groups]
    return CompactionMetrics.total(metrics), committed
