"""Which Arrow types each 2.0 encoding can produce, and the checks Arrow leaves to us.

A file's schema and its page encodings are stored apart, so a damaged or forged file
can pair, say, a dictionary type with a flat page.  Arrow trusts the buffers it is
handed (a dictionary array built without a dictionary aborts the process), so every
decoder is told up front which types it may build; :mod:`.dispatch` checks the pair
before decoding.

Some types also constrain their *values* (decimals must fit their precision, times
must fall within a day, date64 must be whole days); a decoded page that breaks one
is refused here rather than handed out as an array that fails ``validate(full=True)``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

VARIABLE_WIDTH = frozenset([pa.string(), pa.binary(), pa.large_string(), pa.large_binary()])

# The largest decimal precision whose values fit an int64 (|v| <= 10**18 - 1).
_INT64_DIGITS = 18


def is_variable_width(dtype: pa.DataType) -> bool:
    return dtype in VARIABLE_WIDTH


def is_fixed_width(dtype: pa.DataType) -> bool:
    """Types stored as one fixed-size value per row in a plain buffer (``Flat``)."""
    t = pa.types
    return bool(
        t.is_boolean(dtype)
        or t.is_integer(dtype)
        or t.is_floating(dtype)
        or t.is_decimal(dtype)
        or t.is_date(dtype)
        or t.is_time(dtype)
        or t.is_timestamp(dtype)
        or t.is_duration(dtype)
        or t.is_fixed_size_binary(dtype)
    )


def is_fixed_width_bytes(dtype: pa.DataType) -> bool:
    """Fixed-width types whose values are whole bytes (everything but booleans)."""
    return is_fixed_width(dtype) and not pa.types.is_boolean(dtype)


def values_per_row(dtype: pa.DataType) -> int:
    """Leaf values one row of ``dtype`` holds (fixed-size lists multiply)."""
    count = 1
    while pa.types.is_fixed_size_list(dtype):
        count *= max(int(dtype.list_size), 1)
        dtype = dtype.value_type
    return count


def needs_value_check(dtype: pa.DataType) -> bool:
    """Whether arrays of ``dtype`` can hold bytes Arrow's full validation rejects."""
    t = pa.types
    if t.is_decimal(dtype) or t.is_date64(dtype) or t.is_time(dtype):
        return True
    if t.is_fixed_size_list(dtype):
        return needs_value_check(dtype.value_type)
    if t.is_struct(dtype):
        return any(needs_value_check(dtype.field(i).type) for i in range(dtype.num_fields))
    if t.is_dictionary(dtype):
        return needs_value_check(dtype.value_type)
    return False


def value_problem(arr: pa.Array) -> str | None:
    """Why ``arr`` fails Arrow's full validation, or None; fast paths for flat columns.

    Only valid slots count (Arrow ignores the bytes under a null), so a fast check
    that fails on an array with nulls falls back to Arrow's own validation.
    """
    dtype = arr.type
    if pa.types.is_decimal128(dtype) and dtype.precision <= _INT64_DIGITS:
        if _small_decimals_fit(arr) or (arr.null_count and _arrow_accepts(arr)):
            return None
        return f"a value does not fit {dtype}"
    if pa.types.is_time(dtype):
        if _times_in_range(arr) or (arr.null_count and _arrow_accepts(arr)):
            return None
        return f"a {dtype} value lies outside one day"
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid as exc:
        return str(exc)
    return None


def _arrow_accepts(arr: pa.Array) -> bool:
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _small_decimals_fit(arr: pa.Array) -> bool:
    """Every 128-bit value is a sign-extended int64 within +-(10**precision - 1)."""
    if len(arr) == 0:
        return True
    words = np.frombuffer(arr.buffers()[1], dtype="<u8", count=2 * (arr.offset + len(arr)))
    words = words[2 * arr.offset :]
    bound = 10 ** int(arr.type.precision) - 1
    # The common case, no negative values: as unsigned words, the high word must be 0
    # and the low word at most the bound.  One pass over the bytes finds both maxima:
    # rows of _LANES words alternate low and high words column by column.
    body = len(words) // _LANES * _LANES
    lane_max = words[:body].reshape(-1, _LANES).max(axis=0) if body else np.zeros(2, np.uint64)
    tail = words[body:].reshape(-1, 2)
    low_max = max(int(lane_max[0::2].max()), int(tail[:, 0].max()) if len(tail) else 0)
    high_max = max(int(lane_max[1::2].max()), int(tail[:, 1].max()) if len(tail) else 0)
    if high_max == 0 and low_max <= bound:
        return True
    low, high = words[0::2].view(np.int64), words[1::2].view(np.int64)
    if int(low.min()) < -bound or int(low.max()) > bound:
        return False
    return bool(np.array_equal(high, low >> np.int64(63)))


# Words per row of the one-pass maxima above (even, so each column is all low or all
# high words; wide enough that numpy reduces whole rows with vector instructions).
_LANES = 128


_UNITS_PER_DAY = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}


def _times_in_range(arr: pa.Array) -> bool:
    width = arr.type.bit_width // 8
    values = np.frombuffer(arr.buffers()[1], dtype=f"<i{width}", count=arr.offset + len(arr))[
        arr.offset :
    ]
    if len(values) == 0:
        return True
    return bool(values.min() >= 0 and values.max() < _UNITS_PER_DAY[arr.type.unit])
