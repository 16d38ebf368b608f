"""Compaction: small or deletion-heavy fragments rewritten into fewer, fuller ones.

Planning walks the fragments in manifest order.  A fragment is a candidate when
it has fewer physical rows than the target, or (with ``materialize_deletions``)
when more than the threshold fraction of its rows is deleted.  Consecutive
candidates covered by the same indices form runs; a run holding one fragment
that is only small, with nothing to merge it with, is left alone.  Runs are cut
into bins of at least ``target_rows_per_fragment`` live rows, the remainder
joining the last bin, and each bin becomes one task.

A task reads the live rows of its fragments in order and writes them as
``max(1, rows // target)`` data files of near-equal size (the first ones one
row longer), which is how pylance sizes them.  Nothing is visible until the
commit: a ReserveFragments commit hands out fresh fragment ids, then one
Rewrite, read at the plan's version, swaps every bin for its new fragments.  A
delete or update of a rewritten fragment committed meanwhile makes the Rewrite
fail as retryable, instead of silently undoing it; appends are kept.  Files of
a Rewrite that does not commit are removed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pyroaring import FrozenBitMap

from lancelet.dataset.index_build import optimize_indices
from lancelet.dataset.scanner import LanceScanner
from lancelet.dataset.write import (
    check_writable,
    discard_data_files,
    storage_version,
    write_fragment_files,
)
from lancelet.errors import CorruptDatasetError, UnsupportedVersionError
from lancelet.table import features, row_ids
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction import operations as ops
from lancelet.transaction.commit import commit_transaction
from lancelet.transaction.store import DatasetStore

if TYPE_CHECKING:
    from lancelet.dataset.dataset import LanceDataset

CONFIG_PREFIX = "lance.compaction."


@dataclass(frozen=True)
class CompactionMetrics:
    fragments_removed: int = 0
    fragments_added: int = 0
    # Data and deletion files.
    files_removed: int = 0
    files_added: int = 0

    @classmethod
    def of(cls, old: Sequence[Fragment], new: Sequence[Fragment]) -> CompactionMetrics:
        return cls(len(old), len(new), _file_count(old), _file_count(new))

    @classmethod
    def total(cls, parts: Sequence[CompactionMetrics]) -> CompactionMetrics:
        return cls(*(sum(getattr(p, f.name) for p in parts) for f in fields(cls)))

    def to_json(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CompactionMetrics:
        return cls(*(int(data.get(f.name) or 0) for f in fields(cls)))


def _file_count(fragments: Sequence[Fragment]) -> int:
    return sum(len(f.files) + (f.deletion_file is not None) for f in fragments)


# -- options ------------------------------------------------------------------------


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("expected 'true' or 'false'")
    return lowered == "true"


# The options a dataset's config may default (``lance.compaction.<name>``), with
# the parser of their text value.
_CONFIGURABLE: dict[str, Callable[[str], Any]] = {
    "target_rows_per_fragment": int,
    "max_rows_per_group": int,
    "max_bytes_per_file": int,
    "materialize_deletions": _parse_bool,
    "materialize_deletions_threshold": float,
    "defer_index_remap": _parse_bool,
    "batch_size": int,
    "compaction_mode": str,
    "binary_copy_read_batch_bytes": int,
    "max_source_fragments": int,
    "max_source_rows": int,
    "max_source_bytes": int,
    "data_storage_version": str,
}
# Speed and memory knobs: accepted, and safely ignored.
_TUNING = ("num_threads", "io_buffer_size", "binary_copy_read_batch_bytes")
_MODES = ("reencode", "try_binary_copy", "force_binary_copy")
# Every option pylance documents, in a fixed order (JSON keys come out alike).
OPTION_NAMES = tuple(dict.fromkeys((*_CONFIGURABLE, *_TUNING, "excluded_fragment_ids")))


@dataclass(frozen=True)
class CompactionSettings:
    """Compaction options, resolved: explicit values, else the dataset's
    ``lance.compaction.*`` config, else pylance's defaults."""

    target_rows_per_fragment: int = 1024 * 1024
    max_rows_per_group: int = 1024  # shapes only legacy-format files
    materialize_deletions: bool = True
    materialize_deletions_threshold: float = 0.1
    batch_size: int | None = None
    max_source_fragments: int | None = None
    max_source_rows: int | None = None
    max_source_bytes: int | None = None
    excluded_fragment_ids: tuple[int, ...] = ()
    # The file format of the rewritten files (None: the dataset's), as in pylance.
    data_storage_version: str | None = None

    @classmethod
    def resolve(
        cls, options: Mapping[str, Any] | None, config: Mapping[str, str], where: str
    ) -> CompactionSettings:
        given = {k: v for k, v in (options or {}).items() if v is not None}
        unknown = sorted(set(given).difference(OPTION_NAMES))
        if unknown:
            raise ValueError(f"{where}: invalid compaction option: {', '.join(unknown)}")
        values = {**_from_config(config, where), **given}
        _check_supported(values, where)
        names = {f.name for f in fields(cls)}
        settings = cls(**{k: v for k, v in values.items() if k in names})
        if settings.target_rows_per_fragment < 1:
            raise ValueError(f"{where}: target_rows_per_fragment must be at least 1")
        excluded = tuple(int(i) for i in settings.excluded_fragment_ids)
        return replace(settings, excluded_fragment_ids=excluded)

    @property
    def materializes(self) -> bool:
        # A threshold of 100% or more can never be passed.
        return self.materialize_deletions and self.materialize_deletions_threshold < 1.0

    def to_json(self) -> dict[str, Any]:
        """Every option, under pylance's names."""
        out: dict[str, Any] = dict.fromkeys(OPTION_NAMES)
        out.update({f.name: getattr(self, f.name) for f in fields(self)})
        out.update(excluded_fragment_ids=list(self.excluded_fragment_ids))
        out.update(defer_index_remap=False)
        return out


