"""Pages in encodings pylance 14 no longer writes (Bitpacked, FastLanes, Constant) still decode.

The bit layouts are checked against independent packers in test_v2_0_physical.py;
here whole pages go through the dispatcher and come out as the column's Arrow type.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.errors import CorruptFileError
from lancelet.file.codecs import bitpacking as bitpacked
from lancelet.file.v2_0.context import PageContext
from lancelet.file.v2_0.dispatch import decode_array


def context(*buffers: bytes) -> PageContext:
    return PageContext(
        path="mem.lance",
        what="column 0 page 0",
        page_buffers=[pa.py_buffer(b) for b in buffers],
        column_buffers=list,
        file_buffers=list,
        decode_fn=decode_array,
        free_values=10_000,
    )


VALUES = np.array([0, 5, 1023, 7, 512, 3] * 50, dtype=np.int64)


@pytest.mark.parametrize("dtype", [pa.int64(), pa.timestamp("us"), pa.uint64(), pa.date64()])
def test_bitpacked_page(dtype: pa.DataType) -> None:
    data = bitpacked.encode_bitpacked(VALUES, 10)
    enc = pb.ArrayEncoding(
        bitpacked=pb.Bitpacked(
            compressed_bits_per_value=10, uncompressed_bits_per_value=64, buffer=pb.Buffer()
        )
    )
    got = decode_array(context(data), enc, len(VALUES), dtype)
    assert got.type == dtype
    assert got.equals(pa.array(VALUES).view(dtype))


def test_fastlanes_page() -> None:
    values = np.arange(3000, dtype=np.uint32) % 77
    data = bitpacked.encode_bitpacked_for_non_neg(values, 7)
    msg = pb.BitpackedForNonNeg(
        compressed_bits_per_value=7, uncompressed_bits_per_value=32, buffer=pb.Buffer()
    )
    got = decode_array(context(data), pb.ArrayEncoding(bitpacked_for_non_neg=msg), 3000, pa.int32())
    assert got.to_pylist() == [int(v) for v in values]


def test_constant_page() -> None:
    enc = pb.ArrayEncoding(constant=pb.Constant(value=(-7).to_bytes(4, "little", signed=True)))
    assert decode_array(context(), enc, 5, pa.int32()).to_pylist() == [-7] * 5


def test_bitpacked_page_too_short() -> None:
    enc = pb.ArrayEncoding(
        bitpacked=pb.Bitpacked(
            compressed_bits_per_value=10, uncompressed_bits_per_value=64, buffer=pb.Buffer()
        )
    )
    with pytest.raises(CorruptFileError):
        decode_array(context(b"\x00" * 3), enc, 1000, pa.int64())


def test_width_mismatch_is_corrupt() -> None:
    enc = pb.ArrayEncoding(constant=pb.Constant(value=b"\x01\x00"))
    with pytest.raises(CorruptFileError):
        decode_array(context(), enc, 5, pa.int32())


@pytest.mark.parametrize("dtype", [pa.string(), pa.large_binary()])
def test_fixed_size_binary_page(dtype: pa.DataType) -> None:
    flat = pb.ArrayEncoding(flat=pb.Flat(bits_per_value=8, buffer=pb.Buffer()))
    enc = pb.ArrayEncoding(fixed_size_binary=pb.FixedSizeBinary(bytes=flat, byte_width=3))
    got = decode_array(context(b"abcdefghi"), enc, 3, dtype)
    assert got.equals(pa.array(["abc", "def", "ghi"]).cast(dtype))
