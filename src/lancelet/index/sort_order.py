"""The permutation that sorts index rows: by value (nulls first, floats in total order
with ``-0.0`` before ``0.0``), ties by row address.

Arrow's two-key table sort compares row by row through both columns; this module
sorts integers instead, with numpy's stable sorts (which keep equal values in their
input order, so the address tie-break costs nothing when the addresses already
ascend, as a scan's do):

* every fixed-width value that orders as an integer (integers, dates, times,
  timestamps, durations, booleans, floats through :func:`.ordering.sort_keys`) is its
  own key;
* other values (strings, binaries, decimals) are replaced by their rank among the
  distinct values (a dictionary encoding whose few entries Arrow sorts), unless
  nearly every value is distinct, when Arrow sorts them directly;
* keys spanning fewer than 4096 values are counted (Arrow's sort counts them), fewer
  than 2**16 take one radix pass (numpy's stable sort of 16-bit integers is a radix
  sort), fewer than 2**32 two passes of 16 bits (unless they nearly ascend already,
  which numpy's merge sort finds in a few sweeps);
* keys already in order are left as they are (no permutation at all).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.index import ordering

# Keys with this many or fewer descents are nearly sorted: a merge sort beats radix.
_FEW_DESCENTS = 1024
_DIGIT = 1 << 16
# Arrow's sort counts integers spanning fewer values than this (pyarrow 26 does;
# another version sorting them otherwise is slower, not wrong: its sort is stable).
_ARROW_COUNTING = 4096


def sort_order(values: pa.Array, ids: np.ndarray | None) -> np.ndarray | None:
    """The stable permutation (int64) sorting rows by value, then by ``ids`` (None:
    the rows' ties are already in order, as when the ids ascend); None when the rows
    are in order already (a scan of a column written in order is)."""
    if ids is None or _ascending(ids):
        return value_order(values)
    first = stable_order(ids)  # by id, so that the stable sort by value breaks ties by id
    assert first is not None  # the ids do not ascend
    then = value_order(values.take(pa.array(first)))
    return first if then is None else first[then]


def value_order(values: pa.Array) -> np.ndarray | None:
    """The stable permutation sorting ``values`` (nulls first, in input order); None
    when they are in order already."""
    sort_keys = ordering.sort_keys(values)
    keys = _integer_keys(sort_keys)
    if keys is None:
        return _arrow_order(sort_keys)
    if not keys.null_count:
        return stable_order(keys.to_numpy())
    valid = keys.is_valid().to_numpy(zero_copy_only=False)
    nulls, present = np.flatnonzero(~valid), np.flatnonzero(valid)
    order = stable_order(keys.drop_null().to_numpy())
    if order is None and nulls[-1] == len(nulls) - 1:
        return None  # the nulls lead, the rest ascend
    return np.concatenate([nulls, present if order is None else present[order]])


def _arrow_order(sort_keys: pa.Array) -> np.ndarray:
    """Arrow's (stable) sort, for values that do not rank as integers."""
    table = pa.table({"k": sort_keys})
    arrow = pc.sort_indices(table, sort_keys=[("k", "ascending", "at_start")])
    return np.asarray(arrow, dtype=np.int64)


def stable_order(keys: np.ndarray) -> np.ndarray | None:
    """The stable permutation (int64) sorting a numpy array of integers; None when
    they are in order already."""
    descents = np.count_nonzero(keys[1:] < keys[:-1]) if len(keys) > 1 else 0
    if not descents:
        return None
    lowest = keys.min()
    span = int(keys.max()) - int(lowest)
    if span < _ARROW_COUNTING:
        # Arrow counts small ranges too, faster, into its own (reused) memory.
        arrow = pc.array_sort_indices(pa.array(keys))
        counted: np.ndarray = np.asarray(arrow).view(np.int64)
        return counted
    if span < _DIGIT:
        return _radix_pass(_distances(keys, lowest, np.uint16))
    if span >= _DIGIT * _DIGIT or descents <= _FEW_DESCENTS:
        return np.argsort(keys, kind="stable").astype(np.int64, copy=False)
    distances = _distances(keys, lowest, np.uint32)
    low = _radix_pass(distances.astype(np.uint16))  # the low 16 bits
    order: np.ndarray = low[_radix_pass((distances[low] >> np.uint32(16)).astype(np.uint16))]
    return order


def _radix_pass(digits: np.ndarray) -> np.ndarray:
    # numpy's stable sort of 16-bit integers is a counting (radix) sort: linear.
    return np.argsort(digits, kind="stable").astype(np.int64, copy=False)


def _distances(keys: np.ndarray, lowest: np.generic, dtype: type[np.unsignedinteger]) -> np.ndarray:
    """``keys - lowest`` as ``dtype``, which holds every difference: computed in the
    keys' width unsigned, whose wrapping arithmetic gives the exact difference."""
    unsigned = np.dtype(f"u{keys.dtype.itemsize}")
    base = np.array(lowest, dtype=keys.dtype).view(unsigned)
    difference: np.ndarray = keys.view(unsigned) - base
    return difference.astype(dtype, copy=False)


def run_starts(values: pa.Array) -> np.ndarray:
    """Where each run of equal sorted values begins (floats by bits: -0.0 is not 0.0)."""
    if not len(values):
        return np.empty(0, dtype=np.int64)
    keys = ordering.sort_keys(values)
    head, tail = keys.slice(0, len(keys) - 1), keys.slice(1)
    both_null = pc.and_(pc.is_null(head), pc.is_null(tail))
    differs = pc.if_else(both_null, False, pc.fill_null(pc.not_equal(head, tail), True))
    changes = np.flatnonzero(differs.to_numpy(zero_copy_only=False)) + 1
    starts: np.ndarray = np.r_[0, changes].astype(np.int64)
    return starts


def merge_order(values: pa.Array, bounds: np.ndarray) -> np.ndarray | None:
    """The stable permutation sorting ``values``, made of sorted pieces that end at
    ``bounds`` (None: in order already).  Equal values come in runs: when there are
    few, the runs' first values are sorted (stably, so equal runs stay in piece
    order) and the runs laid out in that order, rather than every value sorted."""
    starts = np.union1d(run_starts(values), bounds[:-1])
    if len(starts) * 4 > len(values):
        return value_order(values)
    runs = value_order(values.take(pa.array(starts)))
    if runs is None:
        return None
    lengths = np.diff(np.r_[starts, len(values)])[runs]
    firsts = starts[runs]
    # Row i of the output is row i - (its run's place in the output) + its run's start.
    placed = np.cumsum(lengths) - lengths
    order: np.ndarray = np.repeat(firsts - placed, lengths) + np.arange(len(values))
    return order


def _ascending(ids: np.ndarray) -> bool:
    return bool(len(ids) < 2 or np.all(ids[1:] >= ids[:-1]))


def _integer_keys(keys: pa.Array) -> pa.Array | None:
    """Integers ordering as ``keys`` do (nulls kept), or None for Arrow to sort."""
    return _fixed_keys(keys) if _orders_as_integers(keys.type) else _dictionary_ranks(keys)


def _orders_as_integers(dtype: pa.DataType) -> bool:
    t = pa.types
    temporal = t.is_date(dtype) or t.is_time(dtype) or t.is_timestamp(dtype)
    return bool(t.is_integer(dtype) or t.is_boolean(dtype) or temporal or t.is_duration(dtype))


def _fixed_keys(keys: pa.Array) -> pa.Array:
    """Integers, booleans, dates and times as the integers they order as."""
    dtype = keys.type
    if pa.types.is_integer(dtype):
        return keys
    if pa.types.is_boolean(dtype):
        return pc.cast(keys, pa.uint8())
    return keys.view(pa.int32() if dtype.bit_width == 32 else pa.int64())


def batches_in_order(batches: list[pa.RecordBatch]) -> bool:
    """Whether (value, id) rows are sorted already, by value and then by id (a scan
    of a column written in order, an index whose addresses a compaction moved in
    order), checked batch by batch (nothing copied): False for values that do not
    order as integers (floats do, through their keys) or hold nulls."""
    previous: tuple[int, int] | None = None
    for batch in batches:
        if not batch.num_rows:
            continue
        keys = ordering.sort_keys(batch.column(0))
        if not _orders_as_integers(keys.type) or keys.null_count:
            return False
        numbers, ids = _fixed_keys(keys).to_numpy(), batch.column(1).to_numpy()
        if previous is not None and previous >= (int(numbers[0]), int(ids[0])):
            return False
        rising = numbers[1:] > numbers[:-1]
        if np.any(numbers[1:] < numbers[:-1]) or np.any(~rising & (ids[1:] <= ids[:-1])):
            return False
        previous = (int(numbers[-1]), int(ids[-1]))
    return True


def _dictionary_ranks(keys: pa.Array) -> pa.Array | None:
    """Each value's rank among the distinct values (nulls kept), or None when nearly
    every value is distinct (ranking them is sorting them) or Arrow cannot hash them."""
    try:
        encoded = pc.dictionary_encode(keys)
        dictionary, indices = encoded.dictionary, encoded.indices
        if len(dictionary) > max(_DIGIT, len(keys) // 2):
            return None
        by_value = np.asarray(pc.sort_indices(dictionary), dtype=np.int64)
    except pa.ArrowNotImplementedError:
        return None
    # Ranks as narrow as they fit: the sort's first pass reads them directly.
    narrow = np.uint16 if len(dictionary) <= _DIGIT else np.uint32
    rank = np.empty(len(dictionary), dtype=narrow)
    rank[by_value] = np.arange(len(dictionary), dtype=narrow)
    ranks: pa.Array = pc.take(pa.array(rank), indices)
    return ranks


# -- grouping ----------------------------------------------------------------------------


def grouped(
    values: pa.Array | pa.ChunkedArray, ids: np.ndarray
) -> tuple[np.ndarray | None, np.ndarray]:
    """Rows grouped by value: the stable permutation sorting them by value, then by
    ``ids`` (None: in order already), and where each run of equal values (floats by
    bits) begins in that order.  Values that rank as integers are never reordered:
    the runs are found among their ranks."""
    if _ascending(ids):
        return _group_order(values)
    first = stable_order(ids)  # by id, so that the stable sort by value breaks ties by id
    assert first is not None  # the ids do not ascend
    order, starts = _group_order(values.take(pa.array(first)))
    return (first if order is None else first[order]), starts


def _group_order(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray | None, np.ndarray]:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    sort_keys = ordering.sort_keys(values)
    keys = _integer_keys(sort_keys)
    if keys is None:
        order = _arrow_order(sort_keys)
        return order, run_starts(values.take(pa.array(order)))
    return _grouped_keys(keys)


def _grouped_keys(keys: pa.Array) -> tuple[np.ndarray | None, np.ndarray]:
    """Grouping integer keys (nulls first, as one group)."""
    if not keys.null_count:
        numbers = keys.to_numpy()
        order = stable_order(numbers)
        return order, _starts(numbers if order is None else numbers[order])
    valid = keys.is_valid().to_numpy(zero_copy_only=False)
    nulls, present = np.flatnonzero(~valid), np.flatnonzero(valid)
    numbers = keys.drop_null().to_numpy()
    inner = stable_order(numbers)
    order = np.concatenate([nulls, present if inner is None else present[inner]])
    starts = _starts(numbers if inner is None else numbers[inner]) + len(nulls)
    return order, np.r_[0, starts].astype(np.int64)


def _starts(ordered: np.ndarray) -> np.ndarray:
    if not len(ordered):
        return np.empty(0, dtype=np.int64)
    changes = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    starts: np.ndarray = np.r_[0, changes].astype(np.int64)
    return starts
