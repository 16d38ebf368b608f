"""The writer's bit widths (``bitpack.bit_lengths``) against Python's own
``int.bit_length``, for every unsigned width: around each power of two (where a
float64 rounds up past 2**53) and for random values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lancelet.file.v2_1.write.bitpack import bit_lengths, block_widths

DTYPES = [np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", DTYPES)
def test_around_every_power_of_two(dtype: type[np.unsignedinteger]) -> None:
    bits = np.dtype(dtype).itemsize * 8
    near = {0, 1, 2**bits - 1}
    for k in range(1, bits + 1):
        near |= {2**k - 2, 2**k - 1, 2 ** (k - 1), 2 ** (k - 1) + 1}
    near |= {2**bits - 2**i for i in range(bits)}  # the float's rounding range near the top
    values = np.array(sorted(v for v in near if v < 2**bits), dtype=dtype)
    want = [int(v).bit_length() for v in values.tolist()]
    assert bit_lengths(values).tolist() == want


@given(st.sampled_from(DTYPES), st.data())
def test_random_values(dtype: type[np.unsignedinteger], data: st.DataObject) -> None:
    bits = np.dtype(dtype).itemsize * 8
    raw = data.draw(st.lists(st.integers(0, 2**bits - 1), max_size=40))
    values = np.array(raw, dtype=dtype)
    got = bit_lengths(values)
    assert got.dtype == np.int64
    assert got.tolist() == [v.bit_length() for v in raw]


def test_block_widths_of_a_partial_last_block() -> None:
    values = np.zeros(2050, dtype=np.uint32)
    values[5], values[1500], values[2049] = 7, 2**31, 1
    assert block_widths(values).tolist() == [3, 32, 1]
