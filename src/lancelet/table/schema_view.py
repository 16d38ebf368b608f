"""pylance's ``LanceSchema`` and ``LanceField``: a dataset schema as its users see it.

:class:`~lancelet.table.schema.LanceSchema` is the schema lancelet reads and writes;
these wrap it with pylance's method names (``fields()``, ``to_pyarrow()``, a field's
``id()`` and ``children()``), compare by value, pickle, and print in pylance's
``Schema { fields: [Field { ... }] }`` form.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from lancelet._proto import file_pb2
from lancelet.errors import SchemaError, UnsupportedFunctionError
from lancelet.file.primary_key import is_key, key_fields
from lancelet.table.schema import LanceSchema as _Schema
from lancelet.table.schema_field import SchemaField

_ENCODINGS = {
    file_pb2.PLAIN: "Some(Plain)",
    file_pb2.VAR_BINARY: "Some(VarBinary)",
    file_pb2.DICTIONARY: "Some(Dictionary)",
    file_pb2.RLE: "Some(RLE)",
}


class LanceField:
    """One field of a :class:`LanceSchema`, with its id and its nested fields."""

    def __init__(self, field: SchemaField, schema: _Schema) -> None:
        self._field = field
        self._schema = schema

    def name(self) -> str:
        return self._field.name

    def id(self) -> int:
        return self._field.id

    @property
    def metadata(self) -> dict[str, str]:
        return {k: v.decode(errors="replace") for k, v in self._field.metadata.items()}

    def is_unenforced_primary_key(self) -> bool:
        return is_key(self._field)

    def unenforced_primary_key_position(self) -> int | None:
        """The field's place in the key; None when it has none (0 is none)."""
        return self._field.unenforced_primary_key_position or None

    def is_unenforced_clustering_key(self) -> bool:
        raise UnsupportedFunctionError(
            "LanceField.is_unenforced_clustering_key is not supported: lancelet does not "
            "read clustering keys"
        )

    def unenforced_clustering_key_position(self) -> int | None:
        raise UnsupportedFunctionError(
            "LanceField.unenforced_clustering_key_position is not supported: lancelet does "
            "not read clustering keys"
        )

    def children(self) -> list[LanceField]:
        return [
            LanceField(f, self._schema) for f in self._schema.fields if f.parent_id == self.id()
        ]

    def to_arrow(self) -> pa.Field:
        top = self._schema.field_path(self.id()).split(".")
        arrow: pa.Field = self._schema.to_arrow().field(top[0])
        for part in top[1:]:
            dtype = arrow.type
            arrow = dtype.value_field if not pa.types.is_struct(dtype) else dtype.field(part)
        return arrow

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LanceField) and self._field == other._field

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        f = self._field
        meta = ", ".join(f'"{k}": "{v}"' for k, v in sorted(self.metadata.items()))
        children = ", ".join(repr(c) for c in self.children())
        return (
            f'Field {{ name: "{f.name}", id: {f.id}, parent_id: {f.parent_id}, '
            f'logical_type: LogicalType("{f.logical_type}"), metadata: {{{meta}}}, '
            f"encoding: {_ENCODINGS.get(f.encoding, 'None')}, "
            f"nullable: {str(f.nullable).lower()}, children: [{children}] }}"
        )


class LanceSchema:
    """A dataset schema with Lance field ids (pylance's ``lance.schema.LanceSchema``)."""

    def __init__(self, schema: _Schema) -> None:
        if not isinstance(schema, _Schema):
            raise TypeError(
                "LanceSchema: use LanceSchema.from_pyarrow() or a dataset's lance_schema"
            )
        self._schema = schema

    @staticmethod
    def from_pyarrow(schema: pa.Schema) -> LanceSchema:
        """The schema of ``schema``'s columns, ids given in pre-order from 0."""
        if not isinstance(schema, pa.Schema):
            raise TypeError(f"LanceSchema.from_pyarrow: expected a pyarrow.Schema, not {schema!r}")
        return LanceSchema(_Schema.from_arrow(schema))

    def unenforced_primary_key(self) -> list[LanceField]:
        """The fields of the unenforced primary key, in key order (nested ones too)."""
        return [LanceField(f, self._schema) for f in key_fields(self._schema.fields)]

    def unenforced_clustering_key(self) -> list[LanceField]:
        raise UnsupportedFunctionError(
            "LanceSchema.unenforced_clustering_key is not supported: lancelet does not read "
            "clustering keys"
        )

    @property
    def inner(self) -> _Schema:
        """The schema lancelet's commits take."""
        return self._schema

    def to_pyarrow(self) -> pa.Schema:
        return self._schema.to_arrow()

    def fields(self) -> list[LanceField]:
        return [LanceField(f, self._schema) for f in self._schema.top_level()]

    def field(self, name: str) -> LanceField | None:
        """The field at a dotted path (``"s.a"``), or None."""
        return self._find(name, lambda a, b: a == b)

    def field_case_insensitive(self, name: str) -> LanceField | None:
        return self._find(name, lambda a, b: a.lower() == b.lower())

    def _find(self, path: str, same: Any) -> LanceField | None:
        level = self.fields()
        found: LanceField | None = None
        for part in path.split("."):
            found = next((f for f in level if same(f.name(), part)), None)
            if found is None:
                return None
            level = found.children()
        return found

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LanceSchema):
            return NotImplemented
        mine, theirs = self._schema, other._schema
        return list(mine.fields) == list(theirs.fields) and dict(mine.metadata) == dict(
            theirs.metadata
        )

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, tuple[list[bytes], dict[str, bytes]]]:
        fields = [f.SerializeToString() for f in self._schema.proto_fields()]
        return (_restore, (fields, dict(self._schema.metadata)))

    def __repr__(self) -> str:
        meta = ", ".join(
            f'"{k}": "{v.decode(errors="replace")}"'
            for k, v in sorted(self._schema.metadata.items())
        )
        fields = ", ".join(repr(f) for f in self.fields())
        return f"Schema {{ fields: [{fields}], metadata: {{{meta}}} }}"


def _restore(fields: list[bytes], metadata: Mapping[str, bytes]) -> LanceSchema:
    parsed = []
    for blob in fields:
        field = file_pb2.Field()
        field.ParseFromString(blob)
        parsed.append(field)
    return LanceSchema(_Schema.from_proto(parsed, metadata))


def inner_schema(schema: LanceSchema | pa.Schema, where: str) -> _Schema:
    """The schema lancelet commits, from pylance's LanceSchema or an Arrow schema."""
    if isinstance(schema, LanceSchema):
        return schema.inner
    if isinstance(schema, pa.Schema):
        return _Schema.from_arrow(schema)
    raise SchemaError(f"{where}: expected a LanceSchema or pyarrow.Schema, not {schema!r}")
