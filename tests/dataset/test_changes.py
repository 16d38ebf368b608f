"""What each version changed, read from datasets pylance (and lancelet) wrote: the
classification a change feed (Spark's streaming source) depends on."""

from __future__ import annotations

from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet
from lancelet.dataset.versions.changes import ChangeKind, version_change
from lancelet.errors import VersionNotFoundError
from lancelet.transaction.store import DatasetStore
from tests.storage import remove_file
from tests.versions import STORAGE_VERSION


def rows(start: int, stop: int) -> pa.Table:
    k = np.arange(start, stop, dtype=np.int64)
    return pa.table({"k": k, "v": k * 2})


def kinds(uri: str) -> list[tuple[ChangeKind, int]]:
    """Each version's kind and the number of rows it added, from version 1 on (ids
    reserved for a compaction left out)."""
    store = DatasetStore(uri)
    out = []
    for version in range(1, lance.dataset(uri).latest_version + 1):
        change = version_change(store, version)
        assert change.version == version
        if change.operation == "reserve_fragments":  # compaction may reserve ids first
            assert change.kind is ChangeKind.NONE
            continue
        out.append((change.kind, sum(f.num_rows for f in change.added)))
    return out


def test_every_kind_of_commit_pylance_makes(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ds = lance.write_dataset(rows(0, 100), uri, data_storage_version=STORAGE_VERSION)
    expected = [(ChangeKind.APPEND, 100)]
    ds = lance.write_dataset(rows(100, 130), uri, mode="append")
    expected.append((ChangeKind.APPEND, 30))
    ds.create_scalar_index("k", "BTREE")
    expected.append((ChangeKind.NONE, 0))
    ds.delete("k < 5")
    expected.append((ChangeKind.DELETE, 0))
    ds.update({"v": "v + 1"}, where="k = 50")
    expected.append((ChangeKind.CHANGE, 0))
    # A merge that only inserts adds rows and touches none.
    ds.merge_insert("k").when_not_matched_insert_all().execute(rows(130, 140))
    expected.append((ChangeKind.APPEND, 10))
    ds.merge_insert("k").when_matched_update_all().execute(rows(0, 10))
    expected.append((ChangeKind.CHANGE, 0))
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    expected.append((ChangeKind.REWRITE, 0))
    ds.update_config({"a": "b"})
    expected.append((ChangeKind.NONE, 0))
    ds.add_columns({"w": "k * 3"})
    expected.append((ChangeKind.SCHEMA, 0))
    ds.restore()  # the latest version again, as a new version
    expected.append((ChangeKind.CHANGE, 0))
    lance.write_dataset(rows(0, 3), uri, mode="overwrite")
    expected.append((ChangeKind.SCHEMA, 0))  # the overwrite dropped column w
    lance.write_dataset(rows(0, 4), uri, mode="overwrite")
    expected.append((ChangeKind.CHANGE, 0))
    lance.dataset(uri).delete("true")
    expected.append((ChangeKind.DELETE, 0))
    assert kinds(uri) == expected


def test_lancelet_commits(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ds = lancelet.write_dataset(rows(0, 50), uri, max_rows_per_file=20)
    lancelet.write_dataset(rows(50, 60), uri, mode="append")
    ds = lancelet.dataset(uri)
    ds.delete("k = 55")
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    assert kinds(uri) == [
        (ChangeKind.APPEND, 50),
        (ChangeKind.APPEND, 10),
        (ChangeKind.DELETE, 0),
        (ChangeKind.REWRITE, 0),
    ]
    change = version_change(DatasetStore(uri), 1)
    assert [f.id for f in change.added] == [0, 1, 2] and change.operation == "overwrite"


def test_a_cleaned_up_version_is_an_error(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(rows(0, 5), uri, data_storage_version=STORAGE_VERSION)
    lance.write_dataset(rows(5, 9), uri, mode="append")
    store = DatasetStore(uri)
    location = store.manifest_location(1)
    assert location is not None
    remove_file(Path(uri) / "_versions" / location.name)
    with pytest.raises(VersionNotFoundError, match="version 1 is gone"):
        version_change(DatasetStore(uri), 2)
