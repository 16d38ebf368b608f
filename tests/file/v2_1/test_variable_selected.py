"""Variable-width mini-block chunks read for a take: only the values asked for, equal
to those values of the whole decode; damaged offsets still refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.errors import CorruptFileError
from lancelet.file.v2_1.read.values import Slices, Var, take_values
from lancelet.file.v2_1.read.variable_width import VariableMiniBlock


def _chunks(values: list[list[bytes]], width: int) -> tuple[Slices, np.ndarray]:
    """Chunks laid out as the format has them, each padded to 8 bytes."""
    parts, starts, sizes = [], [], []
    at = 0
    for chunk in values:
        table = (len(chunk) + 1) * width
        ends = np.cumsum([0, *map(len, chunk)]) + table
        body = ends.astype(f"<u{width}").tobytes() + b"".join(chunk)
        starts.append(at)
        sizes.append(len(body))
        body += b"\0" * (-len(body) % 8)
        parts.append(body)
        at += len(body)
    base = np.frombuffer(b"".join(parts), dtype=np.uint8)
    counts = np.array([len(c) for c in values], np.int64)
    return Slices(base, np.array(starts, np.int64), np.array(sizes, np.int64)), counts


def _values(result: object) -> list[bytes]:
    assert isinstance(result, Var)
    data = result.data.tobytes()
    return [data[a:b] for a, b in zip(result.offsets[:-1], result.offsets[1:], strict=True)]


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(
        st.lists(st.binary(max_size=12), min_size=1, max_size=20), min_size=1, max_size=8
    ),
    width=st.sampled_from([4, 8]),
    data=st.data(),
)
def test_selected_values_are_those_of_the_whole_decode(
    values: list[list[bytes]], width: int, data: st.DataObject
) -> None:
    codec = VariableMiniBlock(width * 8)
    slices, counts = _chunks(values, width)
    flat = [v for chunk in values for v in chunk]
    index = np.array(
        sorted(data.draw(st.sets(st.integers(0, len(flat) - 1), max_size=len(flat)))), np.int64
    )
    picked = codec.decode_selected([slices], counts, index)
    assert _values(picked) == [flat[i] for i in index]
    assert _values(picked) == _values(take_values(codec.decode([slices], counts), index))


def test_damaged_offsets_and_positions_past_the_values_are_refused() -> None:
    codec = VariableMiniBlock(32)
    slices, counts = _chunks([[b"ab", b"c"], [b"def"]], 4)
    with pytest.raises(CorruptFileError):
        codec.decode_selected([slices], counts, np.array([3], np.int64))
    damaged = slices.base.copy()
    damaged[4] = 200  # the first chunk's second offset runs past the chunk
    bad = Slices(damaged, slices.starts, slices.sizes)
    with pytest.raises(CorruptFileError):
        codec.decode_selected([bad], counts, np.array([0], np.int64))
