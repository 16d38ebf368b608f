"""``optimize_indices`` for IVF_FLAT, IVF_PQ, IVF_SQ and IVF_HNSW_* indices, as
pylance 14 does it
(measured; ``docs/vector-index-format.md``):

* the rows of fragments no segment holds (unindexed) join the partitions of the
  first segment's centroids, quantized by its codebook or SQ bounds: no retraining
  (an HNSW segment's graphs are built anew over its rows);
* ``num_indices_to_merge`` (default 0 for a vector index: unlike scalar indices) is
  how many of the last segments are merged with them into one new segment, which
  keeps the first merged segment's ``dataset_version`` and details; a delta (no
  merge) is recorded as built from the current version.  Nothing is committed for
  an index with no unindexed rows and nothing to merge;
* pylance also reshapes the partitions while it optimizes: a partition holding
  (over every segment, with the new rows) fewer than a quarter of the type's
  target partition size (IVF_FLAT 4,096 rows, IVF_PQ and IVF_SQ 8,192, IVF_HNSW_*
  2**20: nearly always, measured) is joined into its
  neighbours and all segments merged, when ``num_indices_to_merge`` is not given
  (:mod:`lancelet.index.vector.join`); one holding more than four times the
  target is split by a 2-means, which lancelet does not reproduce: that is
  refused, naming the index and the partition, as is a join among more than 65
  partitions.

``retrain=True`` builds the index anew instead (:mod:`vector_retrain`).
"""

from __future__ import annotations

import uuid as uuid_lib
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from lancelet.dataset.core.snapshot import Snapshot
from lancelet.dataset.indices import catalog as indices
from lancelet.dataset.indices import vector_params
from lancelet.dataset.indices.vector_retrain import VectorRetrain
from lancelet.dataset.read import frag_reuse, index_plan
from lancelet.dataset.read.ivf_search import opened
from lancelet.dataset.read.scanner import ROW_ADDRESS, ROW_ID, LanceScanner
from lancelet.dataset.read.take import MISSING, addresses_of_ids
from lancelet.errors import UnsupportedIndexError
from lancelet.file import version as file_version
from lancelet.index.vector import (
    IvfIndex,
    details_view,
    float32_distance,
    ivf_rq_writer,
    join,
    layout,
)
from lancelet.index.vector.segment_writer import (
    SegmentRows,
    quantizer,
    segment_rows,
    write_segment,
)
from lancelet.table import naming
from lancelet.table.fragment import Fragment
from lancelet.table.index import IndexMetadata, index_type
from lancelet.table.manifest import Manifest

# The vector index types lancelet rewrites (optimize, compaction): every type it
# reads (``rewritable`` says which segments of them).
VECTOR_TYPES = layout.SUPPORTED_TYPES
# The bounds pylance reshapes partitions at, in its target rows per partition.
_JOIN_PERCENT = 25
_SPLIT_FACTOR = 4
_BATCH_ROWS = 1 << 16


def is_vector(segment: IndexMetadata) -> bool:
    return index_type(segment.index_details) in VECTOR_TYPES


def float32_column(manifest: Manifest, segment: IndexMetadata) -> bool:
    """Whether the segment indexes a column of float32 vectors: the only ones
    lancelet writes segments for (others' files hold other element types)."""
    path = index_plan.field_paths(manifest).get(segment.fields[0]) if segment.fields else None
    if path is None:
        return False
    dtype = index_plan.column_type(manifest.schema.to_arrow(), path)
    return bool(pa.types.is_fixed_size_list(dtype) and dtype.value_type == pa.float32())


def rewritable(manifest: Manifest, segment: IndexMetadata) -> bool:
    """Whether lancelet writes segments like this one: over float32 vectors, and
    for IVF_RQ of the bits and metrics it encodes."""
    if not float32_column(manifest, segment):
        return False
    if index_type(segment.index_details) != ivf_rq_writer.INDEX_TYPE:
        return True
    assert segment.index_details is not None
    described = details_view.describe(segment.index_details.value) or {}
    compression = described.get("compression") or {}
    return (
        compression.get("num_bits") in ivf_rq_writer.NUM_BITS
        and str(described.get("metric_type", "")).lower() in ivf_rq_writer.METRICS
    )


