"""Byte stream split: pylance's mini-block chunks (inside zstd / lz4), round trips, damage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lancelet.errors import CorruptFileError, UnsupportedEncodingError
from lancelet.file.codecs.byte_stream_split import decode_bss_chunks, encode_bss_chunks
from lancelet.file.codecs.general import decompress_buffer
from tests.file.v2_1.page_bytes import miniblock_chunks, pages, write

WHAT = "test.lance: column 0 (x) page 0"


@pytest.mark.parametrize(
    ("dtype", "scheme"),
    [(np.float64, "zstd"), (np.float32, "zstd"), (np.int64, "lz4"), (np.float32, "lz4")],
)
def test_decodes_pylance_chunks_in_one_call(tmp_path: Path, dtype: type, scheme: str) -> None:
    rng = np.random.default_rng(5)
    values = (rng.random(5000) * 1e6).astype(dtype)
    metadata = {"lance-encoding:compression": scheme, "lance-encoding:bss": "on"}
    field = pa.field("x", pa.from_numpy_dtype(np.dtype(dtype)), metadata=metadata)
    table = pa.table({"x": values}, schema=pa.schema([field]))
    _, columns = pages(write(tmp_path / "bss.lance", table))
    (page,) = columns[0]
    layout = page.layout.mini_block_layout
    general = layout.value_compression.general
    assert general.values.byte_stream_split.values.flat.bits_per_value == values.itemsize * 8
    chunks = miniblock_chunks(layout, page.buffers[0], page.buffers[1])
    assert len(chunks) > 2
    plain = [
        decompress_buffer(scheme, page.buffers[1][s : s + n]) for c in chunks for s, n in c.buffers
    ]
    data = b"".join(plain)
    sizes = np.array([len(p) for p in plain])
    counts = [c.count for c in chunks]
    out = decode_bss_chunks(
        data, np.cumsum(sizes) - sizes, sizes, counts, values.itemsize * 8, what=WHAT
    )
    np.testing.assert_array_equal(out.view(dtype), values)
    encoded, enc_sizes = encode_bss_chunks(values, counts)
    assert encoded == data
    assert enc_sizes.tolist() == sizes.tolist()


def test_round_trip_mixed_chunk_sizes() -> None:
    values = np.arange(1000, dtype=np.float32) * 1.25
    counts = [256, 512, 100, 128, 4]
    data, sizes = encode_bss_chunks(values, counts)
    starts = np.cumsum(sizes) - sizes
    out = decode_bss_chunks(data, starts, sizes, counts, 32, what=WHAT)
    np.testing.assert_array_equal(out.view(np.float32), values)
    chunk = np.frombuffer(data, np.uint8, count=16, offset=int(starts[4]))
    # Chunk of 4 values: stream 0 holds every value's byte 0.
    assert chunk[:4].tolist() == [values[996:].view(np.uint8)[i * 4] for i in range(4)]


def test_size_not_matching_count_is_corrupt() -> None:
    with pytest.raises(CorruptFileError, match=r"test.lance.*3 values of 8 bytes need 24"):
        decode_bss_chunks(bytes(32), [0], [32], [3], 64, what=WHAT)


def test_chunk_past_the_data_is_corrupt() -> None:
    with pytest.raises(CorruptFileError, match="chunk 1"):
        decode_bss_chunks(bytes(24), [0, 16], [16, 16], [4, 4], 32, what=WHAT)


def test_sixteen_bit_values_are_unsupported() -> None:
    with pytest.raises(UnsupportedEncodingError, match="16 bits"):
        decode_bss_chunks(bytes(4), [0], [4], [2], 16, what=WHAT)
