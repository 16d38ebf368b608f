"""CreateIndex: indices added, replaced or dropped.  ``new_indices`` join the others
(a replaced index lists its old segments among ``removed_indices``), which are
dropped by uuid (their files stay until cleanup)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from lancelet.errors import DatasetError
from lancelet.table.index import IndexMetadata
from lancelet.table.manifest import Manifest
from lancelet.transaction.claims import nothing
from lancelet.transaction.operations.folding import FoldContext, existing
from lancelet.transaction.operations.kind import Kind, Message


@dataclass(frozen=True)
class CreateIndex:
    new_indices: tuple[IndexMetadata, ...] = ()
    removed_indices: tuple[IndexMetadata, ...] = ()

    def names(self) -> set[str]:
        """The names of the indices it adds, replaces or drops."""
        return {i.name for i in (*self.new_indices, *self.removed_indices)}


def encode(op: CreateIndex, pb: Message) -> None:
    pb.new_indices.extend(i.to_proto() for i in op.new_indices)
    pb.removed_indices.extend(i.to_proto() for i in op.removed_indices)


def decode(pb: Message, where: str) -> CreateIndex:
    return CreateIndex(
        tuple(IndexMetadata.from_proto(i, where) for i in pb.new_indices),
        tuple(IndexMetadata.from_proto(i, where) for i in pb.removed_indices),
    )


def fold(base: Manifest | None, op: CreateIndex, ctx: FoldContext) -> Manifest:
    """New indices join the others, as in pylance 14 (a new segment of an index keeps
    its other segments); removed ones go by uuid, and one already gone (dropped
    concurrently) is no error."""
    base = existing(base, op)
    fields = {f for i in op.new_indices for f in i.fields}
    missing = sorted(fields - {f.id for f in base.schema.fields})
    if missing:
        raise DatasetError(
            f"cannot add an index on field ids {missing}: version {base.version} has no such field"
        )
    removed = {i.uuid for i in (*op.removed_indices, *op.new_indices)}
    kept = tuple(i for i in base.indices if i.uuid not in removed)
    return replace(base, indices=kept + op.new_indices)


KIND = Kind("create_index", CreateIndex, encode, decode, fold, nothing)
