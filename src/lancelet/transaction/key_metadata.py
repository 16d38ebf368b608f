"""Field metadata updates that touch the unenforced primary key, as pylance 14 takes
them when it builds the manifest.

The key's metadata keys are reserved.  A dataset that has a key refuses any update
naming one of them, and any update that replaces a key field's metadata.  In a
dataset without a key, an update naming one must leave the field's metadata marking
a key (see :func:`lancelet.file.primary_key.marking`); the field then becomes a key
field with that position, and the new key is checked as a written one would be.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from lancelet.errors import PrimaryKeyError
from lancelet.file import primary_key
from lancelet.table.schema_field import SchemaField
from lancelet.transaction.map_update import MapUpdate

RESERVED = primary_key.RESERVED_KEYS


def check_update(fields: Sequence[SchemaField], updates: Mapping[int, MapUpdate]) -> None:
    """Refuse ``updates`` (field metadata, by field id) that would change the key of a
    dataset that has one."""
    if not any(primary_key.is_key(f) for f in fields):
        return
    by_id = {f.id: f for f in fields}
    for field_id, update in updates.items():
        field = by_id[field_id]
        if _touches_key(update) or (update.replace and primary_key.is_key(field)):
            raise PrimaryKeyError(
                f"field {field.name!r}: the unenforced primary key is a reserved key and "
                "cannot be changed once set (the dataset has a primary key)"
            )


def rekeyed(
    fields: Sequence[SchemaField], updates: Mapping[int, MapUpdate]
) -> tuple[SchemaField, ...]:
    """``fields`` (with ``updates`` applied to their metadata) with the fields whose
    update names a key metadata key made key fields; the key is then checked."""
    touched = {i for i, update in updates.items() if _touches_key(update)}
    if not touched:
        return tuple(fields)
    out = []
    for field in fields:
        if field.id in touched:
            is_key, position = primary_key.marking(field.metadata, field.name)
            changed = replace(
                field, unenforced_primary_key=is_key, unenforced_primary_key_position=position
            )
            if not changed.unenforced_primary_key:
                marks = {k: v.decode() for k, v in changed.metadata.items() if k in RESERVED}
                raise PrimaryKeyError(
                    f"field {field.name!r}: the unenforced primary key is a reserved key and "
                    f"cannot be set to an invalid value (its metadata would be {marks})"
                )
            field = changed
        out.append(field)
    primary_key.check(out)
    return tuple(out)


def _touches_key(update: MapUpdate) -> bool:
    return any(k in RESERVED for k in update.entries)
