"""Applying the Fragment Reuse Index: old row addresses to current ones, and old
fragment coverage to current coverage.

Addresses are mapped through every reuse version in order, whichever index they
came from: fragment ids are never reused, so an address in a fragment a version
replaced means that row of that fragment, and one in any other fragment is left
alone.  Coverage is stricter: an index holds the rows of a group's new fragments
only if it held all of the group's old fragments (a group mixes their rows); a
group it held in part leaves none of its fragments covered, so those rows are
scanned.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from pyroaring import FrozenBitMap

from lancelet.table.frag_reuse import ReuseDetails, ReuseVersion


@dataclass(frozen=True)
class _Moves:
    """One version's moves: ``changed[i]`` (ascending) became ``targets[i]``; every
    other row of a fragment in ``old_ids`` is gone."""

    old_ids: np.ndarray
    changed: np.ndarray
    targets: np.ndarray

    @classmethod
    def of(cls, version: ReuseVersion) -> _Moves:
        changed: list[np.ndarray] = []
        targets: list[np.ndarray] = []
        for group in version.groups:
            changed.append(group.changed)
            targets.extend(
                (np.uint64(f.id) << np.uint64(32)) | np.arange(f.physical_rows, dtype=np.uint64)
                for f in group.new_fragments
            )
        old = np.array(sorted(version.old_ids), dtype=np.uint64)
        if not changed:
            empty = np.zeros(0, dtype=np.uint64)
            return cls(old, empty, empty)
        keys = np.concatenate(changed)
        values = np.concatenate(targets) if targets else np.zeros(0, dtype=np.uint64)
        order = np.argsort(keys, kind="stable")
        return cls(old, keys[order], values[order])

    def apply(self, addresses: np.ndarray, alive: np.ndarray) -> None:
        """Move ``addresses`` in place; rows this version dropped leave ``alive``."""
        touched = alive & np.isin(addresses >> np.uint64(32), self.old_ids)
        if not touched.any():
            return
        moving = addresses[touched]
        if len(self.changed):
            at = np.minimum(np.searchsorted(self.changed, moving), len(self.changed) - 1)
            hit = self.changed[at] == moving
            addresses[touched] = np.where(hit, self.targets[at], moving)
        else:
            hit = np.zeros(len(moving), dtype=bool)
        alive[touched] = hit


class ReuseMap:
    """The reuse versions of one Fragment Reuse Index, ready to apply."""

    def __init__(self, details: ReuseDetails) -> None:
        self.details = details

    @cached_property
    def _moves(self) -> tuple[_Moves, ...]:
        return tuple(_Moves.of(v) for v in self.details.versions)

    def remap(self, addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The current address of each of ``addresses``, and whether the row still
        exists (a compaction may have dropped it as deleted)."""
        out = np.array(addresses, dtype=np.uint64, copy=True)
        alive = np.ones(len(out), dtype=bool)
        for moves in self._moves:
            moves.apply(out, alive)
        return out, alive

    def coverage(self, bitmap: FrozenBitMap) -> FrozenBitMap:
        """The fragments an index recorded as ``bitmap`` holds after every version."""
        return self._walk(bitmap)[0]

    def needed(self, bitmap: FrozenBitMap) -> set[int]:
        """The positions of the versions an index recorded as ``bitmap`` depends on."""
        return self._walk(bitmap)[1]

    def _walk(self, bitmap: FrozenBitMap) -> tuple[FrozenBitMap, set[int]]:
        covered = bitmap
        needed: set[int] = set()
        for position, version in enumerate(self.details.versions):
            for group in version.groups:
                old = FrozenBitMap(group.old_ids)
                if covered.isdisjoint(old):
                    continue
                needed.add(position)
                whole = old.issubset(covered)
                covered = covered - old
                if whole:
                    covered = covered | FrozenBitMap(group.new_ids)
        return covered, needed
