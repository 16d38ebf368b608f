"""Append: new fragments (their ids assigned at commit), nothing else touched."""

from __future__ import annotations

from dataclasses import dataclass, replace

from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.claims import Claims, files_of
from lancelet.transaction.operations.folding import FoldContext, existing, max_id, numbered
from lancelet.transaction.operations.kind import (
    Description,
    Kind,
    Message,
    decode_fragments,
    encode_fragments,
    row_count,
)


@dataclass(frozen=True)
class Append:
    fragments: tuple[Fragment, ...]


def encode(op: Append, pb: Message) -> None:
    pb.fragments.extend(encode_fragments(op.fragments))


def decode(pb: Message, where: str) -> Append:
    return Append(decode_fragments(pb.fragments))


def fold(base: Manifest | None, op: Append, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    added = numbered(op.fragments, base.next_fragment_id())
    return replace(
        base,
        fragments=base.fragments + added,
        max_fragment_id=max_id(base.max_fragment_id, added),
    )


def claims(op: Append) -> Claims:
    return Claims(frozenset(), files_of(op.fragments))


def describe(op: Append) -> Description:
    return Description(
        {"mode": "Append"},
        {"numAddedFragments": str(len(op.fragments)), "numOutputRows": row_count(op.fragments)},
    )


KIND = Kind("append", Append, encode, decode, fold, claims, describe)
