"""``LanceDataset.update``: rows rewritten by SQL expressions, checked against pyarrow
and against pylance doing the same update, and read back by pylance."""

from __future__ import annotations

import os
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelet as ll
from lancelet.errors import (
    FilterError,
    RetryableCommitConflictError,
    SchemaError,
    UnsupportedVersionError,
)
from tests.dataset.util import dataset_with_holes, keyed_table, snapshot, without_every_ninth
from tests.dataset.util import read_by_both as _both
from tests.storage import copy_tree, list_names
from tests.versions import STORAGE_VERSION

N = 3000


@pytest.fixture
def uri(tmp_path: Path) -> str:
    """Three fragments, with rows already deleted from each."""
    return dataset_with_holes(str(tmp_path / "ds"), N)


def _live() -> pa.Table:
    return without_every_ninth(keyed_table(0, N))


def _rewritten(before: pa.Table, mask: np.ndarray, changes: dict[str, pa.Array]) -> pa.Table:
    """What an update leaves: untouched rows in place, then the changed rows in scan order."""
    changed = before.filter(pa.array(mask))
    for name, values in changes.items():
        index = changed.schema.get_field_index(name)
        changed = changed.set_column(index, changed.schema.field(index), values)
    return pa.concat_tables([before.filter(pa.array(~mask)), changed])


def unreferenced_files(uri: str) -> set[str]:
    """Data and deletion files that no version (as pylance reads them) refers to."""
    used: set[str] = set()
    for version in lance.dataset(uri).versions():
        for fragment in lance.dataset(uri, version=version["version"]).get_fragments():
            used |= {os.path.join("data", f.path) for f in fragment.metadata.files}
            deletion = fragment.metadata.deletion_file
            if deletion is not None:
                used.add(deletion.path(fragment.fragment_id))
    on_disk = {
        os.path.join(folder, name)
        for folder in ("data", "_deletions")
        for name in list_names(os.path.join(uri, folder))
    }
    return on_disk - used


def test_update_where_across_fragments(uri: str) -> None:
    before = _live()
    k = before["k"].to_numpy()
    mask = (k >= 500) & (k < 2500)
    ds = ll.dataset(uri)
    result = ds.update({"v": "v * 2", "s": "'x'"}, where="k >= 500 AND k < 2500")
    assert result == {"num_rows_updated": int(mask.sum())}
    assert ds.version == 3
    changed = before.filter(pa.array(mask))
    want = _rewritten(
        before,
        mask,
        {"v": pc.multiply(changed["v"], 2), "s": pa.array(["x"] * len(changed))},
    )
    assert _both(uri).equals(want)
    txn = lance.dataset(uri).read_transaction(3).operation
    assert txn.removed_fragment_ids == [1]
    assert sorted(f.id for f in txn.updated_fragments) == [0, 2]
    assert txn.fields_for_preserving_frag_bitmap == [1, 2]  # the ids of v and s
    assert unreferenced_files(uri) == set()


def test_update_every_row(uri: str) -> None:
    ds = ll.dataset(uri)
    assert ds.update({"k": "k + 1000000"}) == {"num_rows_updated": _live().num_rows}
    before = _live()
    want = before.set_column(0, "k", pc.add(before["k"], 1_000_000))
    assert _both(uri).equals(want)
    fragments = lance.dataset(uri).get_fragments()
    assert [f.fragment_id for f in fragments] == [3]
    assert fragments[0].metadata.deletion_file is None


def test_where_matching_nothing_commits_an_empty_update(uri: str) -> None:
    # pylance commits a new version even then; so does lancelet.
    ds = ll.dataset(uri)
    assert ds.update({"v": "0.0"}, where="k < 0") == {"num_rows_updated": 0}
    assert ds.version == 3
    assert _both(uri).equals(_live())
    txn = lance.dataset(uri).read_transaction(3).operation
    assert type(txn).__name__ == "Update"
    assert txn.new_fragments == [] and txn.updated_fragments == []


