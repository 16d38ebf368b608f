"""Transactions and their operations, as immutable values.

Each operation says what a commit changes relative to the version it read.  The
manifest of the new version is derived from them in :mod:`.apply`, and the
conflict rules in :mod:`.conflicts` compare them pairwise.  Operations that
lancelet cannot yet perform but may meet in another writer's transaction file
are kept as :class:`Foreign`, with just enough detail to judge conflicts.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Union

from google.protobuf.message import DecodeError

from lancelet._proto import transaction_pb2
from lancelet.errors import CorruptDatasetError
from lancelet.table.fragment import Fragment
from lancelet.table.schema import LanceSchema

_Pb = transaction_pb2.Transaction


@dataclass(frozen=True)
class Append:
    fragments: tuple[Fragment, ...]


@dataclass(frozen=True)
class Overwrite:
    fragments: tuple[Fragment, ...]
    schema: LanceSchema
    config_upsert_values: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Delete:
    updated_fragments: tuple[Fragment, ...]
    deleted_fragment_ids: tuple[int, ...]
    predicate: str = ""


@dataclass(frozen=True)
class Restore:
    version: int


@dataclass(frozen=True)
class ReserveFragments:
    num_fragments: int


@dataclass(frozen=True)
class UpdateConfig:
    upsert_values: Mapping[str, str] = field(default_factory=dict)
    delete_keys: tuple[str, ...] = ()
    # None leaves schema metadata alone; a mapping replaces it.
    schema_metadata: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Project:
    """A new schema over the same data files: dropped, renamed or relaxed columns."""

    schema: LanceSchema


@dataclass(frozen=True)
class Merge:
    """New columns: every fragment, now with extra data files, under a new schema."""

    fragments: tuple[Fragment, ...]
    schema: LanceSchema


@dataclass(frozen=True)
class Foreign:
    """An operation written by another implementation that lancelet does not perform.

    ``touched`` holds the fragment ids it rewrote or removed, ``None`` meaning
    "possibly all of them".
    """

    name: str
    touched: frozenset[int] | None


Operation = Union[  # noqa: UP007 - a runtime alias
    Append, Overwrite, Delete, Restore, ReserveFragments, UpdateConfig, Project, Merge, Foreign
]


@dataclass(frozen=True)
class Transaction:
    read_version: int
    operation: Operation
    uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    tag: str = ""


# -- protobuf conversion ------------------------------------------------------------


def _frags(pbs: object) -> tuple[Fragment, ...]:
    return tuple(Fragment.from_proto(f) for f in pbs)  # type: ignore[attr-defined]


def _fill_operation(pb: _Pb, op: Operation) -> None:
    if isinstance(op, Append):
        pb.append.fragments.extend(f.to_proto() for f in op.fragments)
    elif isinstance(op, Overwrite):
        pb.overwrite.fragments.extend(f.to_proto() for f in op.fragments)
        pb.overwrite.schema.extend(op.schema.fields)
        pb.overwrite.schema_metadata.update(op.schema.metadata)
        pb.overwrite.config_upsert_values.update(op.config_upsert_values)
    elif isinstance(op, Delete):
        pb.delete.updated_fragments.extend(f.to_proto() for f in op.updated_fragments)
        pb.delete.deleted_fragment_ids.extend(op.deleted_fragment_ids)
        pb.delete.predicate = op.predicate
    elif isinstance(op, Restore):
        pb.restore.version = op.version
    elif isinstance(op, ReserveFragments):
        pb.reserve_fragments.num_fragments = op.num_fragments
    elif isinstance(op, UpdateConfig):
        _fill_update_config(pb.update_config, op)
    elif isinstance(op, Project):
        pb.project.schema.extend(op.schema.fields)
    elif isinstance(op, Merge):
        pb.merge.fragments.extend(f.to_proto() for f in op.fragments)
        pb.merge.schema.extend(op.schema.fields)
        pb.merge.schema_metadata.update(op.schema.metadata)
    else:
        raise TypeError(f"lancelet cannot write a {op.name} transaction")


def encode_transaction(txn: Transaction) -> bytes:
    pb = _Pb(read_version=txn.read_version, uuid=txn.uuid, tag=txn.tag)
    _fill_operation(pb, txn.operation)
    return pb.SerializeToString()


_UpdateConfigPb = transaction_pb2.Transaction.UpdateConfig


def _fill_update_config(pb: _UpdateConfigPb, op: UpdateConfig) -> None:
    # Current writers use the UpdateMap fields: an entry without a value deletes its key.
    entries = pb.config_updates.update_entries
    for key, value in op.upsert_values.items():
        entries.add(key=key, value=value)
    for key in op.delete_keys:
        entries.add(key=key)
    if op.schema_metadata is not None:
        pb.schema_metadata_updates.replace = True
        for key, value in op.schema_metadata.items():
            pb.schema_metadata_updates.update_entries.add(key=key, value=value)


def _config_op(pb: _UpdateConfigPb) -> UpdateConfig:
    """Both the UpdateMap fields and the older flat ones (upsert_values, delete_keys)."""
    upserts = dict(pb.upsert_values)
    deletes = list(pb.delete_keys)
    for entry in pb.config_updates.update_entries:
        if entry.HasField("value"):
            upserts[entry.key] = entry.value
        else:
            deletes.append(entry.key)
    metadata: dict[str, str] | None = dict(pb.schema_metadata) if pb.schema_metadata else None
    if pb.HasField("schema_metadata_updates"):
        updates = pb.schema_metadata_updates
        metadata = {} if metadata is None else metadata
        metadata.update({e.key: e.value for e in updates.update_entries if e.HasField("value")})
    return UpdateConfig(upserts, tuple(deletes), metadata)


def _foreign(pb: _Pb, kind: str) -> Foreign:
    if kind == "rewrite":
        old = [f.id for f in pb.rewrite.old_fragments]
        old += [f.id for g in pb.rewrite.groups for f in g.old_fragments]
        return Foreign(kind, frozenset(old))
    if kind == "update":
        ids = list(pb.update.removed_fragment_ids) + [f.id for f in pb.update.updated_fragments]
        return Foreign(kind, frozenset(ids))
    if kind == "data_replacement":
        return Foreign(kind, frozenset(r.fragment_id for r in pb.data_replacement.replacements))
    if kind in ("create_index", "update_mem_wal_state"):
        return Foreign(kind, frozenset())
    return Foreign(kind, None)


def _operation(pb: _Pb) -> Operation:
    kind = pb.WhichOneof("operation")
    if kind == "append":
        return Append(_frags(pb.append.fragments))
    if kind == "overwrite":
        o = pb.overwrite
        schema = LanceSchema(tuple(o.schema), dict(o.schema_metadata))
        return Overwrite(_frags(o.fragments), schema, dict(o.config_upsert_values))
    if kind == "delete":
        d = pb.delete
        return Delete(_frags(d.updated_fragments), tuple(d.deleted_fragment_ids), d.predicate)
    if kind == "restore":
        return Restore(pb.restore.version)
    if kind == "reserve_fragments":
        return ReserveFragments(pb.reserve_fragments.num_fragments)
    if kind == "update_config":
        return _config_op(pb.update_config)
    if kind == "project":
        return Project(LanceSchema(tuple(pb.project.schema)))
    if kind == "merge":
        m = pb.merge
        return Merge(_frags(m.fragments), LanceSchema(tuple(m.schema), dict(m.schema_metadata)))
    return _foreign(pb, kind or "unknown")


def decode_transaction(data: bytes, path: str) -> Transaction:
    pb = _Pb()
    try:
        pb.ParseFromString(data)
    except DecodeError as exc:
        raise CorruptDatasetError(f"{path}: transaction does not parse: {exc}") from exc
    return Transaction(pb.read_version, _operation(pb), pb.uuid, pb.tag)
