"""The container's check that a file's byte ranges do not overlap, against brute force."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.file.container import first_overlap, first_overlap_of_few

ranges = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 30)), max_size=30)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[1] > 0 and b[1] > 0 and a[0] < b[0] + b[1] and b[0] < a[0] + a[1]


@settings(max_examples=300, deadline=None)
@given(ranges=ranges)
def test_an_overlap_is_found_exactly_when_two_ranges_overlap(
    ranges: list[tuple[int, int]],
) -> None:
    starts, sizes = [s for s, _ in ranges], [n for _, n in ranges]
    found = first_overlap_of_few(starts, sizes)
    any_overlap = any(_overlap(ranges[i], ranges[j]) for i in range(len(ranges)) for j in range(i))
    assert (found is not None) == any_overlap
    if found is not None:
        assert _overlap(ranges[found[0]], ranges[found[1]])
    # The numpy form, for files of many ranges, names the same pair.
    assert found == first_overlap(np.array(starts, np.int64), np.array(sizes, np.int64))
