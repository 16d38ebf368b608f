"""Stable row ids: read from pylance's datasets, written for pylance to read, kept by
rows as they move (update, merge_insert, compaction), and taken by id."""

from __future__ import annotations

import os
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import ArgumentError, CorruptDatasetError
from lancelet.table.manifest_file import encode_manifest
from lancelet.transaction.store import DatasetStore
from tests.storage import list_names, write_file
from tests.versions import STORAGE_VERSION


def _table(start: int, stop: int) -> pa.Table:
    k = np.arange(start, stop)
    return pa.table({"k": k, "v": k * 10, "s": [f"s{i}" for i in k]})


def _ids(ds: object, library: object) -> dict[int, tuple[int, int]]:
    """key -> (row id, row address), as one library reads them."""
    table = ds.to_table(columns=["k"], with_row_id=True, with_row_address=True)  # type: ignore[attr-defined]
    return {
        k: (i, a)
        for k, i, a in zip(
            table["k"].to_pylist(),
            table["_rowid"].to_pylist(),
            table["_rowaddr"].to_pylist(),
            strict=True,
        )
    }


def _pylance_history(uri: str) -> None:
    lance.write_dataset(
        _table(0, 20),
        uri,
        enable_stable_row_ids=True,
        max_rows_per_file=8,
        data_storage_version=STORAGE_VERSION,
    )
    lance.write_dataset(_table(20, 30), uri, mode="append")
    ds = lance.dataset(uri)
    ds.delete("k % 7 = 3")
    ds.update({"v": "v + 1"}, where="k in (1, 12, 25)")
    ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(
        _table(28, 33)
    )


