"""``LanceDataset`` methods pylance has and lancelet does not implement: each refuses by
name, saying why, rather than failing with an ``AttributeError`` or doing something
else."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from lancelet.errors import UnsupportedFunctionError

_VECTOR = "vector and full-text indices are not implemented in lancelet"
_DISTRIBUTED = "lancelet builds each index in one create_scalar_index call"
_MEM_WAL = "lancelet does not implement the MemWAL"
_NATIVE = "it reaches pylance's native engine, which lancelet does not have"


def _refusal(name: str, why: str) -> Callable[..., NoReturn]:
    def refuse(self: object, *args: Any, **kwargs: Any) -> NoReturn:
        raise UnsupportedFunctionError(f"LanceDataset.{name} is not supported: {why}")

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"Not supported by lancelet: {why}."
    return refuse


def _refused_property(name: str, why: str) -> property:
    return property(_refusal(name, why))


class PylanceOnlyMethods:
    """The refusals, mixed into ``LanceDataset``."""

    create_index = _refusal("create_index", _VECTOR + "; use create_scalar_index")
    create_index_uncommitted = _refusal("create_index_uncommitted", _DISTRIBUTED)
    merge_index_metadata = _refusal("merge_index_metadata", _DISTRIBUTED)
    merge_existing_index_segments = _refusal("merge_existing_index_segments", _DISTRIBUTED)
    commit_existing_index_segments = _refusal("commit_existing_index_segments", _DISTRIBUTED)
    get_ivf_model = _refusal("get_ivf_model", _VECTOR)
    centroids = _refusal("centroids", _VECTOR)
    delta = _refusal("delta", "use get_transactions and checkout_version to compare versions")
    create_branch = _refusal("create_branch", "lancelet reads and writes the main branch only")
    branches = _refused_property("branches", "lancelet reads and writes the main branch only")
    shallow_clone = _refusal("shallow_clone", "cloning datasets is not implemented")
    deep_clone = _refusal("deep_clone", "cloning datasets is not implemented")
    initialize_mem_wal = _refusal("initialize_mem_wal", _MEM_WAL)
    mem_wal_writer = _refusal("mem_wal_writer", _MEM_WAL)
    mem_wal_index_details = _refusal("mem_wal_index_details", _MEM_WAL)
    io_stats_snapshot = _refusal("io_stats_snapshot", "use lancelet.iops_counter")
    io_stats_incremental = _refusal("io_stats_incremental", "use lancelet.iops_counter")
    storage_options_accessor = _refused_property("storage_options_accessor", _NATIVE)
    new_file_session = _refusal("new_file_session", _NATIVE)
    tracked_files = _refusal("tracked_files", "listing tracked files is not implemented")
    all_files = _refusal("all_files", "listing stored files is not implemented")
    read_blobs = _refusal("read_blobs", "use take_blobs")
    read_blob_ranges = _refusal("read_blob_ranges", "use take_blobs and seek in the files")
    explain_cleanup_old_versions = _refusal(
        "explain_cleanup_old_versions", "cleanup plans are not reported; cleanup_old_versions"
    )
    migrate_manifest_paths_v2 = _refusal(
        "migrate_manifest_paths_v2", "lancelet does not rename manifests"
    )
    from_pydantic_model = _refusal("from_pydantic_model", "write pyarrow data instead")
