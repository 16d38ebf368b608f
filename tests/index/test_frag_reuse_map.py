"""Applying reuse versions: addresses and coverage, checked against a plain Python
model of the rows (a dict from old address to new, chained by hand)."""

from __future__ import annotations

import numpy as np
from pyroaring import FrozenBitMap

from lancelet.index.frag_reuse import ReuseMap
from lancelet.table.frag_reuse import FragmentDigest, ReuseDetails, ReuseGroup, ReuseVersion


def _group(
    old: dict[int, list[int]], rows: dict[int, int], new: list[tuple[int, int]]
) -> ReuseGroup:
    """``old``: fragment -> surviving offsets; ``rows``: fragment -> physical rows."""
    changed = np.array([(f << 32) | o for f in sorted(old) for o in old[f]], dtype=np.uint64)
    return ReuseGroup(
        changed,
        tuple(FragmentDigest(f, rows[f], rows[f] - len(old[f])) for f in sorted(old)),
        tuple(FragmentDigest(f, n) for f, n in new),
    )


def _model(groups: list[ReuseGroup]) -> dict[int, int | None]:
    """Old address -> new address (None: gone), from one version's groups."""
    out: dict[int, int | None] = {}
    for group in groups:
        targets = [(f.id << 32) | o for f in group.new_fragments for o in range(f.physical_rows)]
        moved = dict(zip(group.changed.tolist(), targets, strict=True))
        for f in group.old_fragments:
            for o in range(f.physical_rows):
                out[(f.id << 32) | o] = moved.get((f.id << 32) | o)
    return out


def test_addresses_follow_every_version_in_order() -> None:
    rng = np.random.default_rng(5)
    versions = []
    live = {f: list(range(10)) for f in range(4)}  # fragment -> its live offsets
    rows = {f: 10 for f in range(4)}
    next_id = 4
    for step in range(3):
        members = sorted(live)[: 2 + step % 2]
        survivors = {
            f: sorted(rng.choice(live[f], size=len(live[f]) // 2, replace=False).tolist())
            for f in members
        }
        count = sum(len(v) for v in survivors.values())
        group = _group(survivors, {f: rows[f] for f in members}, [(next_id, count)])
        versions.append(ReuseVersion(10 + step, (group,)))
        for f in members:
            del live[f]
        live[next_id], rows[next_id] = list(range(count)), count
        next_id += 1
    reuse = ReuseMap(ReuseDetails(tuple(versions)))
    # Every row of every fragment there ever was, and fragments never rewritten.
    addresses = np.array(
        [(f << 32) | o for f in range(next_id + 2) for o in range(rows.get(f, 3))], np.uint64
    )
    mapped, alive = reuse.remap(addresses)
    for i, start in enumerate(addresses.tolist()):
        value: int | None = start
        for version in versions:
            if value is not None:
                value = _model(list(version.groups)).get(value, value)
        assert (bool(alive[i]), int(mapped[i]) if alive[i] else None) == (value is not None, value)


def test_coverage_takes_a_group_whole_or_not_at_all() -> None:
    group = _group({0: [0, 1], 1: [2]}, {0: 3, 1: 3}, [(5, 3)])
    reuse = ReuseMap(ReuseDetails((ReuseVersion(3, (group,)),)))
    assert set(reuse.coverage(FrozenBitMap([0, 1, 2]))) == {2, 5}
    # Held in part: the new fragment mixes rows the index never saw.
    assert set(reuse.coverage(FrozenBitMap([0, 2]))) == {2}
    assert set(reuse.coverage(FrozenBitMap([2]))) == {2}
    assert reuse.needed(FrozenBitMap([0])) == {0} and reuse.needed(FrozenBitMap([2])) == set()


def test_a_group_with_no_survivors_drops_every_row() -> None:
    group = _group({0: [], 1: []}, {0: 2, 1: 2}, [])
    reuse = ReuseMap(ReuseDetails((ReuseVersion(3, (group,)),)))
    mapped, alive = reuse.remap(np.array([0, 1, 1 << 32, 2 << 32], np.uint64))
    assert alive.tolist() == [False, False, False, True]
    assert int(mapped[3]) == 2 << 32


def test_groups_listed_out_of_address_order() -> None:
    """A version's groups may come in any order; each keeps its own new fragments."""
    late = _group({2: [0, 2], 3: [1]}, {2: 3, 3: 2}, [(9, 3)])
    early = _group({0: [1], 1: [0, 1]}, {0: 2, 1: 2}, [(7, 1), (8, 2)])
    groups = [late, early]
    reuse = ReuseMap(ReuseDetails((ReuseVersion(4, tuple(groups)),)))
    addresses = np.array([(f << 32) | o for f in range(4) for o in range(3)], np.uint64)
    mapped, alive = reuse.remap(addresses)
    model = _model(groups)
    for i, start in enumerate(addresses.tolist()):
        expected = model.get(start, start) if start in model or start >> 32 > 3 else None
        got = int(mapped[i]) if alive[i] else None
        assert got == expected, hex(start)
