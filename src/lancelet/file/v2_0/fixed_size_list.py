"""FixedSizeList: ``dimension`` items per row, items encoded as one child array."""

from __future__ import annotations

import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.file.v2_0 import flat
from lancelet.file.v2_0.context import PageContext


def decode(ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType) -> pa.Array:
    fsl = enc.fixed_size_list
    if not pa.types.is_fixed_size_list(dtype) or dtype.list_size != fsl.dimension:
        raise ctx.corrupt(
            f"fixed-size-list encoding of dimension {fsl.dimension} cannot hold {dtype}"
        )
    items = ctx.decode(fsl.items, num_rows * fsl.dimension, dtype.value_type)
    return pa.FixedSizeListArray.from_arrays(items, type=dtype)


def encode(arr: pa.Array, add_buffer: flat.AddBuffer) -> pb.ArrayEncoding:
    from lancelet.file.v2_0.leaf import encode_values

    dim = arr.type.list_size
    child = arr.values.slice(arr.offset * dim, len(arr) * dim)
    inner = encode_values(child, add_buffer)
    return pb.ArrayEncoding(fixed_size_list=pb.FixedSizeList(dimension=dim, items=inner))
