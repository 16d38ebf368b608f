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

from lancelet.errors import CorruptFileError, UnsupportedEncodingError

ByteRows = npt.NDArray[np.uint8]


def arrow_byte_width(dtype: pa.DataType) -> int:
    """Bytes one value of ``dtype`` takes inside a packed row."""
    if pa.types.is_struct(dtype):
        return sum(arrow_byte_width(dtype.field(i).type) for i in range(dtype.num_fields))
    if pa.types.is_fixed_size_list(dtype):
        return int(dtype.list_size) * arrow_byte_width(dtype.value_type)
    if pa.types.is_fixed_size_binary(dtype):
        return int(dtype.byte_width)
    if pa.types.is_boolean(dtype) or not _is_fixed_width(dtype):
        raise UnsupportedEncodingError(f"PackedStruct cannot hold a {dtype} child")
    return int(dtype.bit_width) // 8


def _is_fixed_width(dtype: pa.DataType) -> bool:
    try:
        return int(dtype.bit_width) % 8 == 0
    except ValueError:
        return False


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
        items = _child_array(dtype.value_type, rows.reshape(count * dtype.list_size, -1))
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