def test_expressions_over_other_columns_and_nulls(uri: str) -> None:
    ds = ll.dataset(uri)
    ds.update({"v": "pt.x / 2 + k", "s": "upper(s) || '!'"}, where="v IS NULL")
    before = _live()
    mask = ~before["v"].is_valid().to_numpy(zero_copy_only=False)
    changed = before.filter(pa.array(mask))
    x = pc.struct_field(changed["pt"], "x")
    want = _rewritten(
        before,
        mask,
        {
            "v": pc.add(pc.divide(x, 2), pc.cast(changed["k"], pa.float64())),
            "s": pc.binary_join_element_wise(pc.utf8_upper(changed["s"]), "!", ""),
        },
    )
    assert _both(uri).equals(want)
    # Nulls into nullable columns.
    ds.update({"s": "NULL", "tags": "NULL"}, where="k = 1")
    txn = lance.dataset(uri).read_transaction(lance.dataset(uri).version).operation
    assert txn.fields_for_preserving_frag_bitmap == [2, 3, 4]  # s, tags and its item
    got = _both(uri).filter(pc.field("k") == 1)
    assert got["s"].null_count == 1 and got["tags"].null_count == 1


def test_every_expression_sees_the_row_before_the_update(uri: str) -> None:
    ll.dataset(uri).update({"k": "k + 1", "v": "k"}, where="k < 20")
    before = _live()
    mask = before["k"].to_numpy() < 20
    changed = before.filter(pa.array(mask))
    want = _rewritten(
        before,
        mask,
        {"k": pc.add(changed["k"], 1), "v": pc.cast(changed["k"], pa.float64())},
    )
    assert _both(uri).equals(want)


def _same_as_pylance(
    uri: str, tmp_path: Path, updates: dict[str, str], where: str | None
) -> pa.Table:
    """Run one update with pylance on a copy and with lancelet on ``uri``: same counts,
    same rows, each implementation reading both results alike."""
    copy = str(tmp_path / "copy")
    copy_tree(uri, copy)
    theirs = lance.dataset(copy).update(updates, where)
    ours = ll.dataset(uri).update(updates, where)
    assert ours == theirs
    a = lance.dataset(copy).read_transaction(lance.dataset(copy).version).operation
    b = lance.dataset(uri).read_transaction(lance.dataset(uri).version).operation
    # pylance lists the updated columns in hash-map order.
    assert sorted(a.fields_for_preserving_frag_bitmap) == b.fields_for_preserving_frag_bitmap
    assert sorted(a.removed_fragment_ids) == sorted(b.removed_fragment_ids)
    want = lance.dataset(copy).to_table()
    assert ll.dataset(copy).to_table().equals(want)
    assert _both(uri).equals(want)
    return want


def test_casts_like_pylance(tmp_path: Path) -> None:
    uri = str(tmp_path / "typed")
    table = pa.table(
        {
            "i": pa.array([1, 2, 3, 4], pa.int64()),
            "i8": pa.array([1, 2, 3, 4], pa.int8()),
            "f32": pa.array([0.5, 1.5, 2.5, None], pa.float32()),
            "s": ["a", "b", None, "d"],
        }
    )
    ll.write_dataset(table, uri, max_rows_per_file=2)
    # A float into an int column loses its fraction; text into numbers is parsed;
    # numbers into text are formatted; an int64 result fits back into int8.
    _same_as_pylance(uri, tmp_path / "a", {"i": "f32 * 3"}, "i > 1")
    # (No expression reads a column another one sets: pylance evaluates them one after
    # the other in hash-map order, so which value they see is not defined there.)
    _same_as_pylance(uri, tmp_path / "b", {"i": "'7'", "s": "i8 + 1"}, "i8 = 1")
    got = _same_as_pylance(uri, tmp_path / "c", {"i8": "i8 * 10", "f32": "i / 3"}, None)
    assert got["i8"].type == pa.int8()


