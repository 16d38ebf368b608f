"""Page decoders for integer encodings the reference can read but no longer writes.

pylance 14 never emits Bitpacked, BitpackedForNonNeg or Constant in a 2.0 file;
files from older Lance releases may hold them, so the reader accepts them.  The
bit-level work lives in :mod:`.bitpacked` and :mod:`.constant`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.file.codecs import bitpacking as bitpacked
from lancelet.file.v2_0 import constant
from lancelet.file.v2_0.context import PageContext
from lancelet.file.v2_0.flat import value_width_bits


def _as_arrow(ctx: PageContext, raw: np.ndarray, dtype: pa.DataType) -> pa.Array:
    """Reinterpret decoded integers as ``dtype`` (same width: ints, dates, timestamps...)."""
    if pa.types.is_boolean(dtype) or value_width_bits(dtype) != 8 * raw.dtype.itemsize:
        raise ctx.corrupt(f"{8 * raw.dtype.itemsize}-bit integers cannot hold {dtype}")
    return pa.Array.from_buffers(dtype, len(raw), [None, pa.py_buffer(np.ascontiguousarray(raw))])


def decode_bitpacked(
    ctx: PageContext, enc: pb.ArrayEncoding, n: int, dtype: pa.DataType
) -> pa.Array:
    msg = enc.bitpacked
    if msg.compressed_bits_per_value == 0:
        ctx.check_free(n, "a zero-width bit-packed array")
    buf = memoryview(ctx.buffer(msg.buffer))
    raw = bitpacked.decode_bitpacked(
        buf, msg.compressed_bits_per_value, msg.uncompressed_bits_per_value, msg.signed, n
    )
    return _as_arrow(ctx, raw, dtype)


def decode_non_neg(ctx: PageContext, enc: pb.ArrayEncoding, n: int, dtype: pa.DataType) -> pa.Array:
    msg = enc.bitpacked_for_non_neg
    if msg.compressed_bits_per_value == 0:
        ctx.check_free(n, "a zero-width bit-packed array")
    buf = memoryview(ctx.buffer(msg.buffer))
    raw = bitpacked.decode_bitpacked_for_non_neg(
        buf, msg.compressed_bits_per_value, msg.uncompressed_bits_per_value, n
    )
    return _as_arrow(ctx, raw, dtype)


def decode_constant(
    ctx: PageContext, enc: pb.ArrayEncoding, n: int, dtype: pa.DataType
) -> pa.Array:
    width = value_width_bits(dtype)
    if pa.types.is_boolean(dtype) or width % 8 or width > 64:
        raise ctx.corrupt(f"constant encoding cannot hold {dtype}")
    ctx.check_free(n, "a constant array")
    raw = constant.decode_constant(enc.constant.value, np.dtype(f"<u{width // 8}"), n)
    return _as_arrow(ctx, raw, dtype)
