"""``optimize_indices``: bring fragments added since an index was built under it, as
pylance 14 does for scalar indices, in one ``CreateIndex`` commit for every index.

For each index (its segments in the manifest's order) the fragments no segment holds
are its unindexed ones.  With ``num_indices_to_merge=0`` they get a delta segment of
their own, recorded as built from the current version.  Otherwise the last
``num_indices_to_merge`` segments that still hold a fragment of the version and the
unindexed fragments are rebuilt as one segment, which keeps the first merged
segment's ``dataset_version``; segments holding only fragments that are gone stay as
they are, unless all are such, when the last is replaced by a segment recorded as
built from the current version.  An index with no unindexed fragment and at most one
segment to merge is left as it is; when no index changes, nothing is committed.
``retrain`` changes nothing for scalar indices (pylance retrains only vector
indices, which are built anew: :mod:`vector_retrain`), and names in
``index_names`` that name no index are passed over, as pylance does.  Vector
indices follow their own rules (:mod:`vector_optimize`), in the same commit.
"""

from __future__ import annotations

import uuid as uuid_lib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyroaring import FrozenBitMap

from lancelet.dataset.core.snapshot import Snapshot
from lancelet.dataset.indices import catalog as indices
from lancelet.dataset.indices.build import IndexedField, build_index, resolve_field
from lancelet.dataset.indices.vector_optimize import (
    VectorRebuild,
    is_vector,
    rewritable,
    vector_plan,
)
from lancelet.dataset.indices.vector_retrain import VectorRetrain
from lancelet.dataset.read import frag_reuse, index_plan
from lancelet.errors import NumberOutOfRangeError, UnsupportedIndexError
from lancelet.index import json_kind, registry
from lancelet.table import naming
from lancelet.table.index import IndexMetadata
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore


@dataclass(frozen=True)
class _Rebuild:
    """One index's new segment: the segments it replaces and the fragments it holds."""

    name: str
    merged: tuple[IndexMetadata, ...]
    fragment_ids: tuple[int, ...]
    dataset_version: int


def optimize_indices(
    snapshot: Snapshot,
    *,
    num_indices_to_merge: int | None = None,
    index_names: Sequence[str] | None = None,
    retrain: bool = False,
) -> Manifest | None:
    """See the module docstring.  Indices of types lancelet does not build are left as
    they are, unless named in ``index_names``, which refuses them.  The version
    committed, or None when no index needed anything."""
    manifest = snapshot.manifest
    where = f"{snapshot.uri} version {manifest.version}"
    merge = 1 if num_indices_to_merge is None else num_indices_to_merge
    if not isinstance(merge, int):
        raise TypeError(f"{where}: num_indices_to_merge must be an integer, not {merge!r}")
    if merge < 0:
        raise NumberOutOfRangeError(f"{where}: num_indices_to_merge must not be negative: {merge}")
    # pylance builds (and lists in its CreateIndex) the indices in name order, whatever
    # their order in the manifest.
    plans: list[_Rebuild | VectorRebuild | VectorRetrain] = []
    for name, segments in sorted(_groups(manifest, index_names, where).items()):
        plan: _Rebuild | VectorRebuild | VectorRetrain | None
        if is_vector(segments[0]):
            plan = vector_plan(snapshot, name, segments, num_indices_to_merge, retrain, where)
        else:
            plan = _plan(snapshot, name, segments, merge)
        if plan is not None:
            plans.append(plan)
    return _build_and_commit(snapshot, plans, where) if plans else None


def _plan(
    snapshot: Snapshot, name: str, segments: Sequence[IndexMetadata], merge: int
) -> _Rebuild | None:
    manifest = snapshot.manifest
    held = _held(snapshot, segments)
    unindexed = [f.id for f in manifest.fragments if not any(f.id in h for h in held)]
    if merge == 0:
        if not unindexed:
            return None
        return _Rebuild(name, (), tuple(unindexed), manifest.version)
    present = FrozenBitMap(f.id for f in manifest.fragments)
    live = [(s, h) for s, h in zip(segments, held, strict=True) if h & present]
    if live:
        chosen = live[-min(merge, len(live)) :]
        version = chosen[0][0].dataset_version
    else:
        # Every segment holds only fragments that are gone: the last is replaced by a
        # segment recorded as built from this version.
        chosen = [(segments[-1], held[-1])]
        version = manifest.version
    if not unindexed and len(chosen) <= 1:
        return None
    covered = set(unindexed).union(*(h for _, h in chosen))
    fragment_ids = tuple(f.id for f in manifest.fragments if f.id in covered)
    return _Rebuild(name, tuple(s for s, _ in chosen), fragment_ids, version)


