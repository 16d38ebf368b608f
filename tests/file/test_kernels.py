"""The compiled kernels (numba, ``lancelet.file.codecs.jit``) give exactly what the
numpy paths give, byte for byte, errors included.  The numpy paths themselves are
checked against pylance and independent computations elsewhere, and the file tests
run once more with ``LANCELET_JIT=0`` (see the Makefile)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.errors import CorruptFileError
from lancelet.file.codecs import bitpacking, fsst_encode, jit
from lancelet.file.codecs.fsst import fsst_decompress
from lancelet.file.codecs.kernels import chunks as chunk_kernels
from lancelet.file.codecs.kernels import runs as run_kernels
from lancelet.file.codecs.rle import decode_rle_chunks, encode_rle_chunks
from lancelet.file.v2_1.write import miniblock
from lancelet.file.v2_1.write.blocks import Variable

pytestmark = pytest.mark.skipif(not jit.enabled(), reason="numba missing or LANCELET_JIT=0")


def _both(monkeypatch: pytest.MonkeyPatch, fn: Callable[[], Any]) -> tuple[Any, Any]:
    compiled = fn()
    with monkeypatch.context() as m:
        m.setenv(jit.ENV_VAR, "0")
        assert not jit.enabled()
        plain = fn()
    return compiled, plain


def _strings(values: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.array([len(v) for v in values], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    return np.frombuffer(b"".join(values), dtype=np.uint8), offsets


def _text(seed: int, count: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    words = [b"ab", b"abc", b"abcdefgh", b"abcdefghij", b"\xff", b"x", b"quickly ", b""]
    values = [b"".join(rng.choice(words, int(rng.integers(0, 12)))) for _ in range(count)]
    return values + [rng.bytes(int(rng.integers(0, 20))) for _ in range(count // 5)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fsst_compress(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    data, offsets = _strings(_text(seed, 3000))
    table = fsst_encode.build_table(data, offsets)
    compiled, plain = _both(monkeypatch, lambda: fsst_encode.compress(table, data, offsets))
    assert np.array_equal(compiled[0], plain[0])
    assert compiled[1].tobytes() == plain[1].tobytes()


def test_fsst_compress_of_a_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Offsets that start past 0 and a last string that ends before the data does."""
    data, offsets = _strings(_text(4, 500))
    table = fsst_encode.build_table(data, offsets)
    sub = offsets[100:301]
    compiled, plain = _both(monkeypatch, lambda: fsst_encode.compress(table, data, sub))
    assert np.array_equal(compiled[0], plain[0])
    assert compiled[1].tobytes() == plain[1].tobytes()


