"""Row addresses: where a row lives, as one 64-bit number.

A row's address is its fragment id in the high 32 bits and its physical offset in
that fragment (deleted rows count) in the low 32.  Addresses change when rows move
(compaction, update); stable row ids (:mod:`.row_ids`) do not.

This module is the only place that knows that layout: everything else packs and
unpacks addresses through it (``tests/table/test_row_address_rule.py`` checks).  The
64-bit Roaring tree maps the indices serialize split any 64-bit value the same way
(high half as the key, low half in a 32-bit bitmap), so their codecs use these too.
"""

from __future__ import annotations

import itertools

import numpy as np

# How many low bits hold the offset (Spark expressions shift by it).
OFFSET_BITS = 32
# Fragment ids and offsets are below this.
PART_END = 1 << OFFSET_BITS
# No row: the new address of a row that was removed, or of an id no live row has.
NO_ADDRESS = np.uint64(np.iinfo(np.uint64).max)

_SHIFT = np.uint64(OFFSET_BITS)
_LOW = np.uint64(PART_END - 1)


# -- one address ---------------------------------------------------------------------


def of_row(fragment_id: int, offset: int) -> int:
    """The address of one row."""
    return (int(fragment_id) << OFFSET_BITS) | int(offset)


def fragment_of(address: int) -> int:
    return int(address) >> OFFSET_BITS


def offset_of(address: int) -> int:
    return int(address) & (PART_END - 1)


def fragment_span(fragment_id: int) -> tuple[int, int]:
    """The addresses ``[first, end)`` a fragment's rows can have."""
    first = of_row(fragment_id, 0)
    return first, first + PART_END


def describe(address: int) -> str:
    """A row address as people read it, for error messages."""
    return f"fragment {fragment_of(address)}, offset {offset_of(address)}"


# -- many addresses (numpy, vectorised) ----------------------------------------------


def pack(fragment_ids: np.ndarray | int, offsets: np.ndarray | int) -> np.ndarray:
    """Addresses (uint64) from fragment ids and offsets, either of which may be one
    number for all; both must be below :data:`PART_END` (not checked)."""
    if (
        isinstance(fragment_ids, (int, np.integer))
        and isinstance(offsets, np.ndarray)
        and offsets.ndim
    ):
        # One fragment (a scan's rows): one array made and or-ed in place, not a
        # widened copy and a second result (a scan of a big fragment pays for both).
        out: np.ndarray = offsets.astype(np.uint64)
        if fragment_ids:
            out |= np.uint64(int(fragment_ids) << OFFSET_BITS)
        return out
    high = np.asarray(fragment_ids).astype(np.uint64, copy=False)
    low = np.asarray(offsets).astype(np.uint64, copy=False)
    packed: np.ndarray = (high << _SHIFT) | low
    return packed


def unpack(addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The fragment ids and the offsets (both uint32) of ``addresses``."""
    return fragment_ids(addresses), offsets(addresses)


def of_range(fragment_id: int, start: int, stop: int) -> np.ndarray:
    """Addresses of physical rows ``[start, stop)`` of one fragment."""
    return pack(fragment_id, np.arange(start, stop, dtype=np.uint64))


def of_offsets(fragment_id: int, offsets: np.ndarray) -> np.ndarray:
    """Addresses of the given physical offsets of one fragment."""
    return pack(fragment_id, offsets)


def fragment_starts(fragment_ids: np.ndarray) -> np.ndarray:
    """The first address (uint64) each fragment's rows can have."""
    return pack(fragment_ids, 0)


def fragment_ids(addresses: np.ndarray) -> np.ndarray:
    out: np.ndarray = (np.asarray(addresses).astype(np.uint64, copy=False) >> _SHIFT).astype(
        np.uint32
    )
    return out


def offsets(addresses: np.ndarray) -> np.ndarray:
    out: np.ndarray = (np.asarray(addresses).astype(np.uint64, copy=False) & _LOW).astype(np.uint32)
    return out


def fragment_runs(addresses: np.ndarray) -> np.ndarray:
    """Where each run of addresses in one fragment starts, then ``len(addresses)``:
    run ``k`` is ``addresses[bounds[k]:bounds[k + 1]]`` (empty input: ``[0]``)."""
    ids = fragment_ids(addresses)
    cuts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    return np.concatenate(([0] if len(ids) else [], cuts, [len(ids)])).astype(np.int64)


def by_fragment(addresses: np.ndarray) -> dict[int, np.ndarray]:
    """Sorted addresses split per fragment: fragment id -> its offsets, in order."""
    addresses = np.asarray(addresses, dtype=np.uint64)
    ids, low = unpack(addresses)
    bounds = fragment_runs(addresses).tolist()
    return {int(ids[a]): low[a:b] for a, b in itertools.pairwise(bounds)}
