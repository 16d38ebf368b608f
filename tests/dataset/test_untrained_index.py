"""``create_scalar_index(..., train=False)``: an empty index, as pylance writes it.

The index covers no fragment and its files hold no rows; queries scan, and
``optimize_indices`` then indexes every fragment.  Each library builds the empty
index on its own copy of one dataset; their descriptions, statistics and file names
must agree, each must read (and optimize) the other's, and every query must return
the rows a plain scan returns.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from tests.storage import MEMORY, copy_tree

pytestmark = pytest.mark.filterwarnings("ignore:The .list_indices. method is deprecated")

CASES = {
    "BTREE": ("id", "id = 7"),
    "BITMAP": ("id", "id IN (3, 70)"),
    "ZONEMAP": ("id", "id > 90"),
    "BLOOMFILTER": ("id", "id = 55"),
    "LABEL_LIST": ("tags", "array_has_any(tags, [1])"),
    "NGRAM": ("text", "contains(text, 'bc7')"),
}


def _data() -> pa.Table:
    n = 100
    return pa.table(
        {
            "id": range(n),
            "tags": [[i % 3] for i in range(n)],
            "text": [f"abc{i}" for i in range(n)],
        }
    )


def _description(ds: Any) -> list[tuple[Any, ...]]:
    return [
        (i["name"], i["type"], i["fields"], i["version"], sorted(i["fragment_ids"]))
        for i in ds.list_indices()
    ]


def _statistics(ds: Any, name: str) -> dict[str, Any]:
    stats = dict(ds.stats.index_stats(name))
    stats.pop("updated_at_timestamp_ms")
    return stats


def _index_files(uri: Path) -> list[str]:
    root = uri / "_indices"
    return sorted(name for _, _, names in os.walk(root) for name in names)


@pytest.fixture
def copies(tmp_path: Path) -> tuple[Path, Path]:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ll.write_dataset(_data(), ours, max_rows_per_file=50)
    copy_tree(str(ours), str(theirs))
    return ours, theirs


@pytest.mark.parametrize("kind", list(CASES))
def test_an_empty_index_is_pylances(copies: tuple[Path, Path], kind: str) -> None:
    ours, theirs = copies
    column, where = CASES[kind]
    ll.dataset(ours).create_scalar_index(column, kind, train=False)
    lance.dataset(theirs).create_scalar_index(column, kind, train=False)
    name = f"{column}_idx"
    for uri in (ours, theirs):
        for lib in (ll, lance):
            ds = lib.dataset(uri)
            assert _description(ds) == _description(lance.dataset(theirs))
            assert _statistics(ds, name) == _statistics(lance.dataset(theirs), name)
            assert ds.to_table(filter=where).equals(
                ds.to_table(filter=where, use_scalar_index=False)
            )
    assert _description(lance.dataset(theirs))[0][4] == []
    assert _statistics(ll.dataset(ours), name)["index_type"] == "N/A"
    if not MEMORY:
        assert _index_files(ours) == _index_files(theirs)


@pytest.mark.parametrize("kind", list(CASES))
@pytest.mark.parametrize("optimizer", ["lancelet", "pylance"])
def test_optimizing_an_empty_index_covers_the_fragments(
    copies: tuple[Path, Path], kind: str, optimizer: str
) -> None:
    """Each library optimizes an empty index the other wrote, and its own."""
    ours, theirs = copies
    column, where = CASES[kind]
    ll.dataset(ours).create_scalar_index(column, kind, train=False)
    lance.dataset(theirs).create_scalar_index(column, kind, train=False)
    lib = ll if optimizer == "lancelet" else lance
    for uri in (ours, theirs):
        lib.dataset(uri).optimize.optimize_indices()
    name = f"{column}_idx"
    for uri in (ours, theirs):
        for reader in (ll, lance):
            ds = reader.dataset(uri)
            assert _description(ds)[0][4] == [0, 1]
            stats = _statistics(ds, name)
            assert stats["num_indexed_rows"] == 100 and stats["num_unindexed_rows"] == 0
            assert "ScalarIndexQuery" in ds.scanner(filter=where).explain_plan()
            assert ds.to_table(filter=where).equals(
                ds.to_table(filter=where, use_scalar_index=False)
            )


def test_train_takes_only_a_bool(tmp_path: Path) -> None:
    ll.write_dataset(_data(), tmp_path)
    with pytest.raises(TypeError, match="train"):
        ll.dataset(tmp_path).create_scalar_index("id", "BTREE", train="no")
