"""compaction.moves and .defer: old row addresses -> new, and a reuse version's live rows,
against row-by-row models."""

from __future__ import annotations

import random
from typing import cast

import numpy as np
import pytest

from lancelet.dataset.compaction.defer import reuse_version
from lancelet.dataset.compaction.moves import group_moves, rewrite_moves
from lancelet.errors import CorruptDatasetError, UnsupportedFeatureError
from lancelet.index.remapping import DELETED
from lancelet.table.frag_reuse import ReuseVersion
from lancelet.table.fragment import Fragment
from lancelet.transaction.operations import RewriteGroup
from lancelet.transaction.store import DatasetStore


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


class _Deletions:
    """The part of a dataset store a reuse version reads: each fragment's deletions."""

    root = "/dataset"

    def __init__(self, deleted: dict[int, list[int]]) -> None:
        self.deleted = deleted

    def read_deletions(self, fragment: Fragment) -> np.ndarray:
        return np.array(self.deleted.get(fragment.id, []), np.uint32)


def _reuse_version(groups: list[RewriteGroup], deleted: dict[int, list[int]]) -> ReuseVersion:
    return reuse_version(cast(DatasetStore, _Deletions(deleted)), 7, groups)


@pytest.mark.parametrize("seed", range(10))
def test_a_reuse_version_records_each_groups_live_rows(seed: int) -> None:
    rng = random.Random(seed)
    groups, deleted, expected = [], {}, []
    next_id = 1
    for _ in range(rng.randint(1, 3)):
        old, live = [], []
        for _ in range(rng.randint(1, 4)):
            rows = rng.randint(1, 3000)
            gone = sorted(o for o in range(rows) if rng.random() < rng.choice([0, 0.01, 0.5, 1]))
            deleted[next_id] = gone
            live += [(next_id << 32) | o for o in sorted(set(range(rows)) - set(gone))]
            old.append(_fragment(next_id, rows))
            next_id += 1
        new = (_fragment(10_000 + next_id, len(live)),) if live else ()
        groups.append(RewriteGroup(tuple(old), new))
        expected.append(live)
    version = _reuse_version(groups, deleted)
    assert version.dataset_version == 7
    for group, recorded, live in zip(groups, version.groups, expected, strict=True):
        assert list(recorded.bitmap) == live
        assert recorded.changed.tolist() == live
        assert [d.num_deleted_rows for d in recorded.old_fragments] == [
            len(deleted[f.id]) for f in group.old_fragments
        ]
        assert [(d.id, d.physical_rows) for d in recorded.new_fragments] == [
            (f.id, f.physical_rows) for f in group.new_fragments
        ]


def test_a_reuse_version_refuses_what_it_cannot_record() -> None:
    short = RewriteGroup((_fragment(1, 10),), (_fragment(2, 9),))
    with pytest.raises(CorruptDatasetError, match="10 live rows became 9"):
        _reuse_version([short], {})
    past = RewriteGroup((_fragment(1, 3),), (_fragment(2, 2),))
    with pytest.raises(CorruptDatasetError, match="fragment 1: .* past its 3"):
        _reuse_version([past], {1: [3]})
    unordered = RewriteGroup((_fragment(4, 1), _fragment(3, 1)), (_fragment(5, 2),))
    with pytest.raises(UnsupportedFeatureError, match="ascending id order"):
        _reuse_version([unordered], {})
