"""A dataset schema: Lance fields with stable ids, plus schema-level metadata.

Field ids are what data files refer to, so they never change once assigned:
new columns get ids above the current maximum, dropped ids are not reused
(within one schema lineage), and an overwrite may start afresh.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import pyarrow as pa

from lancelet._proto import file_pb2
from lancelet.errors import AppendSchemaError, SchemaError
from lancelet.file.schema import from_lance_fields, to_lance_fields
from lancelet.file.v2_0.layout import is_packed_struct
from lancelet.table import blob_v2
from lancelet.table.schema_field import FrozenMetadata, SchemaField, from_protos, to_protos

# Schemas decoded from protobuf fields, by their bytes (see LanceSchema.from_proto).
_DECODED: dict[tuple[tuple[bytes, ...], tuple[tuple[str, bytes], ...]], LanceSchema] = {}
_DECODED_MAX = 64


def _remember(
    key: tuple[tuple[bytes, ...], tuple[tuple[str, bytes], ...]], schema: LanceSchema
) -> None:
    _DECODED[key] = schema
    while len(_DECODED) > _DECODED_MAX:
        try:
            _DECODED.pop(next(iter(_DECODED)), None)
        except (RuntimeError, StopIteration):  # another thread changed it meanwhile
            break


@dataclass(frozen=True)
class LanceSchema:
    # Immutable values (see :mod:`.schema_field`), in pre-order.
    fields: tuple[SchemaField, ...]
    metadata: Mapping[str, bytes] = field(default_factory=FrozenMetadata)
    # A legacy (0.1) dataset's dictionary values, by field id: pylance keeps them in
    # the manifest file (see table/manifest_file.py), not in the fields themselves.
    dictionaries: Mapping[int, pa.Array] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.metadata, FrozenMetadata):
            object.__setattr__(self, "metadata", FrozenMetadata(self.metadata))

    @classmethod
    def from_proto(
        cls, fields: Iterable[file_pb2.Field], metadata: Mapping[str, bytes] | None = None
    ) -> LanceSchema:
        """The schema of protobuf fields (as a manifest or transaction holds them)."""
        fields = list(fields)
        meta = metadata or {}
        # Every manifest repeats the schema: a writer catching up with other writers'
        # versions decodes one per version, and the Arrow schema built from it.  The
        # same bytes give the same (immutable) schema, built once.
        key = (
            tuple(f.SerializeToString(deterministic=True) for f in fields),
            tuple(sorted(meta.items())),
        )
        found = _DECODED.get(key)
        if found is None or type(found) is not cls:
            found = cls(from_protos(fields), FrozenMetadata(meta))
            _remember(key, found)
        return found

    def proto_fields(self) -> list[file_pb2.Field]:
        """The fields as protobuf messages, new ones each call."""
        return to_protos(self.fields)

    def with_dictionaries(self, values: Mapping[int, pa.Array]) -> LanceSchema:
        """This schema with ``values`` for those of its fields that have none."""
        ids = {f.id for f in self.fields if f.logical_type.startswith("dict:")}
        merged = {i: v for i, v in values.items() if i in ids}
        merged.update({i: v for i, v in self.dictionaries.items() if i in ids})
        return LanceSchema(self.fields, self.metadata, merged)

    @classmethod
    def from_arrow(
        cls, schema: pa.Schema, first_id: int = 0, *, check_key: bool = True
    ) -> LanceSchema:
        """The Lance schema of ``schema``, fields numbered from ``first_id``; its
        unenforced primary key is checked unless ``check_key`` is false."""
        meta = {k.decode(): v for k, v in (schema.metadata or {}).items()}
        for key, value in meta.items():
            try:
                value.decode("utf-8")
            except UnicodeDecodeError as exc:
                # Lance keeps metadata as text, as pylance requires (encode binary first).
                raise SchemaError(
                    f"schema metadata {key!r} is not valid UTF-8; encode binary values "
                    "(for example base64) first"
                ) from exc
        return cls.from_proto(to_lance_fields(schema, first_id, check_key=check_key), meta)

    def to_arrow(self) -> pa.Schema:
        return self._arrow

    def to_pyarrow(self) -> pa.Schema:
        """pylance's name for :meth:`to_arrow`."""
        return self._arrow

    @cached_property
    def _arrow(self) -> pa.Schema:
        # Readers ask for it per fragment and per batch; the schema never changes.
        fields, blobs = blob_v2.arrow_fields(self.fields)
        arrow = from_lance_fields(to_protos(fields), self.metadata)
        return blob_v2.with_descriptors(arrow, blobs) if blobs else arrow

    @property
    def max_field_id(self) -> int:
        return max((f.id for f in self.fields), default=-1)

    def top_level(self) -> list[SchemaField]:
        return [f for f in self.fields if f.parent_id == -1]

    def top_level_names(self) -> list[str]:
        return [f.name for f in self.top_level()]

    def subtree_ids(self, top_id: int) -> list[int]:
        """The id of a field and of every field nested under it, in pre-order."""
        ids = [top_id]
        for f in self.fields:
            if f.parent_id in ids:
                ids.append(f.id)
        return ids

    def field_path(self, field_id: int) -> str:
        """The dotted path of a field from its top-level column (``"s.x"``)."""
        by_id = {f.id: f for f in self.fields}
        parts = []
        current = by_id.get(field_id)
        while current is not None:
            parts.append(current.name)
            current = by_id.get(current.parent_id)
        return ".".join(reversed(parts))

    def resolve(self, names: Sequence[str], where: str) -> list[SchemaField]:
        """Top-level fields by name, in the order asked for."""
        by_name = {f.name: f for f in self.top_level()}
        missing = [n for n in names if n not in by_name]
        if missing:
            raise SchemaError(
                f"{where}: no column named {missing[0]!r}; columns are {list(by_name)}"
            )
        return [by_name[n] for n in names]


