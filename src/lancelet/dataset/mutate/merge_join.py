"""merge_insert's join of source rows to target rows when the target's keys ascend.

A table's keys often ascend in row order (rows appended in key order: order ids,
timestamps, a sequence); then each source key is found by a binary search among the
target's keys, several times cheaper than Arrow's hash join, which hashes and probes
every target row.  Integer keys only, packed into one 64-bit code per row (the keys'
ranges must fit together), and no null keys (SQL semantics, which the hash join keeps:
a null matches nothing); otherwise, when the target's keys do not ascend, or when the
target holds over a million rows (where making its codes costs more), the hash join
runs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["sorted_target_pairs"]

_CODE_END = 1 << 63
# Above this many target rows the hash join is cheaper: the codes are a fresh array
# per key the size of the target (lineitem SF1's 6M rows: ~0.18 s of copies and page
# faults, against ~0.05 s for Arrow's multithreaded join).
_MAX_TARGET_ROWS = 1 << 20


def sorted_target_pairs(
    source: pa.Table,
    target: pa.Table,
    keys: Sequence[str],
    source_row: str,
    address: str,
) -> pa.Table | None:
    """Every (source row, target ``address``) pair whose keys are equal, sorted by
    source row then address, as columns ``source_row`` (int64) and ``address``; None
    when the keys do not qualify or the target is large (then the hash join runs)."""
    if target.num_rows > _MAX_TARGET_ROWS:
        return None
    bounds = _bounds(source, target, keys)
    if bounds is None:
        return None
    target_codes = _codes(target, keys, bounds)
    steps = target_codes[1:] >= target_codes[:-1]
    if not bool(steps.all()):
        return None
    source_codes = _codes(source, keys, bounds)
    first = np.searchsorted(target_codes, source_codes, side="left")
    if bool(np.all(target_codes[1:] != target_codes[:-1])):
        # Distinct target keys: a source key matches at most the row it lands on.
        landed = np.minimum(first, len(target_codes) - 1)
        counts = (
            (target_codes[landed] == source_codes).astype(np.int64)
            if len(target_codes)
            else np.zeros(len(source_codes), dtype=np.int64)
        )
    else:
        counts = np.searchsorted(target_codes, source_codes, side="right") - first
    rows = np.repeat(np.arange(len(source_codes), dtype=np.int64), counts)
    at = np.repeat(first - (np.cumsum(counts) - counts), counts) + np.arange(len(rows))
    addresses = target.column(address).to_numpy()[at]
    pairs = pa.table({source_row: rows, address: pa.array(addresses, pa.uint64())})
    if len(counts) and int(counts.max()) > 1:
        # One source row matched several target rows: their addresses follow the
        # scan's order, which need not be ascending.
        pairs = pairs.sort_by([(source_row, "ascending"), (address, "ascending")])
    return pairs


def _bounds(
    source: pa.Table, target: pa.Table, keys: Sequence[str]
) -> list[tuple[int, int]] | None:
    """Each key's smallest value and span over both tables, or None when a key is not
    an integer, holds a null, or the spans multiplied do not fit in 63 bits."""
    bounds = []
    total = 1
    for name in keys:
        columns = (source.column(name), target.column(name))
        if not all(pa.types.is_integer(c.type) and not c.null_count for c in columns):
            return None
        lows, highs = [], []
        for column in columns:
            if len(column):
                extremes = pc.min_max(column)
                lows.append(extremes["min"].as_py())
                highs.append(extremes["max"].as_py())
        if not lows:
            return None
        low, span = min(lows), max(highs) - min(lows) + 1
        total *= span
        if total >= _CODE_END:
            return None
        bounds.append((low, span))
    return bounds


def _codes(table: pa.Table, keys: Sequence[str], bounds: list[tuple[int, int]]) -> np.ndarray:
    """One int64 per row, ordered as the rows' key tuples are: the keys as digits of
    mixed radix (each key less its smallest value, below its span).  Computed in
    place in one array: a fresh array per step costs more than the arithmetic."""
    codes = np.zeros(table.num_rows, dtype=np.int64)
    for name, (low, span) in zip(keys, bounds, strict=True):
        values = table.column(name).to_numpy()
        codes *= np.int64(span)
        if values.dtype == np.uint64:
            # Less than the span (below 2**63) once the low is taken off.
            codes += (values - np.uint64(low)).view(np.int64)
        else:
            # Added before the low is taken off: the sum may wrap, the result not.
            np.add(codes, values, out=codes, casting="unsafe")
            codes -= np.int64(low)
    return codes
