"""Legacy (0.1) datasets pylance wrote: read as pylance reads them, and written to (data,
deletes, schema and metadata changes) as pylance writes to them (see
test_legacy_writes.py for datasets lancelet writes)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import UnsupportedVersionError
from tests.dataset.util import keyed_table, snapshot
from tests.file.legacy import FIXTURE
from tests.file.test_v0_1 import fixture_rows
from tests.storage import copy_tree, list_names


@pytest.fixture
def legacy(tmp_path: Path) -> str:
    """keyed_table(0, 2500) in three legacy files of 300-row batches; pylance then
    deletes every seventh row and appends a fourth file."""
    uri = str(tmp_path / "legacy")
    lance.write_dataset(
        keyed_table(0, 2000),
        uri,
        data_storage_version="legacy",
        max_rows_per_file=900,
        max_rows_per_group=300,
    )
    lance.dataset(uri).delete("k % 7 = 0")
    lance.write_dataset(keyed_table(2000, 2500), uri, mode="append", max_rows_per_group=300)
    return uri


def test_reads_match_pylance(legacy: str) -> None:
    theirs, ours = lance.dataset(legacy), ll.dataset(legacy)
    assert ours.data_storage_version == theirs.data_storage_version == "0.1"
    assert len(ours.get_fragments()) == 4
    assert ours.to_table().equals(theirs.to_table())
    assert ours.count_rows() == theirs.count_rows() == 2500 - 286
    for where in ["k > 1500", "s IS NULL", "pt.y % 3 = 1 AND v > 0"]:
        assert ours.count_rows(where) == theirs.count_rows(where), where
        want = theirs.to_table(filter=where, columns=["k", "tags", "pt"])
        assert ours.to_table(filter=where, columns=["k", "tags", "pt"]).equals(want), where
    rows = [2213, 0, 5, 1999, 1000, 5]
    assert ours.take(rows).equals(theirs.take(rows))
    got = ours.to_table(columns=["k"], with_row_id=True, offset=850, limit=100)
    assert got.equals(theirs.to_table(columns=["k"], with_row_id=True, offset=850, limit=100))


def test_the_checked_in_fixture_dataset() -> None:
    ds = ll.dataset(FIXTURE)
    assert ds.version == 2 and ds.data_storage_version == "0.1"
    kept = [r for r in range(40) if r % 10 != 9]
    assert ds.to_table().to_pylist() == fixture_rows(kept)
    assert ds.count_rows() == 36
    assert ds.count_rows("b") == sum(1 for r in kept if r % 3 == 0)
    assert ds.to_table(filter="i > 50", columns=["i", "d"]).to_pylist() == [
        {"i": 3 * r - 7, "d": ["lo", "mid", "hi"][r % 3]} for r in kept if 3 * r - 7 > 50
    ]
    # Dataset row offsets count live rows: offset 9 is row 10 (row 9 is deleted).
    assert ds.take([9, 0, 35]).to_pylist() == fixture_rows([10, 0, 38])
    before = ll.dataset(FIXTURE, version=1)
    assert before.to_table().to_pylist() == fixture_rows(range(40))


def test_delete_and_metadata_changes(legacy: str) -> None:
    """They write a deletion file and a manifest, both of which pylance reads."""
    data = list_names(Path(legacy) / "data")
    ours = ll.dataset(legacy)
    # Multiples of 5 less those of 35 below 2000, which pylance deleted already.
    assert ours.delete("k % 5 = 0") == {"num_deleted_rows": 500 - 58}
    ours = ll.dataset(legacy)
    ours.update_config({"owner": "tests"})
    ours.drop_columns(["v"])
    ours.alter_columns({"path": "s", "name": "label"})
    theirs = lance.dataset(legacy)
    assert theirs.version == ll.dataset(legacy).version == 7
    assert theirs.data_storage_version == "0.1"
    assert theirs.schema.names == ["k", "label", "tags", "pt"]
    want = pa.concat_tables([keyed_table(0, 2000), keyed_table(2000, 2500)]).drop_columns(["v"])
    want = want.rename_columns(["k", "label", "tags", "pt"])
    k = want["k"].to_numpy()
    want = want.filter(pa.array((k % 5 != 0) & ((k % 7 != 0) | (k >= 2000))))
    assert theirs.to_table().equals(want)
    assert ll.dataset(legacy).to_table().equals(want)
    assert list_names(Path(legacy) / "data") == data


@pytest.fixture
def fixture_copy(tmp_path: Path) -> str:
    uri = tmp_path / "fixture"
    copy_tree(FIXTURE, uri)
    return str(uri)


def test_commits_keep_the_manifests_dictionaries(fixture_copy: str) -> None:
    """pylance keeps a legacy dataset's dictionaries in its manifest file, and reads
    them from there: lancelet's manifests keep them too, so pylance reads every version
    lancelet commits.  (pylance's own restore of such a dataset fails, "missing
    dictionary values"; lancelet's keeps them.)"""
    ds = ll.dataset(fixture_copy)
    ds.delete("i > 50")
    ll.dataset(fixture_copy).update_config({"a": "b"})
    ll.dataset(fixture_copy).drop_columns(["f"])
    ll.dataset(fixture_copy).alter_columns({"path": "s", "name": "t"})
    ll.dataset(fixture_copy).update({"b": "NOT b"}, where="i < 20")
    ll.dataset(fixture_copy, version=3).restore()
    for version in range(1, 9):
        theirs = lance.dataset(fixture_copy, version=version)
        assert ll.dataset(fixture_copy, version=version).to_table().equals(theirs.to_table())
    rows = lance.dataset(fixture_copy, version=7).to_table(columns=["i", "d"]).to_pylist()
    kept = [r for r in range(40) if r % 10 != 9 and 3 * r - 7 <= 50]
    assert sorted(rows, key=lambda row: row["i"]) == [
        {"i": 3 * r - 7, "d": ["lo", "mid", "hi"][r % 3]} for r in kept
    ]
    assert lance.dataset(fixture_copy).version == 8


def test_data_writes_add_legacy_files(legacy: str) -> None:
    """Every write that adds data files adds legacy ones, which pylance reads as lancelet
    does; files of another format are refused, as pylance refuses them."""
    ds = ll.dataset(legacy)
    more = keyed_table(5000, 5010)
    before = snapshot(legacy)
    with pytest.raises(UnsupportedVersionError, match=r"0\.1"):
        ll.write_dataset(more, legacy, mode="append", data_storage_version="2.0")
    assert snapshot(legacy) == before
    writes: list[Callable[[], Any]] = [
        lambda: ll.write_dataset(more, legacy, mode="append"),
        lambda: ds.update({"k": "k + 1"}, where="k < 10"),
        lambda: ll.dataset(legacy).merge_insert("k").when_not_matched_insert_all().execute(more),
        lambda: ll.dataset(legacy).add_columns({"k2": "k * 2"}),
        lambda: ll.dataset(legacy).optimize.compact_files(),
    ]
    for write in writes:
        write()
        theirs = lance.dataset(legacy)
        assert theirs.data_storage_version == "0.1"
        assert ll.dataset(legacy).to_table().equals(theirs.to_table())
    pairs = {(f.file_major_version, f.file_minor_version)
             for g in lance.dataset(legacy).get_fragments() for f in g.metadata.files}  # fmt: skip
    assert pairs == {(0, 2)}
    # Naming another version replaces the dataset, as pylance's overwrite does.
    ll.write_dataset(more, legacy, mode="overwrite", data_storage_version="2.0")
    theirs = lance.dataset(legacy)
    assert theirs.data_storage_version == "2.0"
    assert theirs.to_table().equals(more)
    assert lance.dataset(legacy, version=3).count_rows() == 2500 - 286


def test_takes_spread_over_batches(legacy: str) -> None:
    ours, theirs = ll.dataset(legacy), lance.dataset(legacy)
    rows = np.random.default_rng(3).choice(theirs.count_rows(), 300, replace=False)
    assert ours.take(rows).equals(theirs.take(rows))
    assert ours.take(rows, columns=["tags"]).equals(theirs.take(rows, columns=["tags"]))


def test_columns_added_by_pylance(tmp_path: Path) -> None:
    """Columns pylance adds to a legacy dataset live in files of their own, whose page
    tables start at the new fields' ids; a dropped column's file still holds it."""
    uri = str(tmp_path / "grown")
    table = pa.table({"a": pa.array(range(100)), "s": [str(i) for i in range(100)]})
    lance.write_dataset(table, uri, data_storage_version="legacy", max_rows_per_file=60)
    lance.dataset(uri).add_columns({"b": "a * 2", "c": "concat(s, 'x')"})
    extra = pa.table({"a": pa.array(range(100)), "z": pa.array(range(100), pa.float32())})
    lance.dataset(uri).merge(extra, "a")
    lance.dataset(uri).drop_columns(["s"])
    theirs, ours = lance.dataset(uri), ll.dataset(uri)
    assert [len(f.metadata.files) for f in theirs.get_fragments()] == [3, 3]
    assert ours.to_table().equals(theirs.to_table())
    assert ours.to_table().to_pylist()[97] == {"a": 97, "b": 194, "c": "97x", "z": 97.0}
    assert ours.take([99, 3, 60]).equals(theirs.take([99, 3, 60]))
