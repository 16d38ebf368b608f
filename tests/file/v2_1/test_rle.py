"""Run-length encoding: pylance's mini-block and block bytes, round trips, damage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lancelet.errors import CorruptFileError, UnsupportedEncodingError
from lancelet.file.codecs.rle import (
    decode_rle_block,
    decode_rle_chunks,
    encode_rle_block,
    encode_rle_chunks,
    rle_entry_count,
)
from tests.file.v2_1.page_bytes import PageBytes, miniblock_chunks, pages, write

WHAT = "test.lance: column 0 (x) page 0"


def _rle_page(tmp_path: Path, values: np.ndarray, **metadata: str) -> PageBytes:
    field = pa.field("x", pa.from_numpy_dtype(values.dtype), metadata=metadata or None)
    table = pa.table({"x": values}, schema=pa.schema([field]))
    _, columns = pages(write(tmp_path / "rle.lance", table))
    (page,) = columns[0]
    assert page.layout.mini_block_layout.value_compression.HasField("rle")
    return page


def _chunk_args(page: PageBytes) -> tuple[bytes, list[list[int]]]:
    layout = page.layout.mini_block_layout
    chunks = miniblock_chunks(layout, page.buffers[0], page.buffers[1])
    levels = int(layout.HasField("rep_compression")) + int(layout.HasField("def_compression"))
    table = [
        [c.buffers[levels][0] for c in chunks],
        [c.buffers[levels][1] for c in chunks],
        [c.buffers[levels + 1][0] for c in chunks],
        [c.buffers[levels + 1][1] for c in chunks],
        [c.count for c in chunks],
    ]
    return page.buffers[1], table


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.float32, np.float64])
def test_decodes_pylance_chunks_in_one_call(tmp_path: Path, dtype: type) -> None:
    rng = np.random.default_rng(7)
    values = np.repeat(rng.integers(-100, 100, 60), rng.integers(1, 900, 60)).astype(dtype)
    page = _rle_page(tmp_path, values, **{"lance-encoding:dict-divisor": "100000"})
    data, args = _chunk_args(page)
    assert len(args[0]) > 1  # several chunks, decoded together
    bits = np.dtype(dtype).itemsize * 8
    out = decode_rle_chunks(data, *args, bits, what=WHAT)
    np.testing.assert_array_equal(out.view(dtype), values)


def test_encoder_writes_pylance_bytes(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    values = np.sort(rng.integers(0, 40, 20_000)).astype(np.int32)
    page = _rle_page(tmp_path, values)
    data, (v_starts, v_sizes, l_starts, l_sizes, counts) = _chunk_args(page)
    encoded = encode_rle_chunks(values, counts)
    want_values = b"".join(data[s : s + n] for s, n in zip(v_starts, v_sizes, strict=True))
    want_lengths = b"".join(data[s : s + n] for s, n in zip(l_starts, l_sizes, strict=True))
    assert encoded.values == want_values
    assert encoded.lengths == want_lengths
    assert encoded.value_sizes.tolist() == v_sizes
    assert encoded.length_sizes.tolist() == l_sizes
    assert rle_entry_count(values, counts) == sum(l_sizes)


def test_block_levels_from_pylance(tmp_path: Path) -> None:
    """pylance 2.2 compresses a packed struct's definition levels as an RLE block."""
    struct = pa.struct([("a", pa.int32()), ("b", pa.float64())])
    rows = [None if i in (3, 4, 9) else {"a": i, "b": 0.5 * i} for i in range(40)]
    field = pa.field("s", struct, metadata={"lance-encoding:packed": "true"})
    table = pa.table({"s": pa.array(rows, struct)}, schema=pa.schema([field]))
    _, columns = pages(write(tmp_path / "packed.lance", table))
    layout = columns[0][0].layout.mini_block_layout
    rle = layout.def_compression.rle
    assert rle.values.flat.bits_per_value == 16 and rle.run_lengths.flat.bits_per_value == 8
    (chunk,) = miniblock_chunks(layout, columns[0][0].buffers[0], columns[0][0].buffers[1])
    start, size = chunk.buffers[0]
    block = columns[0][0].buffers[1][start : start + size]
    defs = decode_rle_block(block, chunk.num_levels, 16, what=WHAT)
    assert defs.tolist() == [int(r is None) for r in rows]
    assert encode_rle_block(defs) == block


