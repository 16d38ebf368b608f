"""A reuse group's moved rows as a treemap: built from per-fragment bitmaps, it must
be the treemap pyroaring builds from the addresses themselves, byte for byte."""

from __future__ import annotations

import numpy as np
import pytest
from pyroaring import FrozenBitMap64

from lancelet.table.frag_reuse import FragmentDigest, ReuseGroup


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
