"""Delete: rows marked deleted in ``updated_fragments`` (new deletion files), and
fragments left with no live row removed."""

from __future__ import annotations

from dataclasses import dataclass, replace

from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.claims import Claims
from lancelet.transaction.operations.folding import FoldContext, changed, existing
from lancelet.transaction.operations.kind import (
    Description,
    Kind,
    Message,
    decode_fragments,
    encode_fragments,
)


@dataclass(frozen=True)
class Delete:
    updated_fragments: tuple[Fragment, ...]
    deleted_fragment_ids: tuple[int, ...]
    predicate: str = ""


def encode(op: Delete, pb: Message) -> None:
    pb.updated_fragments.extend(encode_fragments(op.updated_fragments))
    pb.deleted_fragment_ids.extend(op.deleted_fragment_ids)
    pb.predicate = op.predicate


def decode(pb: Message, where: str) -> Delete:
    return Delete(
        decode_fragments(pb.updated_fragments), tuple(pb.deleted_fragment_ids), pb.predicate
    )


def fold(base: Manifest | None, op: Delete, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    return replace(base, fragments=changed(base, op.updated_fragments, op.deleted_fragment_ids))


def claims(op: Delete) -> Claims:
    return Claims(frozenset({f.id for f in op.updated_fragments} | set(op.deleted_fragment_ids)))


def describe(op: Delete) -> Description:
    return Description(
        {"predicate": op.predicate},
        {
            "numUpdatedFragments": str(len(op.updated_fragments)),
            "numRemovedFragments": str(len(op.deleted_fragment_ids)),
        },
    )


KIND = Kind("delete", Delete, encode, decode, fold, claims, describe)