def test_fsst_compress_of_long_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strings longer than a line (512 bytes) are compressed line by line by both."""
    rng = np.random.default_rng(7)
    values = [b"".join(_text(s, 150)) for s in range(20)] + [b"q" * 512, b"r" * 513, b""]
    data, offsets = _strings([*values, *(rng.bytes(int(n)) for n in rng.integers(0, 3000, 20))])
    table = fsst_encode.build_table(data, offsets)
    compiled, plain = _both(monkeypatch, lambda: fsst_encode.compress(table, data, offsets[3:]))
    assert np.array_equal(compiled[0], plain[0])
    assert compiled[1].tobytes() == plain[1].tobytes()


@pytest.mark.parametrize("seed", [1, 2])
def test_fsst_table_building(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """Building a table parses a sample each round: the compiled parse must choose
    the same tokens, so the tables come out identical."""
    data, offsets = _strings(_text(seed, 4000))
    compiled, plain = _both(monkeypatch, lambda: fsst_encode.build_table(data, offsets))
    assert np.array_equal(compiled.values, plain.values)
    assert np.array_equal(compiled.lengths, plain.lengths)
    assert compiled.size > 10


@pytest.mark.parametrize("pairs", [True, False])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_round_candidates_count_what_numpy_counts(seed: int, pairs: bool) -> None:
    """A training round's candidates counted in one compiled pass are the numpy
    path's: the same (bytes, length) candidates, counts and gain, with an empty table
    (every token an escape) and with a built one (tokens of 1 to 8 bytes)."""
    from lancelet.file.codecs.kernels.fsst import round_candidates

    data, offsets = _strings(_text(seed, 2000))
    empty = fsst_encode.FsstTable(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64))
    for table in (empty, fsst_encode.build_table(data, offsets)):
        args = fsst_encode._kernel_args(table, data, offsets)
        got = round_candidates(*args, table.values, pairs)
        want = fsst_encode._candidates(table, data, offsets, pairs)
        assert got[3] == want[3]
        order_got = np.lexsort((got[0], got[1]))
        order_want = np.lexsort((want[0], want[1]))
        for part_got, part_want in zip(got[:3], want[:3], strict=True):
            assert np.array_equal(part_got[order_got], part_want[order_want])
        assert len(got[0]) > 100


@pytest.mark.parametrize("seed", [5, 6])
def test_fsst_expand(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    data, offsets = _strings(_text(seed, 2000))
    table = fsst_encode.build_table(data, offsets)
    new_offsets, compressed = fsst_encode.compress(table, data, offsets)
    blob = fsst_encode.serialize(table)
    compiled, plain = _both(monkeypatch, lambda: fsst_decompress(blob, compressed, new_offsets))
    assert np.array_equal(compiled[0], offsets) and np.array_equal(plain[0], offsets)
    assert compiled[1].tobytes() == plain[1].tobytes() == data.tobytes()


@pytest.mark.parametrize(
    ("stream", "match"),
    [
        (b"\x00\xff", "escape at compressed byte 1 has no payload"),
        (b"\x00\x07", "code 7 at compressed byte 1 refers to a missing symbol"),
    ],
)
def test_fsst_expand_errors(monkeypatch: pytest.MonkeyPatch, stream: bytes, match: str) -> None:
    data, offsets = _strings([b"abcabcabc" * 10] * 10)
    table = fsst_encode.build_table(data, offsets)
    table = fsst_encode.FsstTable(table.values[:2], table.lengths[:2])
    blob = fsst_encode.serialize(table)
    raw = np.frombuffer(stream, dtype=np.uint8)
    bounds = np.array([0, len(raw)])
    for setting in ("1", "0"):
        monkeypatch.setenv(jit.ENV_VAR, setting)
        with pytest.raises(CorruptFileError, match=match):
            fsst_decompress(blob, raw, bounds)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_fastlanes_pack(monkeypatch: pytest.MonkeyPatch, dtype: type) -> None:
    rng = np.random.default_rng(8)
    width = np.dtype(dtype).itemsize * 8
    for bits in sorted({1, 3, width // 2, width - 1, width}):
        top = (1 << bits) - 1
        chunks = rng.integers(0, top, size=(3, 1024), dtype=np.uint64, endpoint=True)
        chunks = chunks.astype(dtype)
        compiled, plain = _both(monkeypatch, lambda c=chunks, b=bits: bitpacking._pack_chunks(c, b))
        assert compiled.dtype == plain.dtype and np.array_equal(compiled, plain), bits


@pytest.mark.parametrize("aim", [64, 1000, 4096, 1 << 16])
@pytest.mark.parametrize("bits_per_offset", [32, 64])
def test_variable_chunks(monkeypatch: pytest.MonkeyPatch, aim: int, bits_per_offset: int) -> None:
    rng = np.random.default_rng(aim)
    lengths = np.concatenate(
        [rng.integers(0, 40, 5000), rng.integers(0, 3, 3000), rng.integers(200, 900, 50)]
    )
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    block = Variable(offsets, rng.integers(0, 256, int(offsets[-1]), dtype=np.uint8),
                     bits_per_offset)  # fmt: skip
    width = bits_per_offset // 8

    def cut() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        counts = miniblock._variable_counts(offsets, width, aim)
        chunked = miniblock.variable_chunks(block, counts)
        return counts, chunked.data, chunked.sizes

    compiled, plain = _both(monkeypatch, cut)
    for got, want in zip(compiled, plain, strict=True):
        assert np.array_equal(got, want)


def test_switch_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jit.ENV_VAR, "0")
    assert not jit.enabled()
    monkeypatch.setenv(jit.ENV_VAR, "1")
    assert jit.enabled()


@pytest.mark.parametrize("one_pass", [True, False])
@pytest.mark.parametrize("parts", [1, 2, 7])
@pytest.mark.parametrize("seed", range(4))
def test_fsst_expand_random_symbols(
    monkeypatch: pytest.MonkeyPatch, seed: int, parts: int, one_pass: bool
) -> None:
    """Symbols of every length and escapes anywhere: the compiled expansion, which
    gathers symbols into 8-byte words (in one pass, or sized first then written in
    parts on threads, sharing the words where they meet), gives the numpy path's
    bytes and offsets."""
    from lancelet.file.codecs import fsst
    from lancelet.file.codecs.fsst import FsstSymbolTable

    monkeypatch.setattr(fsst, "PART_MIN_BYTES", 1)
    monkeypatch.setattr(fsst, "WORKERS", parts)
    if not one_pass:
        monkeypatch.setattr(fsst, "ONE_PASS_MAX_BYTES", 0)

    rng = np.random.default_rng(seed)
    num_symbols = int(rng.integers(1, 256))
    expansions = np.zeros((512, 8), np.uint8)
    expansions[:num_symbols] = rng.integers(0, 256, (num_symbols, 8))
    expansions[256:, 0] = np.arange(256)
    lengths = np.zeros(512, np.int64)
    lengths[:num_symbols] = rng.integers(1, 9, num_symbols)
    lengths[256:] = 1
    table = FsstSymbolTable(True, num_symbols, expansions, lengths)
    values = []
    for _ in range(300):
        codes: list[int] = []
        for _ in range(int(rng.integers(0, 40 if rng.random() < 0.5 else 3))):
            if rng.random() < 0.2:
                codes += [255, int(rng.integers(0, 256))]
            else:
                codes.append(int(rng.integers(0, num_symbols)))
        values.append(bytes(codes))
    offsets = np.cumsum([0] + [len(v) for v in values]).astype(np.int64)
    compressed = np.frombuffer(b"".join(values), np.uint8)

    def expand() -> tuple[np.ndarray, np.ndarray]:
        return fsst_decompress(table, compressed, offsets)

    compiled, plain = _both(monkeypatch, expand)
    assert np.array_equal(compiled[0], plain[0])
    assert compiled[1].tobytes() == plain[1].tobytes()


@settings(max_examples=80, deadline=None)
@given(st.binary(max_size=300), st.lists(st.tuples(st.integers(0, 320), st.integers(0, 40))))
def test_copy_ranges(data: bytes, ranges: list[tuple[int, int]]) -> None:
    """The ranges' bytes back to back, as Python slices give them; a range not inside
    the data (here: ending past it) is refused, and named."""
    base = np.frombuffer(data, dtype=np.uint8)
    starts = np.array([s for s, _ in ranges], dtype=np.int64)
    lengths = np.array([n for _, n in ranges], dtype=np.int64)
    out = np.zeros(int(lengths.sum()), dtype=np.uint8)
    found = chunk_kernels.copy_ranges(base, starts, lengths, out)
    outside = [i for i, (s, n) in enumerate(ranges) if s + n > len(data)]
    if outside:
        assert found == outside[0]
    else:
        assert found == -1
        assert out.tobytes() == b"".join(data[s : s + n] for s, n in ranges)


def test_copy_ranges_refuses_negative_ranges() -> None:
    base = np.arange(10, dtype=np.uint8)
    out = np.zeros(10, dtype=np.uint8)
    for starts, lengths in (([2, -1], [1, 1]), ([2, 3], [1, -1]), ([0], [11])):
        found = chunk_kernels.copy_ranges(
            base, np.array(starts, np.int64), np.array(lengths, np.int64), out
        )
        assert found == len(starts) - 1


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([np.uint8, np.uint16, np.uint32, np.uint64]),
    st.lists(st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 300)), max_size=400),
)
def test_expand_runs(dtype: type, runs: list[tuple[int, int]]) -> None:
    """Each value its run's length of times, as ``np.repeat`` gives them (empty runs
    included); a short output stops the runs at its end."""
    info = np.iinfo(dtype)
    values = np.array([v & int(info.max) for v, _ in runs], dtype=dtype)
    lengths = np.array([n for _, n in runs], dtype=np.int64)
    expected = np.repeat(values, lengths)
    out = np.zeros(len(expected), dtype=dtype)
    assert run_kernels.expand_runs(values, lengths, out) == len(expected)
    assert np.array_equal(out, expected)
    short = np.zeros(len(expected) // 2, dtype=dtype)
    assert run_kernels.expand_runs(values, lengths, short) == len(short)
    assert np.array_equal(short, expected[: len(short)])


@pytest.mark.parametrize("bits", [8, 16, 32, 64])
def test_rle_chunks_decode_alike(monkeypatch: pytest.MonkeyPatch, bits: int) -> None:
    """Enough runs for the compiled expansion, in chunks of a page (a sorted key's short
    runs and some long ones)."""
    rng = np.random.default_rng(bits)
    dtype = np.dtype(f"<u{bits // 8}")
    values = np.repeat(
        rng.integers(0, 1 << (bits - 1), 3000).astype(dtype), rng.integers(1, 9, 3000)
    )
    values[5000:7000] = values[5000]
    counts = [4096] * (values.size // 4096)
    counts.append(values.size - sum(counts))
    enc = encode_rle_chunks(values, counts)
    v_starts = np.cumsum(enc.value_sizes) - enc.value_sizes
    l_starts = len(enc.values) + np.cumsum(enc.length_sizes) - enc.length_sizes
    compiled, plain = _both(
        monkeypatch,
        lambda: decode_rle_chunks(
            enc.values + enc.lengths, v_starts, enc.value_sizes, l_starts, enc.length_sizes,
            counts, bits, what="test",
        ),
    )  # fmt: skip
    assert np.array_equal(compiled, values)
    assert np.array_equal(plain, values)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([np.uint8, np.uint16, np.uint32, np.uint64, np.int64]),
    st.lists(
        st.tuples(st.lists(st.integers(0, 255), max_size=40), st.integers(-(2**40), 2**40)),
        max_size=30,
    ),
    st.data(),
)
def test_shift_runs(dtype: type, runs: list[tuple[list[int], int]], data: st.DataObject) -> None:
    """Each run's values widened and shifted by its own amount, as a Python loop does;
    the first value at or past its run's limit is found, nothing after it written."""
    values = np.array([v for run, _ in runs for v in run], dtype=dtype)
    counts = np.array([len(run) for run, _ in runs], dtype=np.int64)
    shifts = np.array([shift for _, shift in runs], dtype=np.int64)
    expected = [v + shift for run, shift in runs for v in run]
    limits = np.full(len(runs), 256, dtype=np.int64)
    out = np.zeros(len(values), dtype=np.int64)
    assert run_kernels.shift_runs(values, counts, shifts, limits, out) == -1
    assert out.tolist() == expected
    if len(values):
        bad = data.draw(st.integers(0, len(values) - 1))
        run = int(np.searchsorted(np.cumsum(counts), bad, side="right"))
        limits[run] = int(values[bad])  # this value is now past its run's items
        first = next(
            i for i in range(len(values))
            if int(values[i]) >= limits[np.searchsorted(np.cumsum(counts), i, side="right")]
        )  # fmt: skip
        out[:] = 0
        assert run_kernels.shift_runs(values, counts, shifts, limits, out) == first
        assert out[:first].tolist() == expected[:first]


def test_shift_runs_refuses_a_negative_value() -> None:
    """A 64-bit unsigned index of 2**63 or more is negative as int64: refused."""
    values = np.array([1, 2**63 + 5], dtype=np.uint64)
    out = np.zeros(2, dtype=np.int64)
    found = run_kernels.shift_runs(
        values, np.array([2], np.int64), np.array([0], np.int64), np.array([10], np.int64), out
    )
    assert found == 1
