"""Comparisons for Spark tests."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc


def _without_nan(column: pa.ChunkedArray) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
    nan = pc.fill_null(pc.is_nan(column), False)
    zero = pa.scalar(0, column.type)
    return nan, pc.if_else(nan, zero, column)


def assert_same_rows(got: pa.Table, want: pa.Table, key: str = "k") -> None:
    """Equal as sets of rows (ordered by ``key``), NaN equal to NaN, types included."""
    got, want = got.sort_by(key), want.sort_by(key)
    assert got.schema.names == want.schema.names
    assert got.num_rows == want.num_rows
    for name in got.column_names:
        a, b = got.column(name), want.column(name)
        assert a.type == b.type, name
        if pa.types.is_floating(a.type):
            (nan_a, a), (nan_b, b) = _without_nan(a), _without_nan(b)
            assert nan_a.equals(nan_b), name
        assert a.equals(b), f"column {name} differs"


def per_query_plans() -> bool:
    """Whether the ``lance`` source's reads are planned per query in the test session:
    on Spark 5, or with the JVM bridge loaded (then filter pushdown is on by default)."""
    from lancelet.spark.bridge import bridge_jar
    from lancelet.spark.compat import PUSHED_READ_PER_QUERY

    return PUSHED_READ_PER_QUERY or bridge_jar() is not None
