"""How index values sort and compare, the way pylance's scalar indices order them.

pylance sorts index values as Arrow's Rust kernels do: nulls first, strings and
binaries by their bytes, floats in IEEE 754 total order (``-NaN < -inf < ... < -0.0 <
0.0 < ... < inf < NaN``).  Its searches compare a column with a constant as DataFusion
does: in the same total order, except that ``-0.0`` and ``0.0`` are equal.

Floats are handled through integer keys (their bits, magnitude bits inverted when negative):
*sort keys* keep the sign of zero (the order pages are written in), *search keys* drop
it (the order queries compare in).  Search keys never decrease along sort order, so a
page sorted one way is sorted the other way too.  Every other type is compared as Arrow
compares it.
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

FLOATS = (pa.float16(), pa.float32(), pa.float64())


def is_indexable(dtype: pa.DataType) -> bool:
    """Whether lancelet orders values of ``dtype`` the way pylance's indices do."""
    t = pa.types
    return bool(
        t.is_integer(dtype)
        or t.is_floating(dtype)
        or t.is_boolean(dtype)
        or t.is_string(dtype)
        or t.is_large_string(dtype)
        or t.is_binary(dtype)
        or t.is_large_binary(dtype)
        or t.is_fixed_size_binary(dtype)
        or t.is_date(dtype)
        or t.is_time(dtype)
        or t.is_timestamp(dtype)
        or t.is_duration(dtype)
        or t.is_decimal(dtype)
    )


_INT_OF_FLOAT = {
    pa.float16(): (np.int16, pa.int16()),
    pa.float32(): (np.int32, pa.int32()),
    pa.float64(): (np.int64, pa.int64()),
}


def _float_keys(values: pa.Array, signed_zero: bool) -> pa.Array:
    int_type, arrow_int = _INT_OF_FLOAT[values.type]
    numbers = values.to_numpy(zero_copy_only=False)
    if not signed_zero:
        numbers = np.where(numbers == 0, np.zeros(1, numbers.dtype), numbers)
    bits = np.ascontiguousarray(numbers).view(int_type)
    # Negative floats sort in reverse of their bits: flip their magnitude bits.
    flip = (bits >> (bits.dtype.itemsize * 8 - 1)) & np.array(np.iinfo(int_type).max, int_type)
    mask = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    return pa.array(bits ^ flip, arrow_int, mask=mask)


def sort_keys(values: pa.Array) -> pa.Array:
    """What rows sort by: integer keys for floats (zero's sign kept), else the values."""
    if values.type in FLOATS:
        return _float_keys(values, signed_zero=True)
    return values


def search_keys(values: pa.Array) -> pa.Array:
    """What a query compares: integer keys for floats (``-0.0 = 0.0``), else the values."""
    if values.type in FLOATS:
        return _float_keys(values, signed_zero=False)
    return values


def search_key(value: pa.Scalar) -> pa.Scalar:
    if value.type not in FLOATS:
        return value  # as search_keys: other values are their own keys
    return search_keys(pa.array([value], value.type))[0]


def dense_ranks(arrays: list[pa.Array]) -> list[np.ndarray]:
    """Integer ranks that order the non-null values of several same-typed arrays
    among each other (equal values, equal ranks); nulls get -1."""
    combined = pa.chunked_array(arrays, type=arrays[0].type).combine_chunks()
    valid = combined.is_valid().to_numpy(zero_copy_only=False)
    ranks = np.full(len(combined), -1, dtype=np.int64)
    present = combined.filter(pa.array(valid))
    if len(present):
        ranks[valid] = pc.rank(present, tiebreaker="dense").to_numpy().astype(np.int64)
    bounds = np.cumsum([0, *(len(a) for a in arrays)])
    return [ranks[lo:hi] for lo, hi in itertools.pairwise(bounds)]


class Ranked:
    """Arrays ranked among each other once (like :func:`dense_ranks`), against which a
    query's few literals are then placed without ranking everything again.

    Ranks are odd here (``2r + 1`` for dense rank ``r``; nulls -1).  A literal equal to
    a ranked value gets that value's rank, one between two values the even number
    between theirs, so comparing ranks compares values."""

    def __init__(self, arrays: list[pa.Array]) -> None:
        self.ranks = [np.where(r < 0, -1, 2 * r - 1) for r in dense_ranks(arrays)]
        present = pa.chunked_array(arrays, type=arrays[0].type).combine_chunks().drop_null()
        distinct = pc.unique(present)
        distinct = distinct.take(pc.sort_indices(distinct))
        # numpy orders these as Arrow does: numbers and times by value, strings by code
        # point (UTF-8 byte order), bytes by byte, decimals by value.
        self._sorted = distinct.to_numpy(zero_copy_only=False)

    def place(self, literals: pa.Array) -> np.ndarray:
        """The rank of each literal (of the ranked arrays' type)."""
        out = np.full(len(literals), -1, dtype=np.int64)
        valid = literals.is_valid().to_numpy(zero_copy_only=False)
        values = literals.drop_null().to_numpy(zero_copy_only=False)
        if not len(values):
            return out
        at = np.searchsorted(self._sorted, values)
        if len(self._sorted):
            found = self._sorted[np.minimum(at, len(self._sorted) - 1)]
            equal = (at < len(self._sorted)) & (found == values)
        else:
            equal = np.zeros(len(values), dtype=bool)
        out[valid] = 2 * at + equal.astype(np.int64)
        return out


def _format_float(value: float, dtype: pa.DataType) -> str:
    # Rust's Display: shortest round-trip digits, never an exponent, "NaN", "inf".
    if np.isnan(value):
        return "NaN"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    width = {pa.float16(): np.float16, pa.float32(): np.float32}.get(dtype, np.float64)
    return str(np.format_float_positional(width(value), unique=True, trim="-"))


def display(value: pa.Scalar) -> str:
    """A value as pylance's index statistics print it (Rust's ``ScalarValue`` Display)."""
    dtype = value.type
    if pa.types.is_decimal(dtype):
        # DataFusion prints decimals as their debug triple: unscaled value, precision, scale.
        if not value.is_valid:
            return f"None,{dtype.precision},{dtype.scale}"
        unscaled = int(value.as_py().scaleb(dtype.scale))
        return f"Some({unscaled}),{dtype.precision},{dtype.scale}"
    if not value.is_valid:
        return "NULL"
    if dtype in FLOATS:
        return _format_float(float(value.as_py()), dtype)
    if pa.types.is_boolean(dtype):
        return "true" if value.as_py() else "false"
    if (
        pa.types.is_binary(dtype)
        or pa.types.is_large_binary(dtype)
        or pa.types.is_fixed_size_binary(dtype)
    ):
        return bytes(value.as_py()).hex().upper()
    if pa.types.is_date(dtype):
        return str(value.cast(pa.date32()).as_py().isoformat())
    if pa.types.is_timestamp(dtype) or pa.types.is_time(dtype) or pa.types.is_duration(dtype):
        return str(value.cast(pa.int64()).as_py())
    return str(value.as_py())
