"""``LanceDataset.merge_insert``: upserts, find-or-create and delete-by-source, checked
against pandas joins and against pylance running the same merge; concurrent inserts of
one new key."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelet as ll
from lancelet.dataset.mutate import merge_insert as mi
from lancelet.dataset.mutate.update import discard_rewrite
from lancelet.errors import DatasetError, FilterError, RetryableCommitConflictError, SchemaError
from tests.dataset.test_update import unreferenced_files
from tests.dataset.util import dataset_with_holes, keyed_table, snapshot, without_every_ninth
from tests.dataset.util import read_by_both as _both
from tests.storage import copy_tree
from tests.versions import STORAGE_VERSION

N = 3000
Merge = Callable[[Any], Any]  # a builder -> the configured builder


@pytest.fixture
def uri(tmp_path: Path) -> str:
    """Three fragments, with rows already deleted from each."""
    return dataset_with_holes(str(tmp_path / "ds"), N)


def _live() -> pa.Table:
    return without_every_ninth(keyed_table(0, N))


def _has_key_in(rows: pa.Table, other: pa.Table, on: list[str]) -> np.ndarray:
    """Per row of ``rows``: does ``other`` hold its key?  (pandas, not Arrow's join.)"""
    keys = other.select(on).to_pandas().drop_duplicates()
    joined = rows.select(on).to_pandas().merge(keys, on=on, how="left", indicator=True)
    return np.asarray(joined["_merge"] == "both")


def _sorted(table: pa.Table, on: list[str]) -> pa.Table:
    return table.sort_by([(name, "ascending") for name in on])


def _same_as_pylance(uri: str, tmp_path: Path, configure: Merge, source: pa.Table) -> pa.Table:
    """The same merge by pylance on a copy and by lancelet on ``uri``: equal counts, the
    same rows (merge_insert promises no order), each result read alike by both."""
    copy = str(tmp_path / "pylance-copy")
    copy_tree(uri, copy)
    theirs = configure(lance.dataset(copy).merge_insert("k")).execute(source)
    ours = configure(ll.dataset(uri).merge_insert("k")).execute(source)
    assert ours == theirs
    _same_transaction(lance.dataset(copy), lance.dataset(uri))
    want = lance.dataset(copy).to_table()
    assert ll.dataset(copy).to_table().equals(want)
    got = _both(uri)
    order = ["k", "v"]  # v too: a new key may come twice
    assert _sorted(got, order).equals(_sorted(want, order))
    return got


def _same_transaction(theirs: Any, ours: Any) -> None:
    """Both committed an Update that removed and changed the same fragments."""
    a = theirs.read_transaction(theirs.version).operation
    b = ours.read_transaction(ours.version).operation
    assert type(a).__name__ == type(b).__name__ == "Update"
    assert sorted(a.removed_fragment_ids) == sorted(b.removed_fragment_ids)
    assert sorted(f.id for f in a.updated_fragments) == sorted(f.id for f in b.updated_fragments)
    assert a.fields_for_preserving_frag_bitmap == b.fields_for_preserving_frag_bitmap


def _changed_values(start: int, stop: int) -> pa.Table:
    """Rows keyed like keyed_table's but with other values."""
    return keyed_table(start, stop, seed=7)


def test_upsert(uri: str, tmp_path: Path) -> None:
    source = _changed_values(2500, 3500)  # half existing keys, half new
    target = _live()
    matched = _has_key_in(target, source, ["k"])
    got = _same_as_pylance(
        uri,
        tmp_path,
        lambda b: b.when_matched_update_all().when_not_matched_insert_all(),
        source,
    )
    want = pa.concat_tables([target.filter(pa.array(~matched)), source])
    assert _sorted(got, ["k"]).equals(_sorted(want, ["k"]))
    ds = lance.dataset(uri)
    # Every field id, nested ones included.
    txn = ds.read_transaction(ds.version).operation
    assert txn.fields_for_preserving_frag_bitmap == list(range(8))
    assert unreferenced_files(uri) == set()


def test_counts_and_row_order(uri: str) -> None:
    source = _changed_values(2995, 3005)
    ds = ll.dataset(uri)
    result = (
        ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(source)
    )
    matched = int(_has_key_in(source, _live(), ["k"]).sum())
    assert result == {
        "num_inserted_rows": source.num_rows - matched,
        "num_updated_rows": matched,
        "num_deleted_rows": 0,
    }
    assert ds.version == 3
    # Untouched rows keep their place; the rewritten and new rows follow.
    got = _both(uri)
    assert got.slice(0, got.num_rows - 10).equals(_live().filter(pc.field("k") < 2995))
    assert _sorted(got.slice(got.num_rows - 10), ["k"]).equals(source)


def test_insert_if_absent(uri: str, tmp_path: Path) -> None:
    source = _changed_values(2900, 3100)
    got = _same_as_pylance(uri, tmp_path, lambda b: b.when_not_matched_insert_all(), source)
    target = _live()
    new = source.filter(pa.array(~_has_key_in(source, target, ["k"])))
    assert _sorted(got, ["k"]).equals(_sorted(pa.concat_tables([target, new]), ["k"]))


def test_duplicate_new_keys_from_pandas(tmp_path: Path) -> None:
    # Two source rows with one new key are both inserted, as pylance does: only a
    # target row matched twice is ambiguous.
    uri = str(tmp_path / "ds")
    ll.write_dataset(pa.table({"k": [1, 2, 3], "v": [1.0, 2.0, 3.0]}), uri)
    frame = pd.DataFrame({"k": [3, 4, 4, 5], "v": [30.0, 40.0, 41.0, 50.0]})
    got = _same_as_pylance(
        uri,
        tmp_path,
        lambda b: b.when_matched_update_all().when_not_matched_insert_all(),
        frame,
    )
    want = pa.table({"k": [1, 2, 3, 4, 4, 5], "v": [1.0, 2.0, 30.0, 40.0, 41.0, 50.0]})
    assert got.sort_by([("k", "ascending"), ("v", "ascending")]).equals(want)


def test_replace_everything_by_source(uri: str, tmp_path: Path) -> None:
    source = _changed_values(1000, 1200)
    got = _same_as_pylance(
        uri,
        tmp_path,
        lambda b: (
            b.when_matched_update_all()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete()
        ),
        source,
    )
    assert _sorted(got, ["k"]).equals(source)


def test_delete_by_source_with_a_filter(uri: str, tmp_path: Path) -> None:
    source = _changed_values(0, 500)
    got = _same_as_pylance(
        uri,
        tmp_path,
        lambda b: b.when_matched_update_all().when_not_matched_by_source_delete("k < 2000"),
        source,
    )
    target = _live()
    matched = _has_key_in(target, source, ["k"])
    k = target["k"].to_numpy()
    kept = target.filter(pa.array(~matched & (k >= 2000)))
    updated = source.filter(pa.array(_has_key_in(source, target, ["k"])))
    assert _sorted(got, ["k"]).equals(_sorted(pa.concat_tables([kept, updated]), ["k"]))


def test_conditional_update(uri: str, tmp_path: Path) -> None:
    source = _changed_values(0, 1000)
    got = _same_as_pylance(
        uri,
        tmp_path,
        lambda b: b.when_matched_update_all("source.v > target.v AND target.pt.y > 100"),
        source,
    )
    # pandas: the pairs where the condition holds (a null comparison does not).
    target = _live()
    pairs = target.to_pandas().merge(source.to_pandas(), on="k", suffixes=("_t", "_s"))
    y = pairs["pt_t"].map(lambda p: p["y"])
    chosen = set(pairs["k"][(pairs["v_s"] > pairs["v_t"]) & (y > 100)])
    assert 0 < len(chosen) < len(pairs)
    in_source = np.isin(source["k"].to_numpy(), list(chosen))
    untouched = ~np.isin(target["k"].to_numpy(), list(chosen))
    want = pa.concat_tables(
        [target.filter(pa.array(untouched)), source.filter(pa.array(in_source))]
    )
    assert _sorted(got, ["k"]).equals(_sorted(want, ["k"]))


def test_composite_keys(tmp_path: Path) -> None:
    uri = str(tmp_path / "pairs")
    target = pa.table(
        {"a": [1, 1, 2, 2, None], "b": ["x", "y", "x", "y", "x"], "n": [1, 2, 3, 4, 5]}
    )
    ll.write_dataset(target, uri, max_rows_per_file=2)
    source = pa.table({"a": [1, 2, 3, None], "b": ["y", "z", "x", "x"], "n": [20, 30, 40, 50]})
    result = (
        ll.dataset(uri)
        .merge_insert(["a", "b"])
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(source)
    )
    # A null key matches nothing, as in SQL: (None, "x") is inserted a second time.
    assert result == {"num_inserted_rows": 3, "num_updated_rows": 1, "num_deleted_rows": 0}
    got = _both(uri)
    want = pd.DataFrame(
        {
            "a": [1, 2, 2, None, 1, 2, 3, None],
            "b": ["x", "x", "y", "x", "y", "z", "x", "x"],
            "n": [1, 3, 4, 5, 20, 30, 40, 50],
        }
    )
    assert got.to_pandas().sort_values("n").reset_index(drop=True).equals(want)


def test_source_with_some_columns(uri: str, tmp_path: Path) -> None:
    # As in pylance: updated rows keep the omitted columns' values, new rows get nulls
    # (not for the struct: file format 2.0 cannot store a null struct row).
    source = _changed_values(2990, 3010).select(["s", "k", "pt"])
    got = _same_as_pylance(
        uri, tmp_path, lambda b: b.when_matched_update_all().when_not_matched_insert_all(), source
    )
    new = got.filter(pc.field("k") >= 3000)
    assert new["v"].null_count == new.num_rows == 10
    old = got.filter((pc.field("k") >= 2990) & (pc.field("k") < 3000)).sort_by("k")
    assert old["s"].equals(source.filter(pc.field("k") < 3000)["s"])
    kept = _live().filter((pc.field("k") >= 2990) & (pc.field("k") < 3000))
    assert old.filter(pc.field("k") != 2997)["v"].equals(kept["v"])


def test_matched_delete_and_fail(uri: str) -> None:
    source = _changed_values(0, 100)
    ds = ll.dataset(uri)
    before = snapshot(uri)
    with pytest.raises(DatasetError, match="match existing rows"):
        ds.merge_insert("k").when_matched_fail().when_not_matched_insert_all().execute(source)
    assert snapshot(uri) == before
    result = ds.merge_insert("k").when_matched_delete().execute(source)
    assert result["num_deleted_rows"] == 100 - 12
    assert _both(uri).equals(_live().filter(pc.field("k") >= 100))


def test_pylance_merge_insert_reads_the_same_in_lancelet(tmp_path: Path) -> None:
    uri = str(tmp_path / "theirs")
    lance.write_dataset(
        keyed_table(0, 500), uri, data_storage_version=STORAGE_VERSION, max_rows_per_file=200
    )
    source = _changed_values(400, 600)
    lance.dataset(uri).merge_insert(
        "k"
    ).when_matched_update_all().when_not_matched_insert_all().execute(source)
    want = lance.dataset(uri).to_table()
    assert ll.dataset(uri).to_table().equals(want)
    # ...and lancelet merges on top of pylance's merge.
    ll.dataset(uri).merge_insert("k").when_not_matched_by_source_delete("k >= 550").execute(
        source.slice(0, 0)
    )
    assert _both(uri).equals(want.filter(pc.field("k") < 550))


# -- bad input ----------------------------------------------------------------------------


def _upsert(uri: str, source: Any, on: str | list[str] = "k") -> Any:
    builder = ll.dataset(uri).merge_insert(on)
    return builder.when_matched_update_all().when_not_matched_insert_all().execute(source)


@pytest.mark.parametrize(
    ("make_source", "on", "error", "message"),
    [
        # Two source rows for one target row: which one wins is undefined.
        (lambda t: pa.concat_tables([t, t.slice(0, 1)]), "k", DatasetError, "same target row"),
        (lambda t: t.drop_columns(["k"]), "k", SchemaError, "'k'"),
        (lambda t: t, "nope", SchemaError, "nope"),
        (lambda t: t, [], ValueError, "key columns"),
        (lambda t: t.append_column("extra", pa.array([1] * t.num_rows)), "k", SchemaError, "extra"),
        (lambda t: t.set_column(0, "k", pc.cast(t["k"], pa.int32())), "k", SchemaError, "int32"),
    ],
)
def test_bad_sources_change_nothing(
    uri: str, make_source: Merge, on: str | list[str], error: type, message: str
) -> None:
    before = snapshot(uri)
    with pytest.raises(error, match=message):
        _upsert(uri, make_source(_changed_values(10, 20)), on)
    assert snapshot(uri) == before


def test_bad_conditions_and_empty_merges_change_nothing(uri: str) -> None:
    before = snapshot(uri)
    source = _changed_values(10, 20)
    builder = ll.dataset(uri).merge_insert("k")
    with pytest.raises(FilterError, match="'v'"):  # unqualified: target's or source's?
        builder.when_matched_update_all("v > 1").execute(source)
    with pytest.raises(FilterError, match="nope"):
        builder.when_matched_update_all("source.nope > 1").execute(source)
    with pytest.raises(FilterError, match="nope"):
        builder.when_not_matched_by_source_delete("nope > 1").execute(source)
    with pytest.raises(ValueError, match="changes nothing"):
        ll.dataset(uri).merge_insert("k").execute(source)
    assert snapshot(uri) == before


def test_null_in_a_non_nullable_column_changes_nothing(tmp_path: Path) -> None:
    uri = str(tmp_path / "strict")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("x", pa.int64())])
    ll.write_dataset(pa.table({"k": [1, 2], "x": [1, 2]}, schema), uri)
    before = snapshot(uri)
    with pytest.raises(SchemaError, match="'k'"):
        _upsert(uri, pa.table({"k": pa.array([1, None], pa.int64()), "x": [5, 6]}))
    with pytest.raises(SchemaError, match="'k'"):  # k omitted for an inserted row
        _upsert(uri, pa.table({"x": [5]}), on="x")
    assert snapshot(uri) == before


