"""Inline bit-packed mini-block chunks decoded by the compiled kernel: every width
and bit count, partial last chunks, pylance's files and lancelet's, all giving the
values pyarrow holds; damaged chunks still reported by the numpy path."""

from __future__ import annotations

from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest

from lancelet.errors import CorruptFileError
from lancelet.file.codecs import bitpacking, jit
from lancelet.file.reader import LanceFileReader
from lancelet.file.v2_1.read.fixed_width import InlineBitpacking, InlineMiniBlock
from lancelet.file.v2_1.read.values import Fixed, Slices, take_values
from lancelet.file.writer import LanceFileWriter

pytestmark = pytest.mark.skipif(not jit.enabled(), reason="numba missing or LANCELET_JIT=0")

TYPES = {8: pa.uint8(), 16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}


def _chunk_bytes(values: np.ndarray, width: int, bits: int) -> bytes:
    """One inline chunk as the format lays it out: the bit count in a ``width``-bit
    word, then the 1024 values (zero padded) packed at ``bits``."""
    dtype = np.dtype(f"<u{width // 8}")
    padded = np.zeros((1, 1024), dtype=dtype)
    padded[0, : len(values)] = values
    words = bitpacking._pack_chunks(padded, bits)
    return np.array([bits], dtype=dtype).tobytes() + words.tobytes()


@pytest.mark.parametrize("width", [8, 16, 32, 64])
def test_every_bit_count_of_every_width(width: int) -> None:
    rng = np.random.default_rng(width)
    parts, expected, starts, counts = [], [], [], []
    at = 0
    for bits in range(width + 1):
        count = 1024 if bits % 3 else int(rng.integers(1, 1024))
        high = 1 << bits
        values = (
            rng.integers(0, high, count, dtype=np.uint64, endpoint=False)
            if bits
            else (np.zeros(count, np.uint64))
        )
        chunk = _chunk_bytes(values, width, bits)
        parts.append(chunk)
        starts.append(at)
        counts.append(count)
        at += len(chunk)
        expected.append(values)
    base = np.frombuffer(b"".join(parts), dtype=np.uint8)
    sizes = np.diff(np.append(starts, at))
    out = bitpacking.unpack_inline(base, np.array(starts), sizes, np.array(counts, np.int64), width)
    assert out is not None
    assert out.dtype == np.dtype(f"<u{width // 8}")
    np.testing.assert_array_equal(out.astype(np.uint64), np.concatenate(expected))


@pytest.mark.parametrize(
    "damage",
    ["bits above the width", "size too short", "size too long", "count over 1024", "past the end"],
)
def test_chunks_that_disagree_are_left_to_the_numpy_path(damage: str) -> None:
    values = np.arange(1000, dtype=np.uint64) % 97
    chunk = bytearray(_chunk_bytes(values, 32, 7))
    size, count, start = len(chunk), 1000, 0
    if damage == "bits above the width":
        chunk[0] = 33
    elif damage == "size too short":
        size -= 4
    elif damage == "size too long":
        chunk += b"\0" * 4
        size += 4
    elif damage == "count over 1024":
        count = 1025
    else:
        start = 8
    base = np.frombuffer(bytes(chunk), dtype=np.uint8)
    found = bitpacking.unpack_inline(
        base, np.array([start]), np.array([size]), np.array([count]), 32
    )
    assert found is None


