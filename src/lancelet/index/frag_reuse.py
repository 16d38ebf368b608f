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

import itertools
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from pyroaring import FrozenBitMap, FrozenBitMap64

from lancelet.errors import CorruptIndexError
from lancelet.file.codecs import jit
from lancelet.index.reuse_walk import PackedMoves
from lancelet.table import row_address
from lancelet.table.frag_reuse import FragmentDigest, ReuseDetails, ReuseGroup, ReuseVersion

# Up to this many rows, a first remap follows each row through the versions' treemaps
# rather than decoding every version's surviving rows into arrays.
_FEW_ROWS = 64


@dataclass(frozen=True)
class _Moves:
    """One version's moves.  ``changed`` holds the surviving rows' old addresses,
    ascending; the row at ``order[i]`` (``i`` when None) of the new fragments taken
    in order (ending at ``ends``, with ids ``new_ids``) is where ``changed[i]`` went.
    Every other row of a fragment in ``old_ids`` is gone."""

    old_ids: np.ndarray
    changed: np.ndarray
    order: np.ndarray | None
    ends: np.ndarray
    new_ids: np.ndarray

    @classmethod
    def of(cls, version: ReuseVersion) -> _Moves:
        old = np.array(sorted(version.old_ids), dtype=np.uint64)
        # Each group's addresses are ascending (checked when decoded), so the
        # version's are when the groups follow one another; one group needs no copy.
        parts = [g.changed for g in version.groups if len(g.changed)]
        order = None
        if len(parts) == 1:
            changed = parts[0]
        else:
            changed = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
            if any(a[-1] >= b[0] for a, b in itertools.pairwise(parts)):
                order = np.argsort(changed, kind="stable")
                changed = changed[order]
        new = [f for g in version.groups for f in g.new_fragments]
        ends = np.cumsum([f.physical_rows for f in new], dtype=np.uint64)
        return cls(old, changed, order, ends, np.array([f.id for f in new], dtype=np.uint64))

    def _targets(self, at: np.ndarray) -> np.ndarray:
        """The new addresses of ``changed[at]``."""
        position = at if self.order is None else self.order[at]
        position = position.astype(np.uint64)
        k = np.searchsorted(self.ends, position, side="right")
        begin = np.where(k > 0, self.ends[np.maximum(k, 1) - 1], 0).astype(np.uint64)
        return row_address.pack(self.new_ids[k], position - begin)

    def apply(self, addresses: np.ndarray, alive: np.ndarray) -> None:
        """Move ``addresses`` in place; rows this version dropped leave ``alive``."""
        touched = alive & np.isin(row_address.fragment_ids(addresses), self.old_ids)
        if not touched.any():
            return
        moving = addresses[touched]
        if len(self.changed):
            at = np.minimum(np.searchsorted(self.changed, moving), len(self.changed) - 1)
            hit = self.changed[at] == moving
            moved = moving.copy()
            moved[hit] = self._targets(at[hit])
            addresses[touched] = moved
        else:
            hit = np.zeros(len(moving), dtype=bool)
        alive[touched] = hit


def _placed(fragments: tuple[FragmentDigest, ...], position: int) -> int:
    """The address of row ``position`` of ``fragments`` taken in order."""
    for fragment in fragments:
        if position < fragment.physical_rows:
            return row_address.of_row(fragment.id, position)
        position -= fragment.physical_rows
    # Decoding checks the counts agree; never loop on a group that lies.
    raise CorruptIndexError("a reuse group moves more rows than it writes")


def _kept(
    bitmap: FrozenBitMap64, rows: list[int], at: list[int], moved: dict[int, int | None]
) -> tuple[list[int], list[int]]:
    """The rows whose addresses ``at`` survived into ``bitmap``; the others are
    marked dropped in ``moved``."""
    kept_rows, kept_at = [], []
    for i, address in zip(rows, at, strict=True):
        if address in bitmap:
            kept_rows.append(i)
            kept_at.append(address)
        else:
            moved[i] = None
    return kept_rows, kept_at