def test_pylance_update_reads_the_same_in_lancelet(tmp_path: Path) -> None:
    uri = str(tmp_path / "theirs")
    lance.write_dataset(
        keyed_table(0, 500), uri, data_storage_version=STORAGE_VERSION, max_rows_per_file=200
    )
    lance.dataset(uri).update({"v": "v + 1", "s": "'p'"}, where="k % 3 = 0")
    want = lance.dataset(uri).to_table()
    assert ll.dataset(uri).to_table().equals(want)
    # ...and lancelet updates on top of pylance's update.
    ll.dataset(uri).update({"v": "0.0"}, where="k < 10")
    got = _both(uri)
    mask = want["k"].to_numpy() < 10
    assert got.equals(_rewritten(want, mask, {"v": pa.array([0.0] * int(mask.sum()))}))


@pytest.mark.parametrize(
    ("updates", "where", "error", "message"),
    [
        ({"nope": "1"}, None, SchemaError, "nope"),
        ({"k": "'abc'"}, None, SchemaError, "'k'"),
        ({"k": "nope + 1"}, None, FilterError, "nope"),
        ({"k": "k +"}, None, FilterError, "k +"),
        ({"v": "1.0"}, "nope > 1", FilterError, "nope"),
        ({}, None, ValueError, "no updates"),
    ],
)
def test_bad_updates_change_nothing(
    uri: str, updates: dict[str, str], where: str | None, error: type, message: str
) -> None:
    before = snapshot(uri)
    with pytest.raises(error, match=message):
        ll.dataset(uri).update(updates, where)
    assert snapshot(uri) == before


def test_values_that_do_not_fit_change_nothing(tmp_path: Path) -> None:
    uri = str(tmp_path / "strict")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("b", pa.int8())])
    # Enough rows for several batches: the bad value comes after files were written.
    k = np.arange(20_000)
    ll.write_dataset(pa.table({"k": k, "b": (k % 100).astype(np.int8)}, schema), uri)
    before = snapshot(uri)
    with pytest.raises(SchemaError, match="not nullable"):
        ll.dataset(uri).update({"k": "NULL"}, where="k > 15000")
    with pytest.raises(SchemaError, match="'b'"):
        ll.dataset(uri).update({"b": "300"})
    with pytest.raises(SchemaError, match="'b'"):
        ll.dataset(uri).update({"b": "'x'"}, where="k >= 19000")
    with pytest.raises(UnsupportedVersionError, match="2.1"):
        ll.dataset(uri).update({"b": "1"}, data_storage_version="2.1")
    assert snapshot(uri) == before


def test_stale_update_reruns_on_the_latest_version(uri: str) -> None:
    first, second = ll.dataset(uri), ll.dataset(uri)
    first.update({"v": "1.0"}, where="k < 100")
    # The same rows changed meanwhile: the plan is redone on version 3.
    assert second.update({"s": "'z'"}, where="k < 50") == {"num_rows_updated": 44}
    assert second.version == 4
    got = _both(uri).filter(pc.field("k") < 100).sort_by("k")
    k = got["k"].to_numpy()
    assert got["v"].to_pylist() == [1.0] * len(k)
    assert [s == "z" for s in got["s"].to_pylist()] == list(k < 50)
    assert unreferenced_files(uri) == set()


def test_conflict_without_retries_leaves_no_files(uri: str) -> None:
    first, second = ll.dataset(uri), ll.dataset(uri)
    first.update({"v": "1.0"}, where="k < 100")
    with pytest.raises(RetryableCommitConflictError):
        second.update({"s": "'z'"}, where="k < 50", conflict_retries=0)
    assert unreferenced_files(uri) == set()
    assert lance.dataset(uri).version == 3


def test_updates_of_different_rows_in_one_fragment_both_land(uri: str) -> None:
    first, second = ll.dataset(uri), ll.dataset(uri)
    first.update({"v": "1.0"}, where="k < 100")
    second.update({"v": "2.0"}, where="k >= 100 AND k < 200")
    got = _both(uri).filter(pc.field("k") < 200).sort_by("k")
    assert got["v"].to_pylist() == [1.0 if k < 100 else 2.0 for k in got["k"].to_pylist()]
