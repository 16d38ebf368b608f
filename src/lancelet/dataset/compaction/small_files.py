"""A compaction's small fragments, read together.

Read one by one through the scanner, each of a hundred small fragments pays for
opening its plan, its pages' decoding set-up and its per-column calls, which cost
more than its rows.  Runs of small fragments whose single data file holds exactly
the dataset's columns, as they read, are read here as one table per run instead:
their live rows, column by column, with the pages of all the files decoded
together where they are encoded alike (:func:`lancelet.file.many.take_from_files`).
Any other fragment, or a run the files do not allow, goes through the scanner.
Either way the rows come in fragment order, deleted ones left out.  A run's rows
come in batches of the batch size over the whole run: each batch costs the writer
per column, and a hundred fragments' batches cost it more than their rows.  When
files are cut by size (``max_bytes_per_file``) they come in the batches the scanner
would give instead (each fragment's live rows cut to the batch size), since the
writer checks a file's size after each batch: the files are then cut where
pylance cuts them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import wait

import numpy as np
import pyarrow as pa

from lancelet.dataset.read.fragment_reader import FragmentReader
from lancelet.file import parallel
from lancelet.file.many import take_from_files
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore

# A fragment is read with others when it holds at most this many rows, and a run
# is cut once it holds this many: a run is one table in memory.
SMALL_ROWS = 1 << 16
RUN_ROWS = 1 << 17

Scan = Callable[[Sequence[Fragment]], Iterator[pa.RecordBatch]]


def live_batches(
    store: DatasetStore,
    manifest: Manifest,
    fragments: Sequence[Fragment],
    schema: pa.Schema,
    scan: Scan,
    batch_size: int,
    *,
    per_fragment: bool,
) -> Iterator[pa.RecordBatch]:
    """The live rows of ``fragments`` in order, as batches of ``schema`` (every
    column of the dataset) of at most ``batch_size`` rows; ``scan`` reads the
    fragments that cannot be read here.  ``per_fragment``: no batch holds rows of
    two fragments (the scanner's batches)."""
    field_ids = [f.id for f in manifest.schema.fields]
    run: list[Fragment] = []

    def read_run() -> Iterator[pa.RecordBatch]:
        return _read_run(store, manifest, run, schema, scan, batch_size, per_fragment)

    for fragment in fragments:
        if not _plain(fragment, field_ids):
            yield from read_run()
            yield from scan([fragment])
            run = []
            continue
        run.append(fragment)
        if sum(f.physical_rows for f in run) >= RUN_ROWS:
            yield from read_run()
            run = []
    yield from read_run()


def _plain(fragment: Fragment, field_ids: list[int]) -> bool:
    """One small data file holding every column of the dataset, in its order."""
    return (
        fragment.physical_rows <= SMALL_ROWS
        and len(fragment.files) == 1
        and list(fragment.files[0].fields) == field_ids
    )


def _read_run(
    store: DatasetStore,
    manifest: Manifest,
    run: Sequence[Fragment],
    schema: pa.Schema,
    scan: Scan,
    batch_size: int,
    per_fragment: bool,
) -> Iterator[pa.RecordBatch]:
    if not run:
        return
    read = _read_together(store, manifest, run, schema) if len(run) > 1 else None
    if read is None:
        yield from scan(run)
        return
    table, counts = read
    if not per_fragment:
        yield from table.to_batches(max_chunksize=batch_size)
        return
    start = 0
    for count in counts:
        yield from table.slice(start, count).to_batches(max_chunksize=batch_size)
        start += count


def _read_together(
    store: DatasetStore, manifest: Manifest, run: Sequence[Fragment], schema: pa.Schema
) -> tuple[pa.Table, list[int]] | None:
    """The live rows of ``run`` as one table of ``schema``, and how many of them
    each fragment holds; None when the files' columns are not exactly the schema's
    (renamed, retyped) or a column that may not be null holds nulls (the scanner
    then reads and reports them)."""
    fragment_readers = [FragmentReader(store, manifest.schema, f) for f in run]
    # The deletion files are decoded (mostly by Arrow, without the GIL) on another
    # thread while the data files open here.
    deletions = parallel.in_background(lambda: [r.deleted for r in fragment_readers])
    try:
        readers = [r.data_file(0) for r in fragment_readers]
    except BaseException:
        wait([deletions])
        raise
    rows = []
    for fragment, found in zip(run, deletions.result(), strict=True):
        deleted = found.astype(np.int64)
        if len(deleted) and (int(deleted[0]) < 0 or int(deleted[-1]) >= fragment.physical_rows):
            return None  # a damaged deletion file, which the scanner reports
        live = np.ones(fragment.physical_rows, dtype=bool)
        live[deleted] = False
        rows.append(np.flatnonzero(live))
    if [(f.name, f.type) for f in readers[0].schema] != [(f.name, f.type) for f in schema]:
        return None
    table = take_from_files(readers, rows)
    if table is None or any(
        not field.nullable and column.null_count
        for field, column in zip(schema, table.columns, strict=True)
    ):
        return None
    return pa.Table.from_arrays(table.columns, schema=schema), [len(r) for r in rows]
