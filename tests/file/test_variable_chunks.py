"""Variable-width mini-block chunks decoded whole and a few values at a time, by the
compiled pass over their offsets and by numpy: the values they were built from, and
a damaged offset refused by both alike."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.errors import CorruptFileError
from lancelet.file.v2_1.read.values import Slices, Var
from lancelet.file.v2_1.read.variable_width import VariableMiniBlock

CHUNKS = st.lists(st.lists(st.binary(max_size=9), max_size=6), min_size=1, max_size=5)


def _chunks(chunks: list[list[bytes]], width: int, gap: int) -> tuple[bytes, list[int], list[int]]:
    """The chunks' bytes (``gap`` stray bytes before each), where each starts, its size."""
    data, starts, sizes = b"", [], []
    code = "<I" if width == 4 else "<Q"
    for values in chunks:
        at = (len(values) + 1) * width
        offsets = [at]
        for value in values:
            at += len(value)
            offsets.append(at)
        chunk = b"".join(struct.pack(code, o) for o in offsets) + b"".join(values)
        data += b"\xee" * gap
        starts.append(len(data))
        sizes.append(len(chunk))
        data += chunk
    return data, starts, sizes


def _decode(
    data: bytes, starts: list[int], sizes: list[int], counts: list[int], width: int, jit: bool
) -> tuple[list[bytes], list[bytes]]:
    """Every value, and the values at odd positions, with the kernels on or off."""
    before = os.environ.get("LANCELET_JIT")
    os.environ["LANCELET_JIT"] = "1" if jit else "0"
    try:
        codec = VariableMiniBlock(width * 8)
        buf = Slices(np.frombuffer(data, np.uint8), np.array(starts), np.array(sizes))
        counted = np.array(counts, dtype=np.int64)
        every = codec.decode([buf], counted)
        some = codec.decode_selected([buf], counted, np.arange(1, sum(counts), 2))
    finally:
        if before is None:
            del os.environ["LANCELET_JIT"]
        else:
            os.environ["LANCELET_JIT"] = before
    return _values(every), _values(some)


def _values(var: object) -> list[bytes]:
    assert isinstance(var, Var)
    data = var.data.tobytes()
    return [data[a:b] for a, b in zip(var.offsets[:-1], var.offsets[1:], strict=True)]


@settings(max_examples=150, deadline=None)
@given(chunks=CHUNKS, width=st.sampled_from([4, 8]), gap=st.integers(0, 3), jit=st.booleans())
def test_chunks_decode_to_their_values(
    chunks: list[list[bytes]], width: int, gap: int, jit: bool
) -> None:
    data, starts, sizes = _chunks(chunks, width, gap)
    every, some = _decode(data, starts, sizes, [len(c) for c in chunks], width, jit)
    flat = [v for values in chunks for v in values]
    assert every == flat
    assert some == flat[1::2]


@settings(max_examples=300, deadline=None)
@given(chunks=CHUNKS, width=st.sampled_from([4, 8]), at=st.integers(0), flip=st.integers(1, 255))
def test_a_damaged_offset_decodes_alike_or_is_refused_by_both(
    chunks: list[list[bytes]], width: int, at: int, flip: int
) -> None:
    data, starts, sizes = _chunks(chunks, width, 0)
    # Damage one byte of one offset table.
    chunk = at % len(chunks)
    table = (len(chunks[chunk]) + 1) * width
    damaged = bytearray(data)
    damaged[starts[chunk] + at % table] ^= flip
    counts = [len(c) for c in chunks]
    outcomes = []
    for jit in (True, False):
        try:
            outcomes.append(_decode(bytes(damaged), starts, sizes, counts, width, jit))
        except CorruptFileError:
            outcomes.append(None)
    assert outcomes[0] == outcomes[1]


def test_chunks_past_their_buffer_are_refused() -> None:
    data, starts, sizes = _chunks([[b"ab", b"c"]], 4, 0)
    with pytest.raises(CorruptFileError):
        _decode(data[:10], starts, sizes, [2], 4, jit=True)
