"""Compaction in steps, as ``lance.optimize``: plan here, execute anywhere, commit here.

``Compaction.plan`` lists the tasks; each :class:`CompactionTask` can be pickled
or turned into JSON, sent to another process or machine, and executed there
against the same dataset, writing the new data files.  The
:class:`RewriteResult`\\ s travel back the same way and ``Compaction.commit``
makes them one new version.  Results may be committed without the tasks that
failed.  The JSON uses pylance's layout, so pylance can read it and vice versa.
"""

from __future__ import annotations

import json as json_module
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from lancelet.dataset.optimize import (
    CompactionMetrics,
    CompactionSettings,
    commit_rewrites,
    compact,
    plan_bins,
    rewrite_fragments,
)
from lancelet.errors import UnsupportedFeatureError
from lancelet.table.fragment import DataFile, DeletionFile, Fragment
from lancelet.table.fragment import Sequence as RowSequence
from lancelet.table.naming import DeletionKind
from lancelet.transaction import operations as ops

if TYPE_CHECKING:
    from lancelet.dataset.dataset import LanceDataset

__all__ = [
    "Compaction",
    "CompactionMetrics",
    "CompactionOptions",
    "CompactionPlan",
    "CompactionTask",
    "RewriteResult",
]


class CompactionOptions(TypedDict, total=False):
    """Options for compaction; see ``LanceDataset.optimize.compact_files``."""

    target_rows_per_fragment: int | None
    max_rows_per_group: int | None
    max_bytes_per_file: int | None
    materialize_deletions: bool | None
    materialize_deletions_threshold: float | None
    num_threads: int | None
    batch_size: int | None
    io_buffer_size: int | None
    compaction_mode: Literal["reencode", "try_binary_copy", "force_binary_copy"] | None
    binary_copy_read_batch_bytes: int | None
    defer_index_remap: bool | None
    max_source_fragments: int | None
    max_source_rows: int | None
    max_source_bytes: int | None
    excluded_fragment_ids: list[int] | None
    data_storage_version: str | None


# -- JSON in pylance's layout ---------------------------------------------------------