def check_same_columns(dataset: pa.Schema, data: pa.Schema, where: str) -> None:
    """Appended data must carry exactly the dataset's columns with the same types."""
    want = {f.name: f.type for f in dataset}
    got = {f.name: f.type for f in data}
    if set(want) != set(got):
        missing = sorted(set(want) - set(got))
        extra = sorted(set(got) - set(want))
        raise AppendSchemaError(
            f"{where}: the data's columns differ from the dataset's "
            f"(missing {missing}, unexpected {extra})"
        )
    for name, dtype in want.items():
        if got[name] != dtype:
            raise AppendSchemaError(
                f"{where}: column {name!r} is {got[name]} in the data but {dtype} in the dataset"
            )


def _walk(field: pa.Field, structural: bool = False) -> list[tuple[pa.Field, bool]]:
    """Pre-order (field, owns a column) pairs; a packed struct's children own none.

    In ``structural`` files (format 2.1 and later) only leaves own a column: structs
    (but empty or packed ones) and lists have none.
    """
    packed = is_packed_struct(field)
    dtype = field.type
    children: list[pa.Field] = []
    if pa.types.is_struct(dtype):
        children = [dtype.field(i) for i in range(dtype.num_fields)]
    elif pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        children = [dtype.value_field]
    elif pa.types.is_map(dtype):
        children = [dtype.field(0)]  # its entries: a struct of the key and the value
    out = [(field, not (structural and children and not packed))]
    for child in children:
        out += [(f, owns and not packed) for f, owns in _walk(child, structural)]
    return out


def column_field_ids(
    schema: LanceSchema, names: Sequence[str] | None = None, *, structural: bool = False
) -> list[int]:
    """Ids of the fields that own a column in a data file holding ``names`` (default:
    every top-level column), in column order.  This is ``DataFile.fields``; files of
    format 2.1 and later (``structural``) give columns to leaves only."""
    return [i for i, owns in _walked_ids(schema, names, structural) if owns]


def file_field_ids(schema: LanceSchema, names: Sequence[str] | None = None) -> list[int]:
    """Ids of every field (structs and lists too) of the columns ``names`` (default: all,
    in the dataset's order), in the pre-order of a data file holding them in that order."""
    if names is None:
        return [i for i, _ in _walked_ids(schema, None, False)]
    return [i for name in names for i, _ in _walked_ids(schema, [name], False)]


def _walked_ids(
    schema: LanceSchema, names: Sequence[str] | None, structural: bool
) -> list[tuple[int, bool]]:
    """(id, owns a column) of every field of the columns ``names``, in pre-order."""
    arrow = schema.to_arrow()
    flat = list(schema.fields)
    position = 0
    out: list[tuple[int, bool]] = []
    wanted = set(arrow.names if names is None else names)
    for top in arrow:
        if blob_v2.is_blob_v2(flat[position]):
            if top.name in wanted:
                out += blob_v2.walked_ids(flat[position])
            position += blob_v2.subtree_size(flat, position)
            continue
        walked = _walk(top, structural)
        if top.name in wanted:
            out += [(flat[position + i].id, owns) for i, (_, owns) in enumerate(walked)]
        position += len(walked)
    return out
