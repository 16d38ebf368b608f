"""``FixedSizeBinary`` (ArrayEncoding field 11): strings/binaries of one common width.

The encoding stores only the concatenated value bytes (through its ``bytes``
sub-encoding, a ``Flat`` whose ``bits_per_value`` is ``8 * byte_width``); offsets
are not stored and are rebuilt as ``i * byte_width``.  The reference chooses it
only for format 2.1 and above, through a code path 2.1 no longer takes, so
pylance 14 never writes it; the 2.0 reader still accepts it for utf8/binary
(32-bit offsets) and large_utf8/large_binary (64-bit offsets).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.errors import CorruptFileError
from lancelet.file.v2_0.binary import build_array
from lancelet.file.v2_0.context import PageContext

_INT32_MAX = 2**31 - 1


def decode_fixed_size_binary(
    data: bytes | memoryview, byte_width: int, num_values: int, offset_bits: int = 32
) -> tuple[npt.NDArray[np.signedinteger], memoryview]:
    """Rebuild Arrow offsets for ``num_values`` values and slice their bytes.

    Returns ``(offsets, values_bytes)`` ready for a variable-width Arrow array of
    ``int{offset_bits}`` offsets (32 for utf8/binary, 64 for the large types).
    """
    if offset_bits not in (32, 64):
        raise ValueError(f"offset_bits must be 32 or 64, not {offset_bits}")
    if byte_width <= 0 or num_values < 0:
        raise CorruptFileError(f"FixedSizeBinary: byte_width={byte_width}, num_values={num_values}")
    total = byte_width * num_values
    view = memoryview(data).cast("B")
    if len(view) < total:
        raise CorruptFileError(
            f"FixedSizeBinary: {num_values} values of {byte_width} bytes need "
            f"{total} bytes, buffer has {len(view)}"
        )
    if offset_bits == 32 and total > _INT32_MAX:
        raise CorruptFileError(f"FixedSizeBinary: {total} bytes do not fit 32-bit offsets")
    dtype = np.dtype(np.int32 if offset_bits == 32 else np.int64)
    offsets: npt.NDArray[np.signedinteger] = np.arange(0, total + 1, byte_width, dtype=dtype)
    return offsets, view[:total]


def decode(ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType) -> pa.Array:
    """A string/binary page whose values all have the same width (older writers)."""
    msg = enc.fixed_size_binary
    if msg.byte_width <= 0:
        raise ctx.corrupt(f"fixed-size binary encoding of width {msg.byte_width}")
    large = pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype)
    raw = ctx.decode_bytes(msg.bytes, num_rows * msg.byte_width)
    offsets, _ = decode_fixed_size_binary(
        memoryview(raw), msg.byte_width, num_rows, 64 if large else 32
    )
    return build_array(ctx, dtype, offsets, raw, None)
