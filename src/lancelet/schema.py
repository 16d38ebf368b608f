"""``lancelet.schema``: pylance's ``LanceSchema``, ``schema_to_json`` and ``json_to_schema``.

The JSON form is pylance's: a schema is ``{"fields": [...], "metadata": {...}}``, a
field ``{"name", "type", "nullable", "metadata"}`` (metadata only when there is
some), and a type ``{"type": <Lance logical type>}``, with ``"fields"`` for structs
and lists and ``"length"`` for fixed-size lists and binaries.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lancelet.errors import SchemaError
from lancelet.file.extensions import logical_field, storage_field
from lancelet.file.schema import logical_type, parse_logical_type
from lancelet.table.schema_view import LanceField, LanceSchema

__all__ = ["LanceField", "LanceSchema", "json_to_schema", "schema_to_json"]

# Logical types pylance reads from the JSON "type" string alone.
_SIMPLE_NAMES = frozenset({"date32:day", "date64:ms"})
_SCALAR_HEADS = frozenset({"decimal", "timestamp", "time32", "time64", "duration", "dict"})


def schema_to_json(schema: pa.Schema) -> dict[str, Any]:
    """A JSON-compatible dict describing ``schema``, as pylance writes it."""
    if not isinstance(schema, pa.Schema):
        raise TypeError(f"schema_to_json: expected a pyarrow.Schema, not {type(schema).__name__}")
    # Extension types are written as their storage type with Arrow's extension keys.
    fields = [storage_field(f, json_as_jsonb=False) for f in schema]
    out: dict[str, Any] = {"fields": [_field_to_json(f) for f in fields]}
    if schema.metadata:
        out["metadata"] = _text_metadata(schema.metadata, "the schema")
    return out


def json_to_schema(schema_json: dict[str, Any]) -> pa.Schema:
    """The Arrow schema a dict from :func:`schema_to_json` (or pylance's) describes."""
    doc = _object(schema_json, "the schema")
    listed = _list(_required(doc, "fields", "the schema"), "fields")
    fields = [logical_field(_field_from_json(f)) for f in listed]
    metadata = doc.get("metadata")
    return pa.schema(fields, metadata=_metadata_from_json(metadata, "the schema"))


def _text_metadata(metadata: dict[bytes, bytes], where: str) -> dict[str, str]:
    try:
        return {k.decode(): v.decode() for k, v in metadata.items()}
    except UnicodeDecodeError as exc:
        raise ValueError(f"schema_to_json: metadata of {where} is not UTF-8 text") from exc


def _field_to_json(field: pa.Field) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": field.name,
        "type": _type_to_json(field.type, field.name),
        "nullable": field.nullable,
    }
    if field.metadata:
        out["metadata"] = _text_metadata(field.metadata, f"field {field.name!r}")
    return out


def _type_to_json(dtype: pa.DataType, name: str) -> dict[str, Any]:
    if pa.types.is_struct(dtype):
        return {"type": "struct", "fields": [_field_to_json(c) for c in dtype]}
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        kind = "list" if pa.types.is_list(dtype) else "large_list"
        return {"type": kind, "fields": [_field_to_json(dtype.value_field)]}
    if pa.types.is_fixed_size_list(dtype):
        return {
            "type": "fixed_size_list",
            "fields": [_field_to_json(dtype.value_field)],
            "length": dtype.list_size,
        }
    if pa.types.is_fixed_size_binary(dtype):
        return {"type": "fixed_size_binary", "length": dtype.byte_width}
    if pa.types.is_map(dtype) or (
        pa.types.is_dictionary(dtype) and not _is_scalar(dtype.value_type)
    ):
        # pylance's JSON has no form for maps either.
        raise SchemaError(f"field {name!r}: unsupported type {dtype}")
    return {"type": logical_type(dtype, name)}


def _is_scalar(dtype: pa.DataType) -> bool:
    nested = (
        pa.types.is_nested(dtype)
        or pa.types.is_fixed_size_binary(dtype)
        or pa.types.is_dictionary(dtype)
    )
    return not nested


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"json_to_schema: {where} must be a JSON object, not {value!r}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"json_to_schema: {where} must be a JSON array, not {value!r}")
    return value


def _required(doc: dict[str, Any], key: str, where: str) -> Any:
    if key not in doc:
        raise ValueError(f"json_to_schema: {where} has no {key!r}")
    return doc[key]


def _metadata_from_json(value: Any, where: str) -> dict[str, str] | None:
    if value is None:
        return None
    metadata = _object(value, f"the metadata of {where}")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise ValueError(f"json_to_schema: the metadata of {where} must map text to text")
    return metadata or None


def _field_from_json(value: Any) -> pa.Field:
    doc = _object(value, "a field")
    name = _required(doc, "name", "a field")
    if not isinstance(name, str):
        raise ValueError(f"json_to_schema: a field name must be text, not {name!r}")
    where = f"field {name!r}"
    nullable = _required(doc, "nullable", where)
    if not isinstance(nullable, bool):
        raise ValueError(f"json_to_schema: {where}: nullable must be true or false")
    dtype = _type_from_json(_object(_required(doc, "type", where), f"the type of {where}"), where)
    metadata = _metadata_from_json(doc.get("metadata"), where)
    return pa.field(name, dtype, nullable=nullable, metadata=metadata)


def _type_from_json(doc: dict[str, Any], where: str) -> pa.DataType:
    kind = _required(doc, "type", where)
    if not isinstance(kind, str):
        raise ValueError(f"json_to_schema: {where}: the type must be text, not {kind!r}")
    if kind == "struct":
        children = _list(_required(doc, "fields", where), f"the fields of {where}")
        return pa.struct([_field_from_json(c) for c in children])
    if kind in ("list", "large_list", "fixed_size_list"):
        children = _list(_required(doc, "fields", where), f"the fields of {where}")
        if len(children) != 1:
            raise ValueError(f"json_to_schema: {where}: a list type has one child field")
        item = _field_from_json(children[0])
        if kind == "list":
            return pa.list_(item)
        if kind == "large_list":
            return pa.large_list(item)
        return pa.list_(item, _length(doc, where))
    if kind == "fixed_size_binary":
        return pa.binary(_length(doc, where))
    if kind in _SIMPLE_NAMES:
        return parse_logical_type(kind, where)
    if kind == "json" or (":" in kind and kind.split(":")[0] not in _SCALAR_HEADS):
        raise ValueError(f"json_to_schema: {where}: unsupported type {kind!r}")
    return parse_logical_type(kind, where)


def _length(doc: dict[str, Any], where: str) -> int:
    length = _required(doc, "length", where)
    if isinstance(length, bool) or not isinstance(length, int) or length < 0:
        raise ValueError(f"json_to_schema: {where}: length must be a non-negative integer")
    return length
