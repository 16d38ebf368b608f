"""Values of odd widths (a decimal's 16 bytes, 3- or 12-byte packed values) taken by
position: whole rows, in the order asked, repeats and all."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

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
