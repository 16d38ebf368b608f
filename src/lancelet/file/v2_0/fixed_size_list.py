"""FixedSizeList: ``dimension`` items per row, items encoded as one child array.

Its encoder is :func:`lancelet.file.v2_0.leaf.encode_fixed_size_list` (the items
are encoded as a leaf of their own)."""

from __future__ import annotations

import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.file.v2_0.context import PageContext


def decode(ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType) -> pa.Array:
    fsl = enc.fixed_size_list
    if not pa.types.is_fixed_size_list(dtype) or dtype.list_size != fsl.dimension:
        raise ctx.corrupt(
            f"fixed-size-list encoding of dimension {fsl.dimension} cannot hold {dtype}"
        )
    items = ctx.decode(fsl.items, num_rows * fsl.dimension, dtype.value_type)
    return pa.FixedSizeListArray.from_arrays(items, type=dtype)
