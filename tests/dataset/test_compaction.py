"""Compaction: lancelet's plans, files and metrics against pylance's on twin datasets."""

from __future__ import annotations

import importlib
import json
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lance
import lance.optimize
import pyarrow as pa
import pytest

import lancelet as ll
import lancelet.optimize
from lancelet.errors import RetryableCommitConflictError, UnsupportedVersionError
from tests.dataset.util import keyed_table
from tests.storage import copy_tree, list_names
from tests.versions import STORAGE_VERSION

Build = tuple[Sequence[int], Sequence[str]]  # rows per append, then deletes


def _build(uri: str, sizes: Sequence[int], deletes: Sequence[str], *, pylance: bool) -> None:
    """One append per size (one fragment each), then the deletes, in order."""
    start = 0
    for i, size in enumerate(sizes):
        data = keyed_table(start, start + size)
        mode = "append" if i else "create"
        if pylance:
            lance.write_dataset(data, uri, mode=mode, data_storage_version=STORAGE_VERSION)
        else:
            ll.write_dataset(data, uri, mode=mode)
        start += size
    for predicate in deletes:
        (lance.dataset(uri) if pylance else ll.dataset(uri)).delete(predicate)


def _twins(tmp_path: Path, sizes: Sequence[int], deletes: Sequence[str] = ()) -> tuple[str, str]:
    """The same dataset written by lancelet and by pylance."""
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _build(ours, sizes, deletes, pylance=False)
    _build(theirs, sizes, deletes, pylance=True)
    return ours, theirs


def _counts(metrics: Any) -> tuple[int, int, int, int]:
    return (
        metrics.fragments_removed,
        metrics.fragments_added,
        metrics.files_removed,
        metrics.files_added,
    )


def _layout(uri: str) -> list[tuple[int, int, int, bool]]:
    """Per fragment, as pylance sees it: id, physical rows, live rows, has deletions."""
    return [
        (f.fragment_id, f.metadata.physical_rows, f.count_rows(), f.deletion_file() is not None)
        for f in lance.dataset(uri).get_fragments()
    ]


def _checked(uri: str, version: int | None = None) -> pa.Table:
    """The rows pylance reads (after validating), which lancelet must read too."""
    theirs = lance.dataset(uri, version=version)
    theirs.validate()
    table = theirs.to_table()
    assert ll.dataset(uri, version=version).to_table().equals(table)
    return table


def _data_files(uri: str) -> set[str]:
    return set(list_names(Path(uri) / "data"))


def _referenced(uri: str) -> set[str]:
    return {d.path for f in lance.dataset(uri).get_fragments() for d in f.metadata.files}


# -- compact_files against pylance ------------------------------------------------------


