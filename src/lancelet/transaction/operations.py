"""Transactions and their operations, as immutable values, and each operation's
protobuf codec.

Each operation says what a commit changes relative to the version it read.  The
manifest of the new version is derived from them in :mod:`.apply`, and the
conflict rules in :mod:`.conflicts` compare them pairwise; :mod:`.registry` ties
each kind to its codec, fold and claims.  Operations that lancelet cannot yet
perform but may meet in another writer's transaction file are kept as
:class:`Foreign`, with just enough detail to judge conflicts.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, Union

from pyroaring import FrozenBitMap

from lancelet._proto import table_pb2, transaction_pb2
from lancelet.errors import CorruptDatasetError
from lancelet.table.base_paths import BasePath
from lancelet.table.fragment import DataFile, Fragment
from lancelet.table.index import IndexDetails, IndexFile, IndexMetadata
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
    # Base paths a new dataset registers (with their ids), besides those it keeps.
    initial_bases: tuple[BasePath, ...] = ()


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


@dataclass(frozen=True)
class UpdateBases:
    """Register base paths; their ids are assigned when the commit is folded."""

    new_bases: tuple[BasePath, ...]


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
class RewrittenIndex:
    """An index segment compaction rewrote for the moved rows: ``new_id``'s files
    replace ``old_id``'s, with the given details, index version and files."""

    old_id: uuid.UUID
    new_id: uuid.UUID
    details: IndexDetails | None = None
    index_version: int = 0
    files: tuple[IndexFile, ...] = ()
    # The fragments ``old_id`` held before the rewrite, when the Fragment Reuse
    # Index carried them (the new segment no longer needs it); None: its bitmap.
    # Known only to the committing process, like pylance's.
    coverage: FrozenBitMap | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Rewrite:
    """Compaction: each group's fragments replaced by new ones holding the same live
    rows; ``rewritten_indices`` were remapped to the new rows in the same commit.

    A ``deferred`` rewrite leaves the segments the Fragment Reuse Index maps as they
    were; ``frag_reuse_index`` (with a new reuse version) then replaces the one
    whose uuid is ``frag_reuse_base``.  Like pylance, the transaction file records
    neither: only the committing process needs them.
    """

    groups: tuple[RewriteGroup, ...]
    rewritten_indices: tuple[RewrittenIndex, ...] = ()
    deferred: bool = field(default=False, compare=False)
    frag_reuse_index: IndexMetadata | None = field(default=None, compare=False, repr=False)
    frag_reuse_base: uuid.UUID | None = field(default=None, compare=False)

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
class CreateIndex:
    """Indices added, replaced or dropped: ``new_indices`` join the others (a replaced
    index lists its old segments among ``removed_indices``), which are dropped by uuid
    (their files stay until cleanup)."""

    new_indices: tuple[IndexMetadata, ...] = ()
    removed_indices: tuple[IndexMetadata, ...] = ()

    def names(self) -> set[str]:
        """The names of the indices it adds, replaces or drops."""
        return {i.name for i in (*self.new_indices, *self.removed_indices)}


@dataclass(frozen=True)
class DataReplacement:
    """Data files swapped in place: each ``(fragment id, file)`` replaces the fragment's
    file holding exactly the same fields (same rows, new values)."""

    replacements: tuple[tuple[int, DataFile], ...]

    def fragment_ids(self) -> set[int]:
        return {fragment_id for fragment_id, _ in self.replacements}

    def field_ids(self) -> set[int]:
        return {field for _, data_file in self.replacements for field in data_file.fields}


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
    UpdateBases,
    Project,
    Merge,
    Update,
    Rewrite,
    CreateIndex,
    DataReplacement,
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


# -- protobuf codecs, one pair per kind (tied to the kinds in :mod:`.registry`) -------
#
# An encoder fills the operation's message inside ``Transaction.operation`` (the
# oneof field named by its kind); a decoder reads it back.  ``where`` names the
# transaction file in errors.

_TxnPb = transaction_pb2.Transaction
# A oneof's message: each kind has its own class, all of them protobuf messages.
Message = Any


def _frags(pbs: Any) -> tuple[Fragment, ...]:
    return tuple(Fragment.from_proto(f) for f in pbs)


def _schema(pb: Any) -> LanceSchema:
    return LanceSchema.from_proto(pb.schema, pb.schema_metadata)


def encode_append(op: Append, pb: Message) -> None:
    pb.fragments.extend(f.to_proto() for f in op.fragments)


def decode_append(pb: Message, where: str) -> Append:
    return Append(_frags(pb.fragments))


def encode_overwrite(op: Overwrite, pb: Message) -> None:
    pb.fragments.extend(f.to_proto() for f in op.fragments)
    pb.schema.extend(op.schema.proto_fields())
    pb.schema_metadata.update(op.schema.metadata)
    pb.config_upsert_values.update(op.config_upsert_values)
    pb.initial_bases.extend(b.to_proto() for b in op.initial_bases)


def decode_overwrite(pb: Message, where: str) -> Overwrite:
    bases = tuple(BasePath.from_proto(b) for b in pb.initial_bases)
    return Overwrite(
        _frags(pb.fragments), _schema(pb), dict(pb.config_upsert_values), initial_bases=bases
    )


def encode_update_bases(op: UpdateBases, pb: Message) -> None:
    for base in op.new_bases:
        new = pb.new_bases.add(path=base.path, is_dataset_root=base.is_dataset_root)
        if base.name is not None:
            new.name = base.name


def decode_update_bases(pb: Message, where: str) -> UpdateBases:
    return UpdateBases(tuple(BasePath.from_proto(b) for b in pb.new_bases))


