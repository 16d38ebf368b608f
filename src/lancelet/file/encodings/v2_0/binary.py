"""Binary: variable-width values as an end-offsets array plus a bytes buffer.

Offsets are the end of each value within the page (the leading zero is
omitted).  A null value stores ``end + null_adjustment``; since every real end
is below the adjustment, ``offset % adjustment`` recovers the end and
``offset >= adjustment`` marks the null.  The same scheme serves list offsets.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.file.encodings.v2_0 import flat
from lancelet.file.encodings.v2_0.compression import BufferCompression, compress_buffer
from lancelet.file.encodings.v2_0.context import PageContext


def split_offsets(raw: np.ndarray, adjustment: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(ends, validity-or-None) from adjusted end offsets."""
    if adjustment == 0:
        return raw.astype(np.int64, copy=False), None
    valid = raw < adjustment
    ends = (raw % np.uint64(adjustment)).astype(np.int64)
    return ends, (None if valid.all() else valid)


def check_monotonic(ctx: PageContext, ends: np.ndarray, limit: int, what: str) -> None:
    if len(ends) and (ends[0] < 0 or np.any(np.diff(ends) < 0) or ends[-1] > limit):
        raise ctx.corrupt(f"{what} offsets are not increasing within 0..{limit}")


def _offsets_type(dtype: pa.DataType) -> np.dtype:
    large = pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype)
    return np.dtype(np.int64 if large else np.int32)


def build_array(
    dtype: pa.DataType, starts_ends: np.ndarray, data: pa.Buffer, valid: np.ndarray | None
) -> pa.Array:
    """A string/binary array from Arrow-style offsets (n + 1 values) and data."""
    n = len(starts_ends) - 1
    otype = _offsets_type(dtype)
    if otype == np.int32 and len(starts_ends) and starts_ends[-1] >= 2**31:
        raise OverflowError(f"{dtype} page holds more than 2 GiB of values")
    offsets = pa.py_buffer(np.ascontiguousarray(starts_ends, dtype=otype))
    bitmap = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(dtype, n, [bitmap, offsets, data])


def decode(ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType) -> pa.Array:
    msg = enc.binary
    raw = ctx.decode_u64(msg.indices, num_rows)
    ends, valid = split_offsets(raw, msg.null_adjustment)
    total = int(ends[-1]) if len(ends) else 0
    data = ctx.decode(msg.bytes, total, pa.uint8())
    check_monotonic(ctx, ends, len(data), "binary")
    offsets = np.zeros(num_rows + 1, dtype=np.int64)
    offsets[1:] = ends
    return build_array(dtype, offsets, data.buffers()[1].slice(data.offset), valid)


def take(
    ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType, rows: np.ndarray
) -> pa.Array:
    """Gather ``rows`` touching only their offsets and bytes."""
    msg = enc.binary
    raw = ctx.decode_u64(msg.indices, num_rows)
    adj = np.uint64(msg.null_adjustment or np.iinfo(np.uint64).max)
    end_raw = raw[rows]
    prev = np.where(rows > 0, raw[np.maximum(rows - 1, 0)], 0)
    ends = (end_raw % adj).astype(np.int64)
    starts = np.where(rows > 0, (prev % adj).astype(np.int64), 0)
    valid = end_raw < adj
    total = int(ends.max()) if len(ends) else 0
    data = ctx.decode(msg.bytes, total, pa.uint8()).to_numpy(zero_copy_only=False)
    lengths = np.maximum(ends - starts, 0)
    gathered = data[gather_ranges(starts, lengths)]
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return build_array(dtype, offsets, pa.py_buffer(gathered), None if valid.all() else valid)


def gather_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Indices of the concatenated ranges ``[start, start + length)``, vectorized."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    out_starts = np.cumsum(lengths) - lengths
    return np.repeat(starts - out_starts, lengths) + np.arange(total, dtype=np.int64)


def _bytes_encoding(
    data: pa.Buffer, add_buffer: flat.AddBuffer, compression: BufferCompression | None
) -> pb.ArrayEncoding:
    """The ``Flat`` of the bytes buffer; pylance compresses only this buffer, not the offsets."""
    if compression is None:
        return pb.ArrayEncoding(
            flat=pb.Flat(bits_per_value=8, buffer=pb.Buffer(buffer_index=add_buffer(data)))
        )
    packed = compress_buffer(compression.scheme, memoryview(data), compression.level)
    index = add_buffer(pa.py_buffer(packed))
    proto = pb.Compression(scheme=compression.scheme)
    if compression.level is not None:
        proto.level = compression.level
    return pb.ArrayEncoding(
        flat=pb.Flat(bits_per_value=8, buffer=pb.Buffer(buffer_index=index), compression=proto)
    )


def encode(
    arr: pa.Array, add_buffer: flat.AddBuffer, compression: BufferCompression | None = None
) -> pb.ArrayEncoding:
    offsets = np.frombuffer(
        arr.buffers()[1],
        dtype=_offsets_type(arr.type),
        count=len(arr) + 1,
        offset=arr.offset * _offsets_type(arr.type).itemsize,
    ).astype(np.uint64)
    base = int(offsets[0])
    ends = offsets[1:] - np.uint64(base)
    total = int(ends[-1]) if len(ends) else 0
    adjustment = total + 1
    if arr.null_count:
        ends = ends + np.uint64(adjustment) * (~np.asarray(arr.is_valid(), dtype=bool)).astype(
            np.uint64
        )
    indices = flat.encode_u64(ends, add_buffer)
    data = arr.buffers()[2]
    data_slice = data.slice(base, total) if data is not None else pa.py_buffer(b"")
    bytes_enc = _bytes_encoding(data_slice, add_buffer, compression)
    return pb.ArrayEncoding(
        binary=pb.Binary(indices=indices, bytes=bytes_enc, null_adjustment=adjustment)
    )