@dataclass(frozen=True)
class VectorRebuild:
    """One vector index's new segment: the segments it merges and the fragments
    whose rows it adds."""

    name: str
    merged: tuple[IndexMetadata, ...]
    added: tuple[Fragment, ...]
    first: IndexMetadata
    dataset_version: int
    # The partitions pylance joins into the others (bool per partition), if any.
    removed: np.ndarray | None = None

    def build(self, snapshot: Snapshot, where: str) -> IndexMetadata:
        """Write the new segment's files; its metadata."""
        manifest = snapshot.manifest
        store = snapshot.store
        source = opened(store, self.first)
        rule = quantizer(source)
        path = index_plan.field_paths(manifest)[self.first.fields[0]]
        keys, vectors = _new_rows(snapshot, path, self.added, source)
        partitions = rule.partitions(vectors)
        added = SegmentRows(keys, partitions, rule.payload(vectors, partitions))
        kept = [_rows_of(snapshot, s) for s in self.merged]
        rows = SegmentRows.concat([*kept, added])
        loss = rule.loss(vectors, partitions)
        if self.removed is not None:
            rows, rule = join.joined(rows, self.removed, rule, self._lookup(snapshot, source))
        uid = uuid_lib.uuid4()
        directory = store.place(naming.INDICES_DIR, str(uid))
        version = file_version.index_file_version(manifest.data_storage_version)
        write_segment(directory, rule, rows, loss, version)
        held = set().union(*(_held(snapshot, s) for s in self.merged))
        fragment_ids = sorted(held | {f.id for f in self.added})
        assert self.first.index_details is not None
        new = indices.new_index_metadata(
            snapshot,
            self.name,
            list(self.first.fields),
            uid,
            self.first.index_details,
            fragment_ids,
            self.first.index_version or 0,
        )
        return replace(new, dataset_version=self.dataset_version)

    def _lookup(self, snapshot: Snapshot, source: IvfIndex) -> join.VectorsByKey:
        """The vectors of live rows by key, read from every fragment."""
        path = index_plan.field_paths(snapshot.manifest)[self.first.fields[0]]
        keys, vectors = _new_rows(snapshot, path, snapshot.manifest.fragments, source)
        order = np.argsort(keys, kind="stable")
        keys, vectors = keys[order], vectors[order]

        def lookup(wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            at = np.minimum(np.searchsorted(keys, wanted), max(len(keys) - 1, 0))
            found = keys[at] == wanted if len(keys) else np.zeros(len(wanted), bool)
            return found, vectors[at[found]]

        return lookup


def vector_plan(
    snapshot: Snapshot,
    name: str,
    segments: Sequence[IndexMetadata],
    merge: int | None,
    retrain: bool,
    where: str,
) -> VectorRebuild | VectorRetrain | None:
    """What optimize_indices does to one vector index (None: nothing)."""
    if retrain:
        return VectorRetrain(name, tuple(segments))
    plan = _vector_plan(snapshot, name, segments, merge, where)
    if plan is not None and any(_legacy(snapshot, s) for s in segments):
        raise UnsupportedIndexError(
            f"{where}: index {name!r} is in the legacy IVF_PQ file layout, to which "
            "optimize_indices adds nothing (pylance 14 cannot either); rebuild it with "
            "create_index(..., replace=True)"
        )
    return plan


def _legacy(snapshot: Snapshot, segment: IndexMetadata) -> bool:
    place = snapshot.store.place(naming.INDICES_DIR, str(segment.uuid))
    return layout.file_version(place) == "Legacy"


def _vector_plan(
    snapshot: Snapshot,
    name: str,
    segments: Sequence[IndexMetadata],
    merge: int | None,
    where: str,
) -> VectorRebuild | None:
    manifest = snapshot.manifest
    label = f"{where}: index {name!r}"
    held = set().union(*(_held(snapshot, s) for s in segments))
    added = tuple(f for f in manifest.fragments if f.id not in held)
    removed = _joined(snapshot, segments, added, merge, label)
    if removed is not None:  # joining merges every segment
        version = segments[0].dataset_version
        return VectorRebuild(name, tuple(segments), added, segments[0], version, removed)
    count = 0 if merge is None else merge
    merged = tuple(segments[len(segments) - min(count, len(segments)) :])
    if not added and len(merged) <= 1:
        return None
    version = merged[0].dataset_version if merged else manifest.version
    return VectorRebuild(name, merged, added, segments[0], version)


def _joined(
    snapshot: Snapshot,
    segments: Sequence[IndexMetadata],
    added: Sequence[Fragment],
    merge: int | None,
    label: str,
) -> np.ndarray | None:
    """The partitions pylance joins (None: no join); what lancelet does not
    reproduce (a split, a join among more than 65 partitions) is refused."""
    kind = index_type(segments[0].index_details)
    first = opened(snapshot.store, segments[0])
    totals = np.zeros(first.num_partitions, dtype=np.int64)
    for segment in segments:
        lengths = opened(snapshot.store, segment).lengths
        if len(lengths) != len(totals):
            raise UnsupportedIndexError(f"{label}: its segments have different partitions")
        totals += lengths
    if added:
        path = index_plan.field_paths(snapshot.manifest)[segments[0].fields[0]]
        _, vectors = _new_rows(snapshot, path, added, first)
        totals += np.bincount(quantizer(first).partitions(vectors), minlength=len(totals))
    target = vector_params.TARGET_PARTITION_SIZE[kind]
    if int(totals.max(initial=0)) > _SPLIT_FACTOR * target:
        raise UnsupportedIndexError(
            f"{label}: partition {int(totals.argmax())} would hold {int(totals.max())} rows, "
            f"more than {_SPLIT_FACTOR * target}: pylance splits it, lancelet does not"
        )
    removed = join.joined_partitions(totals, _JOIN_PERCENT * target // 100)
    if merge is not None or len(totals) <= 1 or not removed.any():
        return None
    if len(totals) > join.REASSIGN_RANGE + 1:
        raise UnsupportedIndexError(
            f"{label}: pylance would join partitions {np.flatnonzero(removed).tolist()} "
            f"among {len(totals)} (it reassigns rows among a removed centroid's "
            f"{join.REASSIGN_RANGE} nearest, which lancelet does not reproduce; "
            "num_indices_to_merge=0 adds a delta segment instead)"
        )
    return removed


def _held(snapshot: Snapshot, segment: IndexMetadata) -> set[int]:
    reuse = frag_reuse.reuse_map(snapshot.store, snapshot.manifest)
    held = frag_reuse.coverage(reuse, segment, snapshot.manifest)
    return set(f.id for f in snapshot.manifest.fragments) if held is None else set(held)


def _rows_of(snapshot: Snapshot, segment: IndexMetadata) -> SegmentRows:
    """A merged segment's rows: as they are when it lists addresses (carried through
    a Fragment Reuse Index from before a deferred remap), its deleted rows too; only
    the live ones when it lists stable row ids (pylance drops the others then:
    measured)."""
    rows = segment_rows(opened(snapshot.store, segment))
    if snapshot.manifest.stable_row_ids:
        found = addresses_of_ids(snapshot.store, snapshot.manifest, rows.row_ids)
        return rows.take(np.flatnonzero(found != MISSING))
    reuse = frag_reuse.reuse_map(snapshot.store, snapshot.manifest)
    if reuse is None or not frag_reuse.applies_to(segment, snapshot.manifest):
        return rows
    moved, alive = reuse.remap(rows.row_ids)
    rows = SegmentRows(moved, rows.partitions, rows.payload)
    return rows.take(np.flatnonzero(alive))


def _new_rows(
    snapshot: Snapshot, path: str, fragments: Sequence[Fragment], index: IvfIndex
) -> tuple[np.ndarray, np.ndarray]:
    """(row keys, vectors) of the live rows of ``fragments`` the index takes: not
    null, no NaN; for cosine unit vectors, the zero vector left out."""
    manifest = snapshot.manifest
    by_row_id = manifest.stable_row_ids
    dimension = index.dimension
    keys, blocks = [np.zeros(0, np.uint64)], [np.zeros((0, dimension), np.float32)]
    if fragments:
        scanner = LanceScanner(
            snapshot.store,
            manifest,
            columns=[path],
            with_row_id=by_row_id,
            with_row_address=not by_row_id,
            batch_size=_BATCH_ROWS,
            fragments=list(fragments),
        )
        for batch in scanner.to_batches():  # one step per batch
            values = batch.column(path)
            present = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            flat = values.filter(pa.array(present)).flatten()
            block = flat.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
            column = batch.column(ROW_ID if by_row_id else ROW_ADDRESS)
            keys.append(column.to_numpy(zero_copy_only=False)[present].astype(np.uint64))
            blocks.append(block.reshape(-1, dimension))
    row_keys, vectors = np.concatenate(keys), np.concatenate(blocks)
    if index.metric == "cosine":
        # Normalized as pylance normalizes (its float32 sum order): the stored unit
        # vectors then equal pylance's to the last bit (measured at d = 16).
        norms = np.sqrt(float32_distance.lane_sum(vectors * vectors))
        with np.errstate(all="ignore"):
            vectors = vectors / norms[:, None]
    kept = ~np.isnan(vectors).any(axis=1)
    return row_keys[kept], np.ascontiguousarray(vectors[kept], dtype=np.float32)
