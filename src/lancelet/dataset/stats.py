"""``ds.stats``: pylance's ``LanceStats`` (dataset and index statistics)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from lancelet.dataset import frag_reuse
from lancelet.dataset.indices import index_statistics

if TYPE_CHECKING:
    from lancelet.dataset.dataset import LanceDataset


class DatasetStats(TypedDict):
    num_deleted_rows: int
    num_fragments: int
    num_small_files: int


@dataclass(frozen=True)
class LanceStats:
    """Statistics about one version of a dataset."""

    dataset: LanceDataset

    def dataset_stats(self, max_rows_per_group: int = 1024) -> DatasetStats:
        """Deleted rows, fragments, and fragments holding fewer than
        ``max_rows_per_group`` rows (deleted ones included), as pylance counts them."""
        if isinstance(max_rows_per_group, bool) or not isinstance(max_rows_per_group, int):
            raise TypeError(
                f"dataset_stats: max_rows_per_group must be an int, not {max_rows_per_group!r}"
            )
        fragments = self.dataset._manifest.fragments
        return {
            "num_deleted_rows": sum(f.num_deleted_rows for f in fragments),
            "num_fragments": len(fragments),
            "num_small_files": sum(f.physical_rows < max_rows_per_group for f in fragments),
        }

    def index_stats(self, index_name: str) -> dict[str, Any]:
        store = self.dataset._store
        manifest = frag_reuse.with_coverage(store, self.dataset._manifest)
        return index_statistics(store, manifest, index_name)