_KIND_NAMES = {DeletionKind.ARROW: "array", DeletionKind.BITMAP: "bitmap"}
_KINDS = {v: k for k, v in _KIND_NAMES.items()}
# pylance keys whose non-empty values describe features lancelet lacks.
_UNSUPPORTED_KEYS = ("overlays",)
# Fragment attribute -> pylance's key and the key of its inline form.
_SEQUENCE_KEYS = {
    "row_ids": ("row_id_meta", "Inline"),
    "created_at": ("created_at_version_meta", "inline"),
    "last_updated_at": ("last_updated_at_version_meta", "inline"),
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


def _fragment_json(fragment: Fragment) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": fragment.id,
        "files": [
            {
                "path": f.path,
                "fields": list(f.fields),
                "column_indices": list(f.column_indices),
                "file_major_version": f.file_major_version,
                "file_minor_version": f.file_minor_version,
                "file_size_bytes": f.file_size_bytes,
                "base_id": None,
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


def _fragment_from_json(data: Mapping[str, Any]) -> Fragment:
    fragment_id = int(data["id"])
    for key in _UNSUPPORTED_KEYS:
        if data.get(key):
            raise UnsupportedFeatureError(f"fragment {fragment_id}: {key} is not supported")
    files = []
    for f in data["files"]:
        _no_base(f, fragment_id)
        files.append(
            DataFile(
                f["path"],
                tuple(f["fields"]),
                tuple(f["column_indices"]),
                int(f.get("file_major_version") or 0),
                int(f.get("file_minor_version") or 0),
                int(f.get("file_size_bytes") or 0),
            )
        )
    deletion = None
    if (d := data.get("deletion_file")) is not None:
        _no_base(d, fragment_id)
        kind = _KINDS.get(d.get("file_type"))
        if kind is None:
            raise ValueError(f"fragment {fragment_id}: unknown deletion file type {d!r}")
        deletion = DeletionFile(
            kind, int(d["read_version"]), int(d["id"]), int(d["num_deleted_rows"] or 0)
        )
    return Fragment(
        fragment_id,
        tuple(files),
        int(data.get("physical_rows") or 0),
        deletion,
        **_sequences_from_json(data, fragment_id),
    )


def _options_json(settings: CompactionSettings) -> dict[str, Any]:
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


def _options_from_json(data: Mapping[str, Any]) -> CompactionSettings:
    options = {k: v for k, v in data.items() if k not in _PYLANCE_ONLY}
    if options.pop("enable_binary_copy_force", False):
        options["compaction_mode"] = "force_binary_copy"
    return CompactionSettings.resolve(options, {}, "compaction options")


def _dumps(data: Mapping[str, Any]) -> str:
    return json_module.dumps(data, separators=(",", ":"))


# -- tasks, results and plans ---------------------------------------------------------


@dataclass(frozen=True)
class RewriteResult:
    """What one executed task wrote; pass it to :meth:`Compaction.commit`."""

    read_version: int
    original_fragments: tuple[Fragment, ...]
    # Numbered when committed.
    new_fragments: tuple[Fragment, ...]
    metrics: CompactionMetrics

    def json(self) -> str:
        return _dumps(
            {
                "metrics": self.metrics.to_json(),
                "new_fragments": [_fragment_json(f) for f in self.new_fragments],
                "read_version": self.read_version,
                "original_fragments": [_fragment_json(f) for f in self.original_fragments],
                "row_addrs": None,
            }
        )

    @classmethod
    def from_json(cls, json: str) -> RewriteResult:
        data = json_module.loads(json)
        return cls(
            int(data["read_version"]),
            tuple(_fragment_from_json(f) for f in data["original_fragments"]),
            tuple(_fragment_from_json(f) for f in data["new_fragments"]),
            CompactionMetrics.from_json(data.get("metrics") or {}),
        )

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (RewriteResult.from_json, (self.json(),))


@dataclass(frozen=True)
class CompactionTask:
    """One group of adjacent fragments to rewrite together."""

    read_version: int
    fragments: tuple[Fragment, ...]
    options: CompactionSettings

    def execute(self, dataset: LanceDataset) -> RewriteResult:
        """Write the new data files (not committed) from the version the plan read."""
        store = dataset._store
        manifest = (
            dataset._manifest
            if dataset.version == self.read_version
            else store.read_manifest(self.read_version)
        )
        new = rewrite_fragments(store, manifest, self.fragments, self.options)
        metrics = CompactionMetrics.of(self.fragments, new)
        return RewriteResult(self.read_version, self.fragments, new, metrics)

    def _task_json(self) -> dict[str, Any]:
        return {"fragments": [_fragment_json(f) for f in self.fragments]}

    def json(self) -> str:
        return _dumps(
            {
                "task": self._task_json(),
                "read_version": self.read_version,
                "options": _options_json(self.options),
            }
        )

    @classmethod
    def from_json(cls, json: str) -> CompactionTask:
        data = json_module.loads(json)
        fragments = tuple(_fragment_from_json(f) for f in data["task"]["fragments"])
        return cls(int(data["read_version"]), fragments, _options_from_json(data["options"]))

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (CompactionTask.from_json, (self.json(),))


@dataclass(frozen=True)
class CompactionPlan:
    """The tasks of one compaction, planned from version ``read_version``."""

    read_version: int
    tasks: tuple[CompactionTask, ...]
    options: CompactionSettings

    def num_tasks(self) -> int:
        return len(self.tasks)

    def json(self) -> str:
        return _dumps(
            {
                "tasks": [t._task_json() for t in self.tasks],
                "read_version": self.read_version,
                "options": _options_json(self.options),
            }
        )

    @classmethod
    def from_json(cls, json: str) -> CompactionPlan:
        data = json_module.loads(json)
        version = int(data["read_version"])
        options = _options_from_json(data["options"])
        tasks = tuple(
            CompactionTask(version, tuple(_fragment_from_json(f) for f in t["fragments"]), options)
            for t in data["tasks"]
        )
        return cls(version, tasks, options)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (CompactionPlan.from_json, (self.json(),))


class Compaction:
    """File compaction: :meth:`execute` in one process, or :meth:`plan`, the tasks'
    ``execute`` wherever, and :meth:`commit`."""

    @staticmethod
    def plan(
        dataset: LanceDataset, options: CompactionOptions | Mapping[str, Any]
    ) -> CompactionPlan:
        store, manifest = dataset._store, dataset._manifest
        settings = CompactionSettings.resolve(options, manifest.config, store.root)
        bins = plan_bins(store, manifest, settings)
        tasks = tuple(CompactionTask(manifest.version, b, settings) for b in bins)
        return CompactionPlan(manifest.version, tasks, settings)

    @staticmethod
    def execute(
        dataset: LanceDataset, options: CompactionOptions | Mapping[str, Any]
    ) -> CompactionMetrics:
        """Compact in this process; ``dataset`` moves to the new version."""
        return compact(dataset, options)

    @staticmethod
    def commit(
        dataset: LanceDataset,
        rewrites: Sequence[RewriteResult],
        options: CompactionOptions | Mapping[str, Any] | None = None,
    ) -> CompactionMetrics:
        """Commit executed tasks as one new version; ``dataset`` moves to it.

        Fails as retryable when a fragment they rewrote was changed meanwhile, and
        then removes the data files they wrote.
        """
        CompactionSettings.resolve(options, {}, dataset.uri)
        if not rewrites:
            return CompactionMetrics()
        groups = [ops.RewriteGroup(r.original_fragments, r.new_fragments) for r in rewrites]
        read_version = min(r.read_version for r in rewrites)
        dataset._advance_to(commit_rewrites(dataset._store, read_version, groups))
        return CompactionMetrics.total([r.metrics for r in rewrites])