def _columns(rows: int) -> pa.Table:
    rng = np.random.default_rng(7)
    columns = {}
    for width, dtype in TYPES.items():
        for bits in sorted({1, 3, width // 2, width - 1}):
            columns[f"u{width}_{bits}"] = pa.array(
                rng.integers(0, 1 << bits, rows, dtype=np.uint64), dtype
            )
    columns["signed"] = pa.array(rng.integers(-5000, 5000, rows), pa.int64())
    columns["small_signed"] = pa.array(rng.integers(-3, 3, rows), pa.int8())
    columns["zeros"] = pa.array(np.zeros(rows, np.int32))
    columns["nullable"] = pa.array(
        [None if i % 7 == 0 else i % 300 for i in range(rows)], pa.int32()
    )
    return pa.table(columns)


@pytest.mark.parametrize("writer", ["pylance", "lancelet"])
@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("rows", [1, 1023, 2000, 5000])
def test_files_read_as_pyarrow_holds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str, version: str, rows: int
) -> None:
    table = _columns(rows)
    path = str(tmp_path / "data.lance")
    if writer == "pylance":
        with ref.LanceFileWriter(path, table.schema, version=version) as w:
            w.write_batch(table)
    else:
        with LanceFileWriter(path, table.schema, version=version) as w:
            w.write_batch(table)
    used = []
    real = bitpacking.unpack_inline

    def spy(*args: object) -> object:
        found = real(*args)  # type: ignore[arg-type]
        used.append(found is not None)
        return found

    monkeypatch.setattr("lancelet.file.v2_1.read.fixed_width.unpack_inline", spy)
    got = LanceFileReader(path).read_all().to_table()
    assert got.equals(table)
    if rows > 1:  # a page of one row is stored flat
        assert any(used)  # the kernel did the decoding
    assert (
        LanceFileReader(path)
        .read_range(rows // 3, rows - rows // 3)
        .to_table()
        .equals(table.slice(rows // 3, rows - rows // 3))
    )


def test_a_damaged_chunk_is_still_reported(tmp_path: Path) -> None:
    table = pa.table({"v": pa.array(np.arange(3000, dtype=np.uint32) % 1000)})
    path = tmp_path / "data.lance"
    with LanceFileWriter(str(path), table.schema, version="2.1") as w:
        w.write_batch(table)
    reader = LanceFileReader(str(path))
    page = reader._columns[0].pages[0]
    assert page.layout is not None
    compression = page.layout.mini_block_layout.value_compression
    assert compression.WhichOneof("compression") == "inline_bitpacking"
    # The first chunk: its header (level count, value buffer size) padded to 8 bytes,
    # then its values' bit count.
    width_at = page.buffer_offsets[1] + 8
    data = bytearray(path.read_bytes())
    assert data[width_at] == 10
    data[width_at] = 40  # a 32-bit value packed at 40 bits
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="40 bits"):
        LanceFileReader(str(path)).read_all().to_table()


def _random_chunks(
    rng: np.random.Generator, width: int, bit_counts: list[int], shift: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Chunks of random values at these bit counts and random lengths, ``shift`` bytes
    into the buffer: (buffer, starts, sizes, counts, the values back to back)."""
    parts, expected, starts, counts = [], [], [], []
    at = shift
    for bits in bit_counts:
        count = int(rng.integers(1, 1025))
        values = rng.integers(0, 1 << bits, count, dtype=np.uint64) if bits else np.zeros(count)
        chunk = _chunk_bytes(values.astype(np.uint64), width, bits)
        parts.append(chunk)
        starts.append(at)
        counts.append(count)
        at += len(chunk)
        expected.append(values.astype(np.uint64))
    base = np.frombuffer(b"\xff" * shift + b"".join(parts), dtype=np.uint8)
    sizes = np.diff(np.append(starts, at))
    return base, np.array(starts, np.int64), sizes, np.array(counts), np.concatenate(expected)


@pytest.mark.parametrize("width", [16, 32, 64])
@pytest.mark.parametrize("shift", [0, 1, 3])
def test_word_aligned_and_unaligned_chunks_agree(width: int, shift: int) -> None:
    """Chunks on word boundaries are read in place, others copied onto them first: both
    give the values packed (the same chunks, moved ``shift`` bytes into the buffer)."""
    rng = np.random.default_rng(width + shift)
    bit_counts = rng.integers(0, width + 1, 12).tolist()
    base, starts, sizes, counts, every = _random_chunks(rng, width, bit_counts, shift)
    located = bitpacking._word_chunks(base, starts, sizes, width)
    assert located is not None
    assert np.shares_memory(located[0], base) == (shift == 0)  # else copied to align them
    out = bitpacking.unpack_inline(base, starts, sizes, counts, width)
    assert out is not None
    np.testing.assert_array_equal(out.astype(np.uint64), every)


@pytest.mark.parametrize("width", [8, 16, 32, 64])
def test_selected_values_read_alone(width: int) -> None:
    """A take's values read word by word: the values at those positions, whatever
    the chunks' bit counts; an index past the values or a damaged chunk gives None."""
    rng = np.random.default_rng(100 + width)
    bit_counts = [0, 1, width, *rng.integers(0, width + 1, 6).tolist()]
    base, starts, sizes, counts, every = _random_chunks(rng, width, bit_counts)
    index = np.sort(rng.choice(len(every), size=min(300, len(every)), replace=False))
    args = (base, starts, sizes, counts, width)
    picked = bitpacking.unpack_inline_selected(*args, index)
    assert picked is not None
    np.testing.assert_array_equal(picked.astype(np.uint64), every[index])
    assert bitpacking.unpack_inline_selected(*args, np.array([len(every)])) is None
    damaged = bytearray(base.tobytes())
    damaged[starts[-1]] = width + 1  # the last chunk claims more bits than its width
    broken = np.frombuffer(bytes(damaged), dtype=np.uint8)
    assert bitpacking.unpack_inline_selected(broken, *args[1:], index[:1]) is None


@pytest.mark.parametrize("width", [16, 64])
def test_a_selection_of_most_values_unpacks_whole_chunks(width: int) -> None:
    """Most of the chunks' values (a compaction's live rows) are unpacked whole and
    the rest dropped: the selective decode declines; a few are read one by one.
    Both give the values at those positions."""
    rng = np.random.default_rng(width)
    base, starts, sizes, counts, every = _random_chunks(rng, width, [1, width // 2, width, 3])
    codec = InlineMiniBlock(InlineBitpacking(width))
    chunks = [Slices(base, starts, sizes)]
    for share in (0.1, 0.9):
        index = np.sort(rng.choice(len(every), size=int(len(every) * share), replace=False))
        picked = codec.decode_selected(chunks, counts, index)
        assert (picked is None) == (share > 0.5)
        whole = codec.decode(chunks, counts)
        got = take_values(whole, index) if picked is None else picked
        assert isinstance(got, Fixed)
        np.testing.assert_array_equal(got.as_uint().astype(np.uint64), every[index])


def test_blocks_of_several_chunks_decode_together() -> None:
    """Inline bit-packed blocks (a page dictionary each: chunks of 1024 values, the
    last one short) decoded in one batch give each block's values, as each block
    decoded alone does."""
    rng = np.random.default_rng(3)
    codec = InlineBitpacking(32)
    blocks, expected = [], []
    for count in (2500, 1024, 700, 3):
        values = rng.integers(0, 1 << 20, count, dtype=np.uint64)
        chunks = [values[i : i + 1024] for i in range(0, count, 1024)]
        blocks.append(b"".join(_chunk_bytes(c, 32, int(c.max()).bit_length()) for c in chunks))
        expected.append(values)
    sizes = np.array([len(b) for b in blocks], np.int64)
    base = np.frombuffer(b"".join(blocks), np.uint8)
    counts = np.array([len(v) for v in expected], np.int64)
    got = codec.decode_blocks(Slices(base, np.cumsum(sizes) - sizes, sizes), counts)
    assert isinstance(got, Fixed)
    np.testing.assert_array_equal(got.as_uint().astype(np.uint64), np.concatenate(expected))
    for block, values in zip(blocks, expected, strict=True):
        alone = codec.decode(np.frombuffer(block, np.uint8), len(values))
        assert isinstance(alone, Fixed)
        np.testing.assert_array_equal(alone.as_uint().astype(np.uint64), values)
    with pytest.raises(CorruptFileError, match="bit-packed block"):  # a chunk too many
        codec.decode_blocks(Slices(base, np.cumsum(sizes) - sizes, sizes), counts + 1024)
