"""Row address changes (compaction moves rows and drops deleted ones), applied to an
index's addresses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from lancelet.errors import ArgumentError
from lancelet.table import row_address

# The new address of a row that no longer exists.
DELETED = row_address.NO_ADDRESS


@dataclass(frozen=True)
class AddressMapping:
    """``old[i]`` became ``new[i]`` (``DELETED``: removed); other addresses stay."""

    old: np.ndarray
    new: np.ndarray

    def __post_init__(self) -> None:
        old = np.asarray(self.old, dtype=np.uint64)
        new = np.asarray(self.new, dtype=np.uint64)
        if old.ndim != 1 or old.shape != new.shape:
            raise ArgumentError(
                f"an address mapping needs equal 1-d arrays, not {old.shape} -> {new.shape}"
            )
        # A compaction's moves come ascending already: one pass tells, no sort needed.
        if len(old) > 1 and not bool((old[1:] > old[:-1]).all()):
            order = np.argsort(old, kind="stable")
            old, new = old[order], new[order]
            if np.any(old[1:] == old[:-1]):
                raise ArgumentError("an address mapping lists an old address twice")
        object.__setattr__(self, "old", old)
        object.__setattr__(self, "new", new)

    @classmethod
    def from_dict(cls, mapping: Mapping[int, int | None]) -> AddressMapping:
        """pylance's form: old address -> new address, or None when deleted."""
        old = np.fromiter(mapping.keys(), dtype=np.uint64, count=len(mapping))
        new = np.fromiter(
            (DELETED if v is None else v for v in mapping.values()),
            dtype=np.uint64,
            count=len(mapping),
        )
        return cls(old, new)

    def apply(self, addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The new addresses of ``addresses``, and which of them still exist."""
        addresses = np.asarray(addresses, dtype=np.uint64)
        if not len(self.old):
            return addresses, np.ones(len(addresses), dtype=bool)
        whole = self._whole_fragments
        if whole is not None:
            moved = whole.apply(addresses, self.new)
        else:
            where = np.minimum(np.searchsorted(self.old, addresses), len(self.old) - 1)
            hit = self.old[where] == addresses
            moved = np.where(hit, self.new[where], addresses)
        return moved, moved != DELETED

    @cached_property
    def _whole_fragments(self) -> _WholeFragments | None:
        """The old addresses as whole fragments (each its rows ``0..n-1``), as a
        compaction's moves are; None when they are not."""
        return _WholeFragments.of(self.old)


@dataclass(frozen=True)
class _WholeFragments:
    """Old addresses that are every row ``0..sizes[i]-1`` of fragments ``ids[i]``, listed
    from ``firsts[i]`` on.  An address is found by its fragment among the few ids and
    then by its offset, rather than searched among every old address: an index's
    addresses come in key order, scattered, and a search over all of a compaction's
    rows misses the cache at each step."""

    ids: np.ndarray  # uint32, ascending
    firsts: np.ndarray  # int64
    sizes: np.ndarray  # int64

    @classmethod
    def of(cls, old: np.ndarray) -> _WholeFragments | None:
        """``old``: sorted, unique."""
        fragments, offsets = row_address.unpack(old)
        firsts = np.flatnonzero(np.r_[True, fragments[1:] != fragments[:-1]])
        sizes = np.diff(np.r_[firsts, len(old)])
        # Sorted unique offsets of a fragment, n of them, from 0 up to n - 1: all of 0..n-1.
        lasts = firsts + sizes - 1
        if np.any(offsets[firsts] != 0) or np.any(offsets[lasts] != sizes - 1):
            return None
        return cls(fragments[firsts], firsts, sizes)

    def apply(self, addresses: np.ndarray, new: np.ndarray) -> np.ndarray:
        fragments, offsets = row_address.unpack(addresses)
        group = np.minimum(np.searchsorted(self.ids, fragments), len(self.ids) - 1)
        at = offsets.astype(np.int64)
        hit = (self.ids[group] == fragments) & (at < self.sizes[group])
        where = np.where(hit, self.firsts[group] + at, 0)
        moved: np.ndarray = np.where(hit, new[where], addresses)
        return moved
