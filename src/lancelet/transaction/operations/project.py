"""Project: a new schema over the same data files (dropped, renamed or relaxed
columns); files left holding no field of it are unlisted."""

from __future__ import annotations

from dataclasses import dataclass, replace

from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema
from lancelet.transaction.claims import Claims
from lancelet.transaction.operations.folding import (
    FoldContext,
    existing,
    relevant_indices,
    with_current_metadata,
)
from lancelet.transaction.operations.kind import Kind, Message


@dataclass(frozen=True)
class Project:
    schema: LanceSchema
    # As Merge's: no column admitting nulls now refuses them; recorded, never relied on.
    preserves_nullability: bool = False


def encode(op: Project, pb: Message) -> None:
    # The message has no schema metadata: a projection keeps the dataset's.
    pb.schema.extend(op.schema.proto_fields())
    pb.preserves_nullability = op.preserves_nullability


def decode(pb: Message, where: str) -> Project:
    return Project(LanceSchema.from_proto(pb.schema), pb.preserves_nullability)


def fold(base: Manifest | None, op: Project, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    # No data is rewritten: files keep their field ids, and ids the schema drops go
    # unread; only files left holding no field at all are unlisted.
    schema = with_current_metadata(op.schema, base.schema)
    ids = {f.id for f in schema.fields}
    fragments = tuple(_without_unread_files(f, ids) for f in base.fragments)
    indices = relevant_indices(base.indices, schema)
    return replace(base, schema=schema, fragments=fragments, indices=indices)


def _without_unread_files(fragment: Fragment, field_ids: set[int]) -> Fragment:
    """A fragment no longer listing files that hold no field of the schema, as the
    reference does (so that cleanup can remove them); at least one file stays, as the
    fragment's row count is read from its files."""
    kept = tuple(d for d in fragment.files if field_ids.intersection(d.fields))
    if len(kept) == len(fragment.files) or not kept:
        return fragment
    return replace(fragment, files=kept)


def claims(op: Project) -> Claims:
    return Claims(frozenset(), only_files_dropped=True, changes_fields=True)


KIND = Kind("project", Project, encode, decode, fold, claims)