# -- concurrency ----------------------------------------------------------------------------


def test_concurrent_inserts_of_one_new_key(uri: str) -> None:
    """Two upserts planned on one version both insert key 5000: the second to commit
    must not add it again; it re-runs on the new version, where 5000 is an update."""
    second = ll.dataset(uri)
    first_rows, second_rows = _changed_values(5000, 5002), keyed_table(4999, 5001, seed=3)
    spec = mi.MergeSpec(("k",), matched="update", insert=True)
    planned = mi.plan_merge_insert(second._store, second._manifest, second_rows, spec)
    _upsert(uri, first_rows)  # the first commits
    with pytest.raises(RetryableCommitConflictError, match="inserted keys"):
        second._commit(planned.operation)
    discard_rewrite(second._store, second._manifest, planned.operation)
    # Through the API (still on the old version) the retry makes 5000 an update.
    builder = second.merge_insert("k").when_matched_update_all().when_not_matched_insert_all()
    assert builder.execute(second_rows) == {
        "num_inserted_rows": 1,
        "num_updated_rows": 1,
        "num_deleted_rows": 0,
    }
    assert second.version == 4
    assert unreferenced_files(uri) == set()
    got = _both(uri).filter(pc.field("k") >= 4999).sort_by("k")
    assert got["k"].to_pylist() == [4999, 5000, 5001]
    assert got.slice(0, 2).equals(second_rows)


