"""One field of a dataset schema, as an immutable value.

A manifest stores its schema as ``lance.file.Field`` protobuf messages; a
:class:`~lancelet.table.schema.LanceSchema` holds :class:`SchemaField` values
instead, which cannot be changed under the frozen manifest that holds them (a new
field is made with ``dataclasses.replace``), hash, and pickle.  They are converted
from and to protobuf only where a schema is decoded or encoded (the manifest and
transaction codecs, and the file layer's schema conversion).

Fields that a newer writer sets and this build's ``file.proto`` does not name (pylance
14's clustering-key position, field 15, say) are kept as their wire bytes and written
back unchanged, so a read-modify-write commit keeps them byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

from google.protobuf import unknown_fields

from lancelet._proto import file_pb2

Encoding: TypeAlias = file_pb2.Encoding.ValueType
FieldType: TypeAlias = file_pb2.Field.Type.ValueType


class FrozenMetadata(Mapping[str, bytes]):
    """A field's metadata: an immutable, hashable, picklable ``str -> bytes`` map,
    equal to any mapping with the same items."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, bytes] | Iterable[tuple[str, bytes]] = ()) -> None:
        self._items: dict[str, bytes] = dict(items)

    def __getitem__(self, key: str) -> bytes:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __repr__(self) -> str:
        return f"FrozenMetadata({self._items!r})"

    def __reduce__(self) -> tuple[Any, tuple[dict[str, bytes]]]:
        return (FrozenMetadata, (self._items,))


@dataclass(frozen=True)
class DictionaryPosition:
    """Where a legacy (0.1) file or manifest keeps a dictionary column's values."""

    offset: int
    length: int


@dataclass(frozen=True)
class SchemaField:
    """A Lance field: its name, stable id, parent's id (-1 at the top level), logical
    type and nullability, metadata, the legacy encoding hint and dictionary position,
    the extension it stores, and its place in the unenforced primary key."""

    name: str
    id: int
    parent_id: int
    logical_type: str
    nullable: bool = True
    metadata: Mapping[str, bytes] = field(default_factory=FrozenMetadata)
    encoding: Encoding = file_pb2.NONE
    dictionary: DictionaryPosition | None = None
    extension_name: str = ""
    unenforced_primary_key: bool = False
    # Its place in a composite key, from 1; 0: none given.
    unenforced_primary_key_position: int = 0
    # The protobuf's ``type`` (PARENT, REPEATED, LEAF), which readers do not use.
    type: FieldType = file_pb2.Field.PARENT
    # Fields ``file.proto`` does not name, as their wire bytes.
    unknown_fields: bytes = field(default=b"", repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.metadata, FrozenMetadata):
            object.__setattr__(self, "metadata", FrozenMetadata(self.metadata))

    @classmethod
    def from_proto(cls, pb: file_pb2.Field) -> SchemaField:
        dictionary = None
        if pb.HasField("dictionary"):
            dictionary = DictionaryPosition(pb.dictionary.offset, pb.dictionary.length)
        return cls(
            name=pb.name,
            id=pb.id,
            parent_id=pb.parent_id,
            logical_type=pb.logical_type,
            nullable=pb.nullable,
            metadata=FrozenMetadata(pb.metadata),
            encoding=pb.encoding,
            dictionary=dictionary,
            extension_name=pb.extension_name,
            unenforced_primary_key=pb.unenforced_primary_key,
            unenforced_primary_key_position=pb.unenforced_primary_key_position,
            type=pb.type,
            unknown_fields=_unknown_bytes(pb),
        )

    def to_proto(self) -> file_pb2.Field:
        pb = file_pb2.Field(
            type=self.type,
            name=self.name,
            id=self.id,
            parent_id=self.parent_id,
            logical_type=self.logical_type,
            nullable=self.nullable,
            metadata=dict(self.metadata),
            unenforced_primary_key=self.unenforced_primary_key,
            unenforced_primary_key_position=self.unenforced_primary_key_position,
            encoding=self.encoding,
            extension_name=self.extension_name,
        )
        if self.dictionary is not None:
            # Present even when both numbers are 0, as pylance writes it.
            pb.dictionary.SetInParent()
            pb.dictionary.offset = self.dictionary.offset
            pb.dictionary.length = self.dictionary.length
        if self.unknown_fields:
            pb.MergeFromString(self.unknown_fields)
        return pb


def _unknown_bytes(pb: file_pb2.Field) -> bytes:
    """The wire bytes of the fields of ``pb`` its descriptor does not name, in order."""
    if not len(unknown_fields.UnknownFieldSet(pb)):
        return b""
    rest = file_pb2.Field()
    rest.CopyFrom(pb)
    for descriptor, _ in rest.ListFields():
        rest.ClearField(cast(Any, descriptor.name))
    return rest.SerializeToString()


def from_protos(fields: Iterable[file_pb2.Field]) -> tuple[SchemaField, ...]:
    return tuple(SchemaField.from_proto(f) for f in fields)


def to_protos(fields: Iterable[SchemaField]) -> list[file_pb2.Field]:
    return [f.to_proto() for f in fields]
