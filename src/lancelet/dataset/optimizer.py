"""``dataset.optimize``: table maintenance under pylance's method names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lancelet import events
from lancelet.dataset.compaction import CompactionMetrics, compact
from lancelet.dataset.core.options import check_options
from lancelet.dataset.indices.catalog import cleanup_frag_reuse
from lancelet.dataset.indices.optimize import optimize_indices
from lancelet.dataset.versions import auto_cleanup
from lancelet.dataset.versions.auto_cleanup import AutoCleanupConfig

if TYPE_CHECKING:
    from lancelet.dataset.dataset import LanceDataset


class DatasetOptimizer:
    """``dataset.optimize``: table maintenance, with pylance's method names."""

    def __init__(self, dataset: LanceDataset) -> None:
        self._dataset = dataset

    def compact_files(
        self,
        *,
        target_rows_per_fragment: int | None = None,
        max_rows_per_group: int | None = None,
        max_bytes_per_file: int | None = None,
        materialize_deletions: bool | None = None,
        materialize_deletions_threshold: float | None = None,
        defer_index_remap: bool | None = None,
        num_threads: int | None = None,
        batch_size: int | None = None,
        compaction_mode: str | None = None,
        binary_copy_read_batch_bytes: int | None = None,
        max_source_fragments: int | None = None,
        max_source_rows: int | None = None,
        max_source_bytes: int | None = None,
        excluded_fragment_ids: list[int] | None = None,
        data_storage_version: str | None = None,
    ) -> CompactionMetrics:
        """Merge small fragments and drop deleted rows and dropped columns from the
        files, keeping the order of the rows (see the module docstring for which
        fragments are rewritten)."""
        options = {k: v for k, v in locals().items() if k != "self"}
        events.dataset_event("compacting", self._dataset.uri)
        metrics, committed = compact(self._dataset.snapshot, options)
        if committed is not None:
            self._dataset.advance_to(committed)
        return metrics

    def optimize_indices(
        self,
        *,
        num_indices_to_merge: int | None = None,
        index_names: list[str] | None = None,
        retrain: bool = False,
    ) -> None:
        """Bring fragments added since an index was built under it: merged with the
        index's last ``num_indices_to_merge`` segments into one, or with
        ``num_indices_to_merge=0`` as a delta segment of their own; one commit for
        every index changed, none when nothing changes (as pylance)."""
        committed = optimize_indices(
            self._dataset.snapshot,
            num_indices_to_merge=num_indices_to_merge,
            index_names=index_names,
            retrain=retrain,
        )
        if committed is not None:
            self._dataset.advance_to(committed)

    def cleanup_frag_reuse_index(self) -> bool:
        """Drop the Fragment Reuse Index's versions that every index segment has
        been rebuilt past (lancelet's own: pylance keeps them); True when it
        committed a new version."""
        committed = cleanup_frag_reuse(self._dataset.snapshot)
        if committed is None:
            return False
        self._dataset.advance_to(committed)
        return True

    def enable_auto_cleanup(self, auto_cleanup_config: AutoCleanupConfig, **kwargs: Any) -> None:
        """Clean up old versions after commits, as ``auto_cleanup_config`` says."""
        check_options(kwargs, "enable_auto_cleanup")
        self._dataset.update_config(auto_cleanup.config_values(auto_cleanup_config))

    def disable_auto_cleanup(self, **kwargs: Any) -> None:
        check_options(kwargs, "disable_auto_cleanup")
        self._dataset.delete_config_keys([auto_cleanup.INTERVAL_KEY, auto_cleanup.OLDER_THAN_KEY])
