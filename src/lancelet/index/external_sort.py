"""Sorting (value, row address) pairs of any size in bounded memory.

Rows are gathered into runs of at most ``run_rows``; each run is sorted in memory and,
when there is more than one, spilled to a temporary Lance file in a scratch directory.
The runs are then merged block by block: each run holds one block in memory, and a
merge step emits every buffered row that sorts no later than the smallest of the
blocks' last rows (so the run owning that row empties its block and reads the next).
Each step is a handful of Arrow kernels over whole blocks.

Rows sort by value (nulls first, floats in total order with ``-0.0`` before ``0.0``)
and then by address, as :func:`lancelet.index.ordering.sort_indices` orders them.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import ArgumentError
from lancelet.file import LanceFileReader, LanceFileWriter
from lancelet.index import ordering
from lancelet.index.files import remove_quietly

VALUES = "values"
IDS = "ids"


def pair_schema(value_type: pa.DataType) -> pa.Schema:
    return pa.schema([pa.field(VALUES, value_type), pa.field(IDS, pa.uint64(), nullable=False)])


def as_table(
    values: pa.Array | pa.ChunkedArray, addresses: np.ndarray, schema: pa.Schema
) -> pa.Table:
    """One input batch, checked: values of the index's type, one address per value."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if values.type != schema.field(VALUES).type:
        raise ArgumentError(
            f"index values are {values.type}, the index is of {schema.field(VALUES).type}"
        )
    ids = np.asarray(addresses)
    if ids.ndim != 1 or len(ids) != len(values):
        raise ArgumentError(f"{len(values)} values were given with {ids.shape} row addresses")
    if ids.dtype != np.uint64:
        raise ArgumentError(f"row addresses must be uint64, not {ids.dtype}")
    return pa.Table.from_arrays([values, pa.array(ids, pa.uint64())], schema=schema)


def sort_table(table: pa.Table) -> pa.Table:
    order = ordering.sort_indices(
        table.column(VALUES).combine_chunks(), table.column(IDS).combine_chunks()
    )
    return table.take(order)


def _rows_up_to(block: pa.Table, bound_key: pa.Scalar, bound_id: pa.Scalar) -> int:
    """How many leading rows of a sorted block sort no later than the bound row."""
    keys = ordering.sort_keys(block.column(VALUES).combine_chunks())
    ids = block.column(IDS)
    id_ok = pc.less_equal(ids, bound_id)
    if not bound_key.is_valid:
        mask = pc.and_(pc.is_null(keys), id_ok)
    else:
        before = pc.fill_null(pc.less(keys, bound_key), True)  # nulls sort first
        tied = pc.fill_null(pc.equal(keys, bound_key), False)
        mask = pc.or_(before, pc.and_(tied, id_ok))
    return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)


class _Run:
    def __init__(self, path: str, block_rows: int):
        self.reader = LanceFileReader(path)
        self.total = self.reader.num_rows()
        self.next_row = 0
        self.block_rows = block_rows
        self.block = self.reader.read_range(0, 0).to_table()
        self.refill()

    def refill(self) -> None:
        count = min(self.block_rows, self.total - self.next_row)
        self.block = self.reader.read_range(self.next_row, count).to_table().combine_chunks()
        self.next_row += count


def _merge(runs: list[_Run]) -> Iterator[pa.Table]:
    live = [run for run in runs if run.block.num_rows]
    while live:
        lasts = pa.concat_tables([run.block.slice(run.block.num_rows - 1) for run in live])
        first = sort_table(lasts).slice(0, 1)
        bound_key = ordering.sort_keys(first.column(VALUES).combine_chunks())[0]
        bound_id = first.column(IDS)[0]
        taken = []
        for run in live:
            count = _rows_up_to(run.block, bound_key, bound_id)
            taken.append(run.block.slice(0, count))
            run.block = run.block.slice(count)
            if not run.block.num_rows:
                run.refill()
        yield sort_table(pa.concat_tables(taken))
        live = [run for run in live if run.block.num_rows]


def _batches_of(batches: Iterable[pa.Table], rows: int) -> Iterator[pa.Table]:
    """The input regrouped into tables of at most ``rows`` rows."""
    pending: list[pa.Table] = []
    held = 0
    for table in batches:
        start = 0
        while start < table.num_rows:
            piece = table.slice(start, rows - held)
            pending.append(piece)
            held += piece.num_rows
            start += piece.num_rows
            if held == rows:
                yield pa.concat_tables(pending)
                pending, held = [], 0
    if held:
        yield pa.concat_tables(pending)


@contextmanager
def sorted_blocks(
    tables: Iterable[pa.Table],
    schema: pa.Schema,
    version: str,
    run_rows: int,
) -> Iterator[Iterator[pa.Table]]:
    """All rows of ``tables`` in sorted order, as a stream of sorted tables.

    Spilled runs live in a local temporary directory (scratch, never the dataset's
    store, which may be remote) that is removed when the context exits.
    """
    if run_rows <= 0:
        raise ArgumentError(f"run_rows must be positive, not {run_rows}")
    spilled: list[str] = []
    scratch = tempfile.TemporaryDirectory(prefix="lancelet-sort-")
    try:
        runs = _batches_of(tables, run_rows)
        first = next(runs, None)
        second = next(runs, None) if first is not None else None
        if second is None:
            # One run: no spill, the sorted rows stream straight out.
            only = sort_table(first) if first is not None else schema.empty_table()
            yield iter([only])
            return
        for run in (first, second, *runs):
            path = os.path.join(scratch.name, f"_sort_run_{uuid.uuid4().hex}.lance")
            spilled.append(path)
            with LanceFileWriter(path, schema, version=version) as writer:
                writer.write_batch(sort_table(run))
        block_rows = max(1024, run_rows // len(spilled))
        yield _merge([_Run(path, block_rows) for path in spilled])
    finally:
        remove_quietly(spilled)
        scratch.cleanup()
