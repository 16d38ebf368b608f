"""``prewarm_index``: an index's segments opened and read into memory now, so that the
scans of this dataset object that use it read no index pages from storage (an
IVF vector index segment is read whole when opened)."""

from __future__ import annotations

import uuid as uuid_lib
from collections.abc import Iterable

from lancelet.dataset.core.snapshot import Snapshot
from lancelet.dataset.read import index_plan, ivf_search
from lancelet.errors import (
    ArgumentError,
    IndexNotFoundError,
    UnsupportedIndexError,
)
from lancelet.index import json_kind
from lancelet.table.index import IndexMetadata, index_type

# Vector index types whose segments lancelet opens (and so can prewarm).
VECTOR_READ_TYPES = ivf_search.READ_TYPES


def prewarm_index(
    snapshot: Snapshot,
    name: str,
    *,
    with_position: bool = False,
    index_segments: Iterable[str | uuid_lib.UUID] | None = None,
) -> None:
    manifest = snapshot.manifest
    where = f"{snapshot.uri} version {manifest.version}"
    segments = [i for i in manifest.indices if i.name == name and not i.is_system]
    if not segments:
        raise IndexNotFoundError(f"{where}: no index named {name!r}")
    if with_position:
        # pylance takes it for full-text (INVERTED) indices only, which lancelet cannot
        # read: for any index lancelet reads, it is a bad argument (as in pylance).
        raise ArgumentError(f"{where}: prewarm_index with_position is for INVERTED indices")
    if index_segments is not None:
        segments = _chosen(segments, index_segments, f"{where}: index {name!r}")
    paths = index_plan.field_paths(manifest)
    arrow = manifest.schema.to_arrow()
    for segment in segments:
        if index_type(segment.index_details) in VECTOR_READ_TYPES:
            ivf_search.opened(snapshot.store, segment)  # read whole when opened
            continue
        if not _readable(segment, paths):
            raise UnsupportedIndexError(f"{where}: lancelet cannot read index {name!r}")
        dtype = index_plan.column_type(arrow, paths[segment.fields[0]])
        opened = index_plan.opened(snapshot.store, segment, dtype)
        prewarm = getattr(opened, "prewarm", None)
        if prewarm is not None:  # the other types were read whole when opened
            prewarm()


def _chosen(
    segments: list[IndexMetadata], wanted: Iterable[str | uuid_lib.UUID], where: str
) -> list[IndexMetadata]:
    try:
        ids = {uuid_lib.UUID(str(w)) for w in wanted}
    except ValueError as exc:
        raise ArgumentError(f"{where}: index_segments must be segment uuids") from exc
    missing = ids - {s.uuid for s in segments}
    if missing:
        raise IndexNotFoundError(f"{where}: has no segments {sorted(str(m) for m in missing)}")
    return [s for s in segments if s.uuid in ids]


def _readable(segment: IndexMetadata, paths: dict[int, str]) -> bool:
    details = segment.index_details
    kind = json_kind.target_kind(details)
    return (
        kind is not None
        and kind.reads(segment.index_version or 0)
        and len(segment.fields) == 1
        and segment.fields[0] in paths
    )
