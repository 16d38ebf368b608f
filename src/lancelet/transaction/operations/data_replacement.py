"""DataReplacement: data files swapped in place.  Each ``(fragment id, file)``
replaces the fragment's file holding exactly the same fields (same rows, new
values); indices over a replaced column stop claiming the replaced fragments."""

from __future__ import annotations

from dataclasses import dataclass, replace

from lancelet.errors import ArgumentError
from lancelet.table.fragment import DataFile, Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.claims import Claims
from lancelet.transaction.operations.folding import FoldContext, existing, uncover
from lancelet.transaction.operations.kind import Kind, Message


@dataclass(frozen=True)
class DataReplacement:
    replacements: tuple[tuple[int, DataFile], ...]

    def fragment_ids(self) -> set[int]:
        return {fragment_id for fragment_id, _ in self.replacements}

    def field_ids(self) -> set[int]:
        return {field for _, data_file in self.replacements for field in data_file.fields}


def encode(op: DataReplacement, pb: Message) -> None:
    for fragment_id, new_file in op.replacements:
        pb.replacements.add(fragment_id=fragment_id, new_file=new_file.to_proto())


def decode(pb: Message, where: str) -> DataReplacement:
    return DataReplacement(
        tuple((r.fragment_id, DataFile.from_proto(r.new_file)) for r in pb.replacements)
    )


def fold(base: Manifest | None, op: DataReplacement, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    by_id = {f.id: f for f in base.fragments}
    replaced: dict[int, Fragment] = {}
    for fragment_id, new_file in op.replacements:
        fragment = replaced.get(fragment_id, by_id.get(fragment_id))
        if fragment is None:
            raise ArgumentError(f"DataReplacement: fragment {fragment_id} does not exist")
        old = [d for d in fragment.files if d.fields == new_file.fields]
        if not old:
            raise ArgumentError(
                f"DataReplacement: fragment {fragment_id} has no data file holding exactly "
                f"fields {list(new_file.fields)}; a replacement must match an existing file"
            )
        files = tuple(new_file if d is old[0] else d for d in fragment.files)
        replaced[fragment_id] = replace(fragment, files=files)
    # An index over a replaced column holds the old values of the replaced fragments.
    indices = uncover(base.indices, set(replaced), op.field_ids())
    fragments = tuple(replaced.get(f.id, f) for f in base.fragments)
    return replace(base, fragments=fragments, indices=indices)


def claims(op: DataReplacement) -> Claims:
    return Claims(frozenset(op.fragment_ids()))


KIND = Kind("data_replacement", DataReplacement, encode, decode, fold, claims)
