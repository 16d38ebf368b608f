"""The indices of a dataset, as pylance shows them, and the commits that change them.

Everything here reads the manifest's index metadata (:mod:`lancelet.table.index`);
only ``index_statistics`` opens index files, for what they alone can tell (a
B-tree's pages, a bitmap index's keys), and only of the types lancelet reads.

``commit_index`` is the entry point of index builders: it records an index whose
files are already written under ``_indices/<uuid>/`` with one ``CreateIndex``
commit.  ``drop_index`` commits one that removes every index of a name; the files
stay until ``cleanup_old_versions`` finds no kept version referring to them.
"""

from __future__ import annotations

import uuid as uuid_lib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from pyroaring import BitMap, FrozenBitMap

from lancelet import io
from lancelet.dataset.core.snapshot import Snapshot
from lancelet.dataset.indices import vector_stats
from lancelet.dataset.read import frag_reuse, index_plan
from lancelet.dataset.versions.committing import commit_transaction
from lancelet.errors import ArgumentError, IndexExistsError, IndexNotFoundError
from lancelet.index import json_index, json_kind
from lancelet.index.fts import details as fts_details
from lancelet.index.vector import details as vector_details
from lancelet.index.vector import details_view
from lancelet.table import naming
from lancelet.table.index import (
    FRAG_REUSE_INDEX,
    IndexDetails,
    IndexFile,
    IndexMetadata,
    index_type,
)
from lancelet.table.manifest import Manifest
from lancelet.transaction import operations as ops
from lancelet.transaction.store import DatasetStore

# -- descriptions ----------------------------------------------------------------------


@dataclass(frozen=True)
class IndexSegmentDescription:
    uuid: str
    fragment_ids: BitMap
    dataset_version_at_last_update: int
    index_version: int
    created_at: datetime | None
    base_id: int | None
    # None when the writer did not record the index's files.
    size_bytes: int | None
    covering_fields: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class IndexDescription:
    """pylance's ``IndexDescription``: one index, over all of its segments."""

    name: str
    type_url: str
    index_type: str
    num_rows_indexed: int
    fields: list[int]
    field_names: list[str]
    num_segments: int
    total_size_bytes: int | None
    segments: list[IndexSegmentDescription]
    # Decoded details; None when lancelet cannot decode this kind's details.
    details: dict[str, Any] | None


def _by_name(manifest: Manifest) -> dict[str, list[IndexMetadata]]:
    """Listed indices by name, names sorted as pylance lists them: the user's, and
    the Fragment Reuse Index (pylance lists it; other system indices it does not)."""
    groups: dict[str, list[IndexMetadata]] = {}
    for index in manifest.indices:
        if not index.is_system or index.name == FRAG_REUSE_INDEX:
            groups.setdefault(index.name, []).append(index)
    return dict(sorted(groups.items()))


def _type_url(index: IndexMetadata) -> str:
    return index.recorded_details.type_url if index.recorded_details else ""


def list_indices(manifest: Manifest) -> list[dict[str, Any]]:
    """pylance's ``list_indices``: one dict per index segment, sorted by name."""
    return [
        {
            "name": index.name,
            "type": index_type(index.recorded_details),
            "uuid": str(index.uuid),
            "fields": [manifest.schema.field_path(f) for f in index.fields],
            "version": index.dataset_version,
            "fragment_ids": _bitmap(index),
            "base_id": index.base_id,
        }
        for indices in _by_name(manifest).values()
        for index in indices
    ]


