"""The change feed as a job reads it (``lancelet.dataset.engine``): a commit's size
from metadata, the commit cut into shares for several tasks, and a feed of no
columns (rows still counted)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lancelet
from lancelet.dataset.engine import (
    Location,
    change_feed_spec,
    commit_change_count,
    commit_changes,
)
from lancelet.errors import ArgumentError
from tests.versions import STORAGE_VERSION


def rows(start: int, stop: int, tag: int = 0) -> pa.Table:
    k = np.arange(start, stop, dtype=np.int64)
    return pa.table({"k": k, "v": k * 10 + tag})


@pytest.fixture
def uri(tmp_path: Path) -> str:
    path = str(tmp_path / "ds")
    lancelet.write_dataset(
        rows(0, 30),
        path,
        max_rows_per_file=10,
        enable_stable_row_ids=True,
        data_storage_version=STORAGE_VERSION,
    )
    dataset = lancelet.dataset(path)
    dataset.delete("k < 4")  # version 2
    upsert = dataset.merge_insert("k").when_matched_update_all().when_not_matched_insert_all()
    upsert.execute(rows(25, 40, tag=1))  # version 3: 5 updated, 10 inserted
    return path


def _rows(batches: object) -> Counter[tuple[object, ...]]:
    return Counter(tuple(r.values()) for b in batches for r in b.to_pylist())  # type: ignore[attr-defined]


def test_shares_of_a_commit_are_the_commit(uri: str) -> None:
    spec = change_feed_spec(Location(uri), 3, batch_size=4)
    for version, size in ((1, 30), (2, 4), (3, 20)):
        whole = _rows(commit_changes(spec, version))
        assert sum(whole.values()) == size == commit_change_count(Location(uri), version)
        for parts in (2, 3, 7, 50):
            shares = [_rows(commit_changes(spec, version, (k, parts))) for k in range(parts)]
            assert sum(shares, Counter()) == whole, (version, parts)
    with pytest.raises(ArgumentError):
        list(commit_changes(spec, 3, (2, 2)))


def test_no_columns_still_counts_rows(uri: str) -> None:
    table = lancelet.dataset(uri).changes(1, columns=[]).read_all()
    assert table.column_names == ["_change_type", "_commit_version", "_commit_timestamp"]
    assert Counter(
        zip(table["_commit_version"].to_pylist(), table["_change_type"].to_pylist(), strict=True)
    ) == {
        (1, "insert"): 30,
        (2, "delete"): 4,
        (3, "update_preimage"): 5,
        (3, "update_postimage"): 5,
        (3, "insert"): 10,
    }
