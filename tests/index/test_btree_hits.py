"""A BTREE page's rows in an interval of integer keys are found by binary search (the
page is checked sorted, nulls first); they must be the rows the key mask selects."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lancelet.expr import Equals, Range
from lancelet.index import BTreeIndex, ordering, queries, write_btree
from tests.storage import local


@pytest.mark.parametrize("dtype", [pa.int64(), pa.uint8(), pa.int16(), pa.float64()])
def test_interval_hits_match_the_key_mask(tmp_path: Path, dtype: pa.DataType) -> None:
    rng = np.random.default_rng(2)
    n = 3000
    raw = rng.integers(0, 120, n)
    values = pa.array(
        [None if i % 13 == 0 else int(v) for i, v in enumerate(raw)], pa.int64()
    ).cast(dtype)
    ids = np.arange(n, dtype=np.uint64) * 3 + 7
    write_btree([(values, ids)], local(tmp_path / "bt"), dtype, "2.2", batch_size=64)
    index = BTreeIndex.open(local(tmp_path / "bt"))
    literal = [0, 5, 60, 119, 120]
    queries_ = [Equals("c", pa.scalar(v, dtype)) for v in literal]
    for low in [None, *literal]:
        for high in [None, *literal]:
            for inclusive in [(True, True), (False, True), (True, False), (False, False)]:
                queries_.append(
                    Range(
                        "c",
                        None if low is None else pa.scalar(low, dtype),
                        inclusive[0],
                        None if high is None else pa.scalar(high, dtype),
                        inclusive[1],
                    )
                )
    for query in queries_:
        plan = queries.plan(query, dtype)
        assert plan is not None
        for page, keys, page_ids in index._read_pages(np.arange(index.num_pages)):
            expected = page_ids.filter(plan.mask(keys)).to_numpy()
            got = index._hits(plan, page, keys, page_ids)
            assert got.tolist() == expected.tolist(), (query, page)
        found = index.search(query)
        assert found is not None
        mask = plan.mask(ordering.search_keys(values))
        brute = np.sort(ids[np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)])
        assert found.addresses.tolist() == brute.tolist(), query
