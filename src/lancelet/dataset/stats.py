"""``ds.stats``: pylance's ``LanceStats`` (dataset and index statistics)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from lancelet.dataset.indices.catalog import index_statistics
from lancelet.dataset.read import frag_reuse
from lancelet.dataset.read.fragment_reader import FragmentReader

if TYPE_CHECKING:
    from lancelet.dataset.dataset import LanceDataset


class DatasetStats(TypedDict):
    num_deleted_rows: int
    num_fragments: int
    num_small_files: int


@dataclass
class FieldStatistics:
    """Statistics about a field in the dataset."""

    id: int  #: id of the field
    bytes_on_disk: int  #: (possibly compressed) bytes on disk used to store the field


@dataclass
class DataStatistics:
    """Statistics about the data in the dataset."""

    fields: list[FieldStatistics] = field(default_factory=list)


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
        fragments = self.dataset.snapshot.manifest.fragments
        return {
            "num_deleted_rows": sum(f.num_deleted_rows for f in fragments),
            "num_fragments": len(fragments),
            "num_small_files": sum(f.physical_rows < max_rows_per_group for f in fragments),
        }

    def index_stats(self, index_name: str) -> dict[str, Any]:
        store = self.dataset.snapshot.store
        manifest = frag_reuse.with_coverage(store, self.dataset.snapshot.manifest)
        return index_statistics(store, manifest, index_name)

    def data_stats(self) -> DataStatistics:
        """Bytes on disk of every field of the schema (pre-order): the sizes of the
        pages of its column in every data file, 0 for a field with no column of its own
        (a struct or list in files of format 2.1 and later) and for legacy datasets."""
        dataset = self.dataset
        manifest = dataset.snapshot.manifest
        sizes = {f.id: 0 for f in manifest.schema.fields}
        if manifest.data_storage_version not in ("0.1", "legacy"):
            for fragment in manifest.fragments:
                reader = FragmentReader(dataset.snapshot.store, manifest.schema, fragment)
                for index, data_file in enumerate(fragment.files):
                    opened = reader._file(index)
                    for field_id, column in zip(
                        data_file.fields, data_file.column_indices, strict=False
                    ):
                        if column >= 0 and field_id in sizes:
                            sizes[field_id] += opened.page_bytes(column)
        return DataStatistics([FieldStatistics(i, n) for i, n in sizes.items()])