def test_execute_reruns_when_a_concurrent_commit_inserted_its_key(
    uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = mi.plan_merge_insert
    other = _changed_values(5000, 5003)
    interleaved: list[int] = []

    def plan_then_let_another_commit(*args: Any) -> Any:
        planned = real(*args)
        if not interleaved:
            interleaved.append(1)
            _upsert(uri, other)  # commits between this plan and its commit
        return planned

    monkeypatch.setattr(mi, "plan_merge_insert", plan_then_let_another_commit)
    source = _changed_values(5002, 5004).select(["k", "s", "pt"])
    assert _upsert(uri, source) == {
        "num_inserted_rows": 1,
        "num_updated_rows": 1,
        "num_deleted_rows": 0,
    }
    got = _both(uri).filter(pc.field("k") >= 5000).sort_by("k")
    assert got["k"].to_pylist() == [5000, 5001, 5002, 5003]
    assert got["s"].to_pylist()[2:] == source["s"].to_pylist()
    assert unreferenced_files(uri) == set()


def test_concurrent_inserts_of_different_keys_both_land(uri: str) -> None:
    second = ll.dataset(uri)
    _upsert(uri, _changed_values(5000, 5010))
    builder = second.merge_insert("k").when_not_matched_insert_all()
    assert (
        builder.conflict_retries(0).execute(_changed_values(6000, 6010))["num_inserted_rows"] == 10
    )
    assert _both(uri).num_rows == _live().num_rows + 20


@pytest.mark.parametrize("appender", [ll, lance], ids=["lancelet", "pylance"])
def test_an_append_of_the_key_meanwhile_also_counts(uri: str, appender: Any) -> None:
    second = ll.dataset(uri)
    appender.write_dataset(_changed_values(5000, 5001), uri, mode="append")
    builder = second.merge_insert("k").when_not_matched_insert_all()
    with pytest.raises(RetryableCommitConflictError):
        builder.conflict_retries(0).execute(_changed_values(5000, 5001))
    assert builder.conflict_retries(3).execute(_changed_values(5000, 5001)) == {
        "num_inserted_rows": 0,
        "num_updated_rows": 0,
        "num_deleted_rows": 0,
    }
    assert _both(uri).filter(pc.field("k") == 5000).num_rows == 1


_WORKER = textwrap.dedent(
    """
    import json, os, sys, time
    import pyarrow as pa
    import lancelet as ll
    from lancelet.transaction.store import DatasetStore

    uri, sync, name, value = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    write_transaction = DatasetStore.write_transaction
    held = []

    def wait_for(prefix, count):
        deadline = time.monotonic() + 60
        while sum(n.startswith(prefix) for n in os.listdir(sync)) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(prefix)
            time.sleep(0.002)

    def synced(self, txn):
        # Both processes planned on the same version before either publishes.
        out = write_transaction(self, txn)
        if not held:
            held.append(1)
            open(os.path.join(sync, "planned-" + name), "w").close()
            wait_for("planned-", 2)
        return out

    DatasetStore.write_transaction = synced
    open(os.path.join(sync, "ready-" + name), "w").close()
    wait_for("ready-", 2)
    source = pa.table({"k": pa.array([100, 101], pa.int64()), "x": [value, value]})
    builder = ll.dataset(uri).merge_insert("k")
    print(json.dumps(builder.when_matched_update_all().when_not_matched_insert_all().execute(source)))
    """
)


@pytest.mark.local_files("the writers run in other processes")
def test_two_processes_upserting_one_new_key(tmp_path: Path) -> None:
    uri, sync = str(tmp_path / "ds"), tmp_path / "sync"
    sync.mkdir()
    ll.write_dataset(pa.table({"k": pa.array([1, 2], pa.int64()), "x": [0, 0]}), uri)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, uri, str(sync), name, str(value)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, value in (("a", 1), ("b", 2))
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    # One inserted the keys, the other re-ran and updated them.
    assert sorted(r["num_inserted_rows"] for r in results) == [0, 2]
    assert sorted(r["num_updated_rows"] for r in results) == [0, 2]
    got = _both(uri).sort_by("k")
    assert got["k"].to_pylist() == [1, 2, 100, 101]
    assert len(set(got["x"].to_pylist()[2:])) == 1
    assert lance.dataset(uri).version == 3
