"""The integer codecs against independent bit-by-bit and byte-by-byte encodings."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.index.fts import codecs


def leb128(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def bitpacker4x(values: list[int], width: int) -> bytes:
    """Value i in lane i % 4, slot i // 4; each lane's bits LSB first in u32 words."""
    words = [[0] * 4 for _ in range(width)]
    for i, value in enumerate(values):
        lane, slot = i % 4, i // 4
        for b in range(width):
            bit = slot * width + b
            words[bit // 32][lane] |= ((value >> b) & 1) << (bit % 32)
    return b"".join(w.to_bytes(4, "little") for row in words for w in row)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 32), st.integers(1, 3), st.data())
def test_bitpacking(width: int, blocks: int, data: st.DataObject) -> None:
    top = (1 << width) - 1
    values = data.draw(st.lists(st.integers(0, top), min_size=128 * blocks, max_size=128 * blocks))
    array = np.array(values, dtype=np.uint64).reshape(blocks, 128)
    packed = codecs.pack_blocks(array, width)
    want = b"".join(bitpacker4x(values[i * 128 : (i + 1) * 128], width) for i in range(blocks))
    assert packed.tobytes() == want
    np.testing.assert_array_equal(codecs.unpack_blocks(packed, width), array)
    if len(values):
        assert int(codecs.bit_width(np.array([max(values)]))[0]) <= width


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=50))
def test_varints(values: list[int]) -> None:
    encoded = codecs.encode_varints(np.array(values, dtype=np.uint64))
    assert encoded.tobytes() == b"".join(leb128(v) for v in values)
    np.testing.assert_array_equal(codecs.decode_varints(encoded), np.array(values, np.uint64))
    assert codecs.varint_lengths(np.array(values, np.uint64)).sum() == len(encoded)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.integers(1, 100000)), min_size=1, max_size=60))
def test_impacts(pairs: list[tuple[int, int]]) -> None:
    freqs = np.array([f for f, _ in pairs], np.uint32)
    lengths = np.array([n for _, n in pairs], np.uint32)
    norms = codecs.quantize_lengths(lengths)
    for n, q in zip(lengths.tolist(), norms.tolist(), strict=True):
        k = n.bit_length() - 1
        assert q == (n if n < 16 else 8 * (k - 2) + ((n >> (k - 3)) & 7))
    groups, kept_f, kept_q = codecs.frontier(freqs, norms, np.zeros(len(pairs), np.int64))
    # Independent frontier: per norm ascending, the best freq, kept if it beats all before.
    want: list[tuple[int, int]] = []
    for q in sorted(set(norms.tolist())):
        f = max(int(x) for x, y in zip(freqs, norms, strict=True) if y == q)
        if not want or f > want[-1][0]:
            want.append((f, q))
    assert list(zip(kept_f.tolist(), kept_q.tolist(), strict=True)) == want
    data, offsets = codecs.encode_impacts(np.array([77]), groups, kept_f, kept_q)
    assert offsets.tolist() == [0, len(data)]
    last, f_back, q_back = codecs.decode_impact(data.tobytes())
    assert last == 77 and list(zip(f_back.tolist(), q_back.tolist(), strict=True)) == want
