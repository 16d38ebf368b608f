"""UpdateBases: register base paths (other roots data files may live under); their
ids are assigned when the commit is folded."""

from __future__ import annotations

from dataclasses import dataclass, replace

from lancelet.table.base_paths import BasePath, with_new_ids
from lancelet.table.manifest import Manifest
from lancelet.transaction.claims import nothing
from lancelet.transaction.operations.folding import FoldContext, existing
from lancelet.transaction.operations.kind import Kind, Message


@dataclass(frozen=True)
class UpdateBases:
    new_bases: tuple[BasePath, ...]


def encode(op: UpdateBases, pb: Message) -> None:
    for base in op.new_bases:
        new = pb.new_bases.add(path=base.path, is_dataset_root=base.is_dataset_root)
        if base.name is not None:
            new.name = base.name


def decode(pb: Message, where: str) -> UpdateBases:
    return UpdateBases(tuple(BasePath.from_proto(b) for b in pb.new_bases))


def fold(base: Manifest | None, op: UpdateBases, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    added = with_new_ids(base.base_paths, op.new_bases)
    return replace(base, base_paths=base.base_paths + added)


KIND = Kind("update_bases", UpdateBases, encode, decode, fold, nothing)
