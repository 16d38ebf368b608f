"""A filter on one run-length encoded column, tested once per run.

A range on a sorted key (``l_orderkey >= 3000000 AND l_orderkey < 3000600``) reads
that column for every row of a fragment to find the few it keeps.  Where the file
stores the column as runs, the filter's predicate tree is evaluated on the runs'
values, and only the runs it keeps become rows: the rows it drops are never
expanded.  A predicate on one column is the same test of each row's value, so the
rows kept are those the row-by-row evaluation keeps.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelet.dataset.read.fragment_reader import FragmentReader, live_mask
from lancelet.expr import Predicate
from lancelet.expr.arrow import evaluate

__all__ = ["kept_by_runs", "probed_by_runs"]


def kept_by_runs(
    reader: FragmentReader, column: str, start: int, stop: int, predicate: Predicate
) -> tuple[pa.Table, np.ndarray] | None:
    """The live rows among physical rows ``[start, stop)`` whose ``column`` value
    ``predicate`` (testing that column alone) keeps: a table of that column, and the
    rows' offsets (uint32); None when the column is not stored as runs there or the
    tree cannot be evaluated by the kernels (then filter the rows)."""
    found = reader.read_runs(column, start, stop)
    if found is None:
        return None
    values, lengths = found
    try:
        mask = evaluate(predicate, values)
    except pa.ArrowException:
        return None
    if not isinstance(mask, pa.Array | pa.ChunkedArray) or len(mask) != values.num_rows:
        return None
    keep = np.asarray(mask.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    runs = np.flatnonzero(keep)
    counts = lengths[runs]
    run_of_row = np.repeat(runs, counts)
    # Each kept row's offset in [start, stop): its run's first row, plus its place in it.
    firsts = np.cumsum(lengths) - lengths
    placed = np.cumsum(counts) - counts
    offsets = np.repeat(firsts[runs] - placed, counts) + np.arange(len(run_of_row))
    live = live_mask(reader, start, stop)
    if live is not None:
        alive = live[offsets]
        run_of_row, offsets = run_of_row[alive], offsets[alive]
    return values.take(pa.array(run_of_row)), (offsets + start).astype(np.uint32)


def probed_by_runs(
    reader: FragmentReader,
    probe: list[str],
    span: tuple[int, int],
    predicate: Predicate | None,
    offset_column: str,
) -> pa.Table | None:
    """A scan's filter column (``probe``, one) for the live rows of ``span`` the filter
    (``predicate``, its exact tree) keeps, with their offsets as ``offset_column``;
    None when :func:`kept_by_runs` cannot answer (then read and filter the rows)."""
    if len(probe) != 1 or predicate is None:
        return None
    found = kept_by_runs(reader, probe[0], span[0], span[1], predicate)
    if found is None:
        return None
    table, offsets = found
    return table.append_column(offset_column, pa.array(offsets))
