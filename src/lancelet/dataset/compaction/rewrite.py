"""Rewriting one group of fragments: their live rows, in order, into new data files.

A task writes ``max(1, rows // target)`` data files of near-equal size (the first
ones one row longer), which is how pylance sizes them.  With stable row ids the
rows keep their ids and lineage.  Nothing is committed here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

from lancelet.dataset.compaction import lineage, small_files
from lancelet.dataset.compaction.options import CompactionSettings
from lancelet.dataset.compaction.planning import deleted_count, files_version
from lancelet.dataset.read import blob_v2
from lancelet.dataset.read.scanner import LanceScanner, default_batch_size
from lancelet.dataset.write.data_files import (
    discard_data_files,
    write_fragment_columns,
    write_fragment_files,
)
from lancelet.errors import CorruptDatasetError
from lancelet.file import version as file_version
from lancelet.table import row_ids
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore


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
    return sum(f.physical_rows - deleted_count(store, f) for f in fragments)


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
    # Blob v2 values are read and written again (inline) rather than their
    # descriptors copied: those point into the files being replaced.
    blobs = bool(blob_v2.columns(manifest))
    written = None if blobs else _by_column(store, manifest, fragments, settings, sizes, version)
    if written is None:
        written = _by_batch(store, manifest, fragments, settings, sizes, version, blobs)
    if manifest.stable_row_ids:
        try:
            written = row_ids.carrying(written, _live_row_ids(store, fragments))
            written = lineage.carried(store, fragments, written)
        except BaseException:
            discard_data_files(store, written)
            raise
    return tuple(written)


def _by_column(
    store: DatasetStore,
    manifest: Manifest,
    fragments: Sequence[Fragment],
    settings: CompactionSettings,
    sizes: list[int],
    version: str,
) -> list[Fragment] | None:
    """The live rows written as one data file column by column, each column decoded
    and encoded as one job (see :func:`.small_files.live_columns`); None where the
    group does not allow it (then :func:`_by_batch` writes it)."""
    if (
        len(sizes) != 1
        or settings.max_bytes_per_file is not None
        or not file_version.writable(version).structural
    ):
        return None
    schema = _scanner(store, manifest, fragments, settings, blobs=False).projected_schema
    found = small_files.live_columns(store, manifest, fragments, schema)
    if found is None:
        return None
    columns, costs, rows = found
    if rows != sizes[0]:
        raise _miscounted(store, manifest, fragments)
    batch_rows = settings.batch_size or default_batch_size()
    try:
        return write_fragment_columns(
            store, manifest.schema, version, columns, rows, batch_rows, costs
        )
    except small_files.NeedsScan:
        return None  # the scanner reads the group again and reports what it finds


def _by_batch(
    store: DatasetStore,
    manifest: Manifest,
    fragments: Sequence[Fragment],
    settings: CompactionSettings,
    sizes: list[int],
    version: str,
    blobs: bool,
) -> list[Fragment]:
    """The live rows as a stream of batches, cut into data files of ``sizes`` rows."""
    batches, schema = _live_batches(store, manifest, fragments, settings, blobs)
    rows = _RowSplitter(batches, schema)
    written: list[Fragment] = []
    try:
        counts = []
        for size in sizes:
            part = write_fragment_files(
                store,
                rows.take(size),
                manifest.schema,
                version,
                size,
                max_bytes_per_file=settings.max_bytes_per_file,
                max_rows_per_group=settings.max_rows_per_group,
            )
            written += part
            counts.append(sum(f.physical_rows for f in part))
        if counts != sizes or not rows.exhausted():
            raise _miscounted(store, manifest, fragments)
    except BaseException:
        discard_data_files(store, written)
        raise
    return written


def _miscounted(
    store: DatasetStore, manifest: Manifest, fragments: Sequence[Fragment]
) -> CorruptDatasetError:
    ids = [f.id for f in fragments]
    return CorruptDatasetError(
        f"{store.root}: fragments {ids} of version {manifest.version} hold a different "
        "number of live rows than their deletion files say"
    )


def _scanner(
    store: DatasetStore,
    manifest: Manifest,
    fragments: Sequence[Fragment],
    settings: CompactionSettings,
    *,
    blobs: bool,
) -> LanceScanner:
    return LanceScanner(store, manifest, fragments=fragments, batch_size=settings.batch_size,
                        with_row_address=blobs)  # fmt: skip


def _live_batches(
    store: DatasetStore,
    manifest: Manifest,
    fragments: Sequence[Fragment],
    settings: CompactionSettings,
    blobs: bool,
) -> tuple[Iterator[pa.RecordBatch], pa.Schema]:
    """The live rows of ``fragments`` in order, and their schema."""

    def scanner(part: Sequence[Fragment]) -> LanceScanner:
        return _scanner(store, manifest, part, settings, blobs=blobs)

    schema = scanner(fragments).projected_schema
    if blobs:
        return blob_v2.with_values(store, manifest, scanner(fragments).to_batches(), schema)

    def scan(part: Sequence[Fragment]) -> Iterator[pa.RecordBatch]:
        return scanner(part).to_batches()

    size = settings.batch_size or default_batch_size()
    # Files cut by size are cut after the batch that fills them, as the scanner's
    # batches would (see small_files).
    per_fragment = settings.max_bytes_per_file is not None
    batches = small_files.live_batches(
        store, manifest, fragments, schema, scan, size, per_fragment=per_fragment
    )
    return batches, schema


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