class ReuseMap:
    """The reuse versions of one Fragment Reuse Index, ready to apply."""

    def __init__(self, details: ReuseDetails) -> None:
        self.details = details
        self._remaps = 0

    @cached_property
    def _moves(self) -> tuple[_Moves, ...]:
        return tuple(_Moves.of(v) for v in self.details.versions)

    @cached_property
    def _packed(self) -> PackedMoves:
        return PackedMoves.of(self._moves)

    @cached_property
    def _replaced_by(self) -> dict[int, ReuseGroup]:
        """The group that replaced each fragment (ids are never reused, so a row's
        fragments lead from one version to the next in order)."""
        return {f.id: g for v in self.details.versions for g in v.groups for f in g.old_fragments}

    def remap(self, addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The current address of each of ``addresses``, and whether the row still
        exists (a compaction may have dropped it as deleted)."""
        out = np.array(addresses, dtype=np.uint64, copy=True)
        alive = np.ones(len(out), dtype=bool)
        self._remaps += 1
        # A map used once (a dataset opened for one lookup, a compaction's remap of
        # many rows) decodes no more than it must: a few rows ask each version's
        # treemap, many rows walk the versions' arrays with numpy.  A map used again
        # is packed once (about one pass over the versions) for the compiled walk.
        if self._remaps > 1 and len(self.details.versions) > 1 and jit.enabled():
            self._packed.walk(out, alive)
        elif len(out) <= _FEW_ROWS:
            for i, moved in self._follow(out.tolist()).items():
                if moved is None:
                    alive[i] = False  # its address is left as it was
                else:
                    out[i] = moved
        else:
            for moves in self._moves:
                moves.apply(out, alive)
        return out, alive

    def _follow(self, addresses: list[int]) -> dict[int, int | None]:
        """The current address of each of ``addresses`` a version moved, by position
        (None: a compaction dropped it).  The rows of one fragment take each step
        together: a lookup's rows usually share their fragments all the way."""
        moved: dict[int, int | None] = {}
        batches: dict[int, tuple[list[int], list[int]]] = {}
        for i, address in enumerate(addresses):
            rows, at = batches.setdefault(row_address.fragment_of(address), ([], []))
            rows.append(i)
            at.append(address)
        replaced_by = self._replaced_by
        while batches:
            fragment, (rows, at) = batches.popitem()
            while (group := replaced_by.get(fragment)) is not None:
                bitmap = group.bitmap
                if not all([a in bitmap for a in at]):
                    rows, at = _kept(bitmap, rows, at, moved)
                    if not rows:
                        break
                # A row's place among the group's survivors is its row in the new
                # fragments taken in order (the survivors number their rows: checked).
                new = group.new_fragments
                if len(new) == 1:
                    fragment = new[0].id
                    first = row_address.of_row(fragment, 0)
                    at = [first + bitmap.rank(a) - 1 for a in at]
                    continue
                for i, a in zip(rows, at, strict=True):
                    target = _placed(new, bitmap.rank(a) - 1)
                    r, t = batches.setdefault(row_address.fragment_of(target), ([], []))
                    r.append(i)
                    t.append(target)
                break
            else:
                moved.update(zip(rows, at, strict=True))
        return moved

    def coverage(self, bitmap: FrozenBitMap) -> FrozenBitMap:
        """The fragments an index recorded as ``bitmap`` holds after every version."""
        return self._walk(bitmap)[0]

    def needed(self, bitmap: FrozenBitMap) -> set[int]:
        """The positions of the versions an index recorded as ``bitmap`` depends on."""
        return self._walk(bitmap)[1]

    def _walk(self, bitmap: FrozenBitMap) -> tuple[FrozenBitMap, set[int]]:
        # A Python set of ids: a group replaces a handful of fragments, and a treemap
        # made per group costs more than the set operations it would save.
        covered = set(bitmap)
        needed: set[int] = set()
        for position, version in enumerate(self.details.versions):
            for group in version.groups:
                old = group.old_ids
                if covered.isdisjoint(old):
                    continue
                needed.add(position)
                whole = old <= covered
                covered -= old
                if whole:
                    covered |= group.new_ids
        return FrozenBitMap(covered), needed
