"""Row addresses: where a row lives, as one 64-bit number.

A row's address is its fragment id in the high 32 bits and its physical offset in
that fragment (deleted rows count) in the low 32.  Addresses change when rows move
(compaction, update); stable row ids (:mod:`.row_ids`) do not.
"""

from __future__ import annotations

import numpy as np

_SHIFT = np.uint64(32)
_LOW = np.uint64(0xFFFF_FFFF)


def of_range(fragment_id: int, start: int, stop: int) -> np.ndarray:
    """Addresses of physical rows ``[start, stop)`` of one fragment."""
    out: np.ndarray = np.arange(start, stop, dtype=np.uint64) | np.uint64(fragment_id << 32)
    return out


def of_offsets(fragment_id: int, offsets: np.ndarray) -> np.ndarray:
    """Addresses of the given physical offsets of one fragment."""
    out: np.ndarray = offsets.astype(np.uint64) | np.uint64(fragment_id << 32)
    return out


def fragment_ids(addresses: np.ndarray) -> np.ndarray:
    out: np.ndarray = (addresses.astype(np.uint64, copy=False) >> _SHIFT).astype(np.uint32)
    return out


def offsets(addresses: np.ndarray) -> np.ndarray:
    out: np.ndarray = (addresses.astype(np.uint64, copy=False) & _LOW).astype(np.uint32)
    return out


def by_fragment(addresses: np.ndarray) -> dict[int, np.ndarray]:
    """Sorted addresses split per fragment: fragment id -> its offsets, in order."""
    addresses = np.asarray(addresses, dtype=np.uint64)
    if not len(addresses):
        return {}
    ids = fragment_ids(addresses)
    cuts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    starts = np.concatenate(([0], cuts))
    stops = np.concatenate((cuts, [len(addresses)]))
    low = offsets(addresses)
    return {int(ids[a]): low[a:b] for a, b in zip(starts, stops, strict=True)}


def describe(address: int) -> str:
    """A row address as people read it, for error messages."""
    return f"fragment {int(address) >> 32}, offset {int(address) & 0xFFFF_FFFF}"
