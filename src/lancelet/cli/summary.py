"""What ``lancelet info`` reports of one version of a dataset, as plain JSON-able
values, read through the dataset's public methods only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from lancelet.cli.values import utc
from lancelet.dataset import LanceDataset, LanceFragment


def describe(ds: LanceDataset) -> dict[str, Any]:
    """The version's schema, storage, indices, features, tags and config."""
    fragments = ds.get_fragments()
    return {
        "uri": ds.uri,
        "version": ds.version,
        "latest_version": ds.latest_version,
        "timestamp": utc(ds.get_version()["timestamp"]).isoformat(),
        "data_storage_version": ds.data_storage_version,
        "schema": schema_fields(ds.schema),
        **storage(ds, fragments),
        "indices": index_coverage(ds, fragments),
        "features": features(ds, fragments),
        "tags": tags_by_name(ds),
        "config": dict(sorted(ds.config().items())),
    }


def schema_fields(schema: pa.Schema) -> list[dict[str, Any]]:
    """Top-level fields; a nested field's children are spelled out in its type."""
    return [
        {"name": field.name, "type": str(field.type), "nullable": field.nullable}
        for field in schema
    ]


def live_rows(fragment: LanceFragment) -> int:
    return fragment.physical_rows - fragment.num_deletions


def storage(ds: LanceDataset, fragments: Sequence[LanceFragment]) -> dict[str, Any]:
    """Fragments, rows and files.  A data file whose size the manifest does not
    record (older writers) makes the byte total unknown (None), not an undercount."""
    files = [data_file for fragment in fragments for data_file in fragment.data_files()]
    sizes = [data_file.file_size_bytes for data_file in files]
    unknown = sum(size is None for size in sizes)
    return {
        "fragments": len(fragments),
        "rows": ds.count_rows(),
        "deleted_rows": sum(fragment.num_deletions for fragment in fragments),
        "physical_rows": sum(fragment.physical_rows for fragment in fragments),
        "data_files": len(files),
        "data_bytes": None if unknown else sum(size or 0 for size in sizes),
        "data_files_of_unknown_size": unknown,
        "deletion_files": sum(fragment.deletion_file() is not None for fragment in fragments),
    }


def index_coverage(ds: LanceDataset, fragments: Sequence[LanceFragment]) -> list[dict[str, Any]]:
    """Each index (all its segments together): its type and columns, and how much of
    this version it covers; rows not indexed are the live rows of the fragments no
    segment covers (a filter scans those)."""
    described = []
    for index in ds.describe_indices():
        columns = list(index.field_names)
        covered_ids = {int(i) for segment in index.segments for i in segment.fragment_ids}
        uncovered = [f for f in fragments if f.fragment_id not in covered_ids]
        # An index of no column (the Fragment Reuse Index) indexes no rows, so
        # coverage means nothing for it.
        described.append(
            {
                "name": index.name,
                "type": index.index_type,
                "columns": columns,
                "segments": len(index.segments),
                "fragments_covered": len(fragments) - len(uncovered) if columns else None,
                "fragments_total": len(fragments),
                "rows_not_indexed": sum(live_rows(f) for f in uncovered) if columns else None,
            }
        )
    return described


def features(ds: LanceDataset, fragments: Sequence[LanceFragment]) -> dict[str, bool]:
    """The table format's optional features this version uses (those the manifest's
    feature flags announce to readers)."""
    file_versions = {
        (data_file.file_major_version, data_file.file_minor_version)
        for fragment in fragments
        for data_file in fragment.data_files()
    }
    return {
        "stable_row_ids": ds.has_stable_row_ids,
        "deletion_files": any(f.deletion_file() is not None for f in fragments),
        "table_config": bool(ds.config()),
        "external_base_paths": bool(ds.base_paths()),
        "mixed_file_versions": len(file_versions) > 1,
    }


def tags_by_name(ds: LanceDataset) -> dict[str, int]:
    """Every tag of the dataset and the version it points at."""
    return {name: entry["version"] for name, entry in sorted(ds.tags.list().items())}
