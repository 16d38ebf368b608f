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


def _shifted(slices: Slices, by: int, strided: bool = False) -> Slices:
    """The same chunks ``by`` bytes further into their buffer (off their words), the
    buffer a strided view (every other byte of a longer one) when ``strided``."""
    base = np.concatenate([np.zeros(by, np.uint8), slices.base])
    if strided:
        base = np.repeat(base, 2)[::2]
    return Slices(base, slices.starts + by, slices.sizes)


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(
        st.lists(st.binary(max_size=12), min_size=1, max_size=20), min_size=1, max_size=8
    ),
    width=st.sampled_from([4, 8]),
    shift=st.sampled_from([0, 0, 1, 3]),
    strided=st.booleans(),
    jit_on=st.booleans(),
    data=st.data(),
)
def test_values_picked_in_any_order_and_repeated(
    values: list[list[bytes]],
    width: int,
    shift: int,
    strided: bool,
    jit_on: bool,
    data: st.DataObject,
) -> None:
    """A take's index may step back and repeat; chunks off their words (``shift``) or
    in a strided buffer are read by the numpy path; compiled or not, the values are
    those asked for."""
    codec = VariableMiniBlock(width * 8)
    slices, counts = _chunks(values, width)
    flat = [v for chunk in values for v in chunk]
    index = np.array(data.draw(st.lists(st.integers(0, len(flat) - 1), max_size=40)), np.int64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LANCELET_JIT", "1" if jit_on else "0")
        picked = codec.decode_selected([_shifted(slices, shift, strided)], counts, index)
    assert _values(picked) == [flat[i] for i in index]


def _damage(slices: Slices, how: str) -> Slices:
    """The chunks of ``[[b"ab", b"cd", b"e"], [b"fgh"]]`` (4-byte offsets) damaged."""
    base = slices.base.copy()
    offsets = base[: len(base) // 4 * 4].view("<u4")
    sizes = slices.sizes
    if how == "first offset":
        offsets[0] = 4  # the chunk's offsets do not start right after themselves
    elif how == "decreasing":
        offsets[2] = 11  # the second value ends before it starts
    elif how == "past the chunk":
        offsets[3] = 200
    else:  # the chunk says it is longer, its last value's bytes past the buffer
        sizes = sizes + 400
        last = int(slices.starts[1]) // 4 + 1
        offsets[last] = len(base) + 100
    return Slices(base, slices.starts, sizes)


@pytest.mark.parametrize("jit_on", [True, False])
@pytest.mark.parametrize(
    "how", ["first offset", "decreasing", "past the chunk", "chunk past the buffer"]
)
def test_each_damage_to_the_offsets_is_refused(how: str, jit_on: bool) -> None:
    """Every chunk's offsets are checked, whether or not a value of it is picked."""
    codec = VariableMiniBlock(32)
    slices, counts = _chunks([[b"ab", b"cd", b"e"], [b"fgh"]], 4)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LANCELET_JIT", "1" if jit_on else "0")
        with pytest.raises(CorruptFileError):
            codec.decode_selected([_damage(slices, how)], counts, np.array([3], np.int64))


@pytest.mark.parametrize("jit_on", [True, False])
@pytest.mark.parametrize("position", [-1, 4, 100])
def test_positions_outside_the_values_are_refused(position: int, jit_on: bool) -> None:
    codec = VariableMiniBlock(32)
    slices, counts = _chunks([[b"ab", b"cd", b"e"], [b"fgh"]], 4)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LANCELET_JIT", "1" if jit_on else "0")
        with pytest.raises(CorruptFileError, match="past the chunks' values"):
            codec.decode_selected([slices], counts, np.array([0, position], np.int64))
