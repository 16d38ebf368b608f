"""Fragments in pylance's JSON form (``FragmentMetadata.to_json`` / ``from_json``).

pylance serialises a fragment as a dict of ``id``, ``files``, ``overlays``,
``physical_rows``, ``deletion_file``, ``row_id_meta``, ``created_at_version_meta`` and
``last_updated_at_version_meta``; sequences are their protobuf bytes as lists of
ints, tagged ``Inline``/``External`` (row ids) or ``inline``/``external`` (versions).
"""

from __future__ import annotations

import json
from typing import Any

from lancelet.errors import ArgumentError, UnsupportedFeatureError
from lancelet.table.fragment import DataFile, DeletionFile, ExternalFile, Fragment, Sequence
from lancelet.table.naming import DeletionKind

_KIND_NAMES = {DeletionKind.ARROW: "array", DeletionKind.BITMAP: "bitmap"}
_KINDS = {v: k for k, v in _KIND_NAMES.items()}
# Fragment attribute -> (pylance key, inline tag, external tag).
_SEQUENCE_KEYS = {
    "row_id_meta": ("row_id_meta", "Inline", "External"),
    "created_at_version_meta": ("created_at_version_meta", "inline", "external"),
    "last_updated_at_version_meta": ("last_updated_at_version_meta", "inline", "external"),
}


def _data_file(f: DataFile) -> dict[str, Any]:
    return {
        "fields": list(f.fields),
        "column_indices": list(f.column_indices),
        "file_major_version": f.file_major_version,
        "file_minor_version": f.file_minor_version,
        "file_size_bytes": f.file_size_bytes or None,
        "base_id": f.base_id,
        "path": f.path,
    }


def _deletion_file(d: DeletionFile) -> dict[str, Any]:
    return d.asdict()


def _sequence(s: Sequence, inline: str, external: str) -> dict[str, Any]:
    if s.external is not None:
        e = s.external
        return {external: {"path": e.path, "offset": e.offset, "size": e.size}}
    return {inline: list(s.inline or b"")}


def fragment_to_json(fragment: Fragment) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": fragment.id,
        "files": [_data_file(f) for f in fragment.files],
        "overlays": [],
        "physical_rows": fragment.physical_rows,
        "deletion_file": (
            _deletion_file(fragment.deletion_file) if fragment.deletion_file else None
        ),
    }
    for attribute, (key, inline, external) in _SEQUENCE_KEYS.items():
        sequence: Sequence | None = getattr(fragment, attribute)
        out[key] = None if sequence is None else _sequence(sequence, inline, external)
    return out


def _no_base(data: dict[str, Any], what: str) -> None:
    if data.get("base_id") is not None:
        raise UnsupportedFeatureError(f"{what} with a base_id (multi-base datasets)")


def _read_data_file(data: dict[str, Any]) -> DataFile:
    base_id = data.get("base_id")
    return DataFile(
        str(data["path"]),
        tuple(int(i) for i in data["fields"]),
        tuple(int(i) for i in data.get("column_indices") or ()),
        int(data.get("file_major_version", 0)),
        int(data.get("file_minor_version", 0)),
        int(data.get("file_size_bytes") or 0),
        None if base_id is None else int(base_id),
    )


def _read_deletion_file(data: dict[str, Any]) -> DeletionFile:
    file_type = data.get("file_type", "array")
    if file_type not in _KINDS:
        raise ArgumentError(f"unknown deletion file type {file_type!r}")
    base_id = data.get("base_id")
    return DeletionFile(
        int(data["read_version"]),
        int(data["id"]),
        file_type,
        int(data.get("num_deleted_rows") or 0),
        None if base_id is None else int(base_id),
    )


def _read_sequence(data: dict[str, Any], inline: str, external: str) -> Sequence:
    if set(data) == {inline}:
        return Sequence(inline=bytes(data[inline]))
    if set(data) == {external}:
        e = data[external]
        return Sequence(external=ExternalFile(str(e["path"]), int(e["offset"]), int(e["size"])))
    raise ArgumentError(f"not a sequence in pylance's form: {data!r}")


def fragment_from_json(data: str | dict[str, Any]) -> Fragment:
    parsed: Any = json.loads(data) if isinstance(data, str) else data
    if not isinstance(parsed, dict):
        raise ArgumentError("fragment JSON must be an object")
    if parsed.get("overlays"):
        raise UnsupportedFeatureError("fragments with data overlay files")
    deletion = parsed.get("deletion_file")
    sequences: dict[str, Sequence | None] = {}
    for attribute, (key, inline, external) in _SEQUENCE_KEYS.items():
        value = parsed.get(key)
        sequences[attribute] = None if value is None else _read_sequence(value, inline, external)
    return Fragment(
        int(parsed["id"]),
        tuple(_read_data_file(f) for f in parsed["files"]),
        int(parsed["physical_rows"]),
        None if deletion is None else _read_deletion_file(deletion),
        row_id_meta=sequences["row_id_meta"],
        created_at_version_meta=sequences["created_at_version_meta"],
        last_updated_at_version_meta=sequences["last_updated_at_version_meta"],
    )
