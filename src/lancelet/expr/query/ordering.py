"""Sorting, grouping and distinct rows with DataFusion's comparison of values.

DataFusion compares floats in IEEE 754's total order: ``-NaN < -inf < ... < -0.0 <
0.0 < ... < inf < NaN``, so that ``-0.0`` and ``0.0`` are different groups, ``NaN``
sorts last ascending and ``max`` of a column holding NaN is NaN.  pyarrow's kernels
treat NaN and signed zeros otherwise, so floats are replaced by integer keys in the
same order (:func:`total_order_key`) wherever values are compared.  Nulls sort last
ascending and first descending unless ``NULLS FIRST``/``NULLS LAST`` says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import UnsupportedSqlError

_INTEGER_OF = {8: (np.float64, np.int64, pa.int64()), 4: (np.float32, np.int32, pa.int32())}


def total_order_key(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Integers ordered as ``values`` (floats) are in the total order, or ``values``
    themselves when they are no floats; nulls stay null."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_float16(values.type):
        values = values.cast(pa.float32())
    if not pa.types.is_floating(values.type):
        return values
    float_type, int_type, arrow_int = _INTEGER_OF[values.type.bit_width // 8]
    numbers = pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(float_type)
    return pa.array(_flip(numbers.view(int_type)), arrow_int, mask=_null_mask(values))


def from_total_order_key(keys: pa.Array, float_type: pa.DataType) -> pa.Array:
    """The floats of type ``float_type`` whose :func:`total_order_key` is ``keys``."""
    width = float_type.bit_width // 8
    float_np, int_np, _ = _INTEGER_OF[width]
    bits = pc.fill_null(keys, 0).to_numpy(zero_copy_only=False).astype(int_np)
    return pa.array(_flip(bits).view(float_np), float_type, mask=_null_mask(keys))


def _flip(bits: np.ndarray) -> np.ndarray:
    # Negative floats order backwards as integers: flipping all bits but the sign
    # reverses them.  The map is its own inverse.
    magnitude = np.iinfo(bits.dtype).max
    return np.asarray(bits ^ ((bits >> (bits.dtype.itemsize * 8 - 1)) & magnitude))


def _null_mask(values: pa.Array) -> np.ndarray | None:
    if not values.null_count:
        return None
    return np.asarray(values.is_null().to_numpy(zero_copy_only=False))


@dataclass(frozen=True)
class SortKey:
    values: pa.Array | pa.ChunkedArray
    descending: bool
    nulls_first: bool


def sort_indices(keys: Sequence[SortKey], what: str) -> pa.Array:
    """The row order the keys give (stable: ties keep their order)."""
    columns: dict[str, pa.Array] = {}
    order: list[tuple[str, str]] = []
    for number, key in enumerate(keys):
        values = total_order_key(key.values)
        # Nulls are placed by a key of their own, as each key may want them elsewhere.
        columns[f"n{number}"] = pc.is_null(values)
        order.append((f"n{number}", "descending" if key.nulls_first else "ascending"))
        columns[f"v{number}"] = values
        order.append((f"v{number}", "descending" if key.descending else "ascending"))
    try:
        return pc.sort_indices(pa.table(columns), sort_keys=order)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise UnsupportedSqlError(f"{what}: cannot sort these values: {exc}") from exc


def first_rows_of_groups(keys: Sequence[pa.Array | pa.ChunkedArray], what: str) -> pa.Array:
    """The index of each group's first row, groups in order of first appearance, as
    ``keys`` (equal under the total order) define the groups."""
    columns = {f"k{n}": total_order_key(values) for n, values in enumerate(keys)}
    rows = len(keys[0]) if keys else 0
    table = pa.table({**columns, "row": pa.array(np.arange(rows, dtype=np.int64))})
    try:
        grouped = table.group_by(list(columns), use_threads=False).aggregate([("row", "min")])
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise UnsupportedSqlError(f"{what}: cannot group these values: {exc}") from exc
    return grouped.column("row_min").combine_chunks()


def distinct_indices(columns: Sequence[pa.Array | pa.ChunkedArray], what: str) -> pa.Array:
    """The rows to keep so that no two rows are equal: each first occurrence, in order."""
    firsts = first_rows_of_groups(columns, what)
    return pc.take(firsts, pc.sort_indices(firsts))
