"""A reuse group's moved rows as a treemap: built from per-fragment bitmaps (of the
addresses, or of each fragment's rows less its deleted ones), it must be the treemap
pyroaring builds from the addresses themselves, byte for byte."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyroaring import FrozenBitMap64

from lancelet.table.frag_reuse import FragmentDigest, ReuseGroup, live_rows


@pytest.mark.parametrize("fragments", [0, 1, 3, 40])
def test_treemap_is_pyroaring_own(fragments: int) -> None:
    rng = np.random.default_rng(fragments)
    ids = np.sort(rng.choice(2**32 - 1, fragments, replace=False)).astype(np.uint64)
    parts = [
        (fid << np.uint64(32))
        | np.sort(rng.choice(70_000, int(rng.integers(1, 5000)), replace=False)).astype(np.uint64)
        for fid in ids
    ]
    addresses = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
    group = ReuseGroup(addresses, (FragmentDigest(0, 1),), (FragmentDigest(1, 1),))
    expected = FrozenBitMap64(addresses.tolist())
    assert group.bitmap == expected
    assert group.bitmap.serialize() == expected.serialize()


@st.composite
def _fragments(draw: st.DrawFn) -> list[tuple[int, int, np.ndarray]]:
    """Fragments in ascending id order, each with its rows and a sorted set of
    deleted offsets (none, some, or all)."""
    ids = sorted(draw(st.sets(st.integers(0, 2**32 - 1), max_size=6)))
    fragments = []
    for fid in ids:
        rows = draw(st.integers(1, 70_000))
        kind = draw(st.sampled_from(["none", "some", "all", "runs"]))
        if kind == "none":
            deleted = np.zeros(0, np.uint32)
        elif kind == "all":
            deleted = np.arange(rows, dtype=np.uint32)
        elif kind == "runs":
            start = draw(st.integers(0, rows - 1))
            deleted = np.arange(start, draw(st.integers(start + 1, rows)), dtype=np.uint32)
        else:
            seed = draw(st.integers(0, 2**32 - 1))
            count = draw(st.integers(1, rows))
            rng = np.random.default_rng(seed)
            deleted = np.sort(rng.choice(rows, count, replace=False)).astype(np.uint32)
        fragments.append((fid, rows, deleted))
    return fragments


@settings(max_examples=60, deadline=None)
@given(_fragments())
# Three rows: one run or an array of three serialize to as many bytes (CI found it).
@example([(0, 3, np.zeros(0, np.uint32))])
# Ties in a fragment's last container and in a thinned first one, beside whole ones.
@example([(7, 65_536 + 5, np.array([65_537, 65_538], np.uint32))])
@example([(1, 70_000, np.arange(3, 65_536, dtype=np.uint32))])
def test_live_rows_is_the_treemap_of_the_rows_not_deleted(
    fragments: list[tuple[int, int, np.ndarray]],
) -> None:
    addresses = []
    for fid, rows, deleted in fragments:
        gone = set(deleted.tolist())
        addresses += [(fid << 32) | row for row in range(rows) if row not in gone]
    expected = FrozenBitMap64(addresses)
    found = live_rows(fragments)
    assert found == expected
    assert FrozenBitMap64.deserialize(found.serialize()) == expected
    # The bytes a reuse version records are those built from the addresses (runs
    # where they are smaller, as pyroaring makes a bitmap from an array).
    from_addresses = ReuseGroup(np.array(addresses, np.uint64), (), ()).bitmap
    assert found.serialize() == from_addresses.serialize()
