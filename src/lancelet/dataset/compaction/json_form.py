"""Compaction tasks, results and options as JSON in pylance's layout, so that
either library can execute or commit what the other planned."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lancelet.dataset.compaction.options import CompactionSettings
from lancelet.errors import UnsupportedFeatureError
from lancelet.table.fragment import DataFile, DeletionFile, Fragment
from lancelet.table.fragment import Sequence as RowSequence
from lancelet.table.naming import DeletionKind

_KIND_NAMES = {DeletionKind.ARROW: "array", DeletionKind.BITMAP: "bitmap"}
_KINDS = {v: k for k, v in _KIND_NAMES.items()}
# pylance keys whose non-empty values describe features lancelet lacks.
_UNSUPPORTED_KEYS = ("overlays",)
# Fragment attribute -> pylance's key and the key of its inline form.
_SEQUENCE_KEYS = {
    "row_id_meta": ("row_id_meta", "Inline"),
    "created_at_version_meta": ("created_at_version_meta", "inline"),
    "last_updated_at_version_meta": ("last_updated_at_version_meta", "inline"),
}


def _sequences_json(fragment: Fragment) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for attribute, (key, inline) in _SEQUENCE_KEYS.items():
        sequence: RowSequence | None = getattr(fragment, attribute)
        if sequence is None:
            continue
        if sequence.inline is None:
            raise UnsupportedFeatureError(
                f"fragment {fragment.id}: {key} in an external file cannot be shipped as JSON"
            )
        out[key] = {inline: list(sequence.inline)}
    return out


def _sequences_from_json(data: Mapping[str, Any], fragment_id: int) -> dict[str, RowSequence]:
    out: dict[str, RowSequence] = {}
    for attribute, (key, inline) in _SEQUENCE_KEYS.items():
        found = data.get(key)
        if not found:
            continue
        body = found.get(inline) if isinstance(found, Mapping) else None
        if not isinstance(body, list) or len(found) != 1:
            raise UnsupportedFeatureError(
                f"fragment {fragment_id}: {key} other than inline bytes is not supported"
            )
        try:
            out[attribute] = RowSequence(inline=bytes(body))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"fragment {fragment_id}: {key} is not a list of bytes") from exc
    return out


def fragment_json(fragment: Fragment) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": fragment.id,
        "files": [
            {
                "path": f.path,
                "fields": list(f.fields),
                "column_indices": list(f.column_indices),
                "file_major_version": f.file_major_version,
                "file_minor_version": f.file_minor_version,
                "file_size_bytes": f.file_size_bytes or 0,
                "base_id": f.base_id,
            }
            for f in fragment.files
        ],
        "physical_rows": fragment.physical_rows,
        **_sequences_json(fragment),
    }
    deletion = fragment.deletion_file
    if deletion is not None:
        out["deletion_file"] = {
            "read_version": deletion.read_version,
            "id": deletion.id,
            "file_type": _KIND_NAMES[deletion.kind],
            "num_deleted_rows": deletion.num_deleted_rows,
            "base_id": None,
        }
    return out


def _no_base(data: Mapping[str, Any], fragment_id: int) -> None:
    if data.get("base_id") is not None:
        raise UnsupportedFeatureError(
            f"fragment {fragment_id}: files under other base paths are not supported"
        )


def fragment_from_json(data: Mapping[str, Any]) -> Fragment:
    fragment_id = int(data["id"])
    for key in _UNSUPPORTED_KEYS:
        if data.get(key):
            raise UnsupportedFeatureError(f"fragment {fragment_id}: {key} is not supported")
    files = []
    for f in data["files"]:
        base_id = f.get("base_id")
        files.append(
            DataFile(
                f["path"],
                tuple(f["fields"]),
                tuple(f["column_indices"]),
                int(f.get("file_major_version") or 0),
                int(f.get("file_minor_version") or 0),
                int(f.get("file_size_bytes") or 0),
                None if base_id is None else int(base_id),
            )
        )
    deletion = None
    if (d := data.get("deletion_file")) is not None:
        _no_base(d, fragment_id)
        kind = _KINDS.get(d.get("file_type"))
        if kind is None:
            raise ValueError(f"fragment {fragment_id}: unknown deletion file type {d!r}")
        deletion = DeletionFile(
            int(d["read_version"]), int(d["id"]), _KIND_NAMES[kind], int(d["num_deleted_rows"] or 0)
        )
    sequences = _sequences_from_json(data, fragment_id)
    return Fragment(
        fragment_id,
        tuple(files),
        int(data.get("physical_rows") or 0),
        deletion,
        row_id_meta=sequences.get("row_id_meta"),
        created_at_version_meta=sequences.get("created_at_version_meta"),
        last_updated_at_version_meta=sequences.get("last_updated_at_version_meta"),
    )


def options_json(settings: CompactionSettings) -> dict[str, Any]:
    # pylance also insists on its internal binary-copy switches.
    return {**settings.to_json(), "enable_binary_copy": False, "enable_binary_copy_force": False}


# pylance's internal keys: binary copy is an optimisation lancelet may always skip,
# unless forced; the rest only steer index maintenance lancelet does not do.
_PYLANCE_ONLY = (
    "enable_binary_copy",
    "index_remap_mode",
    "max_overlays_per_fragment",
    "has_eager_remappable_index",
)


def options_from_json(data: Mapping[str, Any]) -> CompactionSettings:
    options = {k: v for k, v in data.items() if k not in _PYLANCE_ONLY}
    if options.pop("enable_binary_copy_force", False):
        options["compaction_mode"] = "force_binary_copy"
    return CompactionSettings.resolve(options, {}, "compaction options")


def dumps(data: Mapping[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"))