def encode_delete(op: Delete, pb: Message) -> None:
    pb.updated_fragments.extend(f.to_proto() for f in op.updated_fragments)
    pb.deleted_fragment_ids.extend(op.deleted_fragment_ids)
    pb.predicate = op.predicate


def decode_delete(pb: Message, where: str) -> Delete:
    return Delete(_frags(pb.updated_fragments), tuple(pb.deleted_fragment_ids), pb.predicate)


def encode_restore(op: Restore, pb: Message) -> None:
    pb.version = op.version


def decode_restore(pb: Message, where: str) -> Restore:
    return Restore(pb.version)


def encode_reserve(op: ReserveFragments, pb: Message) -> None:
    pb.num_fragments = op.num_fragments


def decode_reserve(pb: Message, where: str) -> ReserveFragments:
    return ReserveFragments(pb.num_fragments)


def encode_project(op: Project, pb: Message) -> None:
    pb.schema.extend(op.schema.proto_fields())


def decode_project(pb: Message, where: str) -> Project:
    return Project(LanceSchema.from_proto(pb.schema))


def encode_merge(op: Merge, pb: Message) -> None:
    pb.fragments.extend(f.to_proto() for f in op.fragments)
    pb.schema.extend(op.schema.proto_fields())
    pb.schema_metadata.update(op.schema.metadata)


def decode_merge(pb: Message, where: str) -> Merge:
    return Merge(_frags(pb.fragments), _schema(pb))


def encode_update(op: Update, pb: Message) -> None:
    pb.removed_fragment_ids.extend(op.removed_fragment_ids)
    pb.updated_fragments.extend(f.to_proto() for f in op.updated_fragments)
    pb.new_fragments.extend(f.to_proto() for f in op.new_fragments)
    pb.fields_modified.extend(op.fields_modified)
    pb.fields_for_preserving_frag_bitmap.extend(op.fields_for_preserving_frag_bitmap)


def decode_update(pb: Message, where: str) -> Update:
    return Update(
        tuple(pb.removed_fragment_ids),
        _frags(pb.updated_fragments),
        _frags(pb.new_fragments),
        tuple(pb.fields_modified),
        tuple(pb.fields_for_preserving_frag_bitmap),
    )


def encode_rewrite(op: Rewrite, pb: Message) -> None:
    for group in op.groups:
        g = pb.groups.add()
        g.old_fragments.extend(f.to_proto() for f in group.old_fragments)
        g.new_fragments.extend(f.to_proto() for f in group.new_fragments)
    for index in op.rewritten_indices:
        r = pb.rewritten_indices.add(new_index_version=index.index_version)
        r.old_id.uuid = index.old_id.bytes
        r.new_id.uuid = index.new_id.bytes
        if index.details is not None:
            r.new_index_details.type_url = index.details.type_url
            r.new_index_details.value = index.details.value
        r.new_index_files.extend(
            table_pb2.IndexFile(path=f.path, size_bytes=f.size_bytes) for f in index.files
        )


def decode_rewrite(pb: Message, where: str) -> Rewrite:
    groups = [RewriteGroup(_frags(g.old_fragments), _frags(g.new_fragments)) for g in pb.groups]
    if pb.old_fragments:  # the deprecated single-group form
        groups.append(RewriteGroup(_frags(pb.old_fragments), _frags(pb.new_fragments)))
    return Rewrite(tuple(groups), tuple(_rewritten_index(r, where) for r in pb.rewritten_indices))


def _rewritten_index(pb: Message, where: str) -> RewrittenIndex:
    for name in ("old_id", "new_id"):
        if len(getattr(pb, name).uuid) != 16:
            raise CorruptDatasetError(f"{where}: a rewritten index's {name} is not 16 bytes")
    details = None
    if pb.HasField("new_index_details"):
        details = IndexDetails(pb.new_index_details.type_url, pb.new_index_details.value)
    return RewrittenIndex(
        uuid.UUID(bytes=pb.old_id.uuid),
        uuid.UUID(bytes=pb.new_id.uuid),
        details,
        pb.new_index_version,
        tuple(IndexFile(f.path, f.size_bytes) for f in pb.new_index_files),
    )


def encode_create_index(op: CreateIndex, pb: Message) -> None:
    pb.new_indices.extend(i.to_proto() for i in op.new_indices)
    pb.removed_indices.extend(i.to_proto() for i in op.removed_indices)


def decode_create_index(pb: Message, where: str) -> CreateIndex:
    return CreateIndex(
        tuple(IndexMetadata.from_proto(i, where) for i in pb.new_indices),
        tuple(IndexMetadata.from_proto(i, where) for i in pb.removed_indices),
    )


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


def encode_update_config(op: UpdateConfig, pb: Message) -> None:
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


def decode_update_config(pb: Message, where: str) -> UpdateConfig:
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


def encode_data_replacement(op: DataReplacement, pb: Message) -> None:
    for fragment_id, new_file in op.replacements:
        pb.replacements.add(fragment_id=fragment_id, new_file=new_file.to_proto())


def decode_data_replacement(pb: Message, where: str) -> DataReplacement:
    return DataReplacement(
        tuple((r.fragment_id, DataFile.from_proto(r.new_file)) for r in pb.replacements)
    )


def decode_foreign(pb: _TxnPb, kind: str) -> Foreign:
    """An operation lancelet does not perform, with the fragments it may have changed."""
    if kind == "update_mem_wal_state":
        return Foreign(kind, frozenset())
    return Foreign(kind, None)


def __getattr__(name: str) -> Any:
    # Whole transactions are encoded through the registry, which imports this module.
    if name in ("encode_transaction", "decode_transaction"):
        from lancelet.transaction import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