def _from_config(config: Mapping[str, str], where: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, parse in _CONFIGURABLE.items():
        raw = config.get(CONFIG_PREFIX + name)
        if raw is None:
            continue
        try:
            found[name] = parse(raw)
        except ValueError as exc:
            raise ValueError(
                f"{where}: config {CONFIG_PREFIX + name} = {raw!r} is invalid: {exc}"
            ) from exc
    return found


def _check_supported(values: Mapping[str, Any], where: str) -> None:
    """Refuse options that would make the result differ from pylance's."""
    mode = values.get("compaction_mode")
    if mode is not None and mode not in _MODES:
        raise ValueError(f"{where}: compaction_mode must be one of {_MODES}, not {mode!r}")
    # Binary copy may always fall back to re-encoding; only forcing it is refused.
    refused = {
        "max_bytes_per_file": values.get("max_bytes_per_file") is not None,
        "defer_index_remap": bool(values.get("defer_index_remap")),
        "compaction_mode": mode == "force_binary_copy",
    }
    for name, is_refused in refused.items():
        if is_refused:
            raise NotImplementedError(
                f"{where}: lancelet does not support compaction with {name}={values[name]!r}"
            )
    if values.get("data_storage_version") is not None:
        storage_version(values["data_storage_version"])


# -- planning -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
    fragment: Fragment
    live_rows: int
    # Worth rewriting even alone: it has deletions to materialize.
    alone: bool


def _deleted_count(store: DatasetStore, fragment: Fragment) -> int:
    if fragment.deletion_file is None:
        return 0
    # Old writers left the count at 0 ("unknown"); then the file tells.
    return fragment.num_deleted_rows or len(store.read_deletions(fragment))


def _candidate(
    store: DatasetStore, fragment: Fragment, settings: CompactionSettings
) -> _Candidate | None:
    deleted = _deleted_count(store, fragment)
    physical = fragment.physical_rows
    # pylance compares the deleted fraction in single precision; so does this.
    fraction = np.float32(deleted) / np.float32(physical) if physical else np.float32(0)
    if settings.materializes and fraction > np.float32(settings.materialize_deletions_threshold):
        return _Candidate(fragment, physical - deleted, True)
    if physical < settings.target_rows_per_fragment:
        return _Candidate(fragment, physical - deleted, False)
    return None


def _index_coverage(manifest: Manifest) -> list[FrozenBitMap | None]:
    """Per index, the fragments it covers (None: unrecorded, taken as all)."""
    return [index.fragment_bitmap for index in manifest.indices]


def _candidate_runs(
    store: DatasetStore, manifest: Manifest, settings: CompactionSettings
) -> list[list[_Candidate]]:
    """Maximal runs of consecutive candidates that the same indices cover: indexed
    and unindexed rows must not share a fragment."""
    coverage = _index_coverage(manifest)
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
        d.file_size_bytes or os.path.getsize(store.data_path(d.path)) for d in fragment.files
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
    return [tuple(c.fragment for c in group) for group in _within_limits(store, bins, settings)]


# -- rewriting ----------------------------------------------------------------------


def output_sizes(rows: int, target: int) -> list[int]:
    """Rows per new data file: ``max(1, rows // target)`` files of near-equal size."""
    if rows == 0:
        return []
    count = max(1, rows // target)
    base, longer = divmod(rows, count)
    return [base + 1] * longer + [base] * (count - longer)


class _RowSplitter:
    """Cuts one stream of batches into consecutive readers of exact row counts."""

    def __init__(self, batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> None:
        self._batches = batches
        self._schema = schema
        self._pending: pa.RecordBatch | None = None

    def _next(self) -> pa.RecordBatch | None:
        batch, self._pending = self._pending, None
        return batch if batch is not None else next(self._batches, None)

    def take(self, rows: int) -> pa.RecordBatchReader:
        def batches() -> Iterator[pa.RecordBatch]:
            left = rows
            while left:
                batch = self._next()
                if batch is None:
                    return
                if batch.num_rows > left:
                    self._pending = batch.slice(left)
                    batch = batch.slice(0, left)
                left -= batch.num_rows
                yield batch

        return pa.RecordBatchReader.from_batches(self._schema, batches())

    def exhausted(self) -> bool:
        while (batch := self._next()) is not None:
            if batch.num_rows:
                return False
        return True


def _live_rows(store: DatasetStore, fragments: Sequence[Fragment]) -> int:
    # The scan reads the deletion files anyway and checks their counts.
    return sum(f.physical_rows - _deleted_count(store, f) for f in fragments)


def rewrite_fragments(
    store: DatasetStore,
    manifest: Manifest,
    fragments: Sequence[Fragment],
    settings: CompactionSettings,
) -> tuple[Fragment, ...]:
    """New fragments (id 0, numbered at commit) holding the live rows of
    ``fragments`` in order; their data files are written, not committed."""
    sizes = output_sizes(_live_rows(store, fragments), settings.target_rows_per_fragment)
    version = files_version(manifest, settings, store.root)
    scan = LanceScanner(store, manifest, fragments=fragments, batch_size=settings.batch_size)
    rows = _RowSplitter(scan.to_batches(), scan.projected_schema)
    written: list[Fragment] = []
    try:
        for size in sizes:
            written += write_fragment_files(store, rows.take(size), manifest.schema, version, size)
        if [f.physical_rows for f in written] != sizes or not rows.exhausted():
            ids = [f.id for f in fragments]
            raise CorruptDatasetError(
                f"{store.root}: fragments {ids} of version {manifest.version} hold a different "
                "number of live rows than their deletion files say"
            )
        if manifest.stable_row_ids:
            written = row_ids.carrying(written, _live_row_ids(store, fragments))
    except BaseException:
        discard_data_files(store, written)
        raise
    return tuple(written)


def _live_row_ids(store: DatasetStore, fragments: Sequence[Fragment]) -> np.ndarray:
    """The stable ids of the live rows of ``fragments``, in scan order: compaction
    moves rows, and they keep their ids."""
    parts = []
    for fragment in fragments:
        ids = store.read_row_ids(fragment)
        if ids is None:
            raise CorruptDatasetError(
                f"{store.root}: fragment {fragment.id} lists no row ids, but the dataset "
                "has stable row ids"
            )
        parts.append(np.delete(ids, store.read_deletions(fragment).astype(np.int64)))
    return np.concatenate(parts) if parts else np.zeros(0, np.uint64)


# -- committing ---------------------------------------------------------------------


def _reserve_ids(
    store: DatasetStore, read_version: int, groups: Sequence[ops.RewriteGroup]
) -> list[ops.RewriteGroup]:
    """The groups with their new fragments numbered from freshly reserved ids."""
    count = sum(len(g.new_fragments) for g in groups)
    if not count:
        return list(groups)
    txn = ops.Transaction(read_version, ops.ReserveFragments(count))
    reserved = commit_transaction(store, txn)
    assert reserved.max_fragment_id is not None
    ids = iter(range(reserved.max_fragment_id - count + 1, reserved.max_fragment_id + 1))
    return [
        replace(g, new_fragments=tuple(f.with_id(next(ids)) for f in g.new_fragments))
        for g in groups
    ]


def commit_rewrites(
    store: DatasetStore, read_version: int, groups: Sequence[ops.RewriteGroup]
) -> Manifest:
    """Commit one Rewrite of ``groups`` read at ``read_version``; if it does not
    commit, the new data files go."""
    try:
        numbered = _reserve_ids(store, read_version, groups)
        txn = ops.Transaction(read_version, ops.Rewrite(tuple(numbered)))
        return commit_transaction(store, txn)
    except BaseException:
        discard_data_files(store, [f for g in groups for f in g.new_fragments])
        raise


def compact(dataset: LanceDataset, options: Mapping[str, Any] | None) -> CompactionMetrics:
    """Plan, rewrite and commit in one go; no new version when nothing needs it."""
    store, manifest = dataset._store, dataset._manifest
    settings = CompactionSettings.resolve(options, manifest.config, store.root)
    groups: list[ops.RewriteGroup] = []
    try:
        for old in plan_bins(store, manifest, settings):
            groups.append(ops.RewriteGroup(old, rewrite_fragments(store, manifest, old, settings)))
    except BaseException:
        discard_data_files(store, [f for g in groups for f in g.new_fragments])
        raise
    if not groups:
        return CompactionMetrics()
    dataset._advance_to(commit_rewrites(store, manifest.version, groups))
    return CompactionMetrics.total(
        [CompactionMetrics.of(g.old_fragments, g.new_fragments) for g in groups]
    )


class DatasetOptimizer:
    """``dataset.optimize``: table maintenance, with pylance's method names."""

    def __init__(self, dataset: LanceDataset) -> None:
        self._dataset = dataset

    def compact_files(
        self,
        *,
        target_rows_per_fragment: int | None = None,
        max_rows_per_group: int | None = None,
        max_bytes_per_file: int | None = None,
        materialize_deletions: bool | None = None,
        materialize_deletions_threshold: float | None = None,
        defer_index_remap: bool | None = None,
        num_threads: int | None = None,
        batch_size: int | None = None,
        compaction_mode: str | None = None,
        binary_copy_read_batch_bytes: int | None = None,
        max_source_fragments: int | None = None,
        max_source_rows: int | None = None,
        max_source_bytes: int | None = None,
        excluded_fragment_ids: list[int] | None = None,
        data_storage_version: str | None = None,
    ) -> CompactionMetrics:
        """Merge small fragments and drop deleted rows and dropped columns from the
        files, keeping the order of the rows (see the module docstring for which
        fragments are rewritten)."""
        options = {k: v for k, v in locals().items() if k != "self"}
        return compact(self._dataset, options)

    def optimize_indices(
        self,
        *,
        num_indices_to_merge: int = 1,
        index_names: list[str] | None = None,
        retrain: bool = False,
    ) -> None:
        """Bring fragments added since an index was built under it: rebuilt as one
        segment, or with ``num_indices_to_merge=0`` as a delta segment of its own."""
        optimize_indices(
            self._dataset,
            num_indices_to_merge=num_indices_to_merge,
            index_names=index_names,
            retrain=retrain,
        )
