"""Restore: an earlier version's manifest becomes the latest again."""

from __future__ import annotations

from dataclasses import dataclass, replace

from lancelet.errors import VersionNotFoundError
from lancelet.table.manifest import Manifest
from lancelet.transaction.claims import anything
from lancelet.transaction.operations.folding import FoldContext, existing, max_id
from lancelet.transaction.operations.kind import Description, Kind, Message


@dataclass(frozen=True)
class Restore:
    version: int


def encode(op: Restore, pb: Message) -> None:
    pb.version = op.version


def decode(pb: Message, where: str) -> Restore:
    return Restore(pb.version)


def fold(base: Manifest | None, op: Restore, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    try:
        old = ctx.load(op.version)
    except VersionNotFoundError as exc:
        raise VersionNotFoundError(f"cannot restore: {exc}") from exc
    # Fragment ids handed out since must stay reserved.
    return replace(old, max_fragment_id=max_id(base.max_fragment_id, old.fragments))


def describe(op: Restore) -> Description:
    return Description({"version": str(op.version)})


KIND = Kind("restore", Restore, encode, decode, fold, anything, describe)
