"""A readable, indented text of table metadata: manifests, schemas, fragments and any
other of lancelet's metadata values (transactions and operations included).

The layout is that of Rust's pretty ``Debug`` output, which pylance's debug functions
print: ``Name {`` with one ``key: value,`` per line, lists in brackets, optional
values as ``Some(...)`` or ``None``.  The names and fields are lancelet's own: a
dataclass shows its class name and fields, a schema its fields nested by parent.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyroaring import AbstractBitMap

from lancelet._proto import file_pb2
from lancelet.file.primary_key import is_key
from lancelet.table.fragment import Fragment
from lancelet.table.schema import LanceSchema
from lancelet.table.schema_field import SchemaField

INDENT = 4


@dataclass(frozen=True)
class Struct:
    """``name { key: value, ... }``."""

    name: str
    fields: Sequence[tuple[str, Any]]


@dataclass(frozen=True)
class Wrapped:
    """``name(value, ...)``: a tagged value such as ``Some(3)``."""

    name: str
    values: Sequence[Any]


@dataclass(frozen=True)
class Bare:
    """Text shown as it is, unquoted (``None``, an enum member)."""

    text: str


NONE = Bare("None")


def some(value: Any) -> Any:
    """An optional value: ``Some(value)``, or ``None``."""
    return NONE if value is None else Wrapped("Some", (value,))


def render(value: Any, indent: int = 0) -> str:
    """The text of ``value`` (a described or plain value), its nested lines indented
    from ``indent``."""
    node = describe(value)
    inner = " " * (indent + INDENT)
    close = " " * indent
    if isinstance(node, Struct):
        if not node.fields:
            return node.name
        body = "".join(f"{inner}{k}: {render(v, indent + INDENT)},\n" for k, v in node.fields)
        return f"{node.name} {{\n{body}{close}}}"
    if isinstance(node, Wrapped):
        body = "".join(f"{inner}{render(v, indent + INDENT)},\n" for v in node.values)
        return f"{node.name}(\n{body}{close})"
    if isinstance(node, Mapping):
        if not node:
            return "{}"
        body = "".join(
            f"{inner}{render(k, indent + INDENT)}: {render(v, indent + INDENT)},\n"
            for k, v in node.items()
        )
        return f"{{\n{body}{close}}}"
    if isinstance(node, list):
        if not node:
            return "[]"
        body = "".join(f"{inner}{render(v, indent + INDENT)},\n" for v in node)
        return f"[\n{body}{close}]"
    return _scalar(node)


def _scalar(value: Any) -> str:
    if isinstance(value, Bare):
        return value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(repr(value), ensure_ascii=False)


def describe(value: Any) -> Any:
    """``value`` as a node :func:`render` lays out directly."""
    if isinstance(value, (Struct, Wrapped, Bare, str, bool, int, float)):
        return value
    if value is None:
        return NONE
    for kind, describer in _DESCRIBERS:
        if isinstance(value, kind):
            return describer(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _dataclass(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (list, tuple, frozenset, set)):
        return sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    return value


def _dataclass(value: Any) -> Struct:
    """Its fields, those kept only in memory (``compare=False``) left out; an optional
    field (annotated ``... | None``) as ``Some``/``None``."""
    fields = []
    for f in dataclasses.fields(value):
        if not (f.compare and f.repr):
            continue
        item = getattr(value, f.name)
        optional = str(f.type).replace(" ", "").endswith("|None")
        fields.append((f.name, some(item) if optional else item))
    return Struct(type(value).__name__, fields)


def _bytes(value: bytes) -> Any:
    try:
        text = value.decode()
    except UnicodeDecodeError:
        return Bare(f"<{len(value)} bytes>")
    return text if text.isprintable() else Bare(f"<{len(value)} bytes>")


def describe_schema(schema: LanceSchema) -> Struct:
    """The fields nested under their parents, and the schema's metadata."""
    present = {f.id for f in schema.fields}
    children: dict[int, list[SchemaField]] = {}
    for f in schema.fields:
        children.setdefault(f.parent_id if f.parent_id in present else -1, []).append(f)

    def field_node(f: SchemaField) -> Struct:
        return Struct(
            "Field",
            [
                ("name", f.name),
                ("id", f.id),
                ("parent_id", f.parent_id),
                ("logical_type", Wrapped("LogicalType", (f.logical_type,))),
                ("metadata", dict(f.metadata)),
                ("encoding", Bare(file_pb2.Encoding.Name(f.encoding))),
                ("nullable", f.nullable),
                ("extension_name", some(f.extension_name or None)),
                ("children", [field_node(c) for c in children.get(f.id, [])]),
                # As pylance: Some(0) for a key field without a position.
                ("unenforced_primary_key_position", some(_key_position(f))),
            ],
        )

    return Struct(
        "Schema",
        [("fields", [field_node(f) for f in children.get(-1, [])]), ("metadata", schema.metadata)],
    )


def _key_position(field: SchemaField) -> int | None:
    return field.unenforced_primary_key_position if is_key(field) else None


def describe_fragment_files(fragment: Fragment, schema: LanceSchema) -> Struct:
    """A fragment with each data file's part of ``schema`` and file format version."""
    files = [
        Struct(
            "DataFileWithSchema",
            [
                ("path", f.path),
                ("fields", list(f.fields)),
                ("column_indices", list(f.column_indices)),
                ("schema", _subschema(schema, set(f.fields))),
                ("major_version", f.file_major_version),
                ("minor_version", f.file_minor_version),
            ],
        )
        for f in fragment.files
    ]
    return Struct(
        "PrettyPrintableFragment",
        [
            ("id", fragment.id),
            ("files", files),
            ("deletion_file", some(fragment.deletion_file)),
            ("physical_rows", fragment.physical_rows),
        ],
    )


def _subschema(schema: LanceSchema, field_ids: set[int]) -> LanceSchema:
    """The fields with these ids, and the structs they sit in (to nest them)."""
    parents = {f.id: f.parent_id for f in schema.fields}
    shown = set()
    for field_id in field_ids:
        while field_id in parents and field_id not in shown:
            shown.add(field_id)
            field_id = parents[field_id]
    return LanceSchema(tuple(f for f in schema.fields if f.id in shown))


_DESCRIBERS: tuple[tuple[type, Callable[[Any], Any]], ...] = (
    (LanceSchema, describe_schema),
    (bytes, _bytes),
    (enum.Enum, lambda e: Bare(e.name)),
    (uuid.UUID, str),
    (AbstractBitMap, list),
)
