"""Binary: variable-width values as an end-offsets array plus a bytes buffer.

Offsets are the end of each value within the page (the leading zero is
omitted).  A null value stores ``end + null_adjustment``; since every real end
is below the adjustment, ``offset >= adjustment`` marks the null and
``offset - adjustment`` recovers its end.  The same scheme serves list offsets.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.errors import UnsupportedEncodingError
from lancelet.file.codecs.general import BufferCompression, compress_buffer
from lancelet.file.v2_0 import flat
from lancelet.file.v2_0.context import PageContext

# End offsets stay well inside int64 (no file is 2**62 bytes long).
_MAX_END = 2**62


def split_offsets(
    ctx: PageContext, raw: np.ndarray, adjustment: int, what: str
) -> tuple[np.ndarray, np.ndarray | None]:
    """(ends, validity-or-None) from adjusted end offsets, checked to be increasing.

    A null stores ``end + adjustment``, so the adjustment must exceed every real end
    (the writers use ``total + 1``); an offset beyond ``2 * adjustment`` or a decrease
    means the offsets were damaged, and is refused rather than read as a null.
    """
    raw, null = _resolve(raw, adjustment)
    valid = None if null is None else ~null
    if len(raw) and (raw[-1] > _MAX_END or np.any(raw[1:] < raw[:-1])):
        raise ctx.corrupt(f"{what} offsets are not increasing")
    total = int(raw[-1]) if len(raw) else 0
    if adjustment and total >= adjustment:
        raise ctx.corrupt(f"{what} null adjustment {adjustment} does not exceed its {total} values")
    # Increasing and at most _MAX_END, so every end fits an int64 as it is.
    return raw.view(np.int64), valid


def _offsets_type(dtype: pa.DataType) -> np.dtype:
    large = pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype)
    return np.dtype(np.int64 if large else np.int32)


def build_array(
    ctx: PageContext,
    dtype: pa.DataType,
    starts_ends: np.ndarray,
    data: pa.Buffer,
    valid: np.ndarray | None,
) -> pa.Array:
    """A string/binary array from checked Arrow-style offsets (n + 1 values) and data.

    Strings must be UTF-8, as pylance requires; the check is one pass of numpy over
    the bytes when they are ASCII, and Arrow's own validation otherwise.
    """
    n = len(starts_ends) - 1
    otype = _offsets_type(dtype)
    if otype == np.int32 and len(starts_ends) and starts_ends[-1] >= 2**31:
        raise UnsupportedEncodingError(
            f"{ctx.path}: {ctx.what}: a {dtype} page holds more than 2 GiB of values"
        )
    offsets = pa.py_buffer(np.ascontiguousarray(starts_ends, dtype=otype))
    bitmap = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    arr = pa.Array.from_buffers(dtype, n, [bitmap, offsets, data])
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        check_utf8(ctx, arr, int(starts_ends[0]) if n else 0, int(starts_ends[-1]) if n else 0)
    return arr


def check_utf8(ctx: PageContext, arr: pa.Array, first: int, last: int) -> None:
    """Refuse a string array whose bytes ``[first, last)`` are not valid UTF-8."""
    if last == first:
        return
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8, count=last - first, offset=first)
    if data.max() < 0x80:
        return  # ASCII: valid however the offsets cut it
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise ctx.corrupt(f"a string value is not valid UTF-8 ({exc})") from exc


def _checked_ends(
    ctx: PageContext, msg: pb.Binary, num_rows: int
) -> tuple[np.ndarray, np.ndarray | None, pa.Buffer]:
    """Every end offset of the page (checked), its validity, and the page's bytes."""
    raw = ctx.decode_u64(msg.indices, num_rows)
    ends, valid = split_offsets(ctx, raw, msg.null_adjustment, "binary")
    total = int(ends[-1]) if len(ends) else 0
    return ends, valid, ctx.decode_bytes(msg.bytes, total)


def decode(ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType) -> pa.Array:
    ends, valid, data = _checked_ends(ctx, enc.binary, num_rows)
    offsets = np.zeros(num_rows + 1, dtype=np.int64)
    offsets[1:] = ends
    return build_array(ctx, dtype, offsets, data, valid)


def take(
    ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType, rows: np.ndarray
) -> pa.Array:
    """Gather ``rows``, checking and copying only their offsets and bytes."""
    msg = enc.binary
    raw = ctx.decode_u64(msg.indices, num_rows)
    adjustment = msg.null_adjustment
    (total,), _ = _resolve(raw[-1:], adjustment)
    if total > _MAX_END or (adjustment and total >= adjustment):
        raise ctx.corrupt(f"binary offsets end at {total}, past the null adjustment {adjustment}")
    ends, null = _resolve(raw[rows], adjustment)
    starts, _ = _resolve(np.where(rows > 0, raw[np.maximum(rows - 1, 0)], 0), adjustment)
    if len(rows) and (np.any(starts > ends) or int(ends.max()) > total):
        raise ctx.corrupt("binary offsets are not increasing")
    data = np.frombuffer(ctx.decode_bytes(msg.bytes, int(total)), dtype=np.uint8)
    lengths = (ends - starts).view(np.int64)
    gathered = data[gather_ranges(starts.view(np.int64), lengths)]
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    valid = None if null is None else ~null
    return build_array(ctx, dtype, offsets, pa.py_buffer(gathered), valid)


def _resolve(raw: np.ndarray, adjustment: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Ends (uint64) of adjusted offsets, and which were nulls (None: none were)."""
    if not adjustment or not len(raw) or raw.max() < adjustment:
        return raw, None
    null = raw >= np.uint64(adjustment)
    return np.where(null, raw - np.uint64(adjustment), raw), null


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
