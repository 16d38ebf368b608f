"""A schema's unenforced primary key, as pylance 14 marks, orders and checks it.

A key field carries ``unenforced_primary_key`` (field 12 of ``lance.file.Field``) and
its place in the key, ``unenforced_primary_key_position`` (field 13, newer than the
public spec; 0 is none).  Both come from an Arrow field's metadata when a schema is
converted: a position that parses as a u32 (``+`` and leading zeros allowed, no
spaces) makes the field a key at that position; otherwise the flag key's value,
lower-cased, must be one of ``true 1 yes y on``.  The metadata itself stays on the
field.  Reading a manifest, only the two fields count, not the metadata: a field is
a key when either is set.

The key's order: fields with a position first, by position (ties in schema order;
positions of 2**31 and above, taken as negative numbers, before the others), then
those without, in schema pre-order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

from lancelet._proto import file_pb2
from lancelet.errors import PrimaryKeyError, SchemaError

METADATA_KEY = "lance-schema:unenforced-primary-key"
POSITION_METADATA_KEY = METADATA_KEY + ":position"
RESERVED_KEYS = (METADATA_KEY, POSITION_METADATA_KEY)


class KeyField(Protocol):
    """What the key rules read of a field: a protobuf ``Field`` (the file layer's) or
    a dataset schema's immutable field."""

    @property
    def name(self) -> str: ...
    @property
    def id(self) -> int: ...
    @property
    def parent_id(self) -> int: ...
    @property
    def logical_type(self) -> str: ...
    @property
    def nullable(self) -> bool: ...
    @property
    def unenforced_primary_key(self) -> bool: ...
    @property
    def unenforced_primary_key_position(self) -> int: ...


F = TypeVar("F", bound=KeyField)

# The flag values pylance takes, compared lower-cased; anything else is "not a key".
_TRUE = frozenset({"true", "1", "yes", "y", "on"})
# Rust's u32 parsing: ASCII digits after an optional plus sign.
_POSITION = re.compile(r"\+?[0-9]+")
_MAX_POSITION = 2**32 - 1


def marking(metadata: Mapping[str, bytes], column: str) -> tuple[bool, int]:
    """Whether field metadata marks a key field, and its position (0: none)."""
    position = _text(metadata, POSITION_METADATA_KEY, column)
    if position is not None and _POSITION.fullmatch(position):
        # Leading zeros are fine; Python's int() refuses thousands of digits.
        digits = position.lstrip("+").lstrip("0") or "0"
        if len(digits) <= len(str(_MAX_POSITION)) and int(digits) <= _MAX_POSITION:
            return True, int(digits)
    flag = _text(metadata, METADATA_KEY, column)
    return flag is not None and flag.lower() in _TRUE, 0


def _text(metadata: Mapping[str, bytes], key: str, column: str) -> str | None:
    value = metadata.get(key)
    if value is None:
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as exc:
        # pylance takes field metadata as text and refuses other bytes (a ValueError).
        raise SchemaError(f"field {column!r}: metadata {key!r} is not valid UTF-8") from exc


def mark(field: file_pb2.Field) -> None:
    """Set ``field``'s key flag and position from its metadata, as pylance does when
    it converts an Arrow field."""
    is_key, position = marking(field.metadata, field.name)
    field.unenforced_primary_key = is_key
    field.unenforced_primary_key_position = position


def is_key(field: KeyField) -> bool:
    return field.unenforced_primary_key or field.unenforced_primary_key_position != 0


def key_fields(fields: Sequence[F]) -> list[F]:
    """The key's fields in key order (``fields`` are the schema's, in pre-order)."""
    keys = [f for f in fields if is_key(f)]
    # pylance 14 orders positions as signed 32-bit numbers: 2**31 and above first.
    positions = [_as_i32(f.unenforced_primary_key_position) for f in keys]
    order = sorted(range(len(keys)), key=lambda i: (positions[i] == 0, positions[i], i))
    return [keys[i] for i in order]


def _as_i32(position: int) -> int:
    return position - 2**32 if position >= 2**31 else position


def check(fields: Sequence[KeyField]) -> None:
    """Refuse a key pylance refuses: each key field, in key order, must be a leaf,
    and neither it nor any field above it nullable, a list or a map."""
    by_id = {f.id: f for f in fields if f.id >= 0}
    parents = {f.parent_id for f in fields if f.id >= 0}
    for key in key_fields(fields):
        lineage = _lineage(key, by_id)
        path = _path(lineage)
        if key.id >= 0 and key.id in parents:
            raise PrimaryKeyError(
                f"Primary key column must be a leaf: {path!r} is a {key.logical_type} field"
            )
        for depth, ancestor in enumerate(lineage, start=1):
            problem = _ancestor_problem(ancestor)
            if problem is not None:
                where = _path(lineage[:depth])
                of = "" if where == path else f" (above key column {path!r})"
                raise PrimaryKeyError(f"Primary key column {problem}: {where!r}{of}")


def _ancestor_problem(field: KeyField) -> str | None:
    if field.nullable:
        return "and all its ancestors must not be nullable"
    if field.logical_type.startswith(("list", "large_list")):
        return "must not be in a list type"
    if field.logical_type == "map":
        return "must not be in a map type"
    return None


def _lineage(field: KeyField, by_id: Mapping[int, KeyField]) -> list[KeyField]:
    """``field`` and the fields above it, top-level first."""
    out = [field]
    while out[-1].parent_id != -1 and out[-1].parent_id in by_id and len(out) <= len(by_id):
        out.append(by_id[out[-1].parent_id])
    return out[::-1]


def _path(lineage: Sequence[KeyField]) -> str:
    return ".".join(f.name for f in lineage)
