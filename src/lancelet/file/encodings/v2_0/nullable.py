"""Nullable: wraps a values encoding with a validity bitmap (or none, or all-null)."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.file.encodings.v2_0 import flat
from lancelet.file.encodings.v2_0.context import PageContext


def decode(ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType) -> pa.Array:
    nullable = enc.nullable
    kind = nullable.WhichOneof("nullability")
    if kind == "no_nulls":
        return ctx.decode(nullable.no_nulls.values, num_rows, dtype)
    if kind == "all_nulls":
        return pa.nulls(num_rows, dtype)
    if kind != "some_nulls":
        raise ctx.corrupt("nullable encoding names no nullability")
    validity = ctx.decode(nullable.some_nulls.validity, num_rows, pa.bool_())
    values = ctx.decode(nullable.some_nulls.values, num_rows, dtype)
    return with_validity(values, validity)


def with_validity(values: pa.Array, validity: pa.Array) -> pa.Array:
    """Replace the null bitmap of ``values`` by ``validity`` (a boolean array)."""
    dtype = values.type
    if validity.null_count:
        validity = validity.fill_null(False)
    if pa.types.is_fixed_size_list(dtype):
        return pa.FixedSizeListArray.from_arrays(
            values.values, type=dtype, mask=pc.invert(validity)
        )
    if values.offset or validity.offset % 8 or values.null_count:
        # Rare (decoders return offset-0 arrays): let Arrow align the bitmaps.
        return pc.if_else(validity, values, pa.nulls(len(values), dtype))
    bitmap = validity.buffers()[1].slice(validity.offset // 8)
    own = values.buffers()[1 : dtype.num_buffers]
    return pa.Array.from_buffers(dtype, len(values), [bitmap, *own])


ValuesEncoder = Callable[[pa.Array, flat.AddBuffer], pb.ArrayEncoding]


def encode(arr: pa.Array, add_buffer: flat.AddBuffer, values: ValuesEncoder) -> pb.ArrayEncoding:
    """Wrap ``values(arr)`` in the nullability the data calls for."""
    nulls = arr.null_count
    if nulls == 0:
        inner = values(arr, add_buffer)
        return pb.ArrayEncoding(nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(values=inner)))
    if nulls == len(arr):
        return pb.ArrayEncoding(nullable=pb.Nullable(all_nulls=pb.Nullable.AllNull()))
    validity = flat.encode_bitmap(flat.validity_bitmap(arr), add_buffer)
    inner = values(arr, add_buffer)
    return pb.ArrayEncoding(
        nullable=pb.Nullable(some_nulls=pb.Nullable.SomeNull(validity=validity, values=inner))
    )
