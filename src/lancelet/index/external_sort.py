"""Sorting (value, row address) pairs of any size in bounded memory.

Rows are gathered into runs that fit half the memory budget (:mod:`.memory_pool`,
``LANCE_MEM_POOL_SIZE``: sorting a run copies it) and at most ``run_rows`` rows when
that is given.  When they all fit in one run, the caller gets them unsorted, to sort
(or, for a BITMAP, group) at once.  Otherwise each run is sorted and spilled to a
temporary Arrow IPC file in a scratch directory, and the runs are merged block by
block: each run holds one block (a slice of its mapped file), the blocks together at
most the other half of the budget, and a merge step emits every buffered row that
sorts no later than the smallest of the blocks' last rows (so the run owning that row
empties its block and reads the next).  A step compares a few probe rows of each
block with that bound, then sorts the rows taken (:mod:`.sort_order`): stably by
value alone when the input's addresses ascend from run to run (a scan's do).  A
budget too small to hold one row per run fails with :class:`ResourcesExhaustedError`
as soon as that is known, as pylance's sort does; with no budget (spilling bypassed)
everything is sorted in memory.

Rows sort by value (nulls first, floats in total order with ``-0.0`` before ``0.0``)
and then by address, as :func:`lancelet.index.sort_order.sort_order` orders them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import ArgumentError, ResourcesExhaustedError
from lancelet.index import ordering, sort_order
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


def array(table: pa.Table, name: str) -> pa.Array:
    """A column as one array (copied only when it is in several chunks)."""
    column = table.column(name)
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def sort_table(table: pa.Table, ties_ordered: bool = False) -> pa.Table:
    """The rows sorted by value, then by address (``ties_ordered``: rows of equal
    values are known to be in address order already, as when the addresses ascend)."""
    if sort_order.batches_in_order(table.to_batches()):
        return table  # a scan of a column written in order: nothing to sort, or copy
    values, ids = array(table, VALUES), array(table, IDS)
    order = sort_order.sort_order(values, None if ties_ordered else ids.to_numpy())
    if order is None:
        return table  # in order already
    # Taken from the arrays combined once, not from the chunks (which a take combines).
    taken = pa.array(order)
    return pa.Table.from_arrays([values.take(taken), ids.take(taken)], schema=table.schema)


# Rows apart of the rows a merge step compares with its bound first.
_PROBE_STRIDE = 1024


def _rows_up_to(block: pa.Table, bound_key: pa.Scalar, bound_id: pa.Scalar) -> int:
    """How many leading rows of a sorted block sort no later than the bound row: every
    ``_PROBE_STRIDE``-th row is compared first, then only the stretch between the
    last probe at or before the bound and the first after it."""
    probes = np.arange(_PROBE_STRIDE - 1, block.num_rows, _PROBE_STRIDE)
    if len(probes) < 2:
        return _count_up_to(block, bound_key, bound_id)
    start = _count_up_to(block.take(pa.array(probes)), bound_key, bound_id) * _PROBE_STRIDE
    stretch = block.slice(start, _PROBE_STRIDE)
    return start + _count_up_to(stretch, bound_key, bound_id)


def _count_up_to(block: pa.Table, bound_key: pa.Scalar, bound_id: pa.Scalar) -> int:
    """How many rows of a block sort no later than the bound row."""
    keys = ordering.sort_keys(array(block, VALUES))
    ids = block.column(IDS)
    id_ok = pc.less_equal(ids, bound_id)
    if not bound_key.is_valid:
        mask = pc.and_(pc.is_null(keys), id_ok)
    else:
        before = pc.fill_null(pc.less(keys, bound_key), True)  # nulls sort first
        tied = pc.fill_null(pc.equal(keys, bound_key), False)
        mask = pc.or_(before, pc.and_(tied, id_ok))
    return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)


def _spill(table: pa.Table, path: str) -> None:
    """A sorted run as an Arrow IPC file: scratch that only this module reads back,
    written and mapped back without encoding (a Lance file's encodings cost more
    than the disk they save here)."""
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


class _Run:
    """A spilled run, mapped and read back a block at a time.  Blocks are slices of
    the mapping, copied only when a merge step reorders them: Arrow unmaps the file
    when the last slice is released, so a block may outlive :meth:`close` (and the
    file's removal, which POSIX allows while it is mapped)."""

    def __init__(self, path: str, block_rows: int):
        self._source = pa.memory_map(path)
        self._rows = pa.ipc.open_file(self._source).read_all()  # zero copy: mapped pages
        self.total = self._rows.num_rows
        self.next_row = 0
        self.block_rows = block_rows
        self.block = self._rows.slice(0, 0)
        self.refill()

    def refill(self) -> None:
        count = min(self.block_rows, self.total - self.next_row)
        self.block = self._rows.slice(self.next_row, count)  # mapped, not copied
        self.next_row += count

    def close(self) -> None:
        self.block = self._rows = self._rows.slice(0, 0)
        self._source.close()


def _block_rows(limits: _RunLimits, runs: int) -> int:
    """Rows of each run's block in the merge: the merge half of the budget shared by
    the runs (a run limited to ``run_rows`` shares those), at least one."""
    if limits.nbytes is not None:
        return max(1, limits.nbytes // (runs * max(1, limits.widest)))
    return max(1024, (limits.rows or 1 << 20) // runs)


def _merge(runs: list[_Run], ordered: bool) -> Iterator[pa.Table]:
    """The runs' rows in order, a merge step at a time (``ordered``: every address of
    a run is below every address of the next, so rows of equal values, taken run by
    run, are in address order)."""
    live = [run for run in runs if run.block.num_rows]
    while live:
        lasts = pa.concat_tables([run.block.slice(run.block.num_rows - 1) for run in live])
        first = sort_table(lasts).slice(0, 1)
        bound_key = ordering.sort_keys(array(first, VALUES))[0]
        bound_id = first.column(IDS)[0]
        taken = []
        for run in live:
            count = _rows_up_to(run.block, bound_key, bound_id)
            taken.append(run.block.slice(0, count))
            run.block = run.block.slice(count)
            if not run.block.num_rows:
                run.refill()
        yield _merge_pieces([piece for piece in taken if piece.num_rows], ordered)
        live = [run for run in live if run.block.num_rows]


def _merge_pieces(pieces: list[pa.Table], ordered: bool) -> pa.Table:
    """Sorted pieces, one per run in run order, as one sorted table."""
    if len(pieces) == 1:
        return pieces[0]
    table = pa.concat_tables(pieces).combine_chunks()
    if not ordered:
        return sort_table(table)
    bounds = np.cumsum([piece.num_rows for piece in pieces])
    order = sort_order.merge_order(array(table, VALUES), bounds)
    return table if order is None else table.take(pa.array(order))


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


@dataclass
class SortedRows:
    """A build's rows in sorted order: ``whole``, every row in one unsorted table, when
    they fit in one run (nothing spilled: the caller sorts, or groups, them at once),
    else ``merged``, the spilled runs merged into sorted blocks."""

    whole: pa.Table | None
    merged: Iterator[pa.Table] | None

    def blocks(self) -> Iterator[pa.Table]:
        """The rows as a stream of sorted tables."""
        if self.whole is not None:
            yield sort_table(self.whole)
        if self.merged is not None:
            yield from self.merged


@contextmanager
def sorted_rows(
    tables: Iterable[pa.Table],
    schema: pa.Schema,
    run_rows: int | None = None,
    budget: int | Literal["environment"] | None = "environment",
) -> Iterator[SortedRows]:
    """All rows of ``tables``, sorted or ready to sort in one go (:class:`SortedRows`).

    ``budget``: the bytes the sort may hold (None: no limit), by default read from
    the environment (:func:`.memory_pool.sort_budget`); ``run_rows`` further caps a
    run's rows.  Spilled runs live in a local temporary directory (scratch, never the
    dataset's store, which may be remote) that is removed when the context exits.
    """
    if run_rows is not None and run_rows <= 0:
        raise ArgumentError(f"run_rows must be positive, not {run_rows}")
    limits = _RunLimits(run_rows, sort_budget() if budget == "environment" else budget)
    opened: list[_Run] = []
    with tempfile.TemporaryDirectory(prefix="lancelet-sort-") as scratch:
        try:
            runs = _runs(tables, limits)
            first = next(runs, None)
            second = next(runs, None) if first is not None else None
            if second is None:
                yield SortedRows(first if first is not None else schema.empty_table(), None)
                return
            paths, ordered = _spill_runs((first, second, *runs), limits, scratch)
            opened += [_Run(path, _block_rows(limits, len(paths))) for path in paths]
            yield SortedRows(None, _merge(opened, ordered))
        finally:
            for run in opened:
                run.close()


@contextmanager
def sorted_blocks(
    tables: Iterable[pa.Table],
    schema: pa.Schema,
    run_rows: int | None = None,
    budget: int | Literal["environment"] | None = "environment",
) -> Iterator[Iterator[pa.Table]]:
    """All rows of ``tables`` in sorted order, as a stream of sorted tables (see
    :func:`sorted_rows`)."""
    with sorted_rows(tables, schema, run_rows, budget) as rows:
        yield rows.blocks()


def _spill_runs(
    runs: Iterable[pa.Table], limits: _RunLimits, scratch: str
) -> tuple[list[str], bool]:
    """Sort and spill each run; the files, and whether the runs' addresses ascend
    from run to run (a scan's do), so that the merge need not compare them."""
    paths: list[str] = []
    ordered, highest = True, -1
    for run in runs:
        limits.check_merge(len(paths) + 1)
        run = run.combine_chunks()  # once: the sort then reads the same arrays
        ids = array(run, IDS).to_numpy()
        ascending = bool(np.all(ids[1:] >= ids[:-1]))
        ordered = ordered and ascending and int(ids[0]) > highest
        highest = max(highest, int(ids.max()))
        path = os.path.join(scratch, f"_sort_run_{len(paths)}.arrow")
        _spill(sort_table(run, ties_ordered=ascending), path)
        paths.append(path)
    return paths, ordered
