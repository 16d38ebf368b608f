"""Queries over a column, each with the rows it should find computed without lancelet.

Arrow evaluates the same condition over the indexed rows, except on floats: SQL (and
so pylance) compares them in IEEE total order with ``-0.0 = 0.0``, Arrow by IEEE rules
(``NaN`` equal to nothing), so for floats pylance's own unindexed scan of the indexed
version is the oracle.
"""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.expr import Equals, IndexQuery, IsIn, IsNull, Range


def _picks(values: pa.Array) -> list[pa.Scalar]:
    present = pc.unique(values.drop_null())
    present = present.take(pc.sort_indices(present))
    return [present[i] for i in (0, len(present) // 3, len(present) // 2, len(present) - 1)]


def queries(column: str, values: pa.Array) -> list[tuple[IndexQuery, pc.Expression]]:
    """A spread of queries over ``values`` (the column), with pyarrow expressions."""
    field = pc.field(column)
    first, low, high, top = _picks(values)
    some = pa.array([first, high, top], values.type)
    out: list[tuple[IndexQuery, pc.Expression]] = [
        (Equals(column, first), field == first),
        (Equals(column, high), field == high),
        (Equals(column, top), field == top),
        (IsNull(column), field.is_null()),
        (Range(column, low, True, high, True), (field >= low) & (field <= high)),
        (Range(column, low, False, high, False), (field > low) & (field < high)),
        (Range(column, None, True, high, False), field < high),
        (Range(column, high, True, None, True), field >= high),
        (Range(column, high, True, low, True), (field >= high) & (field <= low)),
        (IsIn(column, some), field.isin(some)),
    ]
    if pa.types.is_floating(values.type):
        for special in (np.nan, -0.0, 0.0, np.inf, 1.5):
            v = pa.scalar(special, values.type)
            out.append((Equals(column, v), field == v))
        zero = pa.scalar(0.0, values.type)
        out += [
            (Range(column, zero, False), field > zero),
            (Range(column, None, True, zero, False), field < zero),
            (
                Range(column, pa.scalar(-0.0, values.type), True, zero, True),
                (field >= -0.0) & (field <= zero),
            ),
        ]
    return out


def expected(
    indexed: pa.Table, column: str, expr: pc.Expression, dataset: lance.LanceDataset
) -> np.ndarray:
    """Sorted addresses of the indexed rows ``expr`` keeps (floats: by pylance's scan of
    ``dataset``, the version the index was built on)."""
    if pa.types.is_floating(indexed.schema.field(column).type):
        found = dataset.to_table(
            columns=[column], filter=expr, with_row_address=True, use_scalar_index=False
        )
        return np.sort(found["_rowaddr"].to_numpy())
    return np.sort(indexed.filter(expr)["_rowaddr"].to_numpy())
