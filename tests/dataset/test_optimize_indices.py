"""optimize_indices commits as pylance 14 does: one CreateIndex for every index it
changes, none when nothing changes, with the same segments (fragments, dataset
versions) added and removed.

Each scenario runs the same calls on a pylance dataset and a lancelet dataset; after
every call, the versions made and their transactions must agree.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lance.dataset import Index as TheirIndex

import lancelet as ll
from lancelet.dataset import Index, LanceOperation
from tests.versions import STORAGE_VERSION

MERGE0 = {"num_indices_to_merge": 0}


def _rows(start: int) -> pa.Table:
    ids = list(range(start, start + 10))
    return pa.table({"a": ids, "b": [f"s{i % 3}" for i in ids], "c": [i * 0.5 for i in ids]})


def _segment(index: Any) -> tuple[Any, ...]:
    details = index.index_details[0] if index.index_details else None
    files = sorted(f.path for f in index.files or ())
    return (
        index.name,
        list(index.fields),
        index.dataset_version,
        sorted(index.fragment_ids),
        index.index_version,
        index.base_id,
        details,
        list(index.covering_fields),
        index.created_at is not None,
        files,
    )


def _transaction(ds: Any, version: int) -> tuple[Any, ...]:
    txn = ds.read_transaction(version)
    op = txn.operation
    if not hasattr(op, "new_indices"):
        return (type(op).__name__,)
    new = [_segment(i) for i in op.new_indices]
    removed = [_segment(i) for i in op.removed_indices]
    return (type(op).__name__, new, removed, txn.transaction_properties, txn.read_version)


def _step(lib: ModuleType, uri: Path, step: Any, appended: list[int]) -> None:
    ds = lib.dataset(uri)
    if isinstance(step, dict):
        ds.optimize.optimize_indices(**step)
    elif step == "append":
        appended.append(len(appended) + 1)
        lib.write_dataset(_rows(100 * appended[-1]), uri, mode="append")
    elif step == "delete one row":
        ds.delete("a = 1")
    elif step == "delete fragment 0":
        ds.delete("a < 10")
    elif step == "delete fragment 1":
        ds.delete("a >= 100 and a < 110")
    elif step == "compact":
        ds.optimize.compact_files()
    elif step == "replace ia":
        ds.create_scalar_index("a", "BTREE", name="ia", replace=True)
    else:
        ds.create_scalar_index(*INDICES[step], name=step)


INDICES = {"ia": ("a", "BTREE"), "ib": ("b", "BITMAP"), "ic": ("c", "ZONEMAP")}


def _history(lib: ModuleType, uri: Path, steps: list[Any]) -> list[Any]:
    lib.write_dataset(_rows(0), uri, data_storage_version=STORAGE_VERSION)
    appended: list[int] = []
    out: list[Any] = []
    for step in steps:
        before = lib.dataset(uri).version
        _step(lib, uri, step, appended)
        ds = lib.dataset(uri)
        made = [_transaction(ds, v) for v in range(before + 1, ds.version + 1)]
        out.append((str(step), ds.version, made if isinstance(step, dict) else len(made)))
    return out


SCENARIOS: list[list[Any]] = [
    ["ia", {}],
    ["ia", {"retrain": True}],
    ["ia", "append", {}],
    ["ia", "append", MERGE0],
    ["ia", "append", {"num_indices_to_merge": 2}],
    ["ia", "append", {"retrain": True}],
    ["ia", "ib", {}],
    ["ia", "ib", "append", {}],
    # The manifest then lists ib before ia; pylance still rebuilds them in name order.
    ["ia", "append", "ib", {}, "append", {}],
    ["ia", "ib", "append", MERGE0],
    ["ia", "ib", "append", {"index_names": ["ib"]}],
    ["ia", "ib", "append", {"index_names": ["ib", "ia"]}],
    ["ia", "ib", "append", {"index_names": ["nope", "ia"]}],
    ["ia", "ib", "append", {"index_names": []}],
    ["ia", "ic", "append", {}],
    ["ia", "ic", "append", MERGE0],
    ["ia", "append", MERGE0, {}],
    ["ia", "append", MERGE0, {"num_indices_to_merge": 2}],
    ["ia", "append", MERGE0, "append", {}],
    ["ia", "append", MERGE0, "append", MERGE0, "append", {"num_indices_to_merge": 2}],
    ["ia", "append", MERGE0, "append", MERGE0, "append", {"num_indices_to_merge": 5}],
    ["ia", "append", MERGE0, "append", MERGE0, {"retrain": True}],
    ["ia", "append", MERGE0, "append", MERGE0, {"num_indices_to_merge": 3}],
    ["ia", "delete one row", {}],
    ["ia", "append", "delete one row", {}],
    ["ia", "delete fragment 0", {}],
    ["ia", "delete fragment 0", "append", {}],
    ["ia", "ib", "delete fragment 0", "append", {}],
    ["ia", "append", MERGE0, "delete fragment 1", "append", {}],
    ["ia", "append", MERGE0, "delete fragment 1", {"num_indices_to_merge": 2}],
    ["ia", "append", MERGE0, "delete fragment 0", "append", {"num_indices_to_merge": 2}],
    ["ia", "append", MERGE0, "delete fragment 0", "delete fragment 1", "append", {}],
    ["ia", "append", MERGE0, "append", MERGE0, "delete fragment 1", {"num_indices_to_merge": 2}],
    ["ia", "append", "append", "compact", {}],
    ["ic", "append", "compact", {}],
    ["ia", "replace ia"],
    ["ia", "append", MERGE0, "replace ia"],
]


@pytest.mark.parametrize("steps", SCENARIOS, ids=str)
def test_commits_as_pylance(tmp_path: Path, steps: list[Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        theirs = _history(lance, tmp_path / "p", steps)
        ours = _history(ll, tmp_path / "l", steps)
    assert ours == theirs
    # Both read what the other wrote the same way.
    for uri in (tmp_path / "p", tmp_path / "l"):
        for sql in ("a = 5", "a >= 200", "b = 's1'"):
            want = lance.dataset(uri).to_table(filter=sql, use_scalar_index=False)
            assert ll.dataset(uri).to_table(filter=sql).sort_by("a").equals(want.sort_by("a"))


@pytest.mark.parametrize("merge", [-1, 1.5, "2", True, None])
def test_num_indices_to_merge_values_as_pylance(tmp_path: Path, merge: Any) -> None:
    """None and True are taken as 1; a negative count is an OverflowError, another
    type a TypeError, as in pylance."""

    def run(lib: ModuleType, uri: Path) -> Any:
        lib.write_dataset(_rows(0), uri)
        lib.dataset(uri).create_scalar_index("a", "BTREE", name="ia")
        lib.write_dataset(_rows(100), uri, mode="append")
        try:
            lib.dataset(uri).optimize.optimize_indices(num_indices_to_merge=merge)
        except Exception as exc:
            return exc
        ds = lib.dataset(uri)
        return _transaction(ds, ds.version)

    theirs, ours = run(lance, tmp_path / "p"), run(ll, tmp_path / "l")
    if isinstance(theirs, Exception):
        builtin = OverflowError if isinstance(theirs, OverflowError) else TypeError
        assert isinstance(theirs, builtin) and isinstance(ours, builtin)
    else:
        assert ours == theirs


def test_create_index_operation_round_trip(tmp_path: Path) -> None:
    """A CreateIndex read from one transaction commits again, through either library:
    dropping a segment, then putting it back."""
    results = []
    for lib, name in ((lance, "p"), (ll, "l")):
        uri = tmp_path / name
        ds = lib.write_dataset(_rows(0), uri)
        lib.write_dataset(_rows(100), uri, mode="append")
        ds = lib.dataset(uri)
        ds.create_scalar_index("a", "BTREE", name="ia")
        segment = ds.read_transaction(ds.version).operation.new_indices[0]
        assert isinstance(segment, TheirIndex if lib is lance else Index)
        dropped = lib.LanceDataset.commit(
            uri, lib.LanceOperation.CreateIndex([], [segment]), read_version=ds.version
        )
        restored = lib.LanceDataset.commit(
            uri, lib.LanceOperation.CreateIndex([segment], []), read_version=dropped.version
        )
        results.append(
            (
                [d.name for d in dropped.describe_indices()],
                [
                    (d.name, [sorted(s.fragment_ids) for s in d.segments])
                    for d in restored.describe_indices()
                ],
                _transaction(restored, restored.version),
                restored.to_table(filter="a = 105").num_rows,
            )
        )
    assert results[1] == results[0]
    assert isinstance(LanceOperation.CreateIndex([], []), LanceOperation.BaseOperation)


EXAMPLES = int(os.environ.get("LANCELET_OPTIMIZE_EXAMPLES", "12"))
_STEPS = st.one_of(
    st.sampled_from(["append", "append", "delete one row", "delete fragment 1", "ib"]),
    st.fixed_dictionaries(
        {},
        optional={
            "num_indices_to_merge": st.sampled_from([0, 0, 1, 2, 3, None]),
            "index_names": st.sampled_from([["ia"], ["ib"], ["ia", "ib"], ["nope"]]),
            "retrain": st.booleans(),
        },
    ),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(_STEPS, min_size=1, max_size=7))
def test_random_histories_commit_as_pylance(
    tmp_path_factory: pytest.TempPathFactory, steps: list[Any]
) -> None:
    """Random appends, deletions, index builds and optimize calls: the same versions
    and CreateIndex transactions as pylance's after every call."""
    steps = ["ia", *steps]
    if "ib" in steps:  # an index is built once
        first = steps.index("ib")
        steps = [s for i, s in enumerate(steps) if s != "ib" or i == first]
    root = tmp_path_factory.mktemp("history")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        theirs = _history(lance, root / "p", steps)
        ours = _history(ll, root / "l", steps)
    assert ours == theirs
