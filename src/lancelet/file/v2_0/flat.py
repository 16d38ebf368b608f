"""Flat: fixed-width values packed back to back (booleans one bit each, LSB first).

Arrow uses the same layout, so an uncompressed page becomes an Arrow array over
the file's bytes without a copy.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.file.codecs.general import decompress_buffer
from lancelet.file.v2_0.context import PageContext

# Wider than any fixed-width Arrow type (a fixed_size_binary of 1 MiB).
_MAX_BITS = 8 * 1024 * 1024


def value_width_bits(dtype: pa.DataType) -> int:
    """Bits per value of a fixed-width Arrow type (1 for booleans)."""
    if pa.types.is_boolean(dtype):
        return 1
    if pa.types.is_fixed_size_binary(dtype):
        return 8 * int(dtype.byte_width)
    return int(dtype.bit_width)


def decode(ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType) -> pa.Array:
    flat = enc.flat
    bits = flat.bits_per_value
    if bits == 0 or (bits != 1 and bits % 8) or bits > _MAX_BITS:
        raise ctx.corrupt(f"flat encoding with {bits} bits per value is not supported")
    want = value_width_bits(dtype)
    widen = dtype == pa.uint64() and bits in (8, 16, 32)
    if bits != want and not widen:
        raise ctx.corrupt(f"flat encoding of {bits} bits cannot hold {dtype}")
    expected = (num_rows * bits + 7) // 8
    buf = ctx.buffer(flat.buffer)
    if flat.HasField("compression") and flat.compression.scheme:
        buf = pa.py_buffer(decompress_buffer(flat.compression.scheme, buf, expected))
    ctx.require_exact(buf, expected, "flat values")
    if widen:
        # Offsets and indices stored narrower than the u64 the decoders work in.
        raw = np.frombuffer(buf, dtype=f"<u{bits // 8}", count=num_rows)
        return pa.array(raw.astype(np.uint64), type=dtype)
    return pa.Array.from_buffers(dtype, num_rows, [None, buf])


def _bitmap(arr: pa.Array) -> pa.Buffer:
    """The array's bits (values for booleans) re-based to offset 0."""
    buf = arr.buffers()[1]
    if arr.offset % 8 == 0:
        start = arr.offset // 8
        return buf.slice(start, (len(arr) + 7) // 8)
    bits = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    return pa.py_buffer(np.packbits(bits, bitorder="little"))


def validity_bitmap(arr: pa.Array) -> pa.Buffer:
    """The array's validity re-based to offset 0 (caller knows there are nulls)."""
    buf = arr.buffers()[0]
    if arr.offset % 8 == 0 and buf is not None:
        return buf.slice(arr.offset // 8, (len(arr) + 7) // 8)
    return _bitmap(arr.is_valid())


def values_buffer(arr: pa.Array) -> pa.Buffer:
    """The raw value bytes of a fixed-width array, starting at its first row."""
    if pa.types.is_boolean(arr.type):
        return _bitmap(arr)
    width = value_width_bits(arr.type) // 8
    buf = arr.buffers()[1]
    return buf.slice(arr.offset * width, len(arr) * width)


AddBuffer = Callable[[pa.Buffer], int]


def encode(arr: pa.Array, add_buffer: AddBuffer) -> pb.ArrayEncoding:
    index = add_buffer(values_buffer(arr))
    return pb.ArrayEncoding(
        flat=pb.Flat(
            bits_per_value=value_width_bits(arr.type), buffer=pb.Buffer(buffer_index=index)
        )
    )


def encode_bitmap(bitmap: pa.Buffer, add_buffer: AddBuffer) -> pb.ArrayEncoding:
    index = add_buffer(bitmap)
    return pb.ArrayEncoding(flat=pb.Flat(bits_per_value=1, buffer=pb.Buffer(buffer_index=index)))


def encode_u64(values: np.ndarray, add_buffer: AddBuffer) -> pb.ArrayEncoding:
    """Offsets and indices: flat 64-bit values without nulls, as the reference writes them."""
    index = add_buffer(pa.py_buffer(np.ascontiguousarray(values, dtype="<u8")))
    flat = pb.ArrayEncoding(flat=pb.Flat(bits_per_value=64, buffer=pb.Buffer(buffer_index=index)))
    return pb.ArrayEncoding(nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(values=flat)))
