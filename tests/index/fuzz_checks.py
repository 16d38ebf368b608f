"""What the index fuzz campaigns read: open the index directory and run a fixed set
of searches, as the planner would (see :mod:`tests.index.test_fuzz_index`)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from lancelet.expr import Equals, IndexQuery, IsIn, IsNull, Range
from lancelet.index import BitmapIndex, BTreeIndex
from tests.storage import local


def _queries() -> list[IndexQuery]:
    def v(x: float) -> pa.Scalar:
        return pa.scalar(x, pa.float64())

    return [
        Equals("c", v(7.0)),
        Equals("c", v(float("nan"))),
        Equals("c", v(0.0)),
        Range("c", v(100.0), True, v(900.0), False),
        Range("c", None, True, v(-1.0), True),
        IsIn("c", pa.array([3.0, 4000.0, -0.0], pa.float64())),
        IsNull("c"),
    ]


def _results(index: BTreeIndex | BitmapIndex) -> pa.Table:
    found = []
    for query in _queries():
        result = index.search(query)
        assert result is not None
        found.append(result.addresses.tolist())
    return pa.table({"addresses": pa.array(found, pa.list_(pa.uint64()))})


def search_btree(root: Path) -> pa.Table:
    return _results(BTreeIndex.open(local(root)))


def search_bitmap(root: Path) -> pa.Table:
    return _results(BitmapIndex.open(local(root)))