def test_pylance_stable_row_ids_read_as_pylance_reads_them(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _pylance_history(uri)
    ours, theirs = ll.dataset(uri), lance.dataset(uri)
    assert ours.has_stable_row_ids and theirs.has_stable_row_ids
    expected = _ids(theirs, lance)
    assert _ids(ours, ll) == expected
    # Ids and addresses differ once rows moved: the bug this guards against.
    assert any(i != a for i, a in expected.values())
    for where in ("_rowid = 12", "_rowid >= 25", "_rowaddr < 8"):
        assert (
            ours.to_table(filter=where)
            .sort_by("k")
            .equals(theirs.to_table(filter=where).sort_by("k"))
        ), where
    wanted = [expected[k][0] for k in (32, 1, 12, 0)] + [3, 10**9]  # 3: deleted
    assert ours._take_rows(wanted).equals(theirs._take_rows(wanted))
    assert ours._take_rows(wanted, ignore_deletions=True).equals(
        theirs._take_rows(wanted, ignore_deletions=True)
    )


def test_lancelet_keeps_ids_as_rows_move_and_pylance_agrees(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ds = ll.write_dataset(_table(0, 20), uri, enable_stable_row_ids=True, max_rows_per_file=8)
    ds = ll.write_dataset(_table(20, 30), uri, mode="append")
    first = {k: i for k, (i, _) in _ids(ds, ll).items()}
    assert sorted(first.values()) == list(range(30))  # handed out in order, once each
    ds.delete("k % 7 = 3")
    ds.update({"v": "v + 1"}, where="k in (1, 12, 25)")
    ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(
        _table(28, 33)
    )
    ds = ll.dataset(uri)
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    ds = ll.dataset(uri)
    now = _ids(ds, ll)
    # Every surviving row kept its id; inserted rows got fresh, distinct ones.
    survivors = [k for k in range(30) if k % 7 != 3]
    assert {k: now[k][0] for k in survivors} == {k: first[k] for k in survivors}
    fresh = [now[k][0] for k in (30, 31, 32)]
    assert len(set(fresh)) == 3 and min(fresh) >= 30
    assert lance.dataset(uri).has_stable_row_ids
    assert _ids(lance.dataset(uri), lance) == now
    assert ds._take_rows([first[12], first[3]]).equals(
        lance.dataset(uri)._take_rows([first[12], first[3]])
    )
    # pylance keeps going on lancelet's dataset, and the other way round.
    lance.write_dataset(_table(40, 42), uri, mode="append")
    assert _ids(ll.dataset(uri), ll) == _ids(lance.dataset(uri), lance)
    assert len({i for i, _ in _ids(ll.dataset(uri), ll).values()}) == ds.count_rows() + 2


def test_concurrent_appends_get_distinct_ids(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(_table(0, 5), uri, enable_stable_row_ids=True)
    from lancelet.dataset.write.data_files import write_fragment_files
    from lancelet.transaction import operations as ops
    from lancelet.transaction.commit import commit_transaction

    store = DatasetStore(uri)
    manifest = store.read_manifest(1)
    txns = []
    for start in (5, 10):
        fragments = write_fragment_files(
            store,
            _table(start, start + 5).to_reader(),
            manifest.schema,
            manifest.data_storage_version,
        )
        txns.append(ops.Transaction(1, ops.Append(tuple(fragments))))
    for txn in txns:  # the second one rebases onto the first
        commit_transaction(store, txn)
    ids = ll.dataset(uri).to_table(with_row_id=True)["_rowid"].to_pylist()
    assert sorted(ids) == list(range(15))
    assert store.read_manifest(3).next_row_id == 15


def test_restore_never_hands_out_ids_again(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ds = ll.write_dataset(_table(0, 5), uri, enable_stable_row_ids=True)
    ll.write_dataset(_table(5, 10), uri, mode="append")
    ds = ll.dataset(uri, version=1)
    ds.restore()
    ds = ll.write_dataset(_table(10, 12), uri, mode="append")
    ids = ds.to_table(with_row_id=True)["_rowid"].to_pylist()
    assert ids == [0, 1, 2, 3, 4, 10, 11]


def test_the_flag_only_applies_when_creating(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(_table(0, 5), uri)
    before = sorted(list_names(os.path.join(uri, "_versions")))
    with pytest.raises(ArgumentError, match="enable_stable_row_ids"):
        ll.write_dataset(_table(0, 5), uri, mode="overwrite", enable_stable_row_ids=True)
    assert sorted(list_names(os.path.join(uri, "_versions"))) == before
    # An overwrite of a dataset with stable row ids keeps them, as pylance's does.
    other = str(tmp_path / "other")
    ll.write_dataset(_table(0, 2), other, enable_stable_row_ids=True)
    ds = ll.write_dataset(_table(0, 2), other, mode="overwrite")
    assert ds.has_stable_row_ids
    assert ds.to_table(with_row_id=True)["_rowid"].to_pylist() == [2, 3]


def test_a_fragment_without_ids_in_a_stable_dataset_is_damage(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(_table(0, 5), uri, enable_stable_row_ids=True)
    store = DatasetStore(uri)
    manifest = store.read_manifest(1)
    from dataclasses import replace

    bare = tuple(replace(f, row_id_meta=None) for f in manifest.fragments)
    location = store.latest_location()
    assert location is not None
    write_file(
        store.path("_versions", location.name), encode_manifest(replace(manifest, fragments=bare))
    )
    with pytest.raises(CorruptDatasetError, match="row ids"):
        ll.dataset(uri).to_table()


def test_take_by_address_without_stable_ids(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(0, 10), uri, max_rows_per_file=4)
    lance.dataset(uri).delete("k = 1")
    ours, theirs = ll.dataset(uri), lance.dataset(uri)
    wanted = [(1 << 32) + 2, 1, 0, (2 << 32) + 1]
    assert ours._take_rows(wanted).equals(theirs._take_rows(wanted))
    assert ours._take_rows(wanted, ignore_deletions=True).equals(
        theirs._take_rows(wanted, ignore_deletions=True)
    )
    for bad in ((9 << 32), (1 << 32) + 4):  # no such fragment; past its rows
        with pytest.raises(ArgumentError):
            ours._take_rows([bad])
        with pytest.raises(OSError):
            theirs._take_rows([bad])
