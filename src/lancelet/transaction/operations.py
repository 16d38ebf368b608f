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
from typing import Protocol, Union

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
    # Whether the new dataset gives rows stable ids; None keeps what the old one did.
    stable_row_ids: bool | None = None


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
class MapUpdate:
    """Changes to a string map: ``None`` as a value removes the key; ``replace``
    drops every key not named first."""

    entries: Mapping[str, str | None] = field(default_factory=dict)
    replace: bool = False

    def applied_to(self, current: Mapping[str, str]) -> dict[str, str]:
        out = {} if self.replace else dict(current)
        for key, value in self.entries.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = value
        return out


@dataclass(frozen=True)
class UpdateConfig:
    upsert_values: Mapping[str, str] = field(default_factory=dict)
    delete_keys: tuple[str, ...] = ()
    schema_metadata: MapUpdate | None = None
    # Per field id: changes to that field's metadata.
    field_metadata: Mapping[int, MapUpdate] = field(default_factory=dict)
    table_metadata: MapUpdate | None = None


class InsertedKeys(Protocol):
    """The keys an upsert inserted as new rows, checked against rows other writers
    added concurrently, so that two upserts of one new key cannot both insert it."""

    def found_in(self, fragments: tuple[Fragment, ...], schema: LanceSchema) -> bool: ...


@dataclass(frozen=True)
class Update:
    """Rows rewritten: old copies deleted in ``updated_fragments`` (or whole fragments
    removed) and the new values written as ``new_fragments`` (ids assigned at commit)."""

    removed_fragment_ids: tuple[int, ...]
    updated_fragments: tuple[Fragment, ...]
    new_fragments: tuple[Fragment, ...]
    fields_modified: tuple[int, ...] = ()
    fields_for_preserving_frag_bitmap: tuple[int, ...] = ()
    # Known only to the process that planned the upsert; never written to the file.
    inserted_keys: InsertedKeys | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class RewriteGroup:
    old_fragments: tuple[Fragment, ...]
    # Ids reserved beforehand with ReserveFragments.
    new_fragments: tuple[Fragment, ...]


@dataclass(frozen=True)
class Rewrite:
    """Compaction: each group's fragments replaced by new ones holding the same live rows."""

    groups: tuple[RewriteGroup, ...]

    def old_ids(self) -> set[int]:
        return {f.id for g in self.groups for f in g.old_fragments}


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
    Append,
    Overwrite,
    Delete,
    Restore,
    ReserveFragments,
    UpdateConfig,
    Project,
    Merge,
    Update,
    Rewrite,
    Foreign,
]


@dataclass(frozen=True)
class Transaction:
    read_version: int
    operation: Operation
    uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    tag: str = ""
    # The protobuf's ``transaction_properties``: free-form notes committed atomically
    # with the operation (a streaming sink records the batch it committed).
    properties: Mapping[str, str] = field(default_factory=dict, hash=False)


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
    elif isinstance(op, Update):
        _fill_update(pb.update, op)
    elif isinstance(op, Rewrite):
        for group in op.groups:
            g = pb.rewrite.groups.add()
            g.old_fragments.extend(f.to_proto() for f in group.old_fragments)
            g.new_fragments.extend(f.to_proto() for f in group.new_fragments)
    else:
        raise TypeError(f"lancelet cannot write a {op.name} transaction")


def encode_transaction(txn: Transaction) -> bytes:
    pb = _Pb(read_version=txn.read_version, uuid=txn.uuid, tag=txn.tag)
    pb.transaction_properties.update(txn.properties)
    _fill_operation(pb, txn.operation)
    return pb.SerializeToString()


def _fill_update(pb: transaction_pb2.Transaction.Update, op: Update) -> None:
    pb.removed_fragment_ids.extend(op.removed_fragment_ids)
    pb.updated_fragments.extend(f.to_proto() for f in op.updated_fragments)
    pb.new_fragments.extend(f.to_proto() for f in op.new_fragments)
    pb.fields_modified.extend(op.fields_modified)
    pb.fields_for_preserving_frag_bitmap.extend(op.fields_for_preserving_frag_bitmap)