def test_many_small_appends_become_target_sized_fragments(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _build(uri, [100] * 30, [], pylance=False)
    before = _checked(uri)
    ds = ll.dataset(uri)
    metrics = ds.optimize.compact_files(target_rows_per_fragment=1000)
    assert _counts(metrics) == (30, 3, 30, 3)
    # One version reserves the new fragment ids, the next swaps the files.
    assert ds.version == ds.latest_version == 32
    assert _checked(uri, version=30).equals(before)
    assert _checked(uri).equals(before)
    assert [(p, n) for _, p, n, _ in _layout(uri)] == [(1000, 1000)] * 3
    assert _data_files(uri) - _referenced(uri) == {
        d.path for f in lance.dataset(uri, version=30).get_fragments() for d in f.metadata.files
    }


PLANS = {
    "merge-all": ([100] * 12, [], {"target_rows_per_fragment": 400}),
    "bins-take-remainder": ([100] * 12, [], {"target_rows_per_fragment": 250}),
    "even-split": ([240] * 5, [], {"target_rows_per_fragment": 250}),
    "big-neighbours": ([1000, 100, 100, 1000], [], {"target_rows_per_fragment": 500}),
    "lonely-small": ([1000, 100, 1000], [], {"target_rows_per_fragment": 500}),
    "materialize-one": ([100] * 5, ["k >= 100 and k < 120"], {"target_rows_per_fragment": 50}),
    "at-threshold": ([100] * 5, ["k >= 100 and k < 110"], {"target_rows_per_fragment": 50}),
    "split-after-deletes": ([400], ["k < 98"], {"target_rows_per_fragment": 75}),
    "mixed": (
        [100, 300, 50, 50, 600, 20],
        ["k % 3 = 0 and k > 500"],
        {"target_rows_per_fragment": 200},
    ),
    "no-materialize": (
        [100] * 5,
        ["k >= 100 and k < 150"],
        {"target_rows_per_fragment": 50, "materialize_deletions": False},
    ),
    "threshold-zero": (
        [100] * 5,
        ["k = 101"],
        {"target_rows_per_fragment": 50, "materialize_deletions_threshold": 0.0},
    ),
    "threshold-one": (
        [100] * 5,
        ["k >= 100 and k < 199"],
        {"target_rows_per_fragment": 50, "materialize_deletions_threshold": 1.0},
    ),
    "max-source-fragments": (
        [100] * 9,
        [],
        {"target_rows_per_fragment": 300, "max_source_fragments": 6},
    ),
    "max-source-rows": (
        [100] * 9,
        ["k % 7 = 0"],
        {"target_rows_per_fragment": 300, "max_source_rows": 650},
    ),
    "excluded": ([100] * 9, [], {"target_rows_per_fragment": 300, "excluded_fragment_ids": [4]}),
}


@pytest.mark.parametrize("case", PLANS.values(), ids=PLANS.keys())
def test_same_plan_files_and_metrics_as_pylance(
    tmp_path: Path, case: tuple[list[int], list[str], dict[str, Any]]
) -> None:
    sizes, deletes, options = case
    ours, theirs = _twins(tmp_path, sizes, deletes)
    before = _checked(ours)
    version = ll.dataset(ours).version
    got = ll.dataset(ours).optimize.compact_files(**options)
    want = lance.dataset(theirs).optimize.compact_files(**options)
    assert _counts(got) == _counts(want)
    assert _layout(ours) == _layout(theirs)
    assert lance.dataset(ours).version == lance.dataset(theirs).version
    assert _checked(ours).equals(lance.dataset(theirs).to_table())
    assert _checked(ours, version).equals(before)


def test_deletions_are_materialized(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _build(uri, [500, 500, 500], ["k % 4 = 0"], pylance=False)
    live = _checked(uri)
    assert all(deleted for *_, deleted in _layout(uri))
    metrics = ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=300)
    # Each 500-row fragment has 25% deleted: each one is rewritten (375 live rows each).
    assert _counts(metrics) == (3, 3, 6, 3)
    assert [(p, n, d) for _, p, n, d in _layout(uri)] == [(375, 375, False)] * 3
    assert _checked(uri).equals(live)
    assert not any(f.deletion_file for f in ll.dataset(uri)._manifest.fragments)


@pytest.mark.parametrize(
    ("deleted", "threshold", "rewritten"),
    [(9, 0.1, False), (10, 0.1, False), (11, 0.1, True), (1, 0.0, True), (50, 0.5, False)],
)
def test_deletion_threshold(
    tmp_path: Path, deleted: int, threshold: float, rewritten: bool
) -> None:
    uri = str(tmp_path / "ds")
    _build(uri, [100, 100], [f"k >= 100 and k < {100 + deleted}"], pylance=False)
    metrics = ll.dataset(uri).optimize.compact_files(
        target_rows_per_fragment=100, materialize_deletions_threshold=threshold
    )
    assert metrics.fragments_removed == int(rewritten)
    assert _layout(uri)[-1][1:] == (
        (100 - deleted, 100 - deleted, False) if rewritten else (100, 100 - deleted, True)
    )
    assert _checked(uri).num_rows == 200 - deleted


def test_nothing_to_compact_makes_no_version(tmp_path: Path) -> None:
    ours, theirs = _twins(tmp_path, [300, 300])
    for uri, ds in ((ours, ll.dataset(ours)), (theirs, lance.dataset(theirs))):
        version = ds.version
        assert _counts(ds.optimize.compact_files(target_rows_per_fragment=300)) == (0, 0, 0, 0)
        assert lance.dataset(uri).version == version


def test_indexed_and_unindexed_fragments_are_not_mixed(tmp_path: Path) -> None:
    ours = str(tmp_path / "ours")
    _build(ours, [100] * 3, [], pylance=True)
    lance.dataset(ours).create_scalar_index("k", "BTREE")  # covers fragments 0-2
    for start in (300, 400, 500):
        lance.write_dataset(keyed_table(start, start + 100), ours, mode="append")
    theirs = str(tmp_path / "theirs")
    copy_tree(ours, theirs)
    got = ll.dataset(ours).optimize.compact_files(target_rows_per_fragment=1000)
    want = lance.dataset(theirs).optimize.compact_files(target_rows_per_fragment=1000)
    assert _counts(got) == _counts(want) == (6, 2, 6, 2)
    assert _layout(ours) == _layout(theirs)
    assert _checked(ours).equals(_checked(theirs))
    # The index no longer claims the rewritten rows; lookups still find them.
    assert lance.dataset(ours).to_table(filter="k = 150")["k"].to_pylist() == [150]


def test_dropped_and_added_columns_are_rewritten(tmp_path: Path) -> None:
    ours, theirs = _twins(tmp_path, [100] * 4)
    for ds in (ll.dataset(ours), lance.dataset(theirs)):
        ds.add_columns({"k2": "k * 2"})
        ds.drop_columns(["v"])
    got = ll.dataset(ours).optimize.compact_files()
    want = lance.dataset(theirs).optimize.compact_files()
    assert _counts(got) == _counts(want) == (4, 1, 8, 1)
    assert _checked(ours).equals(lance.dataset(theirs).to_table())
    fields = [list(d.fields) for f in lance.dataset(ours).get_fragments() for d in f.metadata.files]
    assert fields == [
        list(d.fields) for f in lance.dataset(theirs).get_fragments() for d in f.metadata.files
    ]


def test_config_defaults_and_explicit_options(tmp_path: Path) -> None:
    ours, theirs = _twins(tmp_path, [100] * 9)
    for ds in (ll.dataset(ours), lance.dataset(theirs)):
        ds.update_config({"lance.compaction.target_rows_per_fragment": "300"})
    assert _counts(ll.dataset(ours).optimize.compact_files()) == (9, 3, 9, 3)
    lance.dataset(theirs).optimize.compact_files()
    assert _layout(ours) == _layout(theirs)
    ll.write_dataset(keyed_table(900, 1000), ours, mode="append")
    lance.write_dataset(keyed_table(900, 1000), theirs, mode="append")
    options = {"target_rows_per_fragment": 200, "materialize_deletions": False}
    ll.dataset(ours).optimize.compact_files(**options)
    lance.dataset(theirs).optimize.compact_files(**options)
    assert _layout(ours) == _layout(theirs)
    assert _checked(ours).equals(lance.dataset(theirs).to_table())


def test_refused_options_change_nothing(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _build(uri, [100] * 3, [], pylance=False)
    version, files = ll.dataset(uri).version, _data_files(uri)
    optimizer = ll.dataset(uri).optimize
    with pytest.raises(NotImplementedError, match="compaction_mode"):
        optimizer.compact_files(compaction_mode="force_binary_copy")
    with pytest.raises(ValueError, match="compaction_mode"):
        optimizer.compact_files(compaction_mode="fast")
    with pytest.raises(UnsupportedVersionError):
        optimizer.compact_files(data_storage_version="2.3")
    with pytest.raises(ValueError, match="bogus"):
        ll.optimize.Compaction.plan(ll.dataset(uri), {"bogus": 1})
    ll.dataset(uri).update_config({"lance.compaction.materialize_deletions": "maybe"})
    with pytest.raises(ValueError, match="lance.compaction.materialize_deletions"):
        ll.dataset(uri).optimize.compact_files()
    ll.dataset(uri).delete_config_keys(["lance.compaction.materialize_deletions"])
    assert ll.dataset(uri).version == version + 2 and _data_files(uri) == files
    # Binary copy may fall back to re-encoding, so asking to try it is fine.
    metrics = ll.dataset(uri).optimize.compact_files(compaction_mode="try_binary_copy")
    assert metrics.fragments_added == 1


def test_failed_rewrite_removes_its_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = importlib.import_module("lancelet.dataset.compaction.rewrite")
    uri = str(tmp_path / "ds")
    _build(uri, [100] * 6, [], pylance=False)
    files, version = _data_files(uri), ll.dataset(uri).version
    real = engine.write_fragment_files
    calls: list[int] = []

    def failing_second(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "write_fragment_files", failing_second)
    with pytest.raises(OSError, match="disk full"):
        ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=200)
    assert _data_files(uri) == files
    assert ll.dataset(uri).version == version


def test_pylance_compaction_is_read_identically(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _build(uri, [100] * 8 + [50], ["k % 5 = 0", "k >= 300 and k < 340"], pylance=True)
    before = _checked(uri)
    version = lance.dataset(uri).version
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=250)
    assert _checked(uri).sort_by("k").equals(before.sort_by("k"))
    assert _checked(uri, version).equals(before)
    ll.write_dataset(keyed_table(1000, 1010), uri, mode="append")
    assert _checked(uri).num_rows == before.num_rows + 10


# -- plan, execute elsewhere, commit ----------------------------------------------------


def test_distributed_compaction(tmp_path: Path) -> None:
    ours, theirs = _twins(tmp_path, [100] * 12, ["k % 10 = 3"])
    before = _checked(ours)
    options = {"target_rows_per_fragment": 400}
    planner = ll.dataset(ours)
    plan = ll.optimize.Compaction.plan(planner, options)
    their_plan = lance.optimize.Compaction.plan(lance.dataset(theirs), options)
    assert plan.num_tasks() == their_plan.num_tasks() == 2
    assert plan.read_version == their_plan.read_version == planner.version
    assert [[f.id for f in t.fragments] for t in plan.tasks] == [
        [f.id for f in t.fragments] for t in their_plan.tasks
    ]
    # Tasks travel to workers, pickled or as JSON; results travel back.
    shipped = [
        pickle.loads(pickle.dumps(plan.tasks[0])),
        ll.optimize.CompactionTask.from_json(plan.tasks[1].json()),
    ]
    assert shipped == list(plan.tasks)
    results = [pickle.loads(pickle.dumps(t.execute(ll.dataset(ours)))) for t in shipped]
    results = [ll.optimize.RewriteResult.from_json(r.json()) for r in results]
    assert planner.version == ll.dataset(ours).latest_version  # nothing committed yet
    metrics = ll.optimize.Compaction.commit(planner, results)
    want = lance.optimize.Compaction.commit(
        lance.dataset(theirs), [t.execute(lance.dataset(theirs)) for t in their_plan.tasks]
    )
    assert _counts(metrics) == _counts(want)
    assert planner.version == ll.dataset(ours).latest_version
    assert _layout(ours) == _layout(theirs)
    assert _checked(ours).equals(before)
    assert ll.optimize.CompactionPlan.from_json(plan.json()) == plan


def test_json_is_exchanged_with_pylance(tmp_path: Path) -> None:
    ours, theirs = _twins(tmp_path, [100] * 6, ["k < 10"])
    options = {"target_rows_per_fragment": 200}
    # pylance plans and commits; lancelet executes.
    plan = lance.optimize.Compaction.plan(lance.dataset(theirs), options)
    tasks = [ll.optimize.CompactionTask.from_json(t.json()) for t in plan.tasks]
    results = [t.execute(ll.dataset(theirs)) for t in tasks]
    back = [lance.optimize.RewriteResult.from_json(r.json()) for r in results]
    lance.optimize.Compaction.commit(lance.dataset(theirs), back)
    # lancelet plans and commits; pylance executes.
    our_plan = ll.optimize.Compaction.plan(ll.dataset(ours), options)
    assert json.loads(lance.optimize.CompactionPlan.from_json(our_plan.json()).json())["tasks"]
    their_tasks = [lance.optimize.CompactionTask.from_json(t.json()) for t in our_plan.tasks]
    done = [t.execute(lance.dataset(ours)) for t in their_tasks]
    ll.optimize.Compaction.commit(
        ll.dataset(ours), [ll.optimize.RewriteResult.from_json(r.json()) for r in done]
    )
    assert _layout(ours) == _layout(theirs)
    assert _checked(ours).equals(_checked(theirs))


@pytest.mark.parametrize("planner", ["lancelet", "pylance"])
def test_distributed_compaction_keeps_stable_row_ids(tmp_path: Path, planner: str) -> None:
    """Tasks and results travel as JSON with the fragments' row ids and row versions,
    in pylance's keys, so a stable-row-id dataset compacts on other processes too."""
    uri = str(tmp_path / "stable")
    table = pa.table({"id": pa.array(range(2000), pa.int64())})
    ll.write_dataset(table, uri, max_rows_per_file=300, enable_stable_row_ids=True)
    ll.dataset(uri).delete("id % 5 = 0")
    library: Any = lance if planner == "pylance" else ll
    plan = library.optimize.Compaction.plan(
        library.dataset(uri), {"target_rows_per_fragment": 1000}
    )
    tasks = [ll.optimize.CompactionTask.from_json(t.json()) for t in plan.tasks]
    results = [t.execute(ll.dataset(uri)) for t in tasks]
    back = [ll.optimize.RewriteResult.from_json(r.json()) for r in results]
    ll.optimize.Compaction.commit(ll.dataset(uri), back)
    assert len(ll.dataset(uri).get_fragments()) == 1
    kept = [i for i in range(2000) if i % 5]
    for ds in (ll.dataset(uri), lance.dataset(uri)):
        got = ds.to_table(with_row_id=True)
        assert got["id"].to_pylist() == kept
        assert got["_rowid"].to_pylist() == kept
    assert lance.dataset(uri)._take_rows([7, 1999])["id"].to_pylist() == [7, 1999]


def test_concurrent_delete_of_a_rewritten_fragment_fails_retryably(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _build(uri, [100] * 6, [], pylance=False)
    files = _data_files(uri)
    planner = ll.dataset(uri)
    plan = ll.optimize.Compaction.plan(planner, {"target_rows_per_fragment": 300})
    results = [t.execute(ll.dataset(uri)) for t in plan.tasks]
    assert len(_data_files(uri)) == len(files) + 2
    ll.dataset(uri).delete("k = 150")
    after_delete = _checked(uri)
    with pytest.raises(RetryableCommitConflictError):
        ll.optimize.Compaction.commit(planner, results)
    assert _data_files(uri) == files
    assert _checked(uri).equals(after_delete)
    assert after_delete.num_rows == 599
    # Planned again from the new version, it goes through.
    ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=300)
    assert _checked(uri).equals(after_delete)
    assert [n for _, _, n, _ in _layout(uri)] == [599]


def test_concurrent_append_is_kept(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _build(uri, [100] * 6, ["k % 9 = 0"], pylance=False)
    before = _checked(uri)
    planner = ll.dataset(uri)
    plan = ll.optimize.Compaction.plan(planner, {"target_rows_per_fragment": 300})
    results = [t.execute(planner) for t in plan.tasks]
    lance.write_dataset(keyed_table(600, 650), uri, mode="append")
    metrics = ll.optimize.Compaction.commit(planner, results)
    assert _counts(metrics)[:2] == (6, 1)
    # Fragments are listed by id, and the append took its id before the compaction did.
    assert _checked(uri).equals(pa.concat_tables([keyed_table(600, 650), before]))
    assert [n for _, _, n, _ in _layout(uri)] == [50, before.num_rows]


def test_committing_no_results_is_a_no_op(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _build(uri, [100] * 3, [], pylance=False)
    ds = ll.dataset(uri)
    assert _counts(ll.optimize.Compaction.commit(ds, [])) == (0, 0, 0, 0)
    assert ds.latest_version == ds.version == 3
