"""Fold a transaction into the manifest it was committed on top of.

``build_manifest(current, txn, ...)`` is a pure function: the new version's
manifest from the latest committed one and the operation.  Conflict checks
have already run; any rebasing has already been folded into ``txn``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace

from lancelet.errors import DatasetError, VersionNotFoundError
from lancelet.table import features
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest, WriterVersion
from lancelet.table.schema import LanceSchema
from lancelet.transaction.operations import (
    Append,
    Delete,
    Foreign,
    Merge,
    Operation,
    Overwrite,
    Project,
    ReserveFragments,
    Restore,
    Transaction,
    UpdateConfig,
)

ManifestLoader = Callable[[int], Manifest]


def _number(fragments: tuple[Fragment, ...], first_id: int) -> tuple[Fragment, ...]:
    return tuple(f.with_id(first_id + i) for i, f in enumerate(fragments))


def _max_id(current: int | None, fragments: tuple[Fragment, ...]) -> int | None:
    ids = [f.id for f in fragments]
    if current is not None:
        ids.append(current)
    return max(ids) if ids else None


def _append(base: Manifest, op: Append) -> Manifest:
    added = _number(op.fragments, base.next_fragment_id())
    return replace(
        base,
        fragments=base.fragments + added,
        max_fragment_id=_max_id(base.max_fragment_id, added),
    )


def _overwrite(base: Manifest | None, op: Overwrite, data_format: tuple[str, str]) -> Manifest:
    first = base.next_fragment_id() if base else 0
    fragments = _number(op.fragments, first)
    config = {**(base.config if base else {}), **op.config_upsert_values}
    previous_max = base.max_fragment_id if base else None
    return Manifest(
        schema=op.schema,
        fragments=fragments,
        version=0,
        max_fragment_id=_max_id(previous_max, fragments),
        data_format=base.data_format if base else data_format,
        config=config,
        table_metadata=base.table_metadata if base else {},
    )


def _delete(base: Manifest, op: Delete) -> Manifest:
    updated = {f.id: f for f in op.updated_fragments}
    removed = set(op.deleted_fragment_ids)
    fragments = tuple(updated.get(f.id, f) for f in base.fragments if f.id not in removed)
    return replace(base, fragments=fragments)


def _update_config(base: Manifest, op: UpdateConfig) -> Manifest:
    config = {k: v for k, v in base.config.items() if k not in op.delete_keys}
    config.update(op.upsert_values)
    schema = base.schema
    if op.schema_metadata is not None:
        metadata: Mapping[str, bytes] = {k: v.encode() for k, v in op.schema_metadata.items()}
        schema = LanceSchema(schema.fields, metadata)
    return replace(base, config=config, schema=schema)


def _restore(base: Manifest, op: Restore, load: ManifestLoader) -> Manifest:
    try:
        old = load(op.version)
    except VersionNotFoundError as exc:
        raise VersionNotFoundError(f"cannot restore: {exc}") from exc
    # Fragment ids handed out since must stay reserved.
    return replace(old, max_fragment_id=_max_id(base.max_fragment_id, old.fragments))


def _project(base: Manifest, op: Project) -> Manifest:
    # Metadata only: data files keep their field ids; ones the schema drops go unread.
    schema = LanceSchema(op.schema.fields, op.schema.metadata or base.schema.metadata)
    return replace(base, schema=schema)


def _merge(base: Manifest, op: Merge) -> Manifest:
    return replace(base, fragments=op.fragments, schema=op.schema)


def _reserve(base: Manifest, op: ReserveFragments) -> Manifest:
    return replace(base, max_fragment_id=base.next_fragment_id() + op.num_fragments - 1)


def _apply(
    base: Manifest | None, op: Operation, load: ManifestLoader, data_format: tuple[str, str]
) -> Manifest:
    if isinstance(op, Overwrite):
        return _overwrite(base, op, data_format)
    if base is None:
        raise DatasetError(f"a {type(op).__name__} needs an existing dataset")
    if isinstance(op, Append):
        return _append(base, op)
    if isinstance(op, Delete):
        return _delete(base, op)
    if isinstance(op, UpdateConfig):
        return _update_config(base, op)
    if isinstance(op, Restore):
        return _restore(base, op, load)
    if isinstance(op, ReserveFragments):
        return _reserve(base, op)
    if isinstance(op, Project):
        return _project(base, op)
    if isinstance(op, Merge):
        return _merge(base, op)
    assert isinstance(op, Foreign)
    raise DatasetError(f"lancelet cannot commit a {op.name} operation")


def build_manifest(
    base: Manifest | None,
    txn: Transaction,
    *,
    transaction_file: str,
    load: ManifestLoader,
    data_format: tuple[str, str] = ("lance", "2.0"),
) -> Manifest:
    """The manifest of version ``base.version + 1`` (or 1 for a new dataset)."""
    derived = _apply(base, txn.operation, load, data_format)
    reader, writer = features.flags_for(
        any(f.deletion_file is not None for f in derived.fragments), derived.config
    )
    return replace(
        derived,
        version=(base.version if base else 0) + 1,
        timestamp_ns=time.time_ns(),
        writer_version=WriterVersion(),
        tag="",
        reader_feature_flags=reader,
        writer_feature_flags=writer,
        transaction_file=transaction_file,
    )
