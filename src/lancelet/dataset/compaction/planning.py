"""Which fragments a compaction rewrites, and in which groups.

Planning walks the fragments in manifest order.  A fragment is a candidate when
it has fewer physical rows than the target, or (with ``materialize_deletions``)
when more than the threshold fraction of its rows is deleted.  Consecutive
candidates covered by the same indices (as the Fragment Reuse Index carries them)
form runs; a run holding one fragment
that is only small, with nothing to merge it with, is left alone.  Runs are cut
into bins of at least ``target_rows_per_fragment`` live rows, the remainder
joining the last bin, and each bin becomes one task.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyroaring import FrozenBitMap

from lancelet.dataset.compaction.options import CompactionSettings
from lancelet.dataset.read import frag_reuse
from lancelet.dataset.write.data_files import check_writable
from lancelet.errors import UnsupportedVersionError
from lancelet.table import features
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore


@dataclass(frozen=True)
class _Candidate:
    fragment: Fragment
    live_rows: int
    # Worth rewriting even alone: it has deletions to materialize.
    alone: bool


def deleted_count(store: DatasetStore, fragment: Fragment) -> int:
    if fragment.deletion_file is None:
        return 0
    # Old writers left the count at 0 ("unknown"); then the file tells.
    return fragment.num_deleted_rows or len(store.read_deletions(fragment))


def _candidate(
    store: DatasetStore, fragment: Fragment, settings: CompactionSettings
) -> _Candidate | None:
    deleted = deleted_count(store, fragment)
    physical = fragment.physical_rows
    # pylance compares the deleted fraction in single precision; so does this.
    fraction = np.float32(deleted) / np.float32(physical) if physical else np.float32(0)
    if settings.materializes and fraction > np.float32(settings.materialize_deletions_threshold):
        return _Candidate(fragment, physical - deleted, True)
    if physical < settings.target_rows_per_fragment:
        return _Candidate(fragment, physical - deleted, False)
    return None


def _index_coverage(store: DatasetStore, manifest: Manifest) -> list[FrozenBitMap | None]:
    """Per index, the fragments it covers now, through the Fragment Reuse Index (None:
    unrecorded, taken as all); system indices hold no rows."""
    reuse = frag_reuse.reuse_map(store, manifest)
    return [
        frag_reuse.coverage(reuse, index, manifest)
        for index in manifest.indices
        if not index.is_system
    ]


def _candidate_runs(
    store: DatasetStore, manifest: Manifest, settings: CompactionSettings
) -> list[list[_Candidate]]:
    """Maximal runs of consecutive candidates that the same indices cover: indexed
    and unindexed rows must not share a fragment."""
    coverage = _index_coverage(store, manifest)
    excluded = set(settings.excluded_fragment_ids)
    runs: list[list[_Candidate]] = []
    current: list[_Candidate] = []
    current_indices: frozenset[int] = frozenset()
    for fragment in manifest.fragments:
        found = None if fragment.id in excluded else _candidate(store, fragment, settings)
        indices = frozenset(
            i for i, covered in enumerate(coverage) if covered is None or fragment.id in covered
        )
        if current and (found is None or indices != current_indices):
            runs.append(current)
            current = []
        if found is not None:
            current.append(found)
            current_indices = indices
    if current:
        runs.append(current)
    return runs


def _split_for_size(run: list[_Candidate], min_rows: int) -> list[list[_Candidate]]:
    """Bins of at least ``min_rows`` live rows; a remainder too small to stand
    alone joins the last bin."""
    bins: list[list[_Candidate]] = []
    remaining = sum(c.live_rows for c in run)
    start = 0
    while True:
        stop, rows = start, 0
        while rows < min_rows and stop < len(run):
            rows += run[stop].live_rows
            stop += 1
        remaining -= rows
        if remaining < min_rows:
            bins.append(run[start:])
            return bins
        bins.append(run[start:stop])
        start = stop


def _data_bytes(store: DatasetStore, fragment: Fragment) -> int:
    return sum(
        d.file_size_bytes or store.io.size_of(store.data_path(d.path, d.base_id))
        for d in fragment.files
    )


def _within_limits(
    store: DatasetStore, bins: list[list[_Candidate]], settings: CompactionSettings
) -> list[list[_Candidate]]:
    """The leading bins that fit the max_source_* limits together, oldest first."""
    kept: list[list[_Candidate]] = []
    count = rows = size = 0
    for group in bins:
        count += len(group)
        rows += sum(c.live_rows for c in group)
        if settings.max_source_bytes is not None:
            size += sum(_data_bytes(store, c.fragment) for c in group)
        over = (
            (settings.max_source_fragments, count),
            (settings.max_source_rows, rows),
            (settings.max_source_bytes, size),
        )
        if any(limit is not None and used > limit for limit, used in over):
            break
        kept.append(group)
    return kept


def files_version(manifest: Manifest, settings: CompactionSettings, where: str) -> str:
    """The format compacted files are written in: the dataset's.  pylance writes the
    one ``data_storage_version`` names, leaving a dataset of mixed formats; lancelet
    refuses that rather than ignore the option."""
    try:
        return check_writable(manifest, settings.data_storage_version)
    except UnsupportedVersionError as exc:
        raise UnsupportedVersionError(f"{where}: compaction: {exc}") from exc


def plan_bins(
    store: DatasetStore, manifest: Manifest, settings: CompactionSettings
) -> list[tuple[Fragment, ...]]:
    """The groups of fragments to rewrite together, in manifest order."""
    files_version(manifest, settings, store.root)
    features.check_writable(manifest.writer_feature_flags, store.root)
    bins = [
        group
        for run in _candidate_runs(store, manifest, settings)
        if len(run) > 1 or run[0].alone
        for group in _split_for_size(run, settings.target_rows_per_fragment)
    ]
    groups = [tuple(c.fragment for c in group) for group in _within_limits(store, bins, settings)]
    if settings.defer_index_remap:
        # A reuse version can only say "the surviving rows, in address order".
        groups = [tuple(sorted(group, key=lambda f: f.id)) for group in groups]
    return groups
