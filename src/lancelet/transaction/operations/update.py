"""Update: rows rewritten.  Their old copies are deleted in ``updated_fragments`` (or
whole fragments removed) and the new values written as ``new_fragments`` (ids
assigned at commit); fragments whose indexed values changed in place leave those
indices."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Protocol

from lancelet._proto import transaction_pb2
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema
from lancelet.transaction.claims import Claims, files_of
from lancelet.transaction.operations.folding import (
    FoldContext,
    changed,
    existing,
    max_id,
    numbered,
    uncover,
)
from lancelet.transaction.operations.kind import (
    Description,
    Kind,
    Message,
    decode_fragments,
    encode_fragments,
    row_count,
)


class InsertedKeys(Protocol):
    """The keys an upsert inserted as new rows, checked against rows other writers
    added concurrently, so that two upserts of one new key cannot both insert it."""

    def found_in(self, fragments: tuple[Fragment, ...], schema: LanceSchema) -> bool: ...


@dataclass(frozen=True)
class Update:
    removed_fragment_ids: tuple[int, ...]
    updated_fragments: tuple[Fragment, ...]
    new_fragments: tuple[Fragment, ...]
    fields_modified: tuple[int, ...] = ()
    fields_for_preserving_frag_bitmap: tuple[int, ...] = ()
    # "rewrite_rows" (old copies deleted, new rows written) or "rewrite_columns" (new
    # data files for some columns of ``updated_fragments``, written by pylance only).
    update_mode: str = "rewrite_rows"
    # Known only to the process that planned the upsert; never written to the file.
    inserted_keys: InsertedKeys | None = field(default=None, compare=False, repr=False)


# The protobuf's UpdateMode enum (REWRITE_ROWS, REWRITE_COLUMNS).
_UPDATE_MODES = transaction_pb2.Transaction.UpdateMode


def encode(op: Update, pb: Message) -> None:
    pb.removed_fragment_ids.extend(op.removed_fragment_ids)
    pb.updated_fragments.extend(encode_fragments(op.updated_fragments))
    pb.new_fragments.extend(encode_fragments(op.new_fragments))
    pb.fields_modified.extend(op.fields_modified)
    pb.fields_for_preserving_frag_bitmap.extend(op.fields_for_preserving_frag_bitmap)
    pb.update_mode = _UPDATE_MODES.Value(op.update_mode.upper())


def decode(pb: Message, where: str) -> Update:
    return Update(
        tuple(pb.removed_fragment_ids),
        decode_fragments(pb.updated_fragments),
        decode_fragments(pb.new_fragments),
        tuple(pb.fields_modified),
        tuple(pb.fields_for_preserving_frag_bitmap),
        _UPDATE_MODES.Name(pb.update_mode).lower(),
    )


def fold(base: Manifest | None, op: Update, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    kept = changed(base, op.updated_fragments, op.removed_fragment_ids)
    added = numbered(op.new_fragments, base.next_fragment_id())
    # Fragments whose values of indexed fields changed in place leave those indices.
    updated = {f.id for f in op.updated_fragments}
    indices = uncover(base.indices, updated, set(op.fields_modified))
    return replace(
        base,
        fragments=kept + added,
        max_fragment_id=max_id(base.max_fragment_id, added),
        indices=indices,
    )


def claims(op: Update) -> Claims:
    touched = {f.id for f in op.updated_fragments} | set(op.removed_fragment_ids)
    return Claims(frozenset(touched), files_of(op.new_fragments))


def describe(op: Update) -> Description:
    return Description(
        {},
        {
            "numUpdatedFragments": str(len(op.updated_fragments)),
            "numRemovedFragments": str(len(op.removed_fragment_ids)),
            "numAddedFragments": str(len(op.new_fragments)),
            "numOutputRows": row_count(op.new_fragments),
        },
    )


KIND = Kind("update", Update, encode, decode, fold, claims, describe)
