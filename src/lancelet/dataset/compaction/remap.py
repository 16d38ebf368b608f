"""Index segments rewritten for the rows a compaction moves, committed with it.

pylance remaps BTREE, BITMAP and LABEL_LIST segments that list rows by address
(with stable row ids, BITMAP and LABEL_LIST list row ids and need nothing).
lancelet remaps BTREE and BITMAP; every other segment holding rewritten fragments
stops claiming them when the Rewrite is folded (see
:func:`lancelet.transaction.apply.moved_indices`), so its rows are scanned until
it is rebuilt: slower, never wrong.

A dataset with a Fragment Reuse Index may hold segments whose addresses predate
earlier compactions; those are left to be uncovered too rather than remapped
from addresses that are no longer current.
"""

from __future__ import annotations

import shutil
import uuid as uuid_lib
from collections.abc import Sequence

from pyroaring import FrozenBitMap

from lancelet.dataset import index_plan
from lancelet.dataset.compaction.moves import rewrite_moves
from lancelet.dataset.indices import index_files
from lancelet.file import version as file_version
from lancelet.index import bitmap, btree, registry
from lancelet.index.remapping import AddressMapping
from lancelet.table import naming
from lancelet.table.index import FRAG_REUSE_INDEX, IndexMetadata
from lancelet.table.manifest import Manifest
from lancelet.transaction.operations import RewriteGroup, RewrittenIndex
from lancelet.transaction.store import DatasetStore

_REMAPPED = frozenset({"/lance.table.BTreeIndexDetails", "/lance.table.BitmapIndexDetails"})


def remappable(manifest: Manifest, gone: set[int]) -> list[IndexMetadata]:
    """The segments holding rewritten fragments that lancelet rewrites."""
    if any(i.name == FRAG_REUSE_INDEX for i in manifest.indices):
        return []
    paths = index_plan.field_paths(manifest)
    return [
        index
        for index in manifest.indices
        if index.fragment_bitmap is not None
        and not index.fragment_bitmap.isdisjoint(FrozenBitMap(gone))
        and index.index_details is not None
        and index.index_details.type_url in _REMAPPED
        and not index.keyed_by_row_id(manifest.stable_row_ids)
        and len(index.fields) == 1
        and index.fields[0] in paths
    ]


def remap_indices(
    store: DatasetStore, manifest: Manifest, groups: Sequence[RewriteGroup]
) -> tuple[RewrittenIndex, ...]:
    """New segments, written under fresh uuids, for every remappable segment of
    ``manifest`` (the version the rewrite read) holding fragments of ``groups``
    (numbered: their new fragments have their final ids).  If anything fails, the
    segments written so far are removed."""
    gone = {f.id for g in groups for f in g.old_fragments}
    segments = remappable(manifest, gone)
    if not segments:
        return ()
    mapping = rewrite_moves(groups, store.read_deletions)
    done: list[RewrittenIndex] = []
    try:
        for segment in segments:
            done.append(_remap_one(store, manifest, segment, mapping))
    except BaseException:
        discard_indices(store, done)
        raise
    return tuple(done)


def _remap_one(
    store: DatasetStore, manifest: Manifest, segment: IndexMetadata, mapping: AddressMapping
) -> RewrittenIndex:
    arrow = manifest.schema.to_arrow()
    dtype = index_plan.column_type(arrow, index_plan.field_paths(manifest)[segment.fields[0]])
    assert segment.index_details is not None
    kind = registry.BY_TYPE_URL[segment.index_details.type_url]
    source = kind.open(store.path(naming.INDICES_DIR, str(segment.uuid)), dtype)
    new_id = uuid_lib.uuid4()
    directory = store.path(naming.INDICES_DIR, str(new_id))
    version = file_version.writable(manifest.data_storage_version).name
    try:
        if isinstance(source, btree.BTreeIndex | bitmap.BitmapIndex):
            source.remap(mapping, directory, version)
        else:  # remappable() only lets these two through
            raise AssertionError(f"cannot remap {type(source).__name__}")
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return RewrittenIndex(
        segment.uuid,
        new_id,
        segment.index_details,
        segment.index_version or 0,
        index_files(store, new_id),
    )


def discard_indices(store: DatasetStore, rewritten: Sequence[RewrittenIndex]) -> None:
    """Remove the files of rewritten segments that were never committed."""
    for index in rewritten:
        shutil.rmtree(store.path(naming.INDICES_DIR, str(index.new_id)), ignore_errors=True)
