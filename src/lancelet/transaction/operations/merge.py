"""Merge: new columns.  Every fragment, now with extra data files, under a new schema
(and possibly new fragments, bringing new rows along with the columns)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema
from lancelet.transaction.claims import Claims, files_of
from lancelet.transaction.operations.folding import (
    FoldContext,
    existing,
    max_id,
    relevant_indices,
    with_current_metadata,
)
from lancelet.transaction.operations.kind import (
    Kind,
    Message,
    decode_fragments,
    decode_schema,
    encode_fragments,
    encode_schema,
)


@dataclass(frozen=True)
class Merge:
    fragments: tuple[Fragment, ...]
    schema: LanceSchema
    # The writer's word that no column admitting nulls now refuses them (pylance's
    # schema changes say so); recorded and shown, never relied on.
    preserves_nullability: bool = False


def encode(op: Merge, pb: Message) -> None:
    pb.fragments.extend(encode_fragments(op.fragments))
    encode_schema(op.schema, pb)
    pb.preserves_nullability = op.preserves_nullability


def decode(pb: Message, where: str) -> Merge:
    return Merge(decode_fragments(pb.fragments), decode_schema(pb), pb.preserves_nullability)


def fold(base: Manifest | None, op: Merge, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    schema = with_current_metadata(op.schema, base.schema)
    # New columns bring the schema metadata keys of their data, as in pylance.
    brought = {k: v for k, v in op.schema.metadata.items() if k not in schema.metadata}
    if brought:
        schema = LanceSchema(schema.fields, {**brought, **schema.metadata})
    indices = relevant_indices(base.indices, schema)
    return replace(
        base,
        fragments=op.fragments,
        schema=schema,
        indices=indices,
        max_fragment_id=max_id(base.max_fragment_id, op.fragments),
    )


def claims(op: Merge) -> Claims:
    return Claims(frozenset(), files_of(op.fragments), only_files_added=True, changes_fields=True)


KIND = Kind("merge", Merge, encode, decode, fold, claims)
