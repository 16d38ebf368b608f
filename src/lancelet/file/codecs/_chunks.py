"""Argument checks and byte gathers shared by the batched chunk codecs."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from lancelet.errors import CorruptFileError

Bytes = bytes | bytearray | memoryview | npt.NDArray[np.uint8]
IntArray = npt.NDArray[np.int64]


def as_bytes(data: Bytes | object) -> npt.NDArray[np.uint8]:
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8 or data.ndim != 1:
            raise TypeError("byte input must be a 1-D uint8 array")
        return data
    return np.frombuffer(data, dtype=np.uint8)  # type: ignore[call-overload, no-any-return]


def ints(name: str, values: npt.ArrayLike, size: int | None, what: str) -> IntArray:
    arr = np.asarray(values)
    if arr.ndim != 1 or (size is not None and arr.size != size):
        raise ValueError(f"{what}: {name} must be a 1-D array of {size} integers")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{what}: {name} must hold integers")
    if arr.size and arr.dtype == np.uint64 and int(arr.max()) >= 2**63:
        raise CorruptFileError(f"{what}: {name} holds {int(arr.max())}, an impossible size")
    out = arr.astype(np.int64)
    if out.size and int(out.min()) < 0:
        raise CorruptFileError(f"{what}: negative {name} ({int(out.min())})")
    return out


def sorted_groups(values: npt.NDArray[np.int64]) -> tuple[IntArray, IntArray]:
    """The distinct values of the sorted ``values`` and where each first appears:
    ``np.unique(values, return_index=True)`` without numpy 2's hashing, which costs
    more than the whole of a small take."""
    if not len(values):
        return values.astype(np.int64), np.zeros(0, dtype=np.int64)
    change = np.flatnonzero(values[1:] != values[:-1])
    first = np.zeros(len(change) + 1, dtype=np.int64)
    first[1:] = change + 1
    return values[first].astype(np.int64), first


def gather_ranges(starts: IntArray, sizes: IntArray) -> IntArray:
    """Indices of the concatenated byte ranges ``[start, start + size)``, in order."""
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    out_starts = np.cumsum(sizes) - sizes
    return np.repeat(starts - out_starts, sizes) + np.arange(total, dtype=np.int64)


# Average bytes per range from which a Python slice per range costs less than an
# index per byte (memory copies either way: a compiled loop copies no faster).
_SLICED_BYTES = 64


def concat_ranges(
    data: npt.NDArray[np.uint8], starts: IntArray, sizes: IntArray
) -> npt.NDArray[np.uint8]:
    """``data[starts[i]:starts[i] + sizes[i]]`` back to back (one range: a view), the
    ranges inside ``data``."""
    if len(starts) == 1:
        start = int(starts[0])
        return data[start : start + int(sizes[0])]
    if not len(starts):
        return data[:0]
    if int(sizes.sum()) >= _SLICED_BYTES * len(starts):
        ends = (starts + sizes).tolist()
        return np.concatenate([data[s:e] for s, e in zip(starts.tolist(), ends, strict=True)])
    out: npt.NDArray[np.uint8] = data[gather_ranges(starts, sizes)]
    return out


def check_ranges(
    data: npt.NDArray[np.uint8], starts: IntArray, sizes: IntArray, name: str, what: str
) -> None:
    ends = starts + sizes
    if ends.size and int(ends.max()) > data.size:
        chunk = int(np.argmax(ends > data.size))
        raise CorruptFileError(
            f"{what}: chunk {chunk}'s {name} (bytes {int(starts[chunk])}.."
            f"{int(ends[chunk])}) run past the {data.size} bytes that hold them"
        )


def check_fixed_chunks(
    data: npt.NDArray[np.uint8],
    starts: IntArray,
    sizes: IntArray,
    counts: IntArray,
    unit: int,
    kind: str,
    what: str,
) -> None:
    """Every chunk lies in ``data`` and is exactly ``counts[i] * unit`` bytes
    (``kind`` names the codec and its items in the message, e.g. "packed struct rows")."""
    bad = (sizes != counts * unit) | (starts + sizes > data.size)
    if bad.any():
        chunk = int(np.argmax(bad))
        codec, items = kind.rsplit(" ", 1)
        raise CorruptFileError(
            f"{what}: {codec} chunk {chunk} is {int(sizes[chunk])} bytes at "
            f"{int(starts[chunk])} (of {data.size}), but {int(counts[chunk])} {items} of "
            f"{unit} bytes need {int(counts[chunk]) * unit}"
        )
