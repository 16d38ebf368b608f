"""``PackedStruct`` (ArrayEncoding field 9): a struct's fixed-width children row by row.

Each row stores the children's values back to back in field order, so a page of
``n`` rows is ``n * row_width`` bytes in a single buffer (``PackedStruct.buffer``).
The ``inner`` encodings describe each child (``Nullable{NoNull{Flat}}``, a
``FixedSizeList`` or a nested ``PackedStruct``), but their own ``buffer`` fields
are meaningless: the reference reader ignores them and derives every child's
byte width from the Arrow type of the struct field instead.

pylance writes this in 2.0 for struct fields whose metadata has
``lance-encoding:packed`` (any value) or the legacy ``packed`` = ``"true"``, and for
the position/size descriptions of ``lance-encoding:blob`` columns.  It refuses
children that are variable-width, boolean or contain nulls, and 2.0 cannot store
struct-level nulls at all, so the packed bytes never carry validity.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.errors import CorruptFileError, UnsupportedEncodingError
from lancelet.file.v2_0 import flat
from lancelet.file.v2_0.context import PageContext
from lancelet.file.v2_0.types import is_fixed_width_bytes

ByteRows = npt.NDArray[np.uint8]


def arrow_byte_width(dtype: pa.DataType) -> int:
    """Bytes one value of ``dtype`` takes inside a packed row."""
    if pa.types.is_struct(dtype):
        return sum(arrow_byte_width(dtype.field(i).type) for i in range(dtype.num_fields))
    if pa.types.is_fixed_size_list(dtype):
        return int(dtype.list_size) * arrow_byte_width(dtype.value_type)
    if pa.types.is_fixed_size_binary(dtype):
        return int(dtype.byte_width)
    if not is_fixed_width_bytes(dtype):
        raise UnsupportedEncodingError(f"PackedStruct cannot hold a {dtype} child")
    return int(dtype.bit_width) // 8


def split_packed_struct(
    buf: bytes | memoryview, field_widths: Sequence[int], num_rows: int
) -> list[ByteRows]:
    """Cut a packed page into one ``(num_rows, width)`` byte matrix per child."""
    row_width = sum(field_widths)
    if num_rows < 0 or any(w <= 0 for w in field_widths):
        raise CorruptFileError(
            f"PackedStruct: bad shape, {num_rows} rows of widths {list(field_widths)}"
        )
    needed = row_width * num_rows
    view = memoryview(buf).cast("B")
    if len(view) < needed:
        raise CorruptFileError(
            f"PackedStruct: {num_rows} rows of {row_width} bytes need {needed} "
            f"bytes, buffer has {len(view)}"
        )
    rows = np.frombuffer(view[:needed], dtype=np.uint8).reshape(num_rows, row_width)
    bounds = np.cumsum([0, *field_widths])
    return [np.ascontiguousarray(rows[:, lo:hi]) for lo, hi in itertools.pairwise(bounds)]


def _child_array(dtype: pa.DataType, rows: ByteRows) -> pa.Array:
    """Reinterpret a child's byte rows as an Arrow array of ``dtype`` (no nulls)."""
    count = rows.shape[0]
    if pa.types.is_struct(dtype):
        return decode_packed_struct(rows.tobytes(), dtype, count)
    if pa.types.is_fixed_size_list(dtype):
        item_width = arrow_byte_width(dtype.value_type)
        items = _child_array(dtype.value_type, rows.reshape(count * dtype.list_size, item_width))
        return pa.FixedSizeListArray.from_arrays(items, type=dtype)
    return pa.Array.from_buffers(dtype, count, [None, pa.py_buffer(rows.tobytes())])


def decode_packed_struct(
    buf: bytes | memoryview, struct_type: pa.StructType, num_rows: int
) -> pa.StructArray:
    """Decode a packed page into a struct array of ``struct_type`` (no nulls)."""
    fields = [struct_type.field(i) for i in range(struct_type.num_fields)]
    widths = [arrow_byte_width(f.type) for f in fields]
    parts = split_packed_struct(buf, widths, num_rows)
    children = [_child_array(f.type, p) for f, p in zip(fields, parts, strict=True)]
    return pa.StructArray.from_arrays(children, fields=fields)


def pack_struct_rows(children: Sequence[npt.NDArray[np.generic]]) -> bytes:
    """Interleave children (each with one leading row axis) into packed rows."""
    if not children:
        return b""
    count = children[0].shape[0]
    parts = []
    for child in children:
        if child.shape[0] != count:
            raise ValueError("PackedStruct children must have the same number of rows")
        flat = np.ascontiguousarray(child).view(np.uint8)
        parts.append(flat.reshape(count, -1))
    return np.concatenate(parts, axis=1).tobytes()


# ---------------------------------------------------------------------------
# The page-level encoding: decode / take (dispatch) and encode (writer)
# ---------------------------------------------------------------------------


