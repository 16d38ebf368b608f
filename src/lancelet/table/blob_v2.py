"""Blob v2 columns in a dataset's schema (see :mod:`lancelet.file.blob_v2`): the
manifest's fields of such a column, and its Arrow form (the descriptors)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from lancelet._proto import file_pb2
from lancelet.errors import UnsupportedFeatureError, UnsupportedOptionError
from lancelet.file import primary_key
from lancelet.file.blob_v2 import (
    BLOB_KEY,
    EXTENSION,
    STORED_TYPE,
    descriptor_field,
    is_blob_values,
    is_descriptor_field,
)
from lancelet.file.schema import to_lance_fields
from lancelet.table.schema_field import SchemaField

__all__ = [
    "arrow_fields",
    "is_blob_v2",
    "lance_fields",
    "subtree_size",
    "values_schema",
    "walked_ids",
    "with_descriptors",
]

_EXTENSION_KEY = "ARROW:extension:name"
_DESCRIPTOR_CHILDREN = 5
_KEY_MARKS = primary_key.RESERVED_KEYS


def is_blob_v2(field: SchemaField) -> bool:
    return field.extension_name == EXTENSION


def lance_fields(schema: pa.Schema, where: str) -> list[file_pb2.Field]:
    """The manifest's fields of a new 2.2+ dataset: its blob columns (large_binary
    marked ``lance-encoding:blob``) become ``lance.blob.v2`` structs, as pylance's."""
    out: list[file_pb2.Field] = []
    for field in schema:
        if is_blob_values(field):
            _check_blob_metadata(field, where)
            # A key marking stays on the descriptor struct, as pylance's (which then
            # refuses it as a key: the struct is no leaf).
            marks = {k: v for k, v in field.metadata.items() if k.decode() in _KEY_MARKS}
            stored = pa.field(field.name, STORED_TYPE, field.nullable, metadata=marks or None)
            fields = to_lance_fields(pa.schema([stored]), len(out), check_key=False)
            fields[0].extension_name = EXTENSION
            fields[0].metadata[_EXTENSION_KEY] = EXTENSION.encode()
        else:
            fields = to_lance_fields(pa.schema([field]), len(out), check_key=False)
        out += fields
    primary_key.check(out)  # over the whole schema, in key order
    return out


def _check_blob_metadata(field: pa.Field, where: str) -> None:
    # pylance keeps other keys (its storage thresholds) in the manifest and acts on
    # them; lancelet stores every value inline and implements none of them.
    # (A key marking is no storage option: it is kept, see lance_fields.)
    extra = sorted(k.decode() for k in field.metadata if k != BLOB_KEY)
    extra = [k for k in extra if k not in _KEY_MARKS]
    if extra:
        raise UnsupportedOptionError(
            f"{where}: blob column {field.name!r} has metadata lancelet does not implement: {extra}"
        )


def subtree_size(fields: Sequence[SchemaField], position: int) -> int:
    """How many manifest fields the column at ``position`` spans (a blob v2 column:
    itself, ``data`` and ``uri``)."""
    return 3 if is_blob_v2(fields[position]) else 0


def walked_ids(field: SchemaField) -> list[tuple[int, bool]]:
    """(id, owns a column) of a blob v2 column in a data file: the descriptor struct
    (one column), its children unnumbered."""
    return [(field.id, True)] + [(-1, False)] * _DESCRIPTOR_CHILDREN


def arrow_fields(fields: Sequence[SchemaField]) -> tuple[list[SchemaField], set[str]]:
    """The manifest's fields without the blob v2 columns' children (the columns kept
    as empty structs), and the names of those columns, whose Arrow form is
    :func:`~lancelet.file.blob_v2.descriptor_field`."""
    nested = [f.name for f in fields if is_blob_v2(f) and f.parent_id != -1]
    if nested:
        raise UnsupportedFeatureError(
            f"column {nested[0]!r} is a blob v2 column inside a struct or list, which "
            "lancelet does not read"
        )
    blob_ids = {f.id for f in fields if is_blob_v2(f)}
    kept = [f for f in fields if f.parent_id not in blob_ids]
    return kept, {f.name for f in fields if f.id in blob_ids}


def with_descriptors(schema: pa.Schema, names: set[str]) -> pa.Schema:
    """``schema`` with the columns ``names`` as their descriptors."""
    for name in names:
        i = schema.get_field_index(name)
        schema = schema.set(i, descriptor_field(name, schema.field(i).nullable))
    return schema


def values_schema(schema: pa.Schema) -> pa.Schema:
    """A dataset's Arrow schema as data written to it carries it: blob v2 columns
    as their values (large_binary marked ``lance-encoding:blob``)."""
    meta = {BLOB_KEY: b"true"}
    for i, field in enumerate(schema):
        if is_descriptor_field(field):
            schema = schema.set(i, pa.field(field.name, pa.large_binary(), field.nullable, meta))
    return schema
