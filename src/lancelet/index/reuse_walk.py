"""Every reuse version's moves packed into flat arrays, and a compiled walk of a few
addresses through all of them.

Applying the versions one by one costs a dozen numpy calls per version whatever the
number of addresses: an index lookup that finds four rows after 100 deferred
compactions spent 5 ms there.  Once a map is used again, its versions are packed
(one concatenation each of the surviving-row lists) and the walk runs per address
in a compiled loop: a binary search per version that moved the address's fragment.

The walk knows nothing of how addresses are laid out: fragments are spans
``[start, start + width)`` and a new row's address is its fragment's start plus its
offset, all computed by :mod:`lancelet.table.row_address`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from lancelet.file.codecs.jit import kernel
from lancelet.table import row_address


class Moves(Protocol):
    """One version's moves, as :mod:`lancelet.index.frag_reuse` holds them."""

    @property
    def old_ids(self) -> np.ndarray: ...
    @property
    def changed(self) -> np.ndarray: ...
    @property
    def order(self) -> np.ndarray | None: ...
    @property
    def ends(self) -> np.ndarray: ...
    @property
    def new_ids(self) -> np.ndarray: ...


def _bounds(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Where each part starts in the concatenation, then its total length."""
    return np.concatenate(([0], np.cumsum([len(p) for p in parts]))).astype(np.int64)


def _joined(parts: Sequence[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


@dataclass(frozen=True)
class PackedMoves:
    """Version ``v``'s arrays are ``x[x_at[v]:x_at[v + 1]]`` of each array ``x``.
    A version whose surviving rows are already in new-row order has an empty order."""

    old_starts: np.ndarray
    old_at: np.ndarray
    changed: np.ndarray
    changed_at: np.ndarray
    order: np.ndarray
    order_at: np.ndarray
    ends: np.ndarray
    new_starts: np.ndarray
    new_at: np.ndarray

    @classmethod
    def of(cls, versions: Sequence[Moves]) -> PackedMoves:
        olds = [row_address.fragment_starts(v.old_ids) for v in versions]
        changed = [v.changed for v in versions]
        orders = [np.zeros(0, np.int64) if v.order is None else v.order for v in versions]
        ends = [v.ends for v in versions]
        news = [row_address.fragment_starts(v.new_ids) for v in versions]
        return cls(
            _joined(olds, np.uint64),
            _bounds(olds),
            _joined(changed, np.uint64),
            _bounds(changed),
            _joined(orders, np.int64),
            _bounds(orders),
            _joined(ends, np.uint64),
            _joined(news, np.uint64),
            _bounds(news),
        )

    def walk(self, addresses: np.ndarray, alive: np.ndarray) -> None:
        """Move ``addresses`` (uint64) in place through every version in order; rows
        a version dropped leave ``alive``."""
        _walk(
            addresses,
            alive,
            np.uint64(row_address.PART_END),
            self.old_starts,
            self.old_at,
            self.changed,
            self.changed_at,
            self.order,
            self.order_at,
            self.ends,
            self.new_starts,
            self.new_at,
        )


@kernel
def _walk(
    addresses: np.ndarray,
    alive: np.ndarray,
    width: np.uint64,
    old_starts: np.ndarray,
    old_at: np.ndarray,
    changed: np.ndarray,
    changed_at: np.ndarray,
    order: np.ndarray,
    order_at: np.ndarray,
    ends: np.ndarray,
    new_starts: np.ndarray,
    new_at: np.ndarray,
) -> None:
    versions = len(old_at) - 1
    for i in range(len(addresses)):
        if not alive[i]:
            continue
        address = addresses[i]
        for v in range(versions):
            # Was the address's fragment one this version replaced?
            lo, hi = old_at[v], old_at[v + 1]
            k = np.searchsorted(old_starts[lo:hi], address, side="right") - 1
            if k < 0 or address - old_starts[lo + k] >= width:
                continue
            lo, hi = changed_at[v], changed_at[v + 1]
            at = np.searchsorted(changed[lo:hi], address)
            if at == hi - lo or changed[lo + at] != address:
                alive[i] = False
                break
            position = at if order_at[v] == order_at[v + 1] else order[order_at[v] + at]
            # The new fragment holding that position, and the offset within it.
            lo, hi = new_at[v], new_at[v + 1]
            f = np.searchsorted(ends[lo:hi], np.uint64(position), side="right")
            begin = np.uint64(0) if f == 0 else ends[lo + f - 1]
            address = new_starts[lo + f] + (np.uint64(position) - begin)
        addresses[i] = address
