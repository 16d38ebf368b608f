"""compaction.moves: old row addresses -> new, against a row-by-row model."""

from __future__ import annotations

import random

import numpy as np
import pytest

from lancelet.dataset.compaction.moves import group_moves, rewrite_moves
from lancelet.errors import CorruptDatasetError
from lancelet.index.remapping import DELETED
from lancelet.table.fragment import Fragment
from lancelet.transaction.operations import RewriteGroup


def _fragment(fid: int, rows: int) -> Fragment:
    return Fragment(fid, (), rows)


def _model(
    old: list[tuple[int, int, set[int]]], new: list[tuple[int, int]]
) -> dict[int, int | None]:
    """Old address -> new address or None, one row at a time."""
    targets = [(fid << 32) | off for fid, rows in new for off in range(rows)]
    out: dict[int, int | None] = {}
    for fid, rows, deleted in old:
        for off in range(rows):
            out[(fid << 32) | off] = None if off in deleted else targets.pop(0)
    assert not targets
    return out


@pytest.mark.parametrize("seed", range(20))
def test_moves_follow_the_live_rows_in_order(seed: int) -> None:
    rng = random.Random(seed)
    old: list[tuple[int, int, set[int]]] = []
    groups, deletions, expected = [], {}, {}
    next_id = 1
    for _ in range(rng.randint(1, 3)):
        members = []
        for _ in range(rng.randint(1, 4)):
            rows = rng.randint(0, 50)
            deleted = {o for o in range(rows) if rng.random() < 0.3}
            if rng.random() < 0.1:
                deleted = set(range(rows))  # every row of the fragment deleted
            members.append((next_id, rows, deleted))
            deletions[next_id] = np.array(sorted(deleted), dtype=np.uint32)
            next_id += 1
        live = sum(rows - len(d) for _, rows, d in members)
        sizes = []
        while live:
            take = rng.randint(1, live)
            sizes.append(take)
            live -= take
        new = [(1000 + next_id + i, s) for i, s in enumerate(sizes)]
        next_id += len(new)
        old += members
        expected.update(_model(members, new))
        groups.append(
            RewriteGroup(
                tuple(_fragment(f, r) for f, r, _ in members),
                tuple(_fragment(f, r) for f, r in new),
            )
        )
    mapping = rewrite_moves(groups, lambda f: deletions[f.id])
    addresses = np.array(sorted(expected), dtype=np.uint64)
    moved, kept = mapping.apply(addresses)
    got = {int(a): (int(m) if k else None) for a, m, k in zip(addresses, moved, kept, strict=True)}
    assert got == expected
    # Addresses of fragments that were not rewritten stay where they are.
    other = np.array([(999_999 << 32) | 5], dtype=np.uint64)
    assert mapping.apply(other)[0].tolist() == other.tolist()


def test_live_rows_that_do_not_match_the_new_fragments_are_refused() -> None:
    group = RewriteGroup((_fragment(1, 10),), (_fragment(2, 9),))
    with pytest.raises(CorruptDatasetError, match="10 live rows became 9"):
        group_moves(group, lambda f: np.zeros(0, np.uint32))


def test_deletions_past_the_fragment_are_refused() -> None:
    group = RewriteGroup((_fragment(1, 3),), (_fragment(2, 2),))
    with pytest.raises(CorruptDatasetError, match="past its 3"):
        group_moves(group, lambda f: np.array([3], np.uint32))


def test_deletions_past_the_fragment_name_that_fragment() -> None:
    old = (_fragment(1, 3), _fragment(4, 5), _fragment(6, 2))
    group = RewriteGroup(old, (_fragment(9, 7),))
    gone = {1: [0, 2], 4: [1, 5], 6: []}
    with pytest.raises(CorruptDatasetError, match="fragment 4: .* past its 5"):
        group_moves(group, lambda f: np.array(gone[f.id], np.uint32))


def test_a_fully_deleted_fragment_maps_every_row_to_deleted() -> None:
    group = RewriteGroup((_fragment(7, 4),), ())
    old, new = group_moves(group, lambda f: np.arange(4, dtype=np.uint32))
    assert old.tolist() == [(7 << 32) | i for i in range(4)]
    assert new.tolist() == [int(DELETED)] * 4
