"""``LanceDataset``'s index methods under pylance's names: listing, building,
dropping, prewarming and statistics of indices, and row addresses carried
through the Fragment Reuse Index (the work is in :mod:`lancelet.dataset.indices`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import pyarrow as pa

from lancelet.dataset.core.snapshot import DatasetHandle, Snapshot
from lancelet.dataset.indices import build as index_build
from lancelet.dataset.indices import catalog as indices
from lancelet.dataset.indices import distributed, prewarm, vector_build
from lancelet.dataset.read import frag_reuse
from lancelet.errors import ArgumentError, UnsupportedOptionError
from lancelet.index.fts.queries import DocumentGranularity
from lancelet.table.manifest import Manifest

# The dataset class the mixin is part of (create_index returns it, as pylance).
_Dataset = TypeVar("_Dataset", bound="IndexMethods")


def _covered(snapshot: Snapshot) -> Manifest:
    """The manifest with each index's fragments as the Fragment Reuse Index has them."""
    return frag_reuse.with_coverage(snapshot.store, snapshot.manifest)


class IndexMethods(DatasetHandle):
    """The index calls, mixed into ``LanceDataset``."""

    def list_indices(self) -> list[dict[str, Any]]:
        return indices.list_indices(_covered(self.snapshot))

    def describe_indices(self) -> list[indices.IndexDescription]:
        return indices.describe_indices(_covered(self.snapshot))

    @property
    def has_index(self) -> bool:
        return len(self.describe_indices()) > 0

    def remap_row_addrs(self, addrs: pa.Array) -> pa.Array | None:
        """Row addresses carried across the compactions the Fragment Reuse Index
        records (null where the row was dropped, or its fragment is gone); None
        when the version has no reuse index."""
        if not isinstance(addrs, pa.Array):
            raise ArgumentError(f"remap_row_addrs takes a pyarrow Array, not {type(addrs)}")
        if not (pa.types.is_integer(addrs.type) or pa.types.is_null(addrs.type)):
            raise ArgumentError(f"remap_row_addrs takes integer addresses, not {addrs.type}")
        return frag_reuse.remap_row_addrs(self.snapshot.store, self.snapshot.manifest, addrs)

    def prewarm_index(
        self,
        name: str,
        *,
        with_position: bool = False,
        index_segments: Sequence[str] | None = None,
    ) -> None:
        """Read the index ``name`` into memory now, for this object's later scans."""
        prewarm.prewarm_index(
            self.snapshot, name, with_position=with_position, index_segments=index_segments
        )

    def drop_index(self, name: str) -> None:
        """Remove the index; its files stay until ``cleanup_old_versions``."""
        self.advance_to(indices.drop_index(self.snapshot, name))

    def create_scalar_index(
        self,
        column: str,
        index_type: str,
        name: str | None = None,
        *,
        replace: bool = True,
        train: bool = True,
        fragment_ids: list[int] | None = None,
        index_uuid: str | None = None,
        progress_callback: Any = None,
        format_version: int | str | None = None,
        document_granularity: DocumentGranularity = DocumentGranularity.ROW,
        **kwargs: Any,
    ) -> None:
        """Index ``column`` (BTREE, BITMAP, LABEL_LIST, ZONEMAP, BLOOMFILTER or NGRAM) over
        every fragment of this version, and commit it as a new version.  Filters on
        the column then read only the rows the index points to."""
        index_build.check_granularity(document_granularity)
        committed = index_build.create_scalar_index(
            self.snapshot,
            column,
            index_type,
            name,
            replace=replace,
            train=train,
            fragment_ids=fragment_ids,
            index_uuid=index_uuid,
            progress_callback=progress_callback,
            format_version=format_version,
            **kwargs,
        )
        if committed is not None:  # None: a distributed build was staged
            self.advance_to(committed)

    def merge_index_metadata(
        self,
        index_uuid: str,
        index_type: str,
        batch_readhead: int | None = None,
        progress_callback: Any = None,
    ) -> None:
        """Merge the INVERTED builds staged under ``index_uuid`` (by
        ``create_scalar_index(..., fragment_ids=, index_uuid=)``) into the index's
        files; commit it with ``LanceOperation.CreateIndex``."""
        distributed.merge_index_metadata(
            self.snapshot, index_uuid, index_type, batch_readhead, progress_callback
        )

    def create_index(
        self: _Dataset,
        column: str,
        index_type: str,
        name: str | None = None,
        metric: str = "L2",
        replace: bool = False,
        num_partitions: int | None = None,
        ivf_centroids: Any = None,
        pq_codebook: Any = None,
        num_sub_vectors: int | None = None,
        accelerator: Any = None,
        index_cache_size: int | None = None,
        shuffle_partition_batches: int | None = None,
        shuffle_partition_concurrency: int | None = None,
        ivf_centroids_file: str | None = None,
        precomputed_partition_dataset: str | None = None,
        storage_options: dict[str, str] | None = None,
        filter_nan: bool = True,
        train: bool = True,
        fragment_ids: list[int] | None = None,
        index_uuid: str | None = None,
        *,
        target_partition_size: int | None = None,
        streaming_sample_rate: Any = None,
        streaming_coreset_rate: Any = None,
        streaming_refine_passes: Any = None,
        skip_transpose: bool = False,
        progress_callback: Any = None,
        **kwargs: Any,
    ) -> _Dataset:
        """Build an IVF_FLAT, IVF_PQ (``num_sub_vectors``, 8-bit codes) or IVF_SQ
        vector index on ``column`` (l2, cosine or dot; an explicit ``num_partitions``;
        ``sample_rate``, ``max_iterations`` and ``num_bits=8`` as keywords) over
        every fragment of this version, and commit it as a new version; this dataset
        then shows that version (and is returned, as pylance returns it).  The other
        index types and options pylance has are refused by name;
        ``index_file_version="Legacy"`` writes IVF_PQ in pylance's one-file legacy
        layout."""
        given = dict(locals())
        kwargs, legacy_file = _index_file_layout(kwargs)
        options = {
            option: (given[option], default)
            for option, default in vector_build.PYLANCE_DEFAULTS.items()
        }
        committed = vector_build.create_index(
            self.snapshot,
            column,
            index_type,
            name,
            metric,
            replace,
            num_partitions,
            index_uuid,
            options,
            kwargs,
            legacy_file=legacy_file,
        )
        self.advance_to(committed)
        return self

    def index_statistics(self, index_name: str) -> dict[str, Any]:
        snapshot = self.snapshot
        return indices.index_statistics(snapshot.store, _covered(snapshot), index_name)


def _index_file_layout(kwargs: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """``kwargs`` less ``index_file_version``, and whether it asks for the legacy
    layout (``V3``, the default, or ``Legacy``; pylance honours Legacy for IVF_PQ
    only and writes V3 for the other types)."""
    version = kwargs.get("index_file_version")
    rest = {k: v for k, v in kwargs.items() if k != "index_file_version"}
    if version is None:
        return rest, False
    name = str(getattr(version, "value", version)).upper()
    if name not in ("V3", "LEGACY"):
        raise UnsupportedOptionError(
            f"create_index: index_file_version must be V3 or Legacy, not {version!r}"
        )
    return rest, name == "LEGACY"
