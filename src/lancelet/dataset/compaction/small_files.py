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

A group of such fragments that makes one new file (at most :data:`COLUMN_ROWS`
rows) is read column by column instead (:func:`live_columns`): each column's rows
of every file are decoded and then encoded as one job
(:meth:`lancelet.file.LanceFileWriter.write_columns`), so that one column's
decoding, mostly Python holding the GIL, runs beside another's encoding, mostly
compiled kernels without it; read run by run, every column is decoded before any
is encoded, and each phase leaves the other's resource idle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial

import numpy as np
import pyarrow as pa

from lancelet.dataset.read.fragment_reader import FragmentReader
from lancelet.file.many import column_takers, take_from_files
from lancelet.file.reader import LanceFileReader
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
    opened = _open_run(store, manifest, run, schema)
    if opened is None:
        return None
    readers, rows = opened
    table = take_from_files(readers, rows)
    if table is None or any(
        not field.nullable and column.null_count
        for field, column in zip(schema, table.columns, strict=True)
    ):
        return None
    return pa.Table.from_arrays(table.columns, schema=schema), [len(r) for r in rows]


class NeedsScan(Exception):
    """A column read by :func:`live_columns` holds what the scanner must report."""


def live_columns(
    store: DatasetStore, manifest: Manifest, fragments: Sequence[Fragment], schema: pa.Schema
) -> tuple[list[Callable[[], pa.Array]], list[int], int] | None:
    """The live rows of ``fragments`` in order, one column at a time: per column of
    ``schema`` (every column of the dataset), a function making all of its rows
    (raising :class:`NeedsScan` where the scanner must read them instead), what each
    costs, and how many rows there are.  None unless there are several fragments,
    each small and plain, of at most :data:`COLUMN_ROWS` rows in all, whose files
    :func:`lancelet.file.many.column_takers` can read."""
    field_ids = [f.id for f in manifest.schema.fields]
    if (
        len(fragments) < 2
        or sum(f.physical_rows for f in fragments) > COLUMN_ROWS
        or not all(_plain(f, field_ids) for f in fragments)
    ):
        return None
    opened = _open_run(store, manifest, fragments, schema)
    if opened is None:
        return None
    readers, rows = opened
    live = sum(len(r) for r in rows)
    found = column_takers(readers, rows) if live else None
    if found is None:
        return None
    takers, costs = found
    makers: list[Callable[[], pa.Array]] = [
        partial(_checked, field, take) for field, take in zip(schema, takers, strict=True)
    ]
    return makers, costs, live


# A group of at most this many rows is read column by column (see live_columns): a
# column of all its rows on each of a few threads holds about what a run's table does.
COLUMN_ROWS = 4 * RUN_ROWS


def _checked(field: pa.Field, take: Callable[[], pa.Array]) -> pa.Array:
    column = take()
    if not field.nullable and column.null_count:
        raise NeedsScan(field.name)
    return column


def _open_run(
    store: DatasetStore, manifest: Manifest, run: Sequence[Fragment], schema: pa.Schema
) -> tuple[list[LanceFileReader], list[np.ndarray]] | None:
    """The data file of each fragment of ``run``, opened, and its live rows; None when
    a deletion file is damaged or the files' columns are not exactly ``schema``'s."""
    fragment_readers = [FragmentReader(store, manifest.schema, f, shared=False) for f in run]
    # Here, not on another thread beside the opening: decoding a deletion file is
    # mostly Python, and the two threads taking turns at the GIL cost more (46 against
    # 37 ms for a hundred files) than one thread doing both.
    deletions = [r.deleted for r in fragment_readers]
    readers = [r.data_file(0) for r in fragment_readers]
    rows = []
    for fragment, found in zip(run, deletions, strict=True):
        deleted = found.astype(np.int64)
        if len(deleted) and (int(deleted[0]) < 0 or int(deleted[-1]) >= fragment.physical_rows):
            return None  # a damaged deletion file, which the scanner reports
        live = np.ones(fragment.physical_rows, dtype=bool)
        live[deleted] = False
        rows.append(np.flatnonzero(live))
    if [(f.name, f.type) for f in readers[0].schema] != [(f.name, f.type) for f in schema]:
        return None
    return readers, rows