def _row_width(ctx: PageContext, dtype: pa.DataType) -> int:
    problem = packed_type_problem(dtype) if pa.types.is_struct(dtype) else "not a struct"
    if problem is not None:
        raise ctx.corrupt(f"packed struct encoding cannot hold {dtype}: {problem}")
    return arrow_byte_width(dtype)


def decode(ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType) -> pa.Array:
    # Like the reference, ignore ``inner``: child widths come from the Arrow type.
    width = _row_width(ctx, dtype)
    buf = ctx.buffer(enc.packed_struct.buffer)
    ctx.require_exact(buf, num_rows * width, "packed struct")
    return decode_packed_struct(memoryview(buf), dtype, num_rows)


def take(
    ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType, rows: np.ndarray
) -> pa.Array:
    """Gather whole packed rows first, then split only those."""
    width = _row_width(ctx, dtype)
    buf = ctx.buffer(enc.packed_struct.buffer)
    ctx.require_exact(buf, num_rows * width, "packed struct")
    matrix = np.frombuffer(buf, dtype=np.uint8, count=num_rows * width).reshape(num_rows, width)
    return decode_packed_struct(matrix[rows].tobytes(), dtype, len(rows))


def packed_type_problem(dtype: pa.DataType) -> str | None:
    """Why the reference cannot pack a struct of ``dtype``, or None if it can."""
    if pa.types.is_struct(dtype):
        if dtype.num_fields == 0:
            return "a packed struct needs at least one field"
        problems = (packed_type_problem(dtype.field(i).type) for i in range(dtype.num_fields))
        return next((p for p in problems if p is not None), None)
    if pa.types.is_fixed_size_list(dtype):
        return packed_type_problem(dtype.value_type)
    if pa.types.is_fixed_size_binary(dtype):
        return None
    if pa.types.is_boolean(dtype):
        return "boolean fields cannot be packed (only whole-byte values)"
    if not is_fixed_width_bytes(dtype):
        return f"{dtype} fields cannot be packed (only fixed-width values)"
    return None


def has_nulls(arr: pa.Array) -> bool:
    """Whether ``arr`` or anything inside it has a null (packed rows cannot hold any)."""
    if arr.null_count:
        return True
    if pa.types.is_struct(arr.type):
        return any(has_nulls(child) for child in arr.flatten())
    if pa.types.is_fixed_size_list(arr.type):
        return has_nulls(_fsl_items(arr))
    return False


def _fsl_items(arr: pa.Array) -> pa.Array:
    dim = arr.type.list_size
    return arr.values.slice(arr.offset * dim, len(arr) * dim)


def _row_bytes(arr: pa.Array) -> ByteRows:
    """The values of a null-free array as an ``(len, byte width)`` matrix."""
    width = arrow_byte_width(arr.type)
    if pa.types.is_struct(arr.type):
        parts = [_row_bytes(child) for child in arr.flatten()]
        return np.concatenate(parts, axis=1) if parts else np.zeros((len(arr), 0), np.uint8)
    if pa.types.is_fixed_size_list(arr.type):
        return _row_bytes(_fsl_items(arr)).reshape(len(arr), width)
    raw = flat.values_buffer(arr)
    return np.frombuffer(raw, dtype=np.uint8, count=len(arr) * width).reshape(len(arr), width)


def _inner_encoding(dtype: pa.DataType) -> pb.ArrayEncoding:
    """What pylance records for one packed child; its buffer references are all 0."""
    if pa.types.is_struct(dtype):
        inner = [_inner_encoding(dtype.field(i).type) for i in range(dtype.num_fields)]
        return pb.ArrayEncoding(packed_struct=pb.PackedStruct(inner=inner, buffer=pb.Buffer()))
    if pa.types.is_fixed_size_list(dtype):
        items = _inner_encoding(dtype.value_type)
        values = pb.ArrayEncoding(
            fixed_size_list=pb.FixedSizeList(dimension=dtype.list_size, items=items)
        )
    else:
        bits = flat.value_width_bits(dtype)
        values = pb.ArrayEncoding(flat=pb.Flat(bits_per_value=bits, buffer=pb.Buffer()))
    return pb.ArrayEncoding(nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(values=values)))


def encode(arr: pa.Array, add_buffer: flat.AddBuffer) -> pb.ArrayEncoding:
    """One page of a packed struct column: not wrapped in ``Nullable``, as pylance writes it.

    The caller has checked the type (:func:`packed_type_problem`) and that there
    are no nulls (:func:`has_nulls`).
    """
    index = add_buffer(pa.py_buffer(_row_bytes(arr).tobytes()))
    dtype = arr.type
    inner = [_inner_encoding(dtype.field(i).type) for i in range(dtype.num_fields)]
    return pb.ArrayEncoding(
        packed_struct=pb.PackedStruct(inner=inner, buffer=pb.Buffer(buffer_index=index))
    )
