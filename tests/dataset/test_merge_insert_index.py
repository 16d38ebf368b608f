"""``MergeInsertBuilder.use_index``: a merge joins through a scalar index on its key
when pylance would, and that changes which plans can be printed, never the result.

Results are compared with pylance running the same merge on a copy; when the plan
is refused is compared with pylance index type by index type.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancelet as ll
from tests.storage import copy_tree

Merge = Callable[[Any], Any]

CONFIGURATIONS: dict[str, Merge] = {
    "upsert": lambda b: b.when_matched_update_all().when_not_matched_insert_all(),
    "update": lambda b: b.when_matched_update_all(),
    "insert": lambda b: b.when_not_matched_insert_all(),
    "fail": lambda b: b.when_matched_fail(),
    "delete_by_source": lambda b: b.when_matched_update_all().when_not_matched_by_source_delete(),
}


def _keyed(start: int, stop: int, offset: int = 0) -> pa.Table:
    keys = np.arange(start, stop, dtype=np.int64)
    return pa.table({"id": keys, "value": keys * 10 + offset})


def _plan_outcome(call: Callable[[], str]) -> str:
    try:
        call()
    except OSError as exc:
        # Refused, or run and failed (when_matched_fail finds matching rows).
        return "refused" if "does not support" in str(exc) else "failed"
    return "planned"


@pytest.mark.parametrize("kind", [None, "BTREE", "BITMAP", "ZONEMAP", "BLOOMFILTER"])
@pytest.mark.parametrize("use_index", [None, True, False])
@pytest.mark.parametrize("configuration", list(CONFIGURATIONS))
def test_plans_are_refused_where_pylance_joins_through_the_index(
    tmp_path: Path, kind: str | None, use_index: bool | None, configuration: str
) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(_keyed(0, 100), uri)
    if kind is not None:
        ll.dataset(uri).create_scalar_index("id", kind)
    source = _keyed(98, 103, offset=1)
    outcomes = []
    for lib in (ll, lance):
        builder = CONFIGURATIONS[configuration](lib.dataset(uri).merge_insert("id"))
        if use_index is not None:
            builder = builder.use_index(use_index)
        outcome = [_plan_outcome(builder.explain_plan)]
        if configuration != "fail":
            # (pylance's analyze_plan does not fail a when_matched_fail merge that
            # matches rows; lancelet's does, as its execute would: not compared here.)
            outcome.append(_plan_outcome(lambda b=builder: b.analyze_plan(source)))
        outcomes.append(outcome)
    assert outcomes[0] == outcomes[1]


def test_a_merge_on_two_keys_never_takes_the_index_path(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(_keyed(0, 100), uri)
    ll.dataset(uri).create_scalar_index("id", "BTREE")
    for lib in (ll, lance):
        plan = lib.dataset(uri).merge_insert(["id", "value"]).when_matched_update_all()
        assert "MergeInsert" in plan.explain_plan()


@pytest.mark.parametrize("value", [1, None, "yes"])
def test_use_index_takes_only_a_bool(tmp_path: Path, value: object) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(_keyed(0, 10), uri)
    for lib in (ll, lance):
        with pytest.raises(TypeError, match="argument 'use_index': .* not an instance of 'bool'"):
            lib.dataset(uri).merge_insert("id").use_index(value)


@st.composite
def _scenarios(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "kind": draw(st.sampled_from(["BTREE", "BITMAP", "ZONEMAP"])),
        "fragments": draw(st.integers(1, 3)),
        "unindexed_fragment": draw(st.booleans()),
        "deleted_every": draw(st.sampled_from([0, 3, 7])),
        "source_keys": draw(st.lists(st.integers(-20, 420), max_size=40, unique=True)),
        "null_key": draw(st.booleans()),
        "configuration": draw(st.sampled_from(["upsert", "update", "insert"])),
    }


def _build(uri: str, scenario: dict[str, Any]) -> None:
    ll.write_dataset(_keyed(0, 100 * scenario["fragments"]), uri, max_rows_per_file=100)
    if scenario["deleted_every"]:
        ll.dataset(uri).delete(f"id % {scenario['deleted_every']} = 0")
    ll.dataset(uri).create_scalar_index("id", scenario["kind"])
    if scenario["unindexed_fragment"]:
        ll.write_dataset(_keyed(300, 400), uri, mode="append")


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scenario=_scenarios())
def test_the_index_join_merges_as_pylance(
    tmp_path_factory: pytest.TempPathFactory, scenario: dict[str, Any]
) -> None:
    """Partly indexed targets with deleted rows; source keys found, missing, and null."""
    base = tmp_path_factory.mktemp("merge")
    uri, copy = str(base / "ours"), str(base / "theirs")
    _build(uri, scenario)
    copy_tree(uri, copy)
    keys = pa.array(scenario["source_keys"] + ([None] if scenario["null_key"] else []), pa.int64())
    source = pa.table({"id": keys, "value": pa.array(np.arange(len(keys)) - 1000, pa.int64())})
    configure = CONFIGURATIONS[scenario["configuration"]]
    # pylance's index join drops source rows with a null key (not inserted), where its
    # hash join inserts them: the index would change the result, so lancelet keeps the
    # hash join's answer on both paths, and is compared with it.
    theirs_builder = configure(lance.dataset(copy).merge_insert("id"))
    if scenario["null_key"]:
        theirs_builder = theirs_builder.use_index(False)
    theirs = theirs_builder.execute(source)
    ours = configure(ll.dataset(uri).merge_insert("id")).execute(source)
    assert ours == theirs
    order = [("id", "ascending"), ("value", "ascending")]
    want = lance.dataset(copy).to_table().sort_by(order)
    assert lance.dataset(uri).to_table().sort_by(order).equals(want)


def test_the_index_join_reads_less_than_the_scan(tmp_path: Path) -> None:
    """With the key indexed, a merge of a few keys into many rows reads the index and
    the rows it names, not the whole key column."""
    uri = str(tmp_path / "ds")
    ll.write_dataset(_keyed(0, 200_000), uri, max_rows_per_file=50_000)
    ll.dataset(uri).create_scalar_index("id", "BTREE")
    source = _keyed(1000, 1003, offset=1)

    def bytes_read(use_index: bool) -> int:
        builder = ll.dataset(uri).merge_insert("id").when_matched_update_all()
        before = ll.bytes_read_counter()  # every read, the index's included
        _, counts = builder.use_index(use_index).execute_uncommitted(source)
        assert counts["num_updated_rows"] == 3
        return ll.bytes_read_counter() - before

    scanned = bytes_read(False)
    assert bytes_read(True) < scanned / 4
