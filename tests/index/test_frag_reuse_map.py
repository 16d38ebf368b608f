"""Applying reuse versions: addresses and coverage, checked against a plain Python
model of the rows (a dict from old address to new, chained by hand)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import FrozenBitMap

from lancelet.index.frag_reuse import ReuseMap
from lancelet.table.frag_reuse import FragmentDigest, ReuseDetails, ReuseGroup, ReuseVersion


@pytest.fixture(scope="module")
def monkeypatch_env() -> Iterator[pytest.MonkeyPatch]:
    """A monkeypatch a hypothesis test can share across its examples (env only)."""
    with pytest.MonkeyPatch.context() as patch:
        yield patch


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


def _random_versions(seed: int) -> tuple[list[ReuseVersion], int, dict[int, int]]:
    """A chain of compactions over random fragments: each version rewrites one to
    three groups (listed in random order) of live fragments into new ones, keeping a
    random subset of their rows.  Returns the versions, the next unused fragment id
    and each fragment's physical rows."""
    rng = np.random.default_rng(seed)
    rows = {f: int(rng.integers(1, 8)) for f in range(int(rng.integers(2, 6)))}
    live = set(rows)
    next_id = len(rows)
    versions = []
    for step in range(int(rng.integers(1, 7))):
        pool = sorted(live)
        rng.shuffle(pool)
        groups = []
        while pool and len(groups) < int(rng.integers(1, 4)):
            members, pool = pool[: int(rng.integers(1, 3))], pool[2:]
            keep = {
                f: sorted(
                    rng.choice(
                        rows[f], size=int(rng.integers(0, rows[f] + 1)), replace=False
                    ).tolist()
                )
                for f in members
            }
            count = sum(len(v) for v in keep.values())
            sizes = (
                [count // 2, count - count // 2] if count > 1 and rng.random() < 0.5 else [count]
            )
            new = [(next_id + i, n) for i, n in enumerate(sizes) if n]
            groups.append(_group(keep, {f: rows[f] for f in members}, new))
            for f in members:
                live.discard(f)
            for f, n in new:
                live.add(f)
                rows[f] = n
            next_id += len(sizes)
        versions.append(ReuseVersion(10 + step, tuple(groups)))
    return versions, next_id, rows


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), jit_on=st.booleans())
def test_repeated_remaps_agree_with_the_model(
    seed: int, jit_on: bool, monkeypatch_env: pytest.MonkeyPatch
) -> None:
    """The first remap walks the versions with numpy, later ones (packed, compiled
    unless LANCELET_JIT=0) must give the same answers, all equal to the model's."""
    monkeypatch_env.setenv("LANCELET_JIT", "1" if jit_on else "0")
    versions, next_id, rows = _random_versions(seed)
    reuse = ReuseMap(ReuseDetails(tuple(versions)))
    addresses = np.array(
        [(f << 32) | o for f in range(next_id + 1) for o in range(rows.get(f, 2))], np.uint64
    )
    expected = []
    for start in addresses.tolist():
        value: int | None = start
        for version in versions:
            if value is not None:
                value = _model(list(version.groups)).get(value, value)
        expected.append(value)

    def answers(given: np.ndarray) -> list[int | None]:
        mapped, alive = reuse.remap(given)
        return [int(m) if a else None for m, a in zip(mapped.tolist(), alive.tolist(), strict=True)]

    # Many rows first (the versions walked with numpy), then few (each row followed
    # through the treemaps, or the packed walk once the map was used).
    many = np.tile(addresses, 65 // len(addresses) + 1)
    assert answers(many) == expected * (65 // len(addresses) + 1)
    for _ in range(2):
        assert answers(addresses) == expected
    assert answers(addresses[::-1].copy()) == expected[::-1]
    assert answers(many) == expected * (65 // len(addresses) + 1)
    fresh = ReuseMap(ReuseDetails(tuple(versions)))
    mapped, alive = fresh.remap(addresses)
    assert [
        int(m) if a else None for m, a in zip(mapped.tolist(), alive.tolist(), strict=True)
    ] == (expected)
