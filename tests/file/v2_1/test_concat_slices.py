"""Byte ranges joined for the decoders: touching ranges as one view, many separate
ones by the compiled copy, a few by numpy; always the bytes of the ranges in order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.file.v2_1.read import codec


@st.composite
def _ranges(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    base = np.frombuffer(draw(st.binary(min_size=0, max_size=400)), dtype=np.uint8)
    count = draw(st.integers(0, 80))
    starts, sizes = [], []
    for _ in range(count):
        start = draw(st.integers(0, len(base)))
        starts.append(start)
        sizes.append(draw(st.integers(0, len(base) - start)))
    return base, np.array(starts, np.int64), np.array(sizes, np.int64)


@settings(max_examples=300, deadline=None)
@given(ranges=_ranges())
def test_the_bytes_of_every_range_in_order(ranges: tuple[np.ndarray, ...]) -> None:
    base, starts, sizes = ranges
    expected = b"".join(base[s : s + n].tobytes() for s, n in zip(starts, sizes, strict=True))
    assert codec.concat_slices(base, starts, sizes).tobytes() == expected


@pytest.mark.parametrize("pieces", [2, 31, 32, 500])
def test_touching_ranges_are_one_view(pieces: int) -> None:
    base = np.arange(pieces * 10, dtype=np.int64).astype(np.uint8)
    starts = np.arange(0, pieces * 10, 10, dtype=np.int64)
    sizes = np.full(pieces, 10, np.int64)
    joined = codec.concat_slices(base, starts, sizes)
    assert np.shares_memory(joined, base)
    assert joined.tobytes() == base.tobytes()
    # With gaps between them (a chunk's padding), the bytes are copied, in order.
    gapped = codec.concat_slices(base, starts, sizes - 1)
    assert gapped.tobytes() == b"".join(base[s : s + 9].tobytes() for s in starts)
