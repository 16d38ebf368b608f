"""Rewrite (compaction): each group's fragments replaced by new ones holding the same
live rows, and the index segments remapped to the moved rows in the same commit.

A ``deferred`` rewrite leaves the segments the Fragment Reuse Index maps as they
were; ``frag_reuse_index`` (with a new reuse version) then replaces the one whose
uuid is ``frag_reuse_base``.  Like pylance, the transaction file records neither:
only the committing process needs them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace

from pyroaring import FrozenBitMap

from lancelet._proto import table_pb2
from lancelet.errors import CorruptDatasetError, DatasetError, ReuseIndexChangedError
from lancelet.table.fragment import Fragment
from lancelet.table.index import FRAG_REUSE_INDEX, IndexDetails, IndexFile, IndexMetadata
from lancelet.table.manifest import Manifest
from lancelet.transaction.claims import Claims, files_of
from lancelet.transaction.operations.folding import FoldContext, existing, max_id
from lancelet.transaction.operations.kind import (
    Description,
    Kind,
    Message,
    decode_fragments,
    encode_fragments,
)


@dataclass(frozen=True)
class RewriteGroup:
    old_fragments: tuple[Fragment, ...]
    # Ids reserved beforehand with ReserveFragments.
    new_fragments: tuple[Fragment, ...]


@dataclass(frozen=True)
class RewrittenIndex:
    """An index segment compaction rewrote for the moved rows: ``new_id``'s files
    replace ``old_id``'s, with the given details, index version and files."""

    old_id: uuid.UUID
    new_id: uuid.UUID
    details: IndexDetails | None = None
    index_version: int = 0
    files: tuple[IndexFile, ...] = ()
    # The fragments ``old_id`` held before the rewrite, when the Fragment Reuse
    # Index carried them (the new segment no longer needs it); None: its bitmap.
    # Known only to the committing process, like pylance's.
    coverage: FrozenBitMap | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Rewrite:
    groups: tuple[RewriteGroup, ...]
    rewritten_indices: tuple[RewrittenIndex, ...] = ()
    deferred: bool = field(default=False, compare=False)
    frag_reuse_index: IndexMetadata | None = field(default=None, compare=False, repr=False)
    frag_reuse_base: uuid.UUID | None = field(default=None, compare=False)

    def old_ids(self) -> set[int]:
        return {f.id for g in self.groups for f in g.old_fragments}


# -- codec -----------------------------------------------------------------------------


def encode(op: Rewrite, pb: Message) -> None:
    for group in op.groups:
        g = pb.groups.add()
        g.old_fragments.extend(encode_fragments(group.old_fragments))
        g.new_fragments.extend(encode_fragments(group.new_fragments))
    for index in op.rewritten_indices:
        r = pb.rewritten_indices.add(new_index_version=index.index_version)
        r.old_id.uuid = index.old_id.bytes
        r.new_id.uuid = index.new_id.bytes
        if index.details is not None:
            r.new_index_details.type_url = index.details.type_url
            r.new_index_details.value = index.details.value
        r.new_index_files.extend(
            table_pb2.IndexFile(path=f.path, size_bytes=f.size_bytes) for f in index.files
        )


def decode(pb: Message, where: str) -> Rewrite:
    groups = [
        RewriteGroup(decode_fragments(g.old_fragments), decode_fragments(g.new_fragments))
        for g in pb.groups
    ]
    if pb.old_fragments:  # the deprecated single-group form
        groups.append(
            RewriteGroup(decode_fragments(pb.old_fragments), decode_fragments(pb.new_fragments))
        )
    return Rewrite(tuple(groups), tuple(_rewritten_index(r, where) for r in pb.rewritten_indices))


def _rewritten_index(pb: Message, where: str) -> RewrittenIndex:
    for name in ("old_id", "new_id"):
        if len(getattr(pb, name).uuid) != 16:
            raise CorruptDatasetError(f"{where}: a rewritten index's {name} is not 16 bytes")
    details = None
    if pb.HasField("new_index_details"):
        details = IndexDetails(pb.new_index_details.type_url, pb.new_index_details.value)
    return RewrittenIndex(
        uuid.UUID(bytes=pb.old_id.uuid),
        uuid.UUID(bytes=pb.new_id.uuid),
        details,
        pb.new_index_version,
        tuple(IndexFile(f.path, f.size_bytes) for f in pb.new_index_files),
    )


# -- fold ------------------------------------------------------------------------------


