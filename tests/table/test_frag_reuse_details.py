"""Decoding reuse details refuses every kind of damage a mapping depends on: each
case below is a valid details message with one thing made wrong, encoded and
decoded again (the path an index's details take from a manifest)."""

from __future__ import annotations

import numpy as np
import pytest

from lancelet.errors import CorruptIndexError
from lancelet.table.frag_reuse import FragmentDigest, ReuseDetails, ReuseGroup, ReuseVersion


def _group(
    old: list[tuple[int, int]], survivors: list[tuple[int, int]], new: list[tuple[int, int]]
) -> ReuseGroup:
    """``old`` and ``new``: (fragment id, physical rows); ``survivors``: (fragment id,
    row offset) of the old rows that moved."""
    changed = np.array([(f << 32) | o for f, o in survivors], dtype=np.uint64)
    return ReuseGroup(
        changed,
        tuple(FragmentDigest(f, n) for f, n in old),
        tuple(FragmentDigest(f, n) for f, n in new),
    )


def _decoded(*versions: tuple[int, list[ReuseGroup]]) -> ReuseDetails:
    details = ReuseDetails(tuple(ReuseVersion(v, tuple(groups)) for v, groups in versions))
    return ReuseDetails.from_bytes(details.to_bytes(), "details")


def _fine() -> ReuseGroup:
    # Fragments 1 (3 rows) and 2 (2 rows): rows 1:0, 1:2 and 2:1 survive into fragment 3.
    return _group([(1, 3), (2, 2)], [(1, 0), (1, 2), (2, 1)], [(3, 3)])


def test_valid_details_decode_to_what_was_encoded() -> None:
    later = _group([(3, 3)], [(3, 1)], [(4, 1)])
    decoded = _decoded((5, [_fine()]), (7, [later]))
    assert [v.dataset_version for v in decoded.versions] == [5, 7]
    group = decoded.versions[0].groups[0]
    assert group.changed.tolist() == [1 << 32, (1 << 32) | 2, (2 << 32) | 1]
    assert [f.id for f in group.old_fragments] == [1, 2]
    assert decoded.versions[1].groups[0].new_fragments == (FragmentDigest(4, 1),)


@pytest.mark.parametrize(
    ("group", "message"),
    [
        # Three survivors, but the new fragment holds four rows.
        (
            _group([(1, 3), (2, 2)], [(1, 0), (1, 2), (2, 1)], [(3, 4)]),
            "lists 3 moved rows for new fragments",
        ),
        # A new fragment that is also an old one.
        (_group([(1, 3)], [(1, 0)], [(1, 1)]), "fragment ids repeat"),
        # An old fragment listed twice.
        (_group([(1, 3), (1, 3)], [(1, 0)], [(3, 1)]), "fragment ids repeat"),
        # A new fragment listed twice.
        (_group([(1, 3)], [(1, 0), (1, 1)], [(3, 1), (3, 1)]), "fragment ids repeat"),
        # A survivor in a fragment the group does not replace.
        (_group([(1, 3)], [(1, 0), (9, 0)], [(3, 2)]), "not rows of its old fragments"),
        # A survivor past the end of its old fragment.
        (_group([(1, 3)], [(1, 0), (1, 3)], [(3, 2)]), "not rows of its old fragments"),
    ],
)
def test_a_damaged_group_is_refused(group: ReuseGroup, message: str) -> None:
    with pytest.raises(CorruptIndexError, match=message):
        _decoded((5, [group]))


def test_two_versions_replacing_one_fragment_are_refused() -> None:
    again = _group([(1, 3)], [(1, 0)], [(4, 1)])
    with pytest.raises(CorruptIndexError, match="two reuse versions replace one fragment"):
        _decoded((5, [_fine()]), (7, [again]))


def test_a_version_writing_a_replaced_fragment_is_refused() -> None:
    # Version 7 writes fragment 2, which version 5 replaced.
    rewrite = _group([(3, 3)], [(3, 0)], [(2, 1)])
    with pytest.raises(CorruptIndexError, match="writes a fragment an earlier version replaced"):
        _decoded((5, [_fine()]), (7, [rewrite]))


def test_moved_rows_must_ascend_when_given_as_an_array() -> None:
    group = ReuseGroup(
        np.array([(1 << 32) | 2, 1 << 32], dtype=np.uint64),
        (FragmentDigest(1, 3),),
        (FragmentDigest(3, 2),),
    )
    with pytest.raises(CorruptIndexError, match="not ascending"):
        group.check("details")
