"""A page's visible values as plain byte blocks, the input of every compressor.

Arrow arrays are flattened into one of three shapes, as in the reference:
fixed-width values (``Fixed``: a bit width and the packed bytes, booleans at one
bit), variable-width values (``Variable``: zero-based offsets and the bytes), and
fixed-size lists of fixed-width items (``FixedList``: the flattened items plus
each list layer's item validity).  Validity of the values themselves is not
here: it travels in the definition levels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from lancelet.errors import UnsupportedTypeError

U8 = NDArray[np.uint8]


@dataclass(frozen=True)
class Fixed:
    data: U8  # num_values * bits_per_value bits, LSB first for sub-byte widths
    bits_per_value: int
    num_values: int

    def words(self) -> NDArray[np.unsignedinteger]:
        """The values as unsigned integers of their own width (8/16/32/64 bits)."""
        return self.data.view(f"<u{self.bits_per_value // 8}")


@dataclass(frozen=True)
class Variable:
    offsets: NDArray[np.int64]  # num_values + 1, starting at 0
    data: U8
    bits_per_offset: int  # 32 or 64: how the reference stores the offsets

    @property
    def num_values(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> NDArray[np.int64]:
        return np.diff(self.offsets)


@dataclass(frozen=True)
class FixedList:
    """Fixed-size lists (nested any depth) of fixed-width items."""

    items: Fixed  # the innermost items, flattened
    dimensions: tuple[int, ...]  # outermost first
    validity: tuple[NDArray[np.bool_] | None, ...]  # per layer, over that layer's items
    num_values: int  # rows (outermost lists)

    @property
    def bits_per_row(self) -> int:
        return self.items.bits_per_value * int(np.prod(self.dimensions))


@dataclass(frozen=True)
class Packed:
    """A packed struct: its fields' values, row by row at write time."""

    fields: tuple[Fixed | Variable, ...]
    num_values: int

    @property
    def fixed(self) -> bool:
        return all(isinstance(f, Fixed) for f in self.fields)


Block = Fixed | Variable | FixedList | Packed


def packed_field_problem(dtype: pa.DataType) -> str | None:
    """Why a struct field cannot be packed (None: it can): a packed struct holds
    byte-wide fixed-width fields, and (from 2.2) strings and binaries."""
    if is_variable(dtype):
        return None
    fixed = (
        pa.types.is_integer(dtype)
        or pa.types.is_floating(dtype)
        or pa.types.is_decimal(dtype)
        or pa.types.is_temporal(dtype)
        or pa.types.is_fixed_size_binary(dtype)
    )
    if not fixed:
        return f"its field type {dtype} cannot be packed (only fixed-width values and strings)"
    return None


def _packed(arr: pa.StructArray) -> Packed:
    fields: list[Fixed | Variable] = []
    struct_valid = (
        None if arr.null_count == 0
        else np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    )  # fmt: skip
    for i, field in enumerate(arr.type):
        child = arr.field(i)
        if child.null_count:
            valid = np.asarray(child.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            if struct_valid is not None:
                valid |= ~struct_valid  # under a null row a field's value is unused
            if not bool(valid.all()):
                raise UnsupportedTypeError(
                    f"packed struct field {field.name!r} holds nulls; a packed struct's fields "
                    "cannot be null (the struct itself can)"
                )
        block = to_block(child)
        assert isinstance(block, Fixed | Variable)
        fields.append(block)
    return Packed(tuple(fields), len(arr))


def _bits(buf: pa.Buffer | None, offset: int, count: int) -> U8:
    """``count`` bits starting at bit ``offset`` of ``buf``, repacked from bit 0."""
    if buf is None:
        return np.zeros((count + 7) // 8, dtype=np.uint8)
    raw = np.frombuffer(buf, dtype=np.uint8)
    if offset % 8 == 0:
        start = offset // 8
        out = raw[start : start + (count + 7) // 8].copy()
    else:
        bits = np.unpackbits(raw, bitorder="little")[offset : offset + count]
        out = np.packbits(bits, bitorder="little")
    if count % 8:
        out[-1] &= (1 << (count % 8)) - 1
    packed: U8 = out
    return packed


def fixed_width_bits(dtype: pa.DataType) -> int:
    if pa.types.is_boolean(dtype):
        return 1
    if pa.types.is_fixed_size_binary(dtype) or pa.types.is_decimal(dtype):
        return int(dtype.byte_width) * 8
    return int(dtype.bit_width)


def _fixed(arr: pa.Array) -> Fixed:
    bits = fixed_width_bits(arr.type)
    data_buf = arr.buffers()[1]
    if bits == 1:
        return Fixed(_bits(data_buf, arr.offset, len(arr)), 1, len(arr))
    width = bits // 8
    if data_buf is None:
        return Fixed(np.zeros(len(arr) * width, np.uint8), bits, len(arr))
    raw = np.frombuffer(data_buf, dtype=np.uint8)
    return Fixed(raw[arr.offset * width : (arr.offset + len(arr)) * width], bits, len(arr))


def _variable(arr: pa.Array) -> Variable:
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    buffers = arr.buffers()
    width = np.int64 if large else np.int32
    if buffers[1] is None:
        offsets = np.zeros(len(arr) + 1, dtype=np.int64)
    else:
        raw_offsets = np.frombuffer(buffers[1], dtype=width)
        offsets = raw_offsets[arr.offset : arr.offset + len(arr) + 1].astype(np.int64)
    data_buf = buffers[2]
    raw = np.zeros(0, np.uint8) if data_buf is None else np.frombuffer(data_buf, dtype=np.uint8)
    data = raw[offsets[0] : offsets[-1]]
    return Variable(offsets - offsets[0], data, 64 if large else 32)


def _fixed_list(arr: pa.Array) -> FixedList:
    dims: list[int] = []
    validity: list[NDArray[np.bool_] | None] = []
    rows = len(arr)
    current: pa.Array = arr
    while pa.types.is_fixed_size_list(current.type):
        dims.append(current.type.list_size)
        child = current.values.slice(current.offset * current.type.list_size,
                                     len(current) * current.type.list_size)  # fmt: skip
        validity.append(
            None if child.null_count == 0
            else np.asarray(child.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        )  # fmt: skip
        current = child
    return FixedList(_fixed(current), tuple(dims), tuple(validity), rows)


def is_variable(dtype: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(dtype)
        or pa.types.is_binary(dtype)
        or pa.types.is_large_string(dtype)
        or pa.types.is_large_binary(dtype)
    )


def to_block(arr: pa.Array) -> Block:
    """The values of a (non-dictionary, non-null-typed) leaf array."""
    if pa.types.is_struct(arr.type):
        return _packed(arr)
    if is_variable(arr.type):
        return _variable(arr)
    if pa.types.is_fixed_size_list(arr.type):
        return _fixed_list(arr)
    return _fixed(arr)


def max_value_bytes(block: Block) -> int:
    """The widest value, in bytes (decides mini-block against full-zip)."""
    if isinstance(block, Packed):
        return sum(max_value_bytes(f) for f in block.fields)
    if isinstance(block, Variable):
        return int(block.lengths.max()) if block.num_values else 0
    if isinstance(block, FixedList):
        return (block.bits_per_row + 7) // 8
    return (block.bits_per_value + 7) // 8
