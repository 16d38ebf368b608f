"""Dictionary: small-integer indices into a page-local array of distinct values."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.file.encodings.v2_0.context import PageContext


def decode(ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType) -> pa.Array:
    msg = enc.dictionary
    items = ctx.decode(msg.items, msg.num_dictionary_items, dtype)
    indices = ctx.decode_u64(msg.indices, num_rows).astype(np.int64)
    # Index 0 is null; real items are numbered from 1.
    valid = indices > 0
    positions = np.where(valid, indices - 1, 0)
    if len(positions) and positions.max() >= len(items):
        raise ctx.corrupt(f"dictionary index {int(positions.max()) + 1} exceeds {len(items)} items")
    mask = None if valid.all() else ~valid
    return items.take(pa.array(positions, mask=mask))
