"""Values of odd widths (a decimal's 16 bytes, 3- or 12-byte packed values) taken by
position: whole rows, in the order asked, repeats and all."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.file.v2_1.read.page_batches import _shifted
from lancelet.file.v2_1.read.values import Fixed, take_values


@settings(max_examples=100, deadline=None)
@given(
    width=st.sampled_from([3, 12, 16, 32]),
    count=st.integers(1, 50),
    data=st.data(),
)
def test_rows_of_odd_widths_are_taken_whole(width: int, count: int, data: st.DataObject) -> None:
    raw = data.draw(st.binary(min_size=width * count, max_size=width * count))
    index = np.array(data.draw(st.lists(st.integers(0, count - 1), max_size=60)), np.int64)
    values = Fixed(np.frombuffer(raw, np.uint8), 8 * width, count)
    taken = take_values(values, index)
    assert isinstance(taken, Fixed)
    assert taken.count == len(index)
    rows = [raw[i * width : (i + 1) * width] for i in index.tolist()]
    assert taken.data.tobytes() == b"".join(rows)


@settings(max_examples=100, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 150), min_size=1, max_size=12),
    dtype=st.sampled_from([np.int32, np.int64, np.uint32]),
    data=st.data(),
)
def test_page_parts_are_joined_each_shifted_by_its_own_amount(
    lengths: list[int], dtype: type, data: st.DataObject
) -> None:
    """Short parts (chunk starts) and long ones (a page's picked rows) alike."""
    parts = [list(range(0, 3 * n, 3)) for n in lengths]
    shifts = data.draw(st.lists(st.integers(0, 10**9), min_size=len(parts), max_size=len(parts)))
    joined = _shifted([np.array(p, dtype=dtype) for p in parts], shifts)
    assert joined.dtype == np.int64
    assert joined.tolist() == [v + s for p, s in zip(parts, shifts, strict=True) for v in p]
