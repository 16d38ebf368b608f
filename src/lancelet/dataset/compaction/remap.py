"""Index segments rewritten for the rows a compaction moves, committed with it.

pylance remaps BTREE, BITMAP, LABEL_LIST and INVERTED segments that list rows by
address (with stable row ids, BITMAP, LABEL_LIST and INVERTED list row ids and need
nothing), and vector indices.  lancelet remaps BTREE, BITMAP, INVERTED, IVF_FLAT and
IVF_PQ (see
:mod:`vector_remap`); every other segment holding rewritten fragments
stops claiming them when the Rewrite is folded (see
:func:`lancelet.transaction.apply.moved_indices`), so its rows are scanned until
it is rebuilt: slower, never wrong.

On a dataset with a Fragment Reuse Index, a segment may hold addresses from
before earlier deferred compactions: its rows are carried through the reuse
versions it needs and then through this compaction's moves, so the new segment
is wholly current (and those versions can be trimmed once no segment needs them).
"""

from __future__ import annotations

import uuid as uuid_lib
from collections.abc import Sequence

import numpy as np
from pyroaring import FrozenBitMap

from lancelet.dataset.compaction.moves import rewrite_moves
from lancelet.dataset.compaction.vector_remap import remap_vector_segment
from lancelet.dataset.indices.catalog import index_files
from lancelet.dataset.indices.vector_optimize import VECTOR_TYPES, rewritable
from lancelet.dataset.read import frag_reuse, index_plan
from lancelet.file import version as file_version
from lancelet.index import bitmap, btree, json_kind
from lancelet.index.frag_reuse import ReuseMap
from lancelet.index.fts.segment import InvertedSegment
from lancelet.index.remapping import DELETED, AddressMapping
from lancelet.table import naming, row_address
from lancelet.table.index import IndexMetadata, index_type
from lancelet.table.manifest import Manifest
from lancelet.transaction.operations import RewriteGroup, RewrittenIndex
from lancelet.transaction.store import DatasetStore

_REMAPPED = frozenset(
    {
        "/lance.table.BTreeIndexDetails",
        "/lance.table.BitmapIndexDetails",
        "/lance.table.InvertedIndexDetails",
    }
)


def _remapped(index: IndexMetadata, manifest: Manifest) -> bool:
    if index_type(index.index_details) in VECTOR_TYPES:
        return rewritable(manifest, index)
    kind = json_kind.target_kind(index.index_details)
    return kind is not None and kind.details.type_url in _REMAPPED


def remappable(
    manifest: Manifest, gone: set[int], reuse: ReuseMap | None = None
) -> list[IndexMetadata]:
    """The segments holding rewritten fragments (through the reuse index, if any)
    that lancelet rewrites."""
    paths = index_plan.field_paths(manifest)
    gone_bitmap = FrozenBitMap(gone)
    out = []
    for index in manifest.indices:
        held = frag_reuse.coverage(reuse, index, manifest)
        if (
            held is not None
            and not held.isdisjoint(gone_bitmap)
            and index.index_details is not None
            and _remapped(index, manifest)
            and not index.keyed_by_row_id(manifest.stable_row_ids)
            and len(index.fields) == 1
            and index.fields[0] in paths
        ):
            out.append(index)
    return out


def remap_indices(
    store: DatasetStore, manifest: Manifest, groups: Sequence[RewriteGroup]
) -> tuple[RewrittenIndex, ...]:
    """New segments, written under fresh uuids, for every remappable segment of
    ``manifest`` (the version the rewrite read) holding fragments of ``groups``
    (numbered: their new fragments have their final ids).  If anything fails, the
    segments written so far are removed."""
    gone = {f.id for g in groups for f in g.old_fragments}
    reuse = frag_reuse.reuse_map(store, manifest)
    segments = remappable(manifest, gone, reuse)
    if not segments:
        return ()
    moves = rewrite_moves(groups, store.read_deletions)
    done: list[RewrittenIndex] = []
    try:
        for segment in segments:
            mapping, coverage = moves, None
            if reuse is not None and segment.fragment_bitmap is not None:
                needed = reuse.needed(segment.fragment_bitmap)
                if needed:
                    mapping = _through_reuse(reuse, needed, moves)
                    coverage = reuse.coverage(segment.fragment_bitmap)
            done.append(_remap_one(store, manifest, segment, mapping, coverage))
    except BaseException:
        discard_indices(store, done)
        raise
    return tuple(done)


def _through_reuse(reuse: ReuseMap, needed: set[int], moves: AddressMapping) -> AddressMapping:
    """Every row of the fragments the needed reuse versions replaced, carried through
    all versions and then ``moves``; and ``moves`` itself."""
    versions = reuse.details.versions
    old = [
        row_address.of_range(f.id, 0, f.physical_rows)
        for i in sorted(needed)
        for g in versions[i].groups
        for f in g.old_fragments
    ]
    keys = np.concatenate(old) if old else np.zeros(0, np.uint64)
    carried, alive = reuse.remap(keys)
    moved, exists = moves.apply(carried)
    values = np.where(alive & exists, moved, DELETED)
    return AddressMapping(np.concatenate([keys, moves.old]), np.concatenate([values, moves.new]))


def _remap_one(
    store: DatasetStore,
    manifest: Manifest,
    segment: IndexMetadata,
    mapping: AddressMapping,
    coverage: FrozenBitMap | None,
) -> RewrittenIndex:
    new_id = uuid_lib.uuid4()
    directory = store.place(naming.INDICES_DIR, str(new_id))
    version = file_version.index_file_version(manifest.data_storage_version)
    place = store.place(naming.INDICES_DIR, str(segment.uuid))
    if index_type(segment.index_details) in VECTOR_TYPES:
        try:
            remap_vector_segment(place, mapping, directory, version)
        except BaseException:
            store.io.remove_tree(directory.path)
            raise
        return _rewritten(store, segment, new_id, coverage)
    arrow = manifest.schema.to_arrow()
    dtype = index_plan.column_type(arrow, index_plan.field_paths(manifest)[segment.fields[0]])
    kind = json_kind.target_kind(segment.index_details)  # a JSON index's files: its target's
    assert kind is not None
    source = kind.open(place, dtype)
    try:
        if isinstance(source, btree.BTreeIndex | bitmap.BitmapIndex | InvertedSegment):
            source.remap(mapping, directory, version)
        else:  # remappable() only lets these two through
            raise AssertionError(f"cannot remap {type(source).__name__}")
    except BaseException:
        store.io.remove_tree(directory.path)
        raise
    return _rewritten(store, segment, new_id, coverage)


def _rewritten(
    store: DatasetStore,
    segment: IndexMetadata,
    new_id: uuid_lib.UUID,
    coverage: FrozenBitMap | None,
) -> RewrittenIndex:
    return RewrittenIndex(
        segment.uuid,
        new_id,
        segment.index_details,
        segment.index_version or 0,
        index_files(store, new_id),
        coverage,
    )


def discard_indices(store: DatasetStore, rewritten: Sequence[RewrittenIndex]) -> None:
    """Remove the files of rewritten segments that were never committed."""
    for index in rewritten:
        store.io.remove_tree(store.path(naming.INDICES_DIR, str(index.new_id)))
