"""Indices pylance built, read by lancelet: every search finds exactly the rows an
independent evaluation of the same condition finds among the indexed rows."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lancelet.expr import HasAny, LikePrefix
from lancelet.index import BitmapIndex, BTreeIndex
from tests.index.fixtures import COLUMNS, Indexed
from tests.index.oracle import expected, queries
from tests.storage import local


def open_index(indexed: Indexed, column: str) -> BTreeIndex | BitmapIndex:
    opener = BTreeIndex if indexed.kind == "BTREE" else BitmapIndex
    return opener.open(local(indexed.index_dir(column)))


@pytest.mark.parametrize("column", COLUMNS)
def test_search_finds_the_matching_rows(indexed: Indexed, column: str) -> None:
    index = open_index(indexed, column)
    built_on = indexed.dataset().checkout_version(2)
    for query, expr in queries(column, indexed.indexed.column(column).combine_chunks()):
        result = index.search(query)
        assert result is not None and result.exact
        assert result.addresses.dtype == np.uint64
        want = expected(indexed.indexed, column, expr, built_on)
        np.testing.assert_array_equal(result.addresses, want, err_msg=f"{indexed.kind} {query}")


def test_indexed_rows_include_rows_deleted_later(indexed: Indexed) -> None:
    # "i = 9" was deleted after the index was built: the index still lists those rows.
    index = open_index(indexed, "i")
    from lancelet.expr import Equals

    found = index.search(Equals("i", pa.scalar(9, pa.int64())))
    assert found is not None and len(found.addresses) > 0
    assert indexed.dataset().count_rows("i = 9") == 0


@pytest.mark.parametrize("column", COLUMNS)
def test_statistics_match_pylance(indexed: Indexed, column: str) -> None:
    stats = indexed.dataset().stats.index_stats(f"{column}_idx")["indices"][0]
    assert open_index(indexed, column).statistics() == stats


def test_queries_the_index_cannot_answer_give_none(indexed: Indexed) -> None:
    index = open_index(indexed, "s")
    assert index.search(HasAny("s", pa.array(["k001"]))) is None


def test_prefix_search_finds_the_strings_that_start_with_it(indexed: Indexed) -> None:
    index = open_index(indexed, "s")
    rows = indexed.indexed
    for prefix in ["k0", "k00", "", "zz"]:
        found = index.search(LikePrefix("s", prefix))
        assert found is not None and found.exact
        want = sorted(
            a
            for s, a in zip(rows["s"].to_pylist(), rows["_rowaddr"].to_pylist(), strict=True)
            if s is not None and s.startswith(prefix)
        )
        assert found.addresses.tolist() == want, prefix