def _build_and_commit(
    snapshot: Snapshot, plans: Sequence[_Rebuild | VectorRebuild | VectorRetrain], where: str
) -> Manifest:
    """Build every new segment, then commit them all at once; on any failure the new
    segments' directories go."""
    manifest = snapshot.manifest
    store = snapshot.store
    built: list[IndexMetadata] = []
    try:
        for plan in plans:
            if isinstance(plan, _Rebuild):
                built.append(_build(snapshot, plan, where))
            else:
                built.append(plan.build(snapshot, where))
        # Removed segments are listed in manifest order, new ones in name order.
        merged = {s.uuid for plan in plans for s in plan.merged}
        removed = tuple(s for s in manifest.indices if s.uuid in merged)
        return indices.commit_indices(snapshot, tuple(built), removed)
    except BaseException:
        for segment in built:
            store.io.remove_tree(store.path(naming.INDICES_DIR, str(segment.uuid)))
        raise


def _build(snapshot: Snapshot, plan: _Rebuild, where: str) -> IndexMetadata:
    manifest = snapshot.manifest
    first = next(i for i in manifest.indices if i.name == plan.name)
    kind = json_kind.rebuild_kind(first.index_details)
    assert kind is not None
    path = index_plan.field_paths(manifest)[first.fields[0]]
    field = resolve_field(manifest.schema, path, where)
    uid = uuid_lib.uuid4()
    built_from = plan.fragment_ids
    if kind.name == "INVERTED":
        # pylance keeps the merged segments' partitions and indexes the new rows apart.
        places = [snapshot.store.place(naming.INDICES_DIR, str(s.uuid)) for s in plan.merged]
        template = snapshot.store.place(naming.INDICES_DIR, str(first.uuid))
        params: dict[str, Any] = {"previous_segments": tuple(places), "parameters_of": template}
        held = set().union(*_held(snapshot, plan.merged)) if plan.merged else set()
        built_from = tuple(f for f in plan.fragment_ids if f not in held)
    else:
        params = _recorded_parameters(snapshot.store, kind, field, first)
    details = build_index(snapshot, manifest, kind, field, uid, params, built_from)
    version = kind.version_for(manifest.stable_row_ids)
    new = indices.new_index_metadata(
        snapshot, plan.name, [field.id], uid, details, plan.fragment_ids, version
    )
    return replace(new, dataset_version=plan.dataset_version)


def _held(snapshot: Snapshot, segments: Sequence[IndexMetadata]) -> list[FrozenBitMap]:
    """The fragments each segment holds now, through the Fragment Reuse Index (an
    unrecorded bitmap holds everything)."""
    manifest = snapshot.manifest
    reuse = frag_reuse.reuse_map(snapshot.store, manifest)
    everything = FrozenBitMap(f.id for f in manifest.fragments)
    out = []
    for segment in segments:
        held = frag_reuse.coverage(reuse, segment, manifest)
        out.append(everything if held is None else held)
    return out


def _groups(
    manifest: Manifest, names: Sequence[str] | None, where: str
) -> dict[str, list[IndexMetadata]]:
    groups: dict[str, list[IndexMetadata]] = {}
    for index in manifest.indices:
        if not index.is_system and (names is None or index.name in names):
            groups.setdefault(index.name, []).append(index)
    out = {}
    for name, segments in groups.items():
        if _rebuildable(manifest, segments) or _vector_rebuildable(manifest, segments):
            out[name] = segments
        elif names is not None:
            raise UnsupportedIndexError(f"{where}: lancelet cannot rebuild index {name!r}")
    return out


def _type_url(index: IndexMetadata) -> str:
    return index.index_details.type_url if index.index_details else ""


def _rebuildable(manifest: Manifest, segments: Sequence[IndexMetadata]) -> bool:
    first = segments[0]
    paths = index_plan.field_paths(manifest)
    kind = json_kind.rebuild_kind(first.index_details)
    json_on_stable = manifest.stable_row_ids and kind is json_kind.JSON
    return (
        kind is not None
        and not json_on_stable
        and len(first.fields) == 1
        and first.fields[0] in paths
        and all(s.fields == first.fields and _type_url(s) == _type_url(first) for s in segments)
    )


def _vector_rebuildable(manifest: Manifest, segments: Sequence[IndexMetadata]) -> bool:
    first = segments[0]
    return (
        is_vector(first)
        and len(first.fields) == 1
        and first.fields[0] in index_plan.field_paths(manifest)
        and all(s.fields == first.fields and is_vector(s) for s in segments)
        and all(s.fragment_bitmap is not None for s in segments)
        and rewritable(manifest, first)
    )


def _recorded_parameters(
    store: DatasetStore, kind: registry.IndexType, field: IndexedField, index: IndexMetadata
) -> dict[str, Any]:
    """The build parameters of an existing segment, as its files record them."""
    if kind is json_kind.JSON:
        target = index_plan.opened(store, index, field.type)
        value_type = target.value_type  # type: ignore[attr-defined]
        return json_kind.rebuild_parameters(index.index_details, value_type)
    if not kind.parameters:
        return {}
    opened = index_plan.opened(store, index, field.type)
    return {p: getattr(opened, p) for p in kind.parameters}