def fold(base: Manifest | None, op: Rewrite, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    _check_old_fragments(base, op)
    # The manifest lists fragments in increasing id order (readers reject anything
    # else), so the new fragments, with their reserved ids, go where the ids put them.
    gone = op.old_ids()
    added = _with_fresh_ids(tuple(f for g in op.groups for f in g.new_fragments), base)
    kept = tuple(f for f in base.fragments if f.id not in gone)
    taken = {f.id for f in kept} & {f.id for f in added}
    if taken:
        raise DatasetError(
            f"rewrite onto version {base.version}: new fragment ids {sorted(taken)} are "
            "already in use; reserve them with ReserveFragments first"
        )
    fragments = tuple(sorted(kept + added, key=lambda f: f.id))
    numbered = iter(added)
    op = replace(
        op,
        groups=tuple(
            replace(g, new_fragments=tuple(next(numbered) for _ in g.new_fragments))
            for g in op.groups
        ),
    )
    indices = moved_indices(base, op, frozenset(f.id for f in fragments))
    if op.frag_reuse_index is not None:
        indices = _with_reuse_index(base, indices, op)
    return replace(
        base,
        fragments=fragments,
        max_fragment_id=max_id(base.max_fragment_id, added),
        indices=indices,
    )


def _check_old_fragments(base: Manifest, op: Rewrite) -> None:
    present = {f.id for f in base.fragments}
    for group in op.groups:
        old = [f.id for f in group.old_fragments]
        if not present.issuperset(old):
            raise CorruptDatasetError(
                f"rewrite of fragments {old}: some are not in version {base.version}"
            )


def _with_reuse_index(
    base: Manifest, indices: tuple[IndexMetadata, ...], op: Rewrite
) -> tuple[IndexMetadata, ...]:
    """The Fragment Reuse Index swapped for the rewrite's, which extends the one it
    read: another reuse index committed meanwhile would lose its versions."""
    assert op.frag_reuse_index is not None
    current = [i.uuid for i in base.indices if i.name == FRAG_REUSE_INDEX]
    if current != ([op.frag_reuse_base] if op.frag_reuse_base is not None else []):
        raise ReuseIndexChangedError(
            f"version {base.version} changed the fragment reuse index this compaction "
            "extends; re-read the dataset and try again"
        )
    kept = tuple(i for i in indices if i.name != FRAG_REUSE_INDEX)
    return (*kept, op.frag_reuse_index)


def moved_indices(
    base: Manifest, op: Rewrite, present: frozenset[int]
) -> tuple[IndexMetadata, ...]:
    """The indices after a rewrite: those it remapped become their new segments, those
    keyed by stable row id follow the rows, those a deferred rewrite leaves to the
    Fragment Reuse Index stay as they were, and the rest stop claiming the rewritten
    fragments (their rows are scanned until the index is rebuilt).  Segments that
    follow the rows claim only fragments ``present`` after it, as pylance's do."""
    rewritten = {r.old_id: r for r in op.rewritten_indices}
    missing = set(rewritten) - {i.uuid for i in base.indices}
    if missing:
        raise DatasetError(
            f"rewrite onto version {base.version}: it remapped indices "
            f"{sorted(str(u) for u in missing)}, which that version no longer has"
        )
    out = []
    for index in base.indices:
        found = rewritten.get(index.uuid)
        if found is not None:
            index = _remapped(index, found)
        if index.is_system or (op.deferred and index.left_to_reuse(base.stable_row_ids)):
            out.append(index)  # the reuse index maps its rows
            continue
        if found is not None or index.keyed_by_row_id(base.stable_row_ids):
            moved = _follow_rows(index, op)
            if moved.fragment_bitmap is not None:
                kept = moved.fragment_bitmap & FrozenBitMap(present)
                moved = replace(moved, fragment_bitmap=kept)
            out.append(moved)
        else:
            out.append(index.without_fragments(op.old_ids()))
    return tuple(out)


def _remapped(index: IndexMetadata, found: RewrittenIndex) -> IndexMetadata:
    """The segment the rewrite wrote in place of ``index``."""
    return replace(
        index,
        uuid=found.new_id,
        index_details=found.details or index.index_details,
        index_version=found.index_version,
        files=found.files,
        fragment_bitmap=(index.fragment_bitmap if found.coverage is None else found.coverage),
    )


def _follow_rows(index: IndexMetadata, op: Rewrite) -> IndexMetadata:
    """The index claims the new fragments of every group whose old fragments it all
    held; of a group it held only in part, neither (its rows there are scanned)."""
    held = index.fragment_bitmap
    if held is None:
        return index
    bitmap = held
    for group in op.groups:
        old = FrozenBitMap(f.id for f in group.old_fragments)
        if not old & bitmap:
            continue
        bitmap = bitmap - old
        if old.issubset(held):
            bitmap = bitmap | FrozenBitMap(f.id for f in group.new_fragments)
    return replace(index, fragment_bitmap=bitmap)


def _with_fresh_ids(fragments: tuple[Fragment, ...], base: Manifest) -> tuple[Fragment, ...]:
    """Fragments with id 0 have none reserved: they take the next free ids."""
    fresh = iter(range(base.next_fragment_id(), base.next_fragment_id() + len(fragments)))
    return tuple(f.with_id(next(fresh)) if f.id == 0 else f for f in fragments)


# -- claims and description -----------------------------------------------------------


def claims(op: Rewrite) -> Claims:
    new = files_of(f for g in op.groups for f in g.new_fragments)
    return Claims(frozenset(op.old_ids()), new)


def describe(op: Rewrite) -> Description:
    added = tuple(f for g in op.groups for f in g.new_fragments)
    return Description(
        {},
        {"numRemovedFragments": str(len(op.old_ids())), "numAddedFragments": str(len(added))},
    )


KIND = Kind("rewrite", Rewrite, encode, decode, fold, claims, describe)