@pytest.mark.parametrize("length_bits", [8, 16, 32])
def test_round_trip_with_long_runs_and_chunk_cuts(length_bits: int) -> None:
    rng = np.random.default_rng(11)
    values = np.repeat(rng.random(40), rng.integers(1, 70_000, 40))
    counts = [4096] * (values.size // 4096) + [values.size % 4096 or 4096]
    counts[-1] = values.size - sum(counts[:-1])
    enc = encode_rle_chunks(values, counts, length_bits=length_bits)
    lengths = np.frombuffer(enc.lengths, dtype=f"<u{length_bits // 8}")
    assert lengths.max() <= (1 << length_bits) - 1
    assert len(enc.values) // 8 == lengths.size
    v_starts = np.cumsum(enc.value_sizes) - enc.value_sizes
    l_starts = len(enc.values) + np.cumsum(enc.length_sizes) - enc.length_sizes
    out = decode_rle_chunks(
        enc.values + enc.lengths,
        v_starts,
        enc.value_sizes,
        l_starts,
        enc.length_sizes,
        counts,
        64,
        length_bits=length_bits,
        what=WHAT,
    )
    np.testing.assert_array_equal(out.view(np.float64), values)


def test_nan_and_signed_zero_runs_keep_their_bits() -> None:
    values = np.array([np.nan, np.nan, -0.0, 0.0, 0.0], dtype=np.float32)
    block = encode_rle_block(values)
    out = decode_rle_block(block, 5, 32, what=WHAT)
    assert out.tobytes() == values.tobytes()


def _single(values: bytes, lengths: bytes, count: int, **kw: object) -> np.ndarray:
    return decode_rle_chunks(
        values + lengths,
        [0],
        [len(values)],
        [len(values)],
        [len(lengths)],
        [count],
        32,
        what=WHAT,
        **kw,  # type: ignore[arg-type]
    )


VALUES = np.array([5, 6, 7], dtype="<u4").tobytes()


def test_short_runs_are_corrupt() -> None:
    with pytest.raises(CorruptFileError, match=r"test.lance: column 0 \(x\) page 0.*cover 6"):
        _single(VALUES, bytes([1, 2, 3]), 7)


def test_overlong_runs_are_corrupt_except_a_legacy_last_run() -> None:
    # Legacy writers let the last run of a chunk overshoot: it is clipped.
    assert _single(VALUES, bytes([1, 2, 3]), 4).tolist() == [5, 6, 6, 7]
    with pytest.raises(CorruptFileError, match="more than the 3"):
        _single(VALUES, bytes([1, 2, 3]), 3)  # the last run would be empty
    with pytest.raises(CorruptFileError, match="more than the 4"):
        _single(VALUES, bytes([1, 2, 3]), 4, strict=True)


def test_only_a_power_of_two_chunk_has_a_legacy_last_run() -> None:
    # Legacy writers overshot only when they cut a chunk back to a power of two: in
    # any other chunk (a page's last) an overlong run is damage, such as a run made
    # longer by a flipped bit that the last run would silently absorb.
    with pytest.raises(CorruptFileError, match="more than the 5"):
        _single(VALUES, bytes([2, 2, 3]), 5)
    assert _single(VALUES, bytes([2, 2, 5]), 8).tolist() == [5, 5, 6, 6, 7, 7, 7, 7]


def test_zero_run_is_corrupt() -> None:
    with pytest.raises(CorruptFileError, match="run length is 0"):
        _single(VALUES, bytes([1, 0, 3]), 4)


def test_mismatched_buffers_are_corrupt() -> None:
    with pytest.raises(CorruptFileError, match="run values but"):
        _single(VALUES, bytes([1, 2]), 3)
    with pytest.raises(CorruptFileError, match="run values but"):
        _single(VALUES[:-1], bytes([1, 2, 3]), 6)


def test_truncated_buffers_are_corrupt() -> None:
    with pytest.raises(CorruptFileError, match="run past the 14 bytes"):
        decode_rle_chunks(VALUES + bytes([1, 2]), [0], [12], [12], [3], [6], 32, what=WHAT)
    with pytest.raises(CorruptFileError, match="too short for its 8-byte header"):
        decode_rle_block(b"\x04\0\0", 1, 32, what=WHAT)
    with pytest.raises(CorruptFileError, match="declares 4096 bytes"):
        decode_rle_block(np.array([4096], "<u8").tobytes() + VALUES, 1, 32, what=WHAT)


def test_huge_declared_sizes_are_corrupt_not_allocated() -> None:
    big = np.array([2**63 + 5], dtype=np.uint64)
    with pytest.raises(CorruptFileError):
        decode_rle_chunks(VALUES, [0], big, [0], [0], [1], 32, what=WHAT)


def test_unknown_widths_are_unsupported() -> None:
    with pytest.raises(UnsupportedEncodingError, match="24 bits"):
        decode_rle_block(b"\0" * 8, 0, 24, what=WHAT)
    with pytest.raises(UnsupportedEncodingError, match="run lengths of 64 bits"):
        decode_rle_block(b"\0" * 8, 0, 32, length_bits=64, what=WHAT)
