"""Compute functions SQL filters need and Arrow lacks, registered as pyarrow UDFs.

Each is vectorized with numpy over whole arrays and usable inside a
:class:`pyarrow.compute.Expression` (see :func:`call`), so a filter or projection
that uses one is still evaluated by Arrow batch by batch.

* ``float order keys``: DataFusion compares floats in IEEE 754's *total order*
  (``-NaN < -inf < ... < -0.0 < 0.0 < ... < inf < NaN``), and Arrow's kernels do not:
  they say every comparison with a NaN is false.  The key of a float is an integer that
  sorts the same way: its bits, with the magnitude bits inverted for negative values.
  A second key ignores the sign of zero, as DataFusion does when a float is compared
  with a constant (``x = 0`` matches ``-0.0``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# float type -> (signed integer dtype of the same width, Arrow type of that integer)
_INT_OF_FLOAT: dict[pa.DataType, tuple[type[np.signedinteger[Any]], pa.DataType]] = {
    pa.float16(): (np.int16, pa.int16()),
    pa.float32(): (np.int32, pa.int32()),
    pa.float64(): (np.int64, pa.int64()),
}


def _order_key(values: np.ndarray, int_type: type[np.signedinteger[Any]]) -> np.ndarray:
    bits = values.view(int_type)
    width = np.dtype(int_type).itemsize * 8
    # Arithmetic shift: all ones for negative values, zero otherwise; xor with that
    # (sign bit cleared) reverses the order of the negative values.
    flip = (bits >> (width - 1)) & np.array(np.iinfo(int_type).max, dtype=int_type)
    out: np.ndarray = bits ^ flip
    return out


def _key_array(array: pa.Array, signed_zero: bool) -> pa.Array:
    int_type, arrow_int = _INT_OF_FLOAT[array.type]
    values = array.to_numpy(zero_copy_only=False)
    if not signed_zero:
        values = np.where(values == 0, np.zeros(1, values.dtype), values)
    keys = _order_key(np.ascontiguousarray(values), int_type)
    mask = array.is_null().to_numpy(zero_copy_only=False) if array.null_count else None
    return pa.array(keys, arrow_int, mask=mask)


def float_order_key(value: float, dtype: pa.DataType, *, signed_zero: bool) -> pa.Scalar:
    """The key of one constant, computed here rather than by a UDF call."""
    return _key_array(pa.array([value], dtype), signed_zero)[0]


def order_key_type(dtype: pa.DataType) -> pa.DataType:
    """The integer type of a float type's order keys."""
    return _INT_OF_FLOAT[dtype][1]


def _name(dtype: pa.DataType, signed_zero: bool) -> str:
    return f"lancelet_float_order_key_{dtype}_{'signed' if signed_zero else 'unsigned'}_zero"


@functools.cache
def _register_order_key(dtype: pa.DataType, signed_zero: bool) -> str:
    name = _name(dtype, signed_zero)

    def kernel(_context: Any, values: pa.Array) -> pa.Array:
        return _key_array(values, signed_zero)

    doc = {
        "summary": "An integer that sorts floats in IEEE 754 total order",
        "description": "Nulls stay null."
        + ("" if signed_zero else " -0.0 and 0.0 get the same key."),
    }
    # A reloaded module finds its functions registered already.
    with contextlib.suppress(pa.ArrowKeyError):
        pc.register_scalar_function(kernel, name, doc, {"x": dtype}, _INT_OF_FLOAT[dtype][1])
    return name


def float_order_key_expr(
    operand: pc.Expression, dtype: pa.DataType, *, signed_zero: bool
) -> pc.Expression:
    """An expression for the order keys of a float expression of type ``dtype``."""
    return call(_register_order_key(dtype, signed_zero), [operand])


def call(function: str, arguments: list[pc.Expression]) -> pc.Expression:
    # pyarrow's documented way to use a registered UDF in an Expression.
    expression: pc.Expression = pc.Expression._call(function, arguments)
    return expression


# -- list subscripts -----------------------------------------------------------------
#
# ``l[i]`` in DataFusion's SQL counts from 1, counts from the end when negative, and is
# NULL when the list is NULL or too short (or ``i`` is 0).  Arrow's ``list_element``
# counts from 0 and raises on a short list, so the subscript is a UDF.  UDFs are typed
# exactly, so one is registered per list type met.


def _list_bounds(lists: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Each list's first item and item count, as positions in ``lists.values``."""
    if pa.types.is_fixed_size_list(lists.type):
        size = lists.type.list_size
        starts = (np.arange(len(lists), dtype=np.int64) + lists.offset) * size
        return starts, np.full(len(lists), size, dtype=np.int64)
    offsets = lists.offsets.to_numpy().astype(np.int64)
    return offsets[:-1], np.diff(offsets)


def list_item(lists: pa.Array, index: int) -> pa.Array:
    """Item ``index`` (1-based; negative: from the end) of each list; NULL where none."""
    starts, lengths = _list_bounds(lists)
    if index > 0:
        valid, positions = lengths >= index, starts + (index - 1)
    else:
        valid, positions = (lengths >= -index) & (index != 0), starts + lengths + index
    if lists.null_count:
        valid &= lists.is_valid().to_numpy(zero_copy_only=False)
    # Flattening would drop the items of null lists and shift every position after them;
    # .values keeps them, and ``positions`` index into it.
    values = lists.values
    positions = np.where(valid, positions, 0)
    if not len(values):
        return pa.nulls(len(lists), values.type)
    return values.take(pa.array(positions, pa.int64(), mask=~valid))


@functools.cache
def _register_list_item(dtype: pa.DataType) -> str:
    # The name must be the same for equal types in every import of this module.
    name = f"lancelet_list_item_{hashlib.sha1(str(dtype).encode()).hexdigest()}"

    def kernel(_context: Any, lists: pa.Array, index: pa.Scalar) -> pa.Array:
        return list_item(lists, index.as_py())

    doc = {"summary": "SQL's 1-based list subscript", "description": "NULL when out of range."}
    with contextlib.suppress(pa.ArrowKeyError):
        pc.register_scalar_function(
            kernel, name, doc, {"lists": dtype, "index": pa.int64()}, dtype.value_type
        )
    return name


def list_item_expr(lists: pc.Expression, dtype: pa.DataType, index: int) -> pc.Expression:
    return call(_register_list_item(dtype), [lists, pc.scalar(index)])
