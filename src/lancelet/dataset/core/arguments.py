"""Checks of argument types and values at the API boundary.

A wrong type is a :class:`TypeError` and an impossible value an
:class:`~lancelet.errors.ArgumentError`, each naming the argument, raised before any
work starts; never an error from deep inside numpy or Arrow.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from numbers import Integral
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.errors import ArgumentError, NumberOutOfRangeError, RowOutOfRangeError

# No dataset holds more rows than 64-bit row addresses can name, so a larger limit or
# offset means "all"; clamping keeps slicing arithmetic inside int64.
_MAX_ROWS = 1 << 62


def _integer(value: Any, name: str, call: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{call}: {name} must be an integer, not {value!r}")
    return int(value)


_UNSIGNED_END = 1 << 64


def unsigned(value: Any, name: str, call: str) -> int:
    """A number pylance's binding takes as an unsigned 64-bit integer (a version, a
    count of retries or versions): outside that range, an OverflowError as there."""
    number = _integer(value, name, call)
    if number < 0:
        raise NumberOutOfRangeError(f"{call}: {name} must not be negative, got {number}")
    if number >= _UNSIGNED_END:
        raise NumberOutOfRangeError(f"{call}: {name} {number} is too large")
    return number


def row_count(value: Any, name: str, call: str) -> int | None:
    """``limit`` or ``offset``: None or a non-negative integer."""
    return _at_least(value, 0, name, call)


def positive(value: Any, name: str, call: str) -> int | None:
    """``batch_size`` and the like: None or an integer of at least 1."""
    return _at_least(value, 1, name, call)


def _at_least(value: Any, minimum: int, name: str, call: str) -> int | None:
    if value is None:
        return None
    number = _integer(value, name, call)
    if number < minimum:
        if minimum == 0:
            # pylance's wording for a negative limit or offset, which callers match on.
            raise ArgumentError(
                f"{call}: {name.capitalize()} must be non-negative ({name}={number})"
            )
        raise ArgumentError(f"{call}: {name} must be at least {minimum}, got {number}")
    return min(number, _MAX_ROWS)


def flag(value: Any, name: str, call: str, default: bool = False) -> bool:
    if value is None:
        return default
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{call}: {name} must be True or False, not {value!r}")
    return bool(value)


def indices(value: Any, call: str) -> np.ndarray:
    """Row positions as int64, from a list, a numpy array or an Arrow integer array."""
    if isinstance(value, (pa.Array, pa.ChunkedArray)):
        if not pa.types.is_integer(value.type):
            raise TypeError(f"{call}: indices must be integers, not {value.type}")
        if value.null_count:
            raise ArgumentError(f"{call}: indices must not contain nulls")
        array = np.asarray(value.to_numpy(zero_copy_only=False))
    else:
        array = np.asarray(value)
    if array.ndim != 1:
        raise TypeError(f"{call}: indices must be a flat list of row positions, not {value!r}")
    if array.size and array.dtype == object:
        array = _object_indices(array, value, call)
    if array.size and array.dtype.kind not in "iu":
        raise TypeError(f"{call}: indices must be integers, not {array.dtype} values")
    # As pylance's binding: a negative position cannot be converted (OverflowError);
    # one past the rows but within 64 bits is out of range.
    if array.size and array.dtype.kind == "i" and int(array.min()) < 0:
        raise NumberOutOfRangeError(f"{call}: index {int(array.min())} is negative")
    if array.size and array.dtype.kind == "u" and int(array.max()) >= 1 << 63:
        raise RowOutOfRangeError(f"{call}: index {int(array.max())} is out of range")
    return array.astype(np.int64, copy=False)


def _object_indices(array: np.ndarray, value: Any, call: str) -> np.ndarray:
    """Python ints (any size) as int64, or uint64 beyond it."""
    for dtype in (np.int64, np.uint64):
        try:
            return np.array(array, dtype=dtype)
        except OverflowError:
            continue
        except (TypeError, ValueError):
            raise TypeError(f"{call}: indices must be integers, not {value!r}") from None
    smallest = min(int(v) for v in array)
    if smallest < 0:
        raise NumberOutOfRangeError(f"{call}: index {smallest} is negative")
    raise NumberOutOfRangeError(f"{call}: index {max(int(v) for v in array)} is too large")


def string_mapping(value: Any, name: str, call: str, *, nullable: bool) -> Mapping[str, Any]:
    """A mapping of strings to strings (or None, where ``nullable``)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{call}: {name} must be a dict, not {value!r}")
    for key, item in value.items():
        ok = isinstance(item, str) or (nullable and item is None)
        if not isinstance(key, str) or not ok:
            kind = "strings or None" if nullable else "strings"
            raise TypeError(f"{call}: {name} must map strings to {kind}, not {key!r}: {item!r}")
    return value


def duration(value: Any, name: str, call: str) -> timedelta | None:
    if value is None or isinstance(value, timedelta):
        return value
    raise TypeError(f"{call}: {name} must be a datetime.timedelta, not {value!r}")
