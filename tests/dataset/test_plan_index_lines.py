"""The ``ScalarIndexQuery`` line of ``explain_plan`` for a filter one index answers:
the query as pylance prints it, then ``@index_name(IndexType)``.

Each library indexes its own copy of one dataset; the lines must be equal.  (Filters
of several index searches print differently: pylance nests them as ``AND(...)``,
``OR(...)``, ``NOT(...)``, lancelet gives one line per search.)
"""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from tests.storage import copy_tree

INDICES = {"x": "BTREE", "s": "BITMAP", "l": "LABEL_LIST", "w": "NGRAM", "b": "BTREE"}
FILTERS = [
    "x = 7",
    "x > 5",
    "x >= 5 AND x < 9",
    "x BETWEEN 3 AND 4",
    "x IS NULL",
    "s = 'k1'",
    "array_has_any(l, [1, 2])",
    "array_has_all(l, [1])",
    "array_contains(l, 1)",
    "contains(w, 'apple')",
    "contains(w, 'word1')",
    "b = X'0101010101010101010101'",
    "b = X'0202'",
]


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("plans")
    ours, theirs = base / "ours", base / "theirs"
    n = 100
    table = pa.table(
        {
            "x": pa.array([*range(n - 1), None], pa.int64()),
            "s": [f"k{i}" for i in range(n)],
            "l": [[i % 5] for i in range(n)],
            "w": [f"word{i} apple" for i in range(n)],
            "b": [bytes([i]) * (11 if i % 2 else 2) for i in range(n)],
        }
    )
    ll.write_dataset(table, ours)
    copy_tree(str(ours), str(theirs))
    for column, kind in INDICES.items():
        ll.dataset(ours).create_scalar_index(column, kind)
        lance.dataset(theirs).create_scalar_index(column, kind)
    return ours, theirs


def _index_lines(plan: str) -> list[str]:
    return [line.strip() for line in plan.splitlines() if "ScalarIndexQuery" in line]


@pytest.mark.parametrize("where", FILTERS)
def test_the_index_line_is_pylances(copies: tuple[Path, Path], where: str) -> None:
    ours, theirs = copies
    got = _index_lines(ll.dataset(ours).scanner(filter=where).explain_plan())
    want = _index_lines(lance.dataset(theirs).scanner(filter=where).explain_plan())
    assert len(want) == 1
    assert got == want
    assert (
        ll.dataset(ours).to_table(filter=where).equals(lance.dataset(theirs).to_table(filter=where))
    )
