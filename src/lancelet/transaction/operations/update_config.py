"""UpdateConfig: changes to the dataset's config keys and to its schema, field and
table metadata, each a :class:`~lancelet.transaction.map_update.MapUpdate`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from lancelet._proto import transaction_pb2
from lancelet.errors import DatasetError
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema
from lancelet.table.schema_field import SchemaField
from lancelet.transaction import key_metadata
from lancelet.transaction.claims import nothing
from lancelet.transaction.map_update import MapUpdate
from lancelet.transaction.operations.folding import FoldContext, existing
from lancelet.transaction.operations.kind import Kind, Message


@dataclass(frozen=True)
class UpdateConfig:
    upsert_values: Mapping[str, str] = field(default_factory=dict)
    delete_keys: tuple[str, ...] = ()
    schema_metadata: MapUpdate | None = None
    # Per field id: changes to that field's metadata.
    field_metadata: Mapping[int, MapUpdate] = field(default_factory=dict)
    table_metadata: MapUpdate | None = None


# -- codec -----------------------------------------------------------------------------

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


def encode(op: UpdateConfig, pb: Message) -> None:
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


def decode(pb: Message, where: str) -> UpdateConfig:
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


# -- fold ------------------------------------------------------------------------------


def fold(base: Manifest | None, op: UpdateConfig, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    config = {k: v for k, v in base.config.items() if k not in op.delete_keys}
    config.update(op.upsert_values)
    schema = base.schema
    if op.schema_metadata is not None:
        schema = LanceSchema(schema.fields, _update_bytes_map(schema.metadata, op.schema_metadata))
    if op.field_metadata:
        unknown = set(op.field_metadata) - {f.id for f in schema.fields}
        if unknown:
            raise DatasetError(f"field metadata update for unknown field ids {sorted(unknown)}")
        key_metadata.check_update(schema.fields, op.field_metadata)
        fields = _with_field_metadata(schema.fields, op.field_metadata)
        schema = LanceSchema(key_metadata.rekeyed(fields, op.field_metadata), schema.metadata)
    table_metadata = base.table_metadata
    if op.table_metadata is not None:
        table_metadata = op.table_metadata.applied_to(table_metadata)
    return replace(base, config=config, schema=schema, table_metadata=table_metadata)


def _update_bytes_map(current: Mapping[str, bytes], update: MapUpdate) -> dict[str, bytes]:
    as_text = {k: v.decode("utf-8", "surrogateescape") for k, v in current.items()}
    return {k: v.encode("utf-8", "surrogateescape") for k, v in update.applied_to(as_text).items()}


def _with_field_metadata(
    fields: tuple[SchemaField, ...], updates: Mapping[int, MapUpdate]
) -> tuple[SchemaField, ...]:
    return tuple(
        replace(f, metadata=_update_bytes_map(f.metadata, updates[f.id])) if f.id in updates else f
        for f in fields
    )


KIND = Kind("update_config", UpdateConfig, encode, decode, fold, nothing)
