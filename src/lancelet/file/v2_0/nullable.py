"""Nullable: wraps a values encoding with a validity bitmap (or none, or all-null)."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.errors import UnsupportedEncodingError
from lancelet.file.v2_0 import flat
from lancelet.file.v2_0.context import PageContext
from lancelet.file.v2_0.types import is_fixed_width, is_variable_width, values_per_row

# Arrow allocates every slot of an all-null array; a page stores none of them, so its
# size is bounded here instead (2 GiB of 64-bit values), not by the file's size.
MAX_NULL_VALUES = 2**28


def decode(ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType) -> pa.Array:
    nullable = enc.nullable
    kind = nullable.WhichOneof("nullability")
    if kind == "no_nulls":
        return ctx.decode(nullable.no_nulls.values, num_rows, dtype)
    if kind == "all_nulls":
        values = num_rows * values_per_row(dtype)
        ctx.check_free(values, "an all-null array")
        if values > MAX_NULL_VALUES:
            raise UnsupportedEncodingError(
                f"{ctx.path}: {ctx.what}: an all-null page of {values} values "
                f"(a {dtype} column) is more than lancelet builds at once ({MAX_NULL_VALUES})"
            )
        return pa.nulls(num_rows, dtype)
    if kind != "some_nulls":
        raise ctx.corrupt("nullable encoding names no nullability")
    validity = ctx.decode(nullable.some_nulls.validity, num_rows, pa.bool_())
    values = ctx.decode(nullable.some_nulls.values, num_rows, dtype)
    result = with_validity(values, validity)
    if result is None:
        raise ctx.corrupt(f"a validity bitmap cannot apply to {dtype}")
    return result


def with_validity(values: pa.Array, validity: pa.Array) -> pa.Array | None:
    """``values`` with nulls where ``validity`` is false (None: the type has no nulls).

    Nested types get their validity through Arrow's constructors; flat ones get the
    bitmap as their first buffer, which Arrow takes without copying.
    """
    dtype = values.type
    if validity.null_count:
        validity = validity.fill_null(False)
    if pa.types.is_dictionary(dtype):
        indices = with_validity(values.indices, validity)
        return (
            None if indices is None else pa.DictionaryArray.from_arrays(indices, values.dictionary)
        )
    if pa.types.is_fixed_size_list(dtype) or pa.types.is_struct(dtype):
        mask = pc.invert(validity)
        if values.null_count:
            mask = pc.or_(mask, values.is_null())
        if pa.types.is_struct(dtype):
            fields = [dtype.field(i) for i in range(dtype.num_fields)]
            return pa.StructArray.from_arrays(values.flatten(), fields=fields, mask=mask)
        dim = dtype.list_size
        items = values.values.slice(values.offset * dim, len(values) * dim)
        return pa.FixedSizeListArray.from_arrays(items, type=dtype, mask=mask)
    if not (is_fixed_width(dtype) or is_variable_width(dtype)):
        return None
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