_UpdateConfigPb = transaction_pb2.Transaction.UpdateConfig
_UpdateMapPb = transaction_pb2.Transaction.UpdateMap


def _fill_map(pb: _UpdateMapPb, update: MapUpdate) -> None:
    # An entry without a value deletes its key.
    pb.replace = update.replace
    for key, value in update.entries.items():
        if value is None:
            pb.update_entries.add(key=key)
        else:
            pb.update_entries.add(key=key, value=value)


def _read_map(pb: _UpdateMapPb) -> MapUpdate:
    entries = {e.key: (e.value if e.HasField("value") else None) for e in pb.update_entries}
    return MapUpdate(entries, pb.replace)


def _fill_update_config(pb: _UpdateConfigPb, op: UpdateConfig) -> None:
    # Current writers use the UpdateMap fields rather than the deprecated flat ones.
    changes: dict[str, str | None] = {**op.upsert_values, **{k: None for k in op.delete_keys}}
    if changes:
        _fill_map(pb.config_updates, MapUpdate(changes))
    if op.schema_metadata is not None:
        _fill_map(pb.schema_metadata_updates, op.schema_metadata)
    if op.table_metadata is not None:
        _fill_map(pb.table_metadata_updates, op.table_metadata)
    for field_id, update in op.field_metadata.items():
        _fill_map(pb.field_metadata_updates[field_id], update)


def _config_op(pb: _UpdateConfigPb) -> UpdateConfig:
    """Both the UpdateMap fields and the older flat ones (upsert_values, delete_keys)."""
    upserts = dict(pb.upsert_values)
    deletes = list(pb.delete_keys)
    for entry in pb.config_updates.update_entries:
        if entry.HasField("value"):
            upserts[entry.key] = entry.value
        else:
            deletes.append(entry.key)
    metadata = MapUpdate(dict(pb.schema_metadata), True) if pb.schema_metadata else None
    if pb.HasField("schema_metadata_updates"):
        metadata = _read_map(pb.schema_metadata_updates)
    fields = {int(k): _read_map(v) for k, v in pb.field_metadata_updates.items()}
    for field_id, legacy in pb.field_metadata.items():
        fields.setdefault(int(field_id), MapUpdate(dict(legacy.metadata)))
    table = _read_map(pb.table_metadata_updates) if pb.HasField("table_metadata_updates") else None
    return UpdateConfig(upserts, tuple(deletes), metadata, fields, table)


def _update(pb: transaction_pb2.Transaction.Update) -> Update:
    return Update(
        tuple(pb.removed_fragment_ids),
        _frags(pb.updated_fragments),
        _frags(pb.new_fragments),
        tuple(pb.fields_modified),
        tuple(pb.fields_for_preserving_frag_bitmap),
    )


def _rewrite(pb: transaction_pb2.Transaction.Rewrite) -> Rewrite:
    groups = [RewriteGroup(_frags(g.old_fragments), _frags(g.new_fragments)) for g in pb.groups]
    if pb.old_fragments:  # the deprecated single-group form
        groups.append(RewriteGroup(_frags(pb.old_fragments), _frags(pb.new_fragments)))
    return Rewrite(tuple(groups))


def _foreign(pb: _Pb, kind: str) -> Foreign:
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
    if kind == "update":
        return _update(pb.update)
    if kind == "rewrite":
        return _rewrite(pb.rewrite)
    return _foreign(pb, kind or "unknown")


def decode_transaction(data: bytes, path: str) -> Transaction:
    pb = _Pb()
    try:
        pb.ParseFromString(data)
    except DecodeError as exc:
        raise CorruptDatasetError(f"{path}: transaction does not parse: {exc}") from exc
    try:
        operation = _operation(pb)
    except (KeyError, ValueError) as exc:  # an enum value or a map key no writer uses
        raise CorruptDatasetError(f"{path}: transaction content is invalid: {exc!r}") from exc
    return Transaction(pb.read_version, operation, pb.uuid, pb.tag, dict(pb.transaction_properties))