class FragmentIds(BitMap):
    """A bitmap of fragment ids that equals a set of the same ids, as pylance's
    ``lance.bitmap.Bitmap`` does (``list_indices()[0]["fragment_ids"] == {0}``)."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (set, frozenset)):
            return set(self) == other
        # NotImplemented (another type) is passed on, for Python to decide.
        equal: bool = super().__eq__(other)
        return equal

    __hash__ = None  # type: ignore[assignment]


def _bitmap(index: IndexMetadata) -> BitMap:
    ids = index.fragment_bitmap
    return FragmentIds(ids) if ids is not None else FragmentIds()


def _indexed_rows(manifest: Manifest, index: IndexMetadata) -> int:
    """Live rows of the fragments the index holds that the version still has."""
    return sum(f.num_rows for f in manifest.fragments if index.covers(f.id))


def _size(index: IndexMetadata) -> int | None:
    return sum(f.size_bytes for f in index.files) if index.files else None


def _segment(index: IndexMetadata) -> IndexSegmentDescription:
    created = None
    if index.created_at is not None:
        created = datetime.fromtimestamp(index.created_at / 1000, tz=timezone.utc)
    return IndexSegmentDescription(
        uuid=str(index.uuid),
        fragment_ids=_bitmap(index),
        dataset_version_at_last_update=index.dataset_version,
        index_version=index.index_version or 0,
        created_at=created,
        base_id=index.base_id,
        size_bytes=_size(index),
    )


# Kinds whose details pylance shows as an empty dict, whatever their parameters.
_PLAIN_DETAILS = frozenset(
    f"{kind}IndexDetails"
    for kind in ("BTree", "Bitmap", "LabelList", "ZoneMap", "BloomFilter", "NGram", "FragmentReuse")
)


def _details(index: IndexMetadata) -> dict[str, Any] | None:
    details = index.recorded_details
    if details is None or not details.value:
        return {}
    wrapped = json_index.unwrap(details.type_url, details.value)
    if wrapped is not None:
        target = IndexDetails(wrapped.target_type_url, wrapped.target_value)
        target_details: dict[str, Any] | None = (
            {} if target.message_name in _PLAIN_DETAILS else None
        )
        return {"path": wrapped.path, "target_details": target_details}
    if details.type_url == vector_details.TYPE_URL:
        return details_view.describe(details.value)
    if details.type_url == fts_details.TYPE_URL:
        return fts_details.describe(details.value)
    return {} if details.message_name in _PLAIN_DETAILS else None


def _stated_details(details: IndexDetails | None) -> IndexDetails | None:
    """The details whose type ``index_stats`` names: pylance 14 calls a JSON index a
    BTree there, whatever its target type (its statistics are its target's)."""
    if details is None or details.type_url != json_index.TYPE_URL:
        return details
    return IndexDetails("/lance.table.BTreeIndexDetails")


def describe_indices(manifest: Manifest) -> list[IndexDescription]:
    out = []
    for name, indices in _by_name(manifest).items():
        first = indices[0]
        sizes = [_size(i) for i in indices]
        out.append(
            IndexDescription(
                name=name,
                type_url=_type_url(first),
                index_type=index_type(first.recorded_details),
                num_rows_indexed=sum(_indexed_rows(manifest, i) for i in indices),
                fields=list(first.fields),
                field_names=[manifest.schema.field_path(f) for f in first.fields],
                num_segments=len(indices),
                total_size_bytes=None if None in sizes else sum(s or 0 for s in sizes),
                segments=[_segment(i) for i in indices],
                details=_details(first),
            )
        )
    return out


def _named(manifest: Manifest, name: str, where: str) -> list[IndexMetadata]:
    found = [i for i in manifest.indices if i.name == name]
    if not found:
        names = sorted({i.name for i in manifest.indices})
        raise IndexNotFoundError(
            f'Index "{name}" not found ({where}: version {manifest.version} has the '
            f"indices {names})"
        )
    return found


def index_statistics(store: DatasetStore, manifest: Manifest, name: str) -> dict[str, Any]:
    """pylance's ``stats.index_stats(name)``.  The type-specific ``indices`` and
    ``segments`` entries are read from the index files of the types lancelet reads;
    for other types they are left out rather than made up."""
    indices = _named(manifest, name, store.root)
    if name == FRAG_REUSE_INDEX:
        # What pylance tells of it.
        return {"num_versions": len(frag_reuse.read_details(store, indices[0]).versions)}
    per_delta = [_indexed_rows(manifest, i) for i in indices]
    covered = {f.id for f in manifest.fragments if any(i.covers(f.id) for i in indices)}
    kind = indices[0].index_details
    specific = _segment_statistics(store, manifest, indices)
    # pylance names the type from the segments that cover some fragment.
    every_empty = all(_covers_nothing(i) for i in indices)
    stats: dict[str, Any] = {
        "index_type": "N/A" if every_empty else index_type(_stated_details(kind)),
        "name": name,
        "num_indices": len(indices),
        "num_segments": len(indices),
    }
    if specific is not None:
        stats["indices"] = specific
        stats["segments"] = specific
    created = [i.created_at for i in indices if i.created_at is not None]
    stats.update(
        {
            "num_indexed_fragments": len(covered),
            "num_indexed_rows": sum(per_delta),
            "num_unindexed_fragments": len(manifest.fragments) - len(covered),
            "num_unindexed_rows": manifest.num_rows - sum(per_delta),
            "num_indexed_rows_per_delta": per_delta,
            "updated_at_timestamp_ms": max(created) if created else None,
        }
    )
    return stats


def _covers_nothing(index: IndexMetadata) -> bool:
    """An empty segment (``train=False``), or one whose every fragment was replaced."""
    return index.fragment_bitmap is not None and not len(index.fragment_bitmap)


def _segment_statistics(
    store: DatasetStore, manifest: Manifest, indices: Sequence[IndexMetadata]
) -> list[dict[str, Any]] | None:
    paths = index_plan.field_paths(manifest)
    if all(index_type(i.index_details) in vector_stats.READ_TYPES for i in indices):
        return vector_stats.segment_statistics(store, indices)
    if json_kind.target_kind(indices[0].index_details) is None:
        return None
    out: list[dict[str, Any]] = []
    for index in indices:
        if _covers_nothing(index):
            out.append({})  # pylance does not open such a segment
            continue
        path = paths.get(index.fields[0]) if len(index.fields) == 1 else None
        if path is None:
            return None
        dtype = index_plan.column_type(manifest.schema.to_arrow(), path)
        out.append(index_plan.opened(store, index, dtype).statistics())
    return out


# -- commits -----------------------------------------------------------------------------


def index_files(store: DatasetStore, index_uuid: uuid_lib.UUID) -> tuple[IndexFile, ...]:
    directory = store.path(naming.INDICES_DIR, str(index_uuid))
    names = sorted(store.io.list_dir(directory))
    return tuple(IndexFile(n, store.io.size_of(io.join(directory, n))) for n in names)


def commit_index(
    snapshot: Snapshot,
    name: str,
    field_ids: Sequence[int],
    index_uuid: uuid_lib.UUID,
    index_details: IndexDetails,
    fragment_ids: Iterable[int],
    *,
    replace: bool = False,
    index_version: int = 0,
) -> Manifest:
    """Record an index built from ``snapshot``'s version, whose files are written
    under ``_indices/<index_uuid>/``; the version that lists it.  An index of that
    name is replaced only with ``replace=True``."""
    manifest = snapshot.manifest
    where = f"{snapshot.uri} version {manifest.version}"
    fragment_ids = list(fragment_ids)
    check_new_index(manifest, name, field_ids, replace, where, fragment_ids)
    index = new_index_metadata(
        snapshot, name, field_ids, index_uuid, index_details, fragment_ids, index_version
    )
    # A replaced index's segments are removed by the same commit, as pylance lists them.
    return commit_indices(snapshot, (index,), tuple(i for i in manifest.indices if i.name == name))


def new_index_metadata(
    snapshot: Snapshot,
    name: str,
    field_ids: Sequence[int],
    index_uuid: uuid_lib.UUID,
    index_details: IndexDetails,
    fragment_ids: Iterable[int],
    index_version: int,
) -> IndexMetadata:
    """The metadata of an index built from ``snapshot``'s version, whose files are
    under ``_indices/<index_uuid>/``."""
    files = index_files(snapshot.store, index_uuid)
    if not files:
        raise ArgumentError(
            f"{snapshot.uri}: index {name!r} has no files under _indices/{index_uuid}/"
        )
    return IndexMetadata(
        uuid=index_uuid,
        fields=tuple(field_ids),
        name=name,
        dataset_version=snapshot.version,
        fragment_bitmap=FrozenBitMap(fragment_ids),
        index_details=index_details,
        index_version=index_version,
        created_at=int(datetime.now(timezone.utc).timestamp() * 1000),
        files=files,
    )


def commit_indices(
    snapshot: Snapshot,
    new: Sequence[IndexMetadata],
    removed: Sequence[IndexMetadata] = (),
) -> Manifest:
    """One CreateIndex commit: ``new`` joins the indices, ``removed`` are dropped by
    uuid; the version it made."""
    txn = ops.Transaction(snapshot.version, ops.CreateIndex(tuple(new), tuple(removed)))
    return commit_transaction(snapshot.store, txn)


def check_new_index(
    manifest: Manifest,
    name: str,
    field_ids: Sequence[int],
    replace: bool,
    where: str,
    fragment_ids: Iterable[int] = (),
) -> None:
    """Refuse an index that ``manifest`` cannot take under ``name``."""
    if not name:
        raise ArgumentError(f"{where}: an index needs a name")
    unknown = set(field_ids) - {f.id for f in manifest.schema.fields}
    if not field_ids or unknown:
        raise ArgumentError(f"{where}: index {name!r} covers unknown field ids {sorted(unknown)}")
    absent = set(fragment_ids) - {f.id for f in manifest.fragments}
    if absent:
        raise ArgumentError(f"{where}: index {name!r} claims absent fragments {sorted(absent)}")
    for existing in manifest.indices:
        if existing.name != name:
            continue
        if existing.fields != tuple(field_ids):
            raise IndexExistsError(
                f"{where}: Index name '{name}' already exists with different fields, "
                "please specify a different name"
            )
        if not replace:
            raise IndexExistsError(
                f"{where}: Index name '{name}' already exists, please specify a different "
                "name or use replace=True"
            )


def drop_index(snapshot: Snapshot, name: str) -> Manifest:
    """Commit the removal of every index named ``name``; the version it made."""
    return commit_indices(snapshot, (), _named(snapshot.manifest, name, snapshot.uri))


def cleanup_frag_reuse(snapshot: Snapshot) -> Manifest | None:
    """Commit the Fragment Reuse Index without the versions no segment needs any more
    (gone entirely when none is); the version committed, or None when there is
    nothing to drop."""
    store, manifest = snapshot.store, snapshot.manifest
    current = frag_reuse.reuse_index(manifest)
    after = frag_reuse.trimmed(store, manifest)
    if current is None or after is current:
        return None
    new = (after,) if after is not None else ()
    txn = ops.Transaction(manifest.version, ops.CreateIndex(new, (current,)))
    try:
        return commit_transaction(store, txn)
    except BaseException:
        if after is not None:
            store.io.remove_tree(store.path(naming.INDICES_DIR, str(after.uuid)))
        raise
