"""``LanceDataset`` methods pylance has and lancelet does not implement: each takes
pylance's parameters (so a call binds as it would there, and a misspelt keyword is a
``TypeError``) and refuses by name, saying why, rather than failing with an
``AttributeError`` or doing something else."""

from __future__ import annotations

from typing import Any, NoReturn

from lancelet.errors import UnsupportedFunctionError

_VECTOR = "vector and full-text indices are not implemented in lancelet"
_DISTRIBUTED = "lancelet builds each index in one create_scalar_index call"
_MEM_WAL = "lancelet does not implement the MemWAL"
_NATIVE = "it reaches pylance's native engine, which lancelet does not have"
_BRANCHES = "lancelet reads and writes the main branch only"
_CLONES = "cloning datasets is not implemented"


def _refuse(name: str, why: str) -> NoReturn:
    raise UnsupportedFunctionError(f"LanceDataset.{name} is not supported: {why}")


def _refused_property(name: str, why: str) -> property:
    def refuse(self: object) -> NoReturn:
        _refuse(name, why)

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"Not supported by lancelet: {why}."
    return property(refuse)


class PylanceOnlyMethods:
    """The refusals, mixed into ``LanceDataset``."""

    def create_index_uncommitted(
        self,
        column: Any,
        index_type: Any,
        name: Any = None,
        metric: Any = "L2",
        replace: Any = False,
        num_partitions: Any = None,
        ivf_centroids: Any = None,
        pq_codebook: Any = None,
        num_sub_vectors: Any = None,
        accelerator: Any = None,
        index_cache_size: Any = None,
        shuffle_partition_batches: Any = None,
        shuffle_partition_concurrency: Any = None,
        ivf_centroids_file: Any = None,
        precomputed_partition_dataset: Any = None,
        storage_options: Any = None,
        filter_nan: Any = True,
        train: Any = True,
        fragment_ids: Any = None,
        index_uuid: Any = None,
        *,
        target_partition_size: Any = None,
        streaming_sample_rate: Any = None,
        streaming_coreset_rate: Any = None,
        streaming_refine_passes: Any = None,
        skip_transpose: Any = False,
        rabitq_model: Any = None,
        **kwargs: Any,
    ) -> NoReturn:
        _refuse("create_index_uncommitted", _DISTRIBUTED)

    def merge_existing_index_segments(self, segments: Any) -> NoReturn:
        _refuse("merge_existing_index_segments", _DISTRIBUTED)

    def commit_existing_index_segments(
        self, index_name: Any, column: Any, segments: Any
    ) -> NoReturn:
        _refuse("commit_existing_index_segments", _DISTRIBUTED)

    def get_ivf_model(self, index_name: Any) -> NoReturn:
        _refuse("get_ivf_model", _VECTOR)

    def centroids(self, *, index_name: Any = None, column: Any = None) -> NoReturn:
        _refuse("centroids", _VECTOR)

    def create_branch(
        self, branch: Any, reference: Any = None, storage_options: Any = None
    ) -> NoReturn:
        _refuse("create_branch", _BRANCHES)

    branches = _refused_property("branches", _BRANCHES)

    def shallow_clone(
        self, target_path: Any, reference: Any, storage_options: Any = None, **kwargs: Any
    ) -> NoReturn:
        _refuse("shallow_clone", _CLONES)

    def deep_clone(
        self, target_path: Any, reference: Any, storage_options: Any = None, **kwargs: Any
    ) -> NoReturn:
        _refuse("deep_clone", _CLONES)

    def initialize_mem_wal(
        self,
        *,
        maintained_indexes: Any = None,
        bucket_column: Any = None,
        num_buckets: Any = None,
        identity_column: Any = None,
        unsharded: Any = False,
        durable_write: Any = None,
        max_wal_buffer_size: Any = None,
        max_wal_flush_interval_ms: Any = None,
        max_memtable_size: Any = None,
        max_memtable_rows: Any = None,
        max_memtable_batches: Any = None,
        max_unflushed_memtable_bytes: Any = None,
        manifest_scan_batch_size: Any = None,
        backpressure_log_interval_ms: Any = None,
        stats_log_interval_ms: Any = None,
        hnsw_params: Any = None,
    ) -> NoReturn:
        _refuse("initialize_mem_wal", _MEM_WAL)

    def mem_wal_writer(
        self,
        shard_id: Any,
        *,
        durable_write: Any = None,
        max_wal_buffer_size: Any = None,
        max_wal_flush_interval_ms: Any = None,
        max_memtable_size: Any = None,
        max_memtable_rows: Any = None,
        max_memtable_batches: Any = None,
        max_unflushed_memtable_bytes: Any = None,
        manifest_scan_batch_size: Any = None,
        backpressure_log_interval_ms: Any = None,
        stats_log_interval_ms: Any = None,
        hnsw_params: Any = None,
    ) -> NoReturn:
        _refuse("mem_wal_writer", _MEM_WAL)

    def mem_wal_index_details(self) -> NoReturn:
        _refuse("mem_wal_index_details", _MEM_WAL)

    def io_stats_snapshot(self) -> NoReturn:
        _refuse("io_stats_snapshot", "use lancelet.iops_counter")

    def io_stats_incremental(self) -> NoReturn:
        _refuse("io_stats_incremental", "use lancelet.iops_counter")

    storage_options_accessor = _refused_property("storage_options_accessor", _NATIVE)

    def new_file_session(self) -> NoReturn:
        _refuse("new_file_session", _NATIVE)

    def tracked_files(self, *, min_version: Any = None, progress: Any = None) -> NoReturn:
        _refuse("tracked_files", "listing tracked files is not implemented")

    def all_files(self) -> NoReturn:
        _refuse("all_files", "listing stored files is not implemented")

    def read_blobs(
        self,
        blob_column: Any,
        ids: Any = None,
        addresses: Any = None,
        indices: Any = None,
        *,
        io_buffer_size: Any = None,
        preserve_order: Any = None,
    ) -> NoReturn:
        _refuse("read_blobs", "use take_blobs")

    def read_blob_ranges(
        self,
        blob_column: Any,
        requests: Any,
        *,
        selector: Any,
        io_buffer_size: Any = None,
        preserve_order: Any = None,
    ) -> NoReturn:
        _refuse("read_blob_ranges", "use take_blobs and seek in the files")

    def explain_cleanup_old_versions(
        self,
        older_than: Any = None,
        retain_versions: Any = None,
        *,
        delete_unverified: Any = False,
        error_if_tagged_old_versions: Any = True,
        delete_rate_limit: Any = None,
        versions: Any = None,
        include_files: Any = False,
        max_files: Any = 1000,
    ) -> NoReturn:
        _refuse(
            "explain_cleanup_old_versions", "cleanup plans are not reported; cleanup_old_versions"
        )

    def migrate_manifest_paths_v2(self) -> NoReturn:
        _refuse("migrate_manifest_paths_v2", "lancelet does not rename manifests")

    @classmethod
    def from_pydantic_model(
        cls, model_class: Any, data: Any, uri: Any = None, mode: Any = "create", **kwargs: Any
    ) -> NoReturn:
        _refuse("from_pydantic_model", "write pyarrow data instead")
