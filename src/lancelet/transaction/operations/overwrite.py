"""Overwrite: a new dataset (or a new content for an existing one): its fragments,
schema, config values, and whether its rows keep stable ids."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lancelet.errors import DatasetError
from lancelet.table.base_paths import BasePath
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest, data_file_format
from lancelet.table.schema import LanceSchema
from lancelet.transaction.claims import anything
from lancelet.transaction.operations.folding import FoldContext, max_id, numbered
from lancelet.transaction.operations.kind import (
    Description,
    Kind,
    Message,
    decode_fragments,
    decode_schema,
    encode_fragments,
    encode_schema,
    row_count,
)


@dataclass(frozen=True)
class Overwrite:
    fragments: tuple[Fragment, ...]
    schema: LanceSchema
    config_upsert_values: Mapping[str, str] = field(default_factory=dict)
    # Whether the new dataset gives rows stable ids; None keeps what the old one did.
    stable_row_ids: bool | None = None
    # Base paths a new dataset registers (with their ids), besides those it keeps.
    initial_bases: tuple[BasePath, ...] = ()


def encode(op: Overwrite, pb: Message) -> None:
    pb.fragments.extend(encode_fragments(op.fragments))
    encode_schema(op.schema, pb)
    pb.config_upsert_values.update(op.config_upsert_values)
    pb.initial_bases.extend(b.to_proto() for b in op.initial_bases)


def decode(pb: Message, where: str) -> Overwrite:
    bases = tuple(BasePath.from_proto(b) for b in pb.initial_bases)
    return Overwrite(
        decode_fragments(pb.fragments),
        decode_schema(pb),
        dict(pb.config_upsert_values),
        initial_bases=bases,
    )


def fold(base: Manifest | None, op: Overwrite, ctx: FoldContext) -> Manifest:
    first = base.next_fragment_id() if base else 0
    fragments = numbered(op.fragments, first)
    config = {**(base.config if base else {}), **op.config_upsert_values}
    previous_max = base.max_fragment_id if base else None
    return Manifest(
        schema=op.schema,
        fragments=fragments,
        version=0,
        max_fragment_id=max_id(previous_max, fragments),
        data_format=_files_format(op.fragments, base.data_format if base else ctx.data_format),
        config=config,
        table_metadata=base.table_metadata if base else {},
        base_paths=_kept_bases(base, op.initial_bases),
    )


def _files_format(fragments: tuple[Fragment, ...], fallback: tuple[str, str]) -> tuple[str, str]:
    """The data storage format the fragments' files are written in.  Readers refuse a
    manifest whose format differs from its files', so an overwrite must not inherit
    the old one; without files (or with mixed ones) nothing better is known."""
    versions = {
        data_file_format(d.file_major_version, d.file_minor_version)
        for f in fragments
        for d in f.files
    }
    if len(versions) != 1 or None in versions:
        return fallback
    ((name),) = versions
    assert name is not None
    return ("lance", name)


def _kept_bases(base: Manifest | None, initial: tuple[BasePath, ...]) -> tuple[BasePath, ...]:
    """An overwrite keeps the bases registered so far (their files may still be read
    by older versions) and adds those a new dataset registers."""
    kept = base.base_paths if base else ()
    taken = {b.id for b in kept}
    clash = next((b for b in initial if b.id in taken or b.id <= 0), None)
    if clash is not None:
        raise DatasetError(f"base path id {clash.id} ({clash.path}) is invalid or already used")
    return kept + initial


def describe(op: Overwrite) -> Description:
    return Description(
        {"mode": "Overwrite"},
        {"numAddedFragments": str(len(op.fragments)), "numOutputRows": row_count(op.fragments)},
    )


KIND = Kind("overwrite", Overwrite, encode, decode, fold, anything, describe)
