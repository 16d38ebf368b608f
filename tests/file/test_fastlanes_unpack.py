"""FastLanes unpacking: both strategies (few chunks, many chunks) against a slow
bit-by-bit reading of the layout."""

from __future__ import annotations

import numpy as np
import pytest

from lancelet.file.codecs import bitpacking
from lancelet.file.codecs.bitpacking import _FEW_CHUNKS, _FL_ORDER, _unpack_chunks

WIDTHS = (8, 16, 32, 64)


def _slow_unpack(words: np.ndarray, bits: int) -> list[list[int]]:
    """Lane ``l`` is a bit stream over its words; row ``r`` of it is the value at
    ``FL_ORDER[r // 8] * 16 + (r % 8) * 128 + l``."""
    width = words.dtype.itemsize * 8
    lanes = 1024 // width
    out = []
    for chunk in words.reshape(words.shape[0], bits, lanes):
        values = [0] * 1024
        for lane in range(lanes):
            stream = 0
            for k in range(bits):
                stream |= int(chunk[k, lane]) << (k * width)
            for row in range(width):
                value = (stream >> (row * bits)) & ((1 << bits) - 1)
                values[_FL_ORDER[row // 8] * 16 + (row % 8) * 128 + lane] = value
        out.append(values)
    return out


@pytest.mark.parametrize("width", WIDTHS)
def test_few_chunks_match_the_layout(width: int) -> None:
    rng = np.random.default_rng(width)
    dtype = np.dtype(f"<u{width // 8}")
    for bits in sorted({0, 1, 3, width // 2 + 1, width - 1, width}):
        words = rng.integers(0, 2**width, (2, bits, 1024 // width), dtype=np.uint64).astype(dtype)
        got = _unpack_chunks(words, bits)
        assert got.dtype == dtype and got.shape == (2, 1024)
        assert got.tolist() == (_slow_unpack(words, bits) if bits else [[0] * 1024] * 2)


@pytest.mark.parametrize("width", WIDTHS)
def test_many_chunks_agree_with_few(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(100 + width)
    dtype = np.dtype(f"<u{width // 8}")
    count = _FEW_CHUNKS + 3
    for bits in range(width + 1):
        words = rng.integers(0, 2**width, (count, bits, 1024 // width), dtype=np.uint64)
        words = words.astype(dtype)
        many = _unpack_chunks(words, bits)  # the per-row strategy
        few = np.concatenate([_unpack_chunks(words[i : i + 1], bits) for i in range(count)])
        np.testing.assert_array_equal(many, few)


def test_round_trip_through_the_packer() -> None:
    rng = np.random.default_rng(7)
    for width in WIDTHS:
        dtype = np.dtype(f"<u{width // 8}")
        for bits in (1, 5, width):
            values = rng.integers(0, 2**bits, (3, 1024), dtype=np.uint64).astype(dtype)
            np.testing.assert_array_equal(
                _unpack_chunks(bitpacking._pack_chunks(values, bits), bits), values
            )
