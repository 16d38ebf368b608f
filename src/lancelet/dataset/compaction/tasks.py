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
from typing import Any, Literal, TypedDict

from lancelet.dataset.compaction.commit import commit_rewrites, compact
from lancelet.dataset.compaction.json_form import (
    dumps,
    fragment_from_json,
    fragment_json,
    options_from_json,
    options_json,
)
from lancelet.dataset.compaction.options import CompactionMetrics, CompactionSettings
from lancelet.dataset.compaction.planning import plan_bins
from lancelet.dataset.compaction.rewrite import rewrite_fragments
from lancelet.dataset.core.snapshot import DatasetHandle
from lancelet.table.fragment import Fragment
from lancelet.transaction import operations as ops


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


@dataclass(frozen=True)
class RewriteResult:
    """What one executed task wrote; pass it to :meth:`Compaction.commit`."""

    read_version: int
    original_fragments: list[Fragment]
    # Numbered when committed.
    new_fragments: list[Fragment]
    metrics: CompactionMetrics

    def __repr__(self) -> str:
        return (
            f"RewriteResult(read_version={self.read_version}, "
            f"new_fragments={self.new_fragments!r}, old_fragments={self.original_fragments!r})"
        )

    def json(self) -> str:
        return dumps(
            {
                "metrics": self.metrics.to_json(),
                "new_fragments": [fragment_json(f) for f in self.new_fragments],
                "read_version": self.read_version,
                "original_fragments": [fragment_json(f) for f in self.original_fragments],
                "row_addrs": None,
            }
        )

    @staticmethod
    def from_json(json: str) -> RewriteResult:
        data = json_module.loads(json)
        return RewriteResult(
            int(data["read_version"]),
            [fragment_from_json(f) for f in data["original_fragments"]],
            [fragment_from_json(f) for f in data["new_fragments"]],
            CompactionMetrics.from_json(data.get("metrics") or {}),
        )

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (RewriteResult.from_json, (self.json(),))


@dataclass(frozen=True)
class CompactionTask:
    """One group of adjacent fragments to rewrite together."""

    read_version: int
    fragments: list[Fragment]
    options: CompactionSettings

    def execute(self, dataset: DatasetHandle) -> RewriteResult:
        """Write the new data files (not committed) from the version the plan read."""
        snapshot = dataset.snapshot
        store = snapshot.store
        manifest = (
            snapshot.manifest
            if snapshot.version == self.read_version
            else store.read_manifest(self.read_version)
        )
        new = rewrite_fragments(store, manifest, self.fragments, self.options)
        metrics = CompactionMetrics.of(self.fragments, new)
        return RewriteResult(self.read_version, list(self.fragments), list(new), metrics)

    def _task_json(self) -> dict[str, Any]:
        return {"fragments": [fragment_json(f) for f in self.fragments]}

    def json(self) -> str:
        return dumps(
            {
                "task": self._task_json(),
                "read_version": self.read_version,
                "options": options_json(self.options),
            }
        )

    @staticmethod
    def from_json(json: str) -> CompactionTask:
        data = json_module.loads(json)
        fragments = [fragment_from_json(f) for f in data["task"]["fragments"]]
        return CompactionTask(
            int(data["read_version"]), fragments, options_from_json(data["options"])
        )

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (CompactionTask.from_json, (self.json(),))


@dataclass(frozen=True)
class CompactionPlan:
    """The tasks of one compaction, planned from version ``read_version``."""

    read_version: int
    tasks: list[CompactionTask]
    options: CompactionSettings

    def num_tasks(self) -> int:
        return len(self.tasks)

    def __repr__(self) -> str:
        return (
            f"CompactionPlan(read_version={self.read_version}, "
            f"tasks=<{len(self.tasks)} compaction tasks>)"
        )

    def json(self) -> str:
        return dumps(
            {
                "tasks": [t._task_json() for t in self.tasks],
                "read_version": self.read_version,
                "options": options_json(self.options),
            }
        )

    @staticmethod
    def from_json(json: str) -> CompactionPlan:
        data = json_module.loads(json)
        version = int(data["read_version"])
        options = options_from_json(data["options"])
        tasks = [
            CompactionTask(version, [fragment_from_json(f) for f in t["fragments"]], options)
            for t in data["tasks"]
        ]
        return CompactionPlan(version, tasks, options)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (CompactionPlan.from_json, (self.json(),))


class Compaction:
    """File compaction: :meth:`execute` in one process, or :meth:`plan`, the tasks'
    ``execute`` wherever, and :meth:`commit`."""

    @staticmethod
    def plan(
        dataset: DatasetHandle, options: CompactionOptions | Mapping[str, Any]
    ) -> CompactionPlan:
        store, manifest = dataset.snapshot.store, dataset.snapshot.manifest
        settings = CompactionSettings.resolve(options, manifest.config, store.root)
        bins = plan_bins(store, manifest, settings)
        tasks = [CompactionTask(manifest.version, list(b), settings) for b in bins]
        return CompactionPlan(manifest.version, tasks, settings)

    @staticmethod
    def execute(
        dataset: DatasetHandle, options: CompactionOptions | Mapping[str, Any]
    ) -> CompactionMetrics:
        """Compact in this process; ``dataset`` moves to the new version."""
        metrics, committed = compact(dataset.snapshot, options)
        if committed is not None:
            dataset.advance_to(committed)
        return metrics

    @staticmethod
    def commit(
        dataset: DatasetHandle,
        rewrites: Sequence[RewriteResult],
        options: CompactionOptions | Mapping[str, Any] | None = None,
    ) -> CompactionMetrics:
        """Commit executed tasks as one new version; ``dataset`` moves to it.

        Fails as retryable when a fragment they rewrote was changed meanwhile, and
        then removes the data files they wrote.
        """
        snapshot = dataset.snapshot
        settings = CompactionSettings.resolve(options, snapshot.manifest.config, dataset.uri)
        if not rewrites:
            return CompactionMetrics()
        groups = [
            ops.RewriteGroup(tuple(r.original_fragments), tuple(r.new_fragments)) for r in rewrites
        ]
        read_version = min(r.read_version for r in rewrites)
        committed = commit_rewrites(
            snapshot.store, read_version, groups, settings.defer_index_remap
        )
        dataset.advance_to(committed)
        return CompactionMetrics.total([r.metrics for r in rewrites])
