"""ReserveFragments: fragment ids handed out ahead of a commit that uses them (a
compaction's new fragments)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from lancelet.table.manifest import Manifest
from lancelet.transaction.claims import nothing
from lancelet.transaction.operations.folding import FoldContext, existing
from lancelet.transaction.operations.kind import Description, Kind, Message


@dataclass(frozen=True)
class ReserveFragments:
    num_fragments: int


def encode(op: ReserveFragments, pb: Message) -> None:
    pb.num_fragments = op.num_fragments


def decode(pb: Message, where: str) -> ReserveFragments:
    return ReserveFragments(pb.num_fragments)


def fold(base: Manifest | None, op: ReserveFragments, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    return replace(base, max_fragment_id=base.next_fragment_id() + op.num_fragments - 1)


def describe(op: ReserveFragments) -> Description:
    return Description({"numFragments": str(op.num_fragments)})


KIND = Kind("reserve_fragments", ReserveFragments, encode, decode, fold, nothing, describe)
