"""A schema's unenforced primary key as pylance 14 reads it from a manifest.

A key field carries ``unenforced_primary_key`` (field 12 of ``lance.file.Field``).  The
key's order is given by field 13, ``unenforced_primary_key_position``: a varint that
pylance 14 writes and lancelet's protobuf definition predates, so it is read here
from the field's unknown fields.  Fields with a position come first, by position;
those without (0 is unset, as in any proto3 scalar) follow in schema pre-order.

pylance marks key fields from Arrow field metadata when it converts a schema;
lancelet's conversion does not, so a field whose metadata marks it but whose flag is
unset is refused rather than answered as "not a key".
"""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf import unknown_fields

from lancelet._proto import file_pb2
from lancelet.errors import UnsupportedFunctionError

POSITION_NUMBER = 13
VARINT_WIRE_TYPE = 0
METADATA_KEY = "lance-schema:unenforced-primary-key"
POSITION_METADATA_KEY = METADATA_KEY + ":position"
_NOT_A_KEY = (b"", b"false", b"0", b"no")


def key_position(field: file_pb2.Field) -> int | None:
    """The field's position in the key, None when it has none."""
    found = unknown_fields.UnknownFieldSet(field)
    for i in range(len(found)):
        entry = found[i]
        if entry.field_number == POSITION_NUMBER and entry.wire_type == VARINT_WIRE_TYPE:
            return int(entry.data) or None
    return None


def _marked_by_metadata(field: file_pb2.Field) -> bool:
    meta = field.metadata
    if POSITION_METADATA_KEY in meta:
        return True
    return METADATA_KEY in meta and meta[METADATA_KEY].strip().lower() not in _NOT_A_KEY


def key_fields(fields: Sequence[file_pb2.Field], call: str) -> list[file_pb2.Field]:
    """The key's fields in key order (``fields`` are the schema's, in pre-order)."""
    for field in fields:
        if not field.unenforced_primary_key and _marked_by_metadata(field):
            raise UnsupportedFunctionError(
                f"{call}: field {field.name!r} is marked a primary key by its metadata only; "
                "lancelet does not turn field metadata into a primary key"
            )
    keys = [f for f in fields if f.unenforced_primary_key]
    positions = [key_position(f) for f in keys]
    order = sorted(
        range(len(keys)),
        key=lambda i: (positions[i] is None, positions[i] or 0, i),
    )
    return [keys[i] for i in order]
