"""Cutting a stream of (values, row addresses) into the zones of zone maps and Bloom
filters, as the reference cuts them.

A zone holds up to ``capacity`` consecutive *live* rows of one fragment: a zone ends
when it is full or when the fragment changes.  Its bounds are offsets, not counts:
``start`` is the offset of its first row and ``length`` spans to its last row, so a
zone covers the deleted rows between its live ones (and the address range a search
returns covers every live row of the zone).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancelet.errors import ArgumentError
from lancelet.table import row_address, sorted_sets


@dataclass(frozen=True)
class Zone:
    fragment_id: int
    start: int
    length: int
    values: pa.Array  # the zone's live values, in address order
    addresses: np.ndarray  # their row addresses (uint64)


def cut_zones(
    batches: Iterable[tuple[pa.Array, np.ndarray]], capacity: int, value_type: pa.DataType
) -> Iterator[Zone]:
    """The zones of ``batches``, which arrive in fragment / offset order.

    Memory stays at one batch plus one open zone."""
    if capacity <= 0:
        raise ArgumentError(f"rows per zone must be positive, got {capacity}")
    pending_values: list[pa.Array] = []
    pending_addresses: list[np.ndarray] = []
    pending_rows = 0
    last_address: int | None = None
    for values, addresses in batches:
        values, addresses = _check_batch(values, addresses, value_type)
        if len(addresses) == 0:
            continue
        first = int(addresses[0])
        if (
            last_address is not None
            and row_address.fragment_of(first) == row_address.fragment_of(last_address)
            and first <= last_address
        ):
            raise ArgumentError("row addresses must ascend within a fragment")
        last_address = int(addresses[-1])
        for run_start, run_end in _fragment_runs(addresses):
            if pending_rows and row_address.fragment_of(
                pending_addresses[-1][-1]
            ) != row_address.fragment_of(addresses[run_start]):
                yield _zone(pending_values, pending_addresses)
                pending_values, pending_addresses, pending_rows = [], [], 0
            position = run_start
            while position < run_end:
                take = min(capacity - pending_rows, run_end - position)
                pending_values.append(values.slice(position, take))
                pending_addresses.append(addresses[position : position + take])
                pending_rows += take
                position += take
                if pending_rows == capacity:
                    yield _zone(pending_values, pending_addresses)
                    pending_values, pending_addresses, pending_rows = [], [], 0
    if pending_rows:
        yield _zone(pending_values, pending_addresses)


def _check_batch(
    values: pa.Array, addresses: np.ndarray, value_type: pa.DataType
) -> tuple[pa.Array, np.ndarray]:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not values.type.equals(value_type):
        raise ArgumentError(f"index values have type {values.type}, expected {value_type}")
    addresses = np.asarray(addresses)
    if addresses.dtype != np.uint64 or addresses.ndim != 1 or len(addresses) != len(values):
        raise ArgumentError("row addresses must be a uint64 vector, one per value")
    if len(addresses) > 1:
        fragments = row_address.fragment_ids(addresses)
        same = fragments[1:] == fragments[:-1]
        if np.any(same & (addresses[1:] <= addresses[:-1])):
            raise ArgumentError("row addresses must ascend within a fragment")
    return values, addresses


def _fragment_runs(addresses: np.ndarray) -> list[tuple[int, int]]:
    return list(itertools.pairwise(row_address.fragment_runs(addresses).tolist()))


def _zone(values: list[pa.Array], addresses: list[np.ndarray]) -> Zone:
    joined = np.concatenate(addresses)
    first, last = int(joined[0]), int(joined[-1])
    return Zone(
        fragment_id=row_address.fragment_of(first),
        start=row_address.offset_of(first),
        length=row_address.offset_of(last) - row_address.offset_of(first) + 1,
        values=pa.concat_arrays(values) if len(values) > 1 else values[0],
        addresses=joined,
    )


def zone_addresses(fragment_ids: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Every address the given zones cover, sorted and unique (uint64)."""
    lengths = lengths.astype(np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.uint64)
    firsts = row_address.pack(fragment_ids, starts)
    ends = np.cumsum(lengths)
    # A running count that restarts at each zone: position minus the zone's first slot.
    within = np.arange(total, dtype=np.int64) - np.repeat(ends - lengths, lengths)
    result = np.repeat(firsts, lengths) + within.astype(np.uint64)
    return sorted_sets.unique(result)
