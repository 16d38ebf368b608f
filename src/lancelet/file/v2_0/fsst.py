"""The Lance 2.0 ``Fsst`` array encoding: a ``Binary`` page of FSST-compressed values
whose symbol table sits in the encoding message."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.file.codecs.fsst import fsst_decompress
from lancelet.file.v2_0.binary import build_array
from lancelet.file.v2_0.context import PageContext


def decode(ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType) -> pa.Array:
    """A page of FSST-compressed strings: decode the inner Binary, then expand it."""
    msg = enc.fsst
    # The inner Binary holds the compressed values; decode it as raw binary first.
    compressed = ctx.decode(msg.binary, num_rows, pa.large_binary())
    offsets = np.frombuffer(
        compressed.buffers()[1], dtype=np.int64, count=num_rows + 1, offset=8 * compressed.offset
    )
    data_buf = compressed.buffers()[2]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    )
    out_offsets, out_data = fsst_decompress(msg.symbol_table, data, offsets)
    valid = None
    if compressed.null_count:
        valid = np.asarray(compressed.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return build_array(ctx, dtype, out_offsets, pa.py_buffer(out_data), valid)
