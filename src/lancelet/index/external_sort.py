"""Sorting (value, row address) pairs of any size in bounded memory.

Rows are gathered into runs that fit half the memory budget (:mod:`.memory_pool`,
``LANCE_MEM_POOL_SIZE``: sorting a run copies it) and at most ``run_rows`` rows when
that is given; each run is sorted in memory and, when there is more than one, spilled
to a temporary Lance file in a scratch directory.  The runs are then merged block by
block: each run holds one block in memory, the blocks together at most the other half
of the budget, and a merge step emits every buffered row that sorts no later than the
smallest of the blocks' last rows (so the run owning that row empties its block and
reads the next).  Each step is a handful of Arrow kernels over whole blocks.  A budget
too small to hold one row per run fails with :class:`ResourcesExhaustedError` as
soon as that is known, as pylance's sort does; with no budget (spilling bypassed)
everything is sorted in memory.

Rows sort by value (nulls first, floats in total order with ``-0.0`` before ``0.0``)
and then by address, as :func:`lancelet.index.ordering.sort_indices` orders them.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import ArgumentError, ResourcesExhaustedError
from lancelet.file import LanceFileReader, LanceFileWriter
from lancelet.index import ordering
from lancelet.index.files import remove_quietly
from lancelet.index.memory_pool import BYPASS_VARIABLE, POOL_SIZE_VARIABLE, sort_budget

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


def _block_rows(limits: _RunLimits, runs: int) -> int:
    """Rows of each run's block in the merge: the merge half of the budget shared by
    the runs (a run limited to ``run_rows`` shares those), at least one."""
    if limits.nbytes is not None:
        return max(1, limits.nbytes // (runs * max(1, limits.widest)))
    return max(1024, (limits.rows or 1 << 20) // runs)


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


class _RunLimits:
    """How large a run may grow: ``rows`` rows and ``nbytes`` bytes (None: no limit)."""

    def __init__(self, rows: int | None, budget: int | None) -> None:
        self.rows = rows
        self.budget = budget
        self.nbytes = None if budget is None else budget // 2
        self.widest = 0  # the most bytes per row of any input, for the merge

    def rows_fitting(self, table: pa.Table, held_rows: int, held_bytes: int) -> int:
        """How many leading rows of ``table`` the run can still take."""
        rows: int = table.num_rows
        fit = rows
        if self.rows is not None:
            fit = min(fit, self.rows - held_rows)
        if self.nbytes is not None and rows:
            size: int = table.nbytes  # the Arrow buffers the rows take (slices counted)
            per_row = max(1, -(-size // rows))
            self.widest = max(self.widest, per_row)
            if per_row > self.nbytes:
                raise self.exhausted(f"a row of {per_row} bytes does not fit")
            fit = min(fit, (self.nbytes - held_bytes) // per_row)
        return fit

    def check_merge(self, runs: int) -> None:
        """Merging ``runs`` spilled runs holds a block, at least a row, of each."""
        if self.nbytes is not None and runs * self.widest > self.nbytes:
            raise self.exhausted(
                f"merging {runs} sorted runs spilled to disk needs more than "
                f"{runs * self.widest} bytes"
            )

    def exhausted(self, why: str) -> ResourcesExhaustedError:
        return ResourcesExhaustedError(
            f"Resources exhausted: an index build sorts its rows in at most "
            f"{POOL_SIZE_VARIABLE}={self.budget} bytes, and {why}; set "
            f"{POOL_SIZE_VARIABLE} higher, or set {BYPASS_VARIABLE} to sort in memory "
            "without a limit"
        )


def _runs(batches: Iterable[pa.Table], limits: _RunLimits) -> Iterator[pa.Table]:
    """The input regrouped into runs within ``limits``."""
    pending: list[pa.Table] = []
    held_rows = held_bytes = 0
    for table in batches:
        start = 0
        while start < table.num_rows:
            rest = table.slice(start)
            count = limits.rows_fitting(rest, held_rows, held_bytes)
            if count <= 0:
                yield pa.concat_tables(pending)
                pending, held_rows, held_bytes = [], 0, 0
                continue
            piece = rest.slice(0, count)
            pending.append(piece)
            held_rows += count
            held_bytes += piece.nbytes
            start += count
    if pending:
        yield pa.concat_tables(pending)


@contextmanager
def sorted_blocks(
    tables: Iterable[pa.Table],
    schema: pa.Schema,
    version: str,
    run_rows: int | None = None,
    budget: int | Literal["environment"] | None = "environment",
) -> Iterator[Iterator[pa.Table]]:
    """All rows of ``tables`` in sorted order, as a stream of sorted tables.

    ``budget``: the bytes the sort may hold (None: no limit), by default read from
    the environment (:func:`.memory_pool.sort_budget`); ``run_rows`` further caps a
    run's rows.  Spilled runs live in a local temporary directory (scratch, never the
    dataset's store, which may be remote) that is removed when the context exits.
    """
    if run_rows is not None and run_rows <= 0:
        raise ArgumentError(f"run_rows must be positive, not {run_rows}")
    limits = _RunLimits(run_rows, sort_budget() if budget == "environment" else budget)
    spilled: list[str] = []
    scratch = tempfile.TemporaryDirectory(prefix="lancelet-sort-")
    try:
        runs = _runs(tables, limits)
        first = next(runs, None)
        second = next(runs, None) if first is not None else None
        if second is None:
            # One run: no spill, the sorted rows stream straight out.
            only = sort_table(first) if first is not None else schema.empty_table()
            yield iter([only])
            return
        for run in (first, second, *runs):
            limits.check_merge(len(spilled) + 1)
            path = os.path.join(scratch.name, f"_sort_run_{uuid.uuid4().hex}.lance")
            spilled.append(path)
            with LanceFileWriter(path, schema, version=version) as writer:
                writer.write_batch(sort_table(run))
        yield _merge([_Run(path, _block_rows(limits, len(spilled))) for path in spilled])
    finally:
        remove_quietly(spilled)
        scratch.cleanup()
