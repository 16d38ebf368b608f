"""Every pair of operations, committed concurrently against one read version.

Two writers read version ``V_READ``; "theirs" commits first, then "mine" with the
same read version.  The outcome of mine must match the table below, written out
by hand from lance's conflict resolver (rows: mine; columns: theirs) plus
lancelet's documented deviations.  Where mine lands, pylance must read exactly
what an independent pyarrow model of both operations predicts; where it fails,
the dataset must still be exactly at theirs' version.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import lance
import lance.file
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelet as ll
from lancelet.dataset.mutate import schema_ops
from lancelet.dataset.mutate.delete import plan_delete
from lancelet.dataset.write.data_files import write_fragment_files
from lancelet.errors import (
    DatasetError,
    IncompatibleTransactionError,
    RetryableCommitConflictError,
)
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction import operations as ops
from lancelet.transaction.commit import commit_transaction
from lancelet.transaction.store import DatasetStore
from tests.storage import copy_tree

ROWS_PER_FRAGMENT = 10
V_READ = 3  # v1: fragments 0-2; v2: fragment 3 appended; v3: fragment ids 4-7 reserved
FIRST_RESERVED = 4

# -- the expected outcomes ------------------------------------------------------------
#
# ok  compatible: mine commits on top of theirs
# R   retryable conflict;  X  incompatible
# R*  R when both touch the same fragment, ok otherwise
# R~  both change rows of one fragment: rebased (deletion vectors united) when the
#     rows differ, R when a row is changed by both; ok on different fragments
# X*  X when both set the same config key, ok otherwise
#
# Deviations from lance, on purpose: a delete or update meeting a committed
# overwrite is R (re-running it is well defined), not X.  (A rewrite meeting an
# index build is ok rather than R*: tested below with a real pylance index build.)

MATRIX = """
mine \\ theirs  append delete overwrite restore config reserve rewrite update merge project
append          ok     ok     X         X       ok     ok      ok      ok     ok    ok
delete          ok     R~     R         X       ok     ok      R*      R~     R     ok
overwrite       ok     ok     X*        ok      X*     ok      ok      ok     ok    ok
restore         ok     ok     ok        ok      ok     ok      ok      ok     ok    ok
config          ok     ok     X*        ok      X*     ok      ok      ok     ok    ok
reserve         ok     ok     X         X       ok     ok      ok      ok     ok    ok
rewrite         ok     R*     X         X       ok     ok      R*      R*     R     ok
update          ok     R~     R         X       ok     ok      R*      R~     R     ok
merge           R      R      X         X       ok     ok      R       R      R     X
project         ok     ok     X         X       ok     ok      ok      ok     R     R
"""

# Per code, the variants run and the outcome each must have.
CODES: dict[str, dict[str, str]] = {
    "ok": {"overlap": "ok"},
    "R": {"overlap": "R"},
    "X": {"overlap": "X"},
    "R*": {"disjoint": "ok", "overlap": "R"},
    "R~": {"disjoint": "ok", "overlap": "ok", "same_rows": "R"},
    "X*": {"disjoint": "ok", "overlap": "X"},
}


def _cases() -> list[tuple[str, str, str, str]]:
    header, *rows = MATRIX.strip().splitlines()
    theirs_kinds = header.split()[3:]
    cases = []
    for row in rows:
        mine, *codes = row.split()
        assert len(codes) == len(theirs_kinds), row
        for theirs, code in zip(theirs_kinds, codes, strict=True):
            for variant, outcome in CODES[code].items():
                cases.append((mine, theirs, variant, outcome))
    return cases


# -- what each side touches ----------------------------------------------------------


@dataclass(frozen=True)
class Side:
    label: str  # "mine" or "theirs": tags the values it writes
    fragment: int  # the fragment a delete, update or rewrite works on
    rows: tuple[int, ...]  # offsets in that fragment a delete or update changes
    key: str = ""  # the config key it sets
    first_key: int = 0  # keys of rows it appends or writes by overwrite
    reserved_id: int = 0  # the id of the fragment its rewrite produces
    restore_to: int = 1

    def keys(self) -> np.ndarray:
        return self.fragment * ROWS_PER_FRAGMENT + np.asarray(self.rows, dtype=np.int64)


def _sides(variant: str) -> tuple[Side, Side]:
    fragments, rows, keys = {
        "disjoint": ((0, 2), ((1, 2), (3, 4)), ("mine-key", "theirs-key")),
        "overlap": ((1, 1), ((1, 2), (5, 6)), ("shared", "shared")),
        "same_rows": ((1, 1), ((2, 3), (3, 4)), ("shared", "shared")),
    }[variant]
    mine = Side("mine", fragments[0], rows[0], keys[0], 1000, FIRST_RESERVED, 2)
    theirs = Side("theirs", fragments[1], rows[1], keys[1], 2000, FIRST_RESERVED + 1, 1)
    return mine, theirs


# -- the data, and the independent model of it ---------------------------------------


def _rows(keys: np.ndarray, label: str = "") -> pa.Table:
    keys = np.asarray(keys, dtype=np.int64)
    values = [f"{label}{k}" if label else f"v{k}" for k in keys]
    return pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(values, pa.string())})


TABLE_AT = {1: _rows(np.arange(30)), 2: _rows(np.arange(40))}


@dataclass(frozen=True)
class State:
    table: pa.Table
    config: dict[str, str] = field(default_factory=dict)


def _aligned(new: pa.Table, like: pa.Table) -> pa.Table:
    """Rows added under an older schema: columns the dataset gained read as nulls,
    columns it dropped are not read."""
    columns = [
        new.column(f.name) if f.name in new.column_names else pa.nulls(len(new), f.type)
        for f in like.schema
    ]
    return pa.Table.from_arrays(columns, schema=like.schema)


def _append_effect(state: State, side: Side) -> State:
    added = _aligned(_rows(np.arange(side.first_key, side.first_key + 3)), state.table)
    return State(pa.concat_tables([state.table, added]), state.config)


def _delete_effect(state: State, side: Side) -> State:
    keep = pc.invert(pc.is_in(state.table["k"], pa.array(side.keys())))
    return State(state.table.filter(keep), state.config)


def _update_effect(state: State, side: Side) -> State:
    hit = pc.is_in(state.table["k"], pa.array(side.keys()))
    changed = _aligned(_rows(side.keys(), f"upd-{side.label}-"), state.table)
    return State(pa.concat_tables([state.table.filter(pc.invert(hit)), changed]), state.config)


def _overwrite_effect(state: State, side: Side) -> State:
    table = _rows(np.arange(side.first_key, side.first_key + 5))
    return State(table, {**state.config, side.key: side.label})


def _restore_effect(state: State, side: Side) -> State:
    return State(TABLE_AT[side.restore_to])


def _config_effect(state: State, side: Side) -> State:
    return State(state.table, {**state.config, side.key: side.label})


def _merge_effect(state: State, side: Side) -> State:
    factor = 2 if side.label == "mine" else 3
    values = pc.multiply(state.table["k"], factor)
    return State(state.table.append_column(f"w_{side.label}", values), state.config)


def _project_effect(state: State, side: Side) -> State:
    return State(state.table.drop_columns(["v"]), state.config)


def _unchanged(state: State, side: Side) -> State:
    return state


EFFECTS: dict[str, Callable[[State, Side], State]] = {
    "append": _append_effect,
    "delete": _delete_effect,
    "overwrite": _overwrite_effect,
    "restore": _restore_effect,
    "config": _config_effect,
    "reserve": _unchanged,
    "rewrite": _unchanged,
    "update": _update_effect,
    "merge": _merge_effect,
    "project": _project_effect,
}


# -- building the operations at the transaction level --------------------------------


@dataclass(frozen=True)
class Ctx:
    uri: str
    store: DatasetStore
    manifest: Manifest  # the version both writers read

    def write(self, table: pa.Table) -> tuple[Fragment, ...]:
        return tuple(
            write_fragment_files(
                self.store,
                table.to_reader(),
                self.manifest.schema,
                self.manifest.data_storage_version,
            )
        )

    def fragment(self, fragment_id: int) -> Fragment:
        found = self.manifest.fragment(fragment_id)
        assert found is not None
        return found


def _keys_sql(keys: np.ndarray) -> str:
    return f"k IN ({', '.join(str(k) for k in keys)})"


def _build_append(ctx: Ctx, side: Side) -> ops.Operation:
    return ops.Append(ctx.write(_rows(np.arange(side.first_key, side.first_key + 3))))


def _build_delete(ctx: Ctx, side: Side) -> ops.Operation:
    op, count = plan_delete(ctx.store, ctx.manifest, _keys_sql(side.keys()))
    assert count == len(side.rows)
    return op


def _build_overwrite(ctx: Ctx, side: Side) -> ops.Operation:
    fragments = ctx.write(_rows(np.arange(side.first_key, side.first_key + 5)))
    return ops.Overwrite(fragments, ctx.manifest.schema, {side.key: side.label})


def _build_restore(ctx: Ctx, side: Side) -> ops.Operation:
    return ops.Restore(side.restore_to)


def _build_config(ctx: Ctx, side: Side) -> ops.Operation:
    return ops.UpdateConfig({side.key: side.label})


def _build_reserve(ctx: Ctx, side: Side) -> ops.Operation:
    return ops.ReserveFragments(2)


def _build_rewrite(ctx: Ctx, side: Side) -> ops.Operation:
    old = ctx.fragment(side.fragment)
    first = side.fragment * ROWS_PER_FRAGMENT
    (new,) = ctx.write(_rows(np.arange(first, first + ROWS_PER_FRAGMENT)))
    group = ops.RewriteGroup((old,), (new.with_id(side.reserved_id),))
    return ops.Rewrite((group,))


def _update_op(ctx: Ctx, side: Side, inserted: np.ndarray | None = None) -> ops.Update:
    """Rewrites the side's rows with new values; ``inserted`` keys are added as new rows."""
    fragment = ctx.store.delete_rows(
        ctx.fragment(side.fragment), np.asarray(side.rows), ctx.manifest.version
    )
    assert fragment is not None
    keys = side.keys() if inserted is None else np.concatenate([side.keys(), inserted])
    new = ctx.write(_rows(keys, f"upd-{side.label}-"))
    v_field = ctx.manifest.schema.resolve(["v"], ctx.uri)[0].id
    return ops.Update((), (fragment,), new, fields_modified=(v_field,))


def _build_update(ctx: Ctx, side: Side) -> ops.Operation:
    return _update_op(ctx, side)


def _build_merge(ctx: Ctx, side: Side) -> ops.Operation:
    factor = 2 if side.label == "mine" else 3
    new_column = {f"w_{side.label}": f"k * {factor}"}
    return schema_ops.add_columns(ctx.store, ctx.manifest, new_column, None, ctx.uri)


def _build_project(ctx: Ctx, side: Side) -> ops.Operation:
    return schema_ops.drop_columns(ctx.manifest, ["v"], ctx.uri)


BUILDERS: dict[str, Callable[[Ctx, Side], ops.Operation]] = {
    "append": _build_append,
    "delete": _build_delete,
    "overwrite": _build_overwrite,
    "restore": _build_restore,
    "config": _build_config,
    "reserve": _build_reserve,
    "rewrite": _build_rewrite,
    "update": _build_update,
    "merge": _build_merge,
    "project": _build_project,
}


# -- fixtures and checks -------------------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    uri = tmp_path_factory.mktemp("matrix") / "ds"
    ll.write_dataset(TABLE_AT[1], uri, max_rows_per_file=ROWS_PER_FRAGMENT)
    ll.write_dataset(TABLE_AT[2].slice(30), uri, mode="append")
    commit_transaction(DatasetStore(uri), ops.Transaction(2, ops.ReserveFragments(4)))
    assert lance.dataset(uri).version == V_READ
    return uri


@pytest.fixture
def uri(template: Path, tmp_path: Path) -> str:
    dest = tmp_path / "ds"
    copy_tree(template, dest)
    return str(dest)


def _read_context(uri: str) -> Ctx:
    store = DatasetStore(uri)
    return Ctx(uri, store, store.read_manifest(V_READ))


def _commit(uri: str, operation: ops.Operation) -> str:
    """Commit against ``V_READ`` as a fresh writer would; the outcome's code."""
    try:
        commit_transaction(DatasetStore(uri), ops.Transaction(V_READ, operation))
    except RetryableCommitConflictError as exc:
        # pylance's wording, which its users match; the winner is version V_READ + 1.
        assert str(exc).startswith(f"Retryable commit conflict for version {V_READ + 1}: ")
        return "R"
    except IncompatibleTransactionError as exc:
        assert str(exc).startswith(f"Commit conflict for version {V_READ + 1}: ")
        return "X"
    return "ok"


def _sorted(table: pa.Table) -> pa.Table:
    keys = ["k"] if "k" in table.column_names else table.column_names
    return table.sort_by([(name, "ascending") for name in keys])


def assert_dataset_holds(uri: str, version: int, want: State) -> None:
    """pylance (and lancelet) read exactly ``want`` as the latest version."""
    ds = lance.dataset(uri)
    assert ds.version == version
    ds.validate()
    got = ds.to_table()
    assert got.column_names == want.table.column_names
    assert _sorted(got).equals(_sorted(want.table)), f"{got.to_pydict()} != {want.table}"
    assert ds.config() == want.config
    assert _sorted(ll.dataset(uri).to_table()).equals(_sorted(want.table))


def _theirs_then_mine(
    uri: str, mine_kind: str, theirs_kind: str, variant: str
) -> tuple[str, State]:
    """Build both operations against ``V_READ``, commit theirs, then mine."""
    mine_side, theirs_side = _sides(variant)
    ctx = _read_context(uri)
    theirs = BUILDERS[theirs_kind](ctx, theirs_side)
    mine = BUILDERS[mine_kind](ctx, mine_side)
    assert _commit(uri, theirs) == "ok"
    after_theirs = EFFECTS[theirs_kind](State(TABLE_AT[2]), theirs_side)
    assert_dataset_holds(uri, V_READ + 1, after_theirs)
    return _commit(uri, mine), after_theirs


@pytest.mark.parametrize(("mine", "theirs", "variant", "expected"), _cases())
def test_conflict_matrix(uri: str, mine: str, theirs: str, variant: str, expected: str) -> None:
    outcome, after_theirs = _theirs_then_mine(uri, mine, theirs, variant)
    assert outcome == expected
    if outcome == "ok":
        mine_side, _ = _sides(variant)
        assert_dataset_holds(uri, V_READ + 2, EFFECTS[mine](after_theirs, mine_side))
    else:
        assert_dataset_holds(uri, V_READ + 1, after_theirs)


def test_the_matrix_covers_every_pair() -> None:
    pairs = {(mine, theirs) for mine, theirs, _, _ in _cases()}
    assert pairs == {(a, b) for a in BUILDERS for b in BUILDERS}


# -- rebasing row changes, in detail ---------------------------------------------------


def _live_offsets(uri: str, fragment_id: int) -> np.ndarray:
    """Offsets of the rows pylance reads from one fragment."""
    table = lance.dataset(uri).to_table(columns=["k"], with_row_address=True)
    addresses = table["_rowaddr"].to_numpy()
    mine = addresses >> np.uint64(32) == fragment_id
    return np.sort(addresses[mine] & np.uint64(0xFFFFFFFF)).astype(np.int64)


ROW_CHANGES = [
    ("update", "update"),
    ("delete", "update"),
    ("update", "delete"),
    ("delete", "delete"),
]


@pytest.mark.parametrize(("mine", "theirs"), ROW_CHANGES)
def test_row_changes_in_one_fragment_unite_their_deletion_vectors(
    uri: str, mine: str, theirs: str
) -> None:
    outcome, after_theirs = _theirs_then_mine(uri, mine, theirs, "overlap")
    assert outcome == "ok"
    mine_side, theirs_side = _sides("overlap")
    want = np.setdiff1d(np.arange(ROWS_PER_FRAGMENT), mine_side.rows + theirs_side.rows)
    assert np.array_equal(_live_offsets(uri, 1), want)
    assert_dataset_holds(uri, V_READ + 2, EFFECTS[mine](after_theirs, mine_side))


@pytest.mark.parametrize(("mine", "theirs"), ROW_CHANGES)
def test_a_row_changed_by_both_is_retryable(uri: str, mine: str, theirs: str) -> None:
    outcome, after_theirs = _theirs_then_mine(uri, mine, theirs, "same_rows")
    assert outcome == "R"
    _, theirs_side = _sides("same_rows")
    want = np.setdiff1d(np.arange(ROWS_PER_FRAGMENT), theirs_side.rows)
    assert np.array_equal(_live_offsets(uri, 1), want)
    assert_dataset_holds(uri, V_READ + 1, after_theirs)


def test_rebasing_across_several_winners(uri: str) -> None:
    """Each winner is folded in turn: mine ends up deleting on top of all of them."""
    ctx = _read_context(uri)
    winners = [
        _build_delete(ctx, Side("a", 1, (0,))),
        _update_op(ctx, Side("b", 1, (4,))),
        _build_delete(ctx, Side("c", 1, (9,))),
    ]
    mine = _update_op(ctx, Side("mine", 1, (2, 3)))
    for op in winners:
        assert _commit(uri, op) == "ok"
    assert _commit(uri, mine) == "ok"
    assert np.array_equal(_live_offsets(uri, 1), [1, 5, 6, 7, 8])
    table = lance.dataset(uri).to_table()
    values = dict(zip(table["k"].to_pylist(), table["v"].to_pylist(), strict=True))
    assert 10 not in values and 19 not in values
    assert values[14] == "upd-b-14" and values[12] == "upd-mine-12" and values[13] == "upd-mine-13"
    assert len(values) == 40 - 2
    lance.dataset(uri).validate()


def test_rows_deleted_by_both_leaving_none_remove_the_fragment(uri: str) -> None:
    ctx = _read_context(uri)
    theirs = _build_delete(ctx, Side("theirs", 1, (0, 1, 2, 3, 4)))
    mine = _build_delete(ctx, Side("mine", 1, (5, 6, 7, 8, 9)))
    assert _commit(uri, theirs) == "ok"
    assert _commit(uri, mine) == "ok"
    ds = lance.dataset(uri)
    ds.validate()
    assert [f.fragment_id for f in ds.get_fragments()] == [0, 2, 3]
    want = np.concatenate([np.arange(10), np.arange(20, 40)])
    assert np.array_equal(np.sort(ds.to_table()["k"].to_numpy()), want)


def test_pylance_winners_are_rebased_onto(uri: str) -> None:
    """pylance's own delete and update transactions, read back as winners."""
    ctx = _read_context(uri)
    mine = _update_op(ctx, Side("mine", 1, (1, 2)))
    lance.dataset(uri).delete("k = 15")
    lance.dataset(uri).update({"v": "'pylance'"}, where="k = 17")
    assert _commit(uri, mine) == "ok"
    ds = lance.dataset(uri)
    ds.validate()
    table = ds.to_table()
    values = dict(zip(table["k"].to_pylist(), table["v"].to_pylist(), strict=True))
    assert 15 not in values and values[17] == "pylance"
    assert values[11] == "upd-mine-11" and values[12] == "upd-mine-12"
    assert len(values) == 39


def test_pylance_winner_touching_the_same_row_is_retryable(uri: str) -> None:
    ctx = _read_context(uri)
    mine = _build_delete(ctx, Side("mine", 1, (2,)))
    lance.dataset(uri).update({"v": "'pylance'"}, where="k = 12")
    version = lance.dataset(uri).version
    assert _commit(uri, mine) == "R"
    assert lance.dataset(uri).version == version
    assert lance.dataset(uri).to_table(filter="k = 12")["v"].to_pylist() == ["pylance"]


# -- upserts: keys inserted concurrently -----------------------------------------------


class KeysAmong:
    """An upsert's inserted keys, found in fragments by reading them with pylance."""

    def __init__(self, store: DatasetStore, keys: list[int]) -> None:
        self.store = store
        self.keys = pa.array(keys, pa.int64())

    def found_in(self, fragments: tuple[Fragment, ...], schema: object) -> bool:
        for fragment in fragments:
            for data_file in fragment.files:
                reader = lance.file.LanceFileReader(self.store.data_path(data_file.path))
                table = reader.read_all().to_table()
                if "k" in table.column_names and pc.any(pc.is_in(table["k"], self.keys)).as_py():
                    return True
        return False


def _upsert(ctx: Ctx, side: Side, inserted: list[int], detect: bool) -> ops.Update:
    op = _update_op(ctx, side, np.asarray(inserted, dtype=np.int64))
    keys = KeysAmong(ctx.store, inserted) if detect else None
    return ops.Update(
        op.removed_fragment_ids,
        op.updated_fragments,
        op.new_fragments,
        op.fields_modified,
        inserted_keys=keys,
    )


@pytest.mark.parametrize("theirs_kind", ["append", "upsert"])
@pytest.mark.parametrize(
    ("inserted", "detect", "expected"),
    [([201], True, "R"), ([205], True, "ok"), ([201], False, "ok")],
)
def test_upsert_meeting_a_concurrent_insert_of_its_key(
    uri: str, theirs_kind: str, inserted: list[int], detect: bool, expected: str
) -> None:
    """Theirs adds keys 200-202, by an append or by an upsert; mine upserts
    ``inserted`` as new rows, checking for them only when ``detect``."""
    mine_side, theirs_side = _sides("disjoint")
    ctx = _read_context(uri)
    theirs: ops.Operation
    if theirs_kind == "append":
        theirs = _build_append(ctx, replace(theirs_side, first_key=200))
        after = _append_effect(State(TABLE_AT[2]), replace(theirs_side, first_key=200))
    else:
        theirs = _upsert(ctx, theirs_side, [200, 201, 202], detect=False)
        after = _update_effect(State(TABLE_AT[2]), theirs_side)
        added = _rows(np.arange(200, 203), "upd-theirs-")
        after = State(pa.concat_tables([after.table, added]))
    mine = _upsert(ctx, mine_side, inserted, detect)
    assert _commit(uri, theirs) == "ok"
    assert _commit(uri, mine) == expected
    if expected == "R":
        assert_dataset_holds(uri, V_READ + 1, after)
        return
    want = _update_effect(after, mine_side).table
    want = pa.concat_tables([want, _rows(np.asarray(inserted), "upd-mine-")])
    assert_dataset_holds(uri, V_READ + 2, State(want))


# -- rewrites (compaction) -------------------------------------------------------------


def _compact(ctx: Ctx, fragment_ids: tuple[int, ...], new_id: int) -> ops.Rewrite:
    old = tuple(ctx.fragment(i) for i in fragment_ids)
    keys = np.concatenate(
        [np.arange(i * ROWS_PER_FRAGMENT, (i + 1) * ROWS_PER_FRAGMENT) for i in fragment_ids]
    )
    (new,) = ctx.write(_rows(keys))
    return ops.Rewrite((ops.RewriteGroup(old, (new.with_id(new_id),)),))


def test_rewrite_after_a_concurrent_append_keeps_the_appended_rows(uri: str) -> None:
    ctx = _read_context(uri)
    mine = _compact(ctx, (0, 1), FIRST_RESERVED)
    theirs = _build_append(ctx, _sides("overlap")[1])
    assert _commit(uri, theirs) == "ok"
    assert _commit(uri, mine) == "ok"
    ds = lance.dataset(uri)
    ds.validate()
    # Fragments stay in id order: the compacted one sits at its reserved id.
    assert [f.fragment_id for f in ds.get_fragments()] == [2, 3, FIRST_RESERVED, 8]
    compacted = ds.get_fragment(FIRST_RESERVED)
    assert compacted is not None
    assert compacted.to_table()["k"].to_pylist() == list(range(20))
    want = pa.concat_tables([TABLE_AT[2], _rows(np.arange(2000, 2003))])
    assert _sorted(ds.to_table()).equals(_sorted(want))


def test_rewrite_fragments_without_reserved_ids_get_fresh_ones(uri: str) -> None:
    ctx = _read_context(uri)
    mine = _compact(ctx, (0,), 0)
    assert _commit(uri, _build_append(ctx, _sides("overlap")[1])) == "ok"  # takes id 8
    assert _commit(uri, mine) == "ok"
    ds = lance.dataset(uri)
    ds.validate()
    assert [f.fragment_id for f in ds.get_fragments()] == [1, 2, 3, 8, 9]
    assert ds.count_rows() == 43


def test_rewrite_onto_ids_a_concurrent_append_took_fails_cleanly(uri: str) -> None:
    ctx = _read_context(uri)
    mine = _compact(ctx, (0,), 8)  # not reserved: the next free id at the read version
    assert _commit(uri, _build_append(ctx, _sides("overlap")[1])) == "ok"
    with pytest.raises(DatasetError, match="already in use"):
        commit_transaction(DatasetStore(uri), ops.Transaction(V_READ, mine))
    assert_dataset_holds(uri, V_READ + 1, _append_effect(State(TABLE_AT[2]), _sides("overlap")[1]))


# -- config and metadata ---------------------------------------------------------------


def _field_id(uri: str, name: str) -> int:
    schema = DatasetStore(uri).read_manifest(V_READ).schema
    return schema.resolve([name], uri)[0].id


def _metadata_op(uri: str, what: str, label: str) -> ops.Operation:
    """One kind of config or metadata change, tagged with ``label``."""
    entry = {"note": label}
    if what == "overwrite":
        ctx = _read_context(uri)
        return ops.Overwrite(ctx.write(_rows(np.arange(5))), ctx.manifest.schema)
    if what.startswith("field "):
        field_id = _field_id(uri, what.split()[1])
        return ops.UpdateConfig(field_metadata={field_id: ops.MapUpdate(entry)})
    return {
        "schema": ops.UpdateConfig(schema_metadata=ops.MapUpdate(entry)),
        "table": ops.UpdateConfig(table_metadata=ops.MapUpdate(entry)),
        "table other": ops.UpdateConfig(table_metadata=ops.MapUpdate({label: "1"})),
        "table drop": ops.UpdateConfig(table_metadata=ops.MapUpdate({"note": None})),
        "table replace": ops.UpdateConfig(table_metadata=ops.MapUpdate({label: "1"}, True)),
        "set key": ops.UpdateConfig({"key": label}),
        "drop key": ops.UpdateConfig({}, ("key",)),
    }[what]


Maps = dict[str, dict[str, str]]


def _metadata_effect(maps: Maps, what: str, label: str) -> Maps:
    """The model: config, table, schema and per-field metadata after ``what``."""
    out = {name: dict(values) for name, values in maps.items()}
    if what == "overwrite":  # a new schema, without metadata; config and table kept
        out.update(schema={}, k={}, v={})
    elif what.startswith("field "):
        out[what.split()[1]]["note"] = label
    elif what in ("schema", "table"):
        out[what]["note"] = label
    elif what == "table other":
        out["table"][label] = "1"
    elif what == "table drop":
        out["table"].pop("note", None)
    elif what == "table replace":
        out["table"] = {label: "1"}
    elif what == "set key":
        out["config"]["key"] = label
    elif what == "drop key":
        out["config"].pop("key", None)
    return out


def _metadata_read(uri: str) -> Maps:
    ds = lance.dataset(uri)
    ds.validate()

    def text(raw: dict[bytes, bytes] | None) -> dict[str, str]:
        return {k.decode(): v.decode() for k, v in (raw or {}).items()}

    return {
        "config": ds.config(),
        "table": dict(ds.metadata),
        "schema": text(ds.schema.metadata),
        "k": text(ds.schema.field("k").metadata),
        "v": text(ds.schema.field("v").metadata),
    }


@pytest.mark.parametrize(
    ("mine", "theirs", "expected"),
    [
        # Metadata of a schema an overwrite replaced is meaningless.
        ("schema", "overwrite", "X"),
        ("field v", "overwrite", "X"),
        ("table", "overwrite", "ok"),
        ("set key", "overwrite", "ok"),
        ("schema", "schema", "X"),
        ("field v", "field v", "X"),
        ("field v", "field k", "ok"),
        ("schema", "field v", "ok"),
        ("table", "table", "X"),
        ("table", "table drop", "X"),
        ("table drop", "table", "X"),
        ("table drop", "table drop", "ok"),
        ("table other", "table", "ok"),
        ("table replace", "table other", "X"),
        ("table other", "table replace", "X"),
        ("table", "schema", "ok"),
        # Removing one key twice ends the same either way; setting and removing does not.
        ("drop key", "drop key", "ok"),
        ("drop key", "set key", "X"),
        ("set key", "drop key", "X"),
        ("set key", "table", "ok"),
    ],
)
def test_metadata_changes_clash_only_on_what_both_change(
    uri: str, mine: str, theirs: str, expected: str
) -> None:
    store = DatasetStore(uri)
    commit_transaction(store, ops.Transaction(V_READ, ops.UpdateConfig({"key": "0"})))
    lance.dataset(uri).update_metadata({"note": "0"})  # pylance's own UpdateConfig
    base = V_READ + 2
    mine_op, theirs_op = _metadata_op(uri, mine, "mine"), _metadata_op(uri, theirs, "theirs")
    commit_transaction(store, ops.Transaction(base, theirs_op))
    initial: Maps = {"config": {"key": "0"}, "table": {"note": "0"}, "schema": {}, "k": {}, "v": {}}
    after_theirs = _metadata_effect(initial, theirs, "theirs")
    assert _metadata_read(uri) == after_theirs
    try:
        commit_transaction(DatasetStore(uri), ops.Transaction(base, mine_op))
        outcome = "ok"
    except IncompatibleTransactionError:
        outcome = "X"
    assert outcome == expected
    if outcome == "X":
        assert lance.dataset(uri).version == base + 1
        assert _metadata_read(uri) == after_theirs
    else:
        assert lance.dataset(uri).version == base + 2
        assert _metadata_read(uri) == _metadata_effect(after_theirs, mine, "mine")


def test_concurrent_metadata_changes_both_land(uri: str) -> None:
    """Field metadata of different fields, and table metadata of different keys."""
    store = DatasetStore(uri)
    first = ops.UpdateConfig(
        field_metadata={_field_id(uri, "k"): ops.MapUpdate({"unit": "id"})},
        table_metadata=ops.MapUpdate({"owner": "a"}),
    )
    second = ops.UpdateConfig(
        field_metadata={_field_id(uri, "v"): ops.MapUpdate({"unit": "text"})},
        table_metadata=ops.MapUpdate({"team": "b"}),
        schema_metadata=ops.MapUpdate({"source": "test"}),
    )
    commit_transaction(store, ops.Transaction(V_READ, first))
    commit_transaction(store, ops.Transaction(V_READ, second))
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.version == V_READ + 2
    assert ds.schema.field("k").metadata == {b"unit": b"id"}
    assert ds.schema.field("v").metadata == {b"unit": b"text"}
    assert ds.schema.metadata == {b"source": b"test"}
    assert ds.metadata == {"owner": "a", "team": "b"}


@pytest.mark.parametrize("mine_kind", ["project", "merge"])
def test_schema_changes_keep_metadata_a_concurrent_update_set(uri: str, mine_kind: str) -> None:
    """A new schema built from the read version must not undo metadata changes
    committed since (the two are compatible, so nobody retries)."""
    mine_side, _ = _sides("overlap")
    mine = BUILDERS[mine_kind](_read_context(uri), mine_side)
    theirs = ops.UpdateConfig(
        schema_metadata=ops.MapUpdate({"owner": "theirs"}),
        field_metadata={_field_id(uri, "k"): ops.MapUpdate({"unit": "id"})},
    )
    assert _commit(uri, theirs) == "ok"
    assert _commit(uri, mine) == "ok"
    assert_dataset_holds(uri, V_READ + 2, EFFECTS[mine_kind](State(TABLE_AT[2]), mine_side))
    schema = lance.dataset(uri).schema
    assert schema.metadata == {b"owner": b"theirs"}
    assert schema.field("k").metadata == {b"unit": b"id"}


# -- what commits do to indices and the storage format ---------------------------------


def _indexed(uri: str) -> Ctx:
    """The dataset with a pylance BTREE index on ``k``, read at its latest version."""
    lance.dataset(uri).create_scalar_index("k", "BTREE")
    store = DatasetStore(uri)
    return Ctx(uri, store, store.read_manifest(store.latest_version()))


def _index_fragments(uri: str) -> list[int]:
    (index,) = lance.dataset(uri).describe_indices()
    return sorted(i for segment in index.segments for i in segment.fragment_ids)


@pytest.mark.parametrize(("dropped", "index_left"), [("v", True), ("k", False)])
def test_dropping_a_column_drops_the_indices_on_it(
    uri: str, dropped: str, index_left: bool
) -> None:
    ctx = _indexed(uri)
    commit = schema_ops.drop_columns(ctx.manifest, [dropped], uri)
    commit_transaction(ctx.store, ops.Transaction(ctx.manifest.version, commit))
    ds = lance.dataset(uri)
    ds.validate()
    assert [i.name for i in ds.describe_indices()] == (["k_idx"] if index_left else [])
    want = State(TABLE_AT[2].drop_columns([dropped]))
    assert_dataset_holds(uri, ctx.manifest.version + 1, want)
    if index_left:
        assert ds.to_table(filter="k = 12").equals(pa.table({"k": pa.array([12], pa.int64())}))


@pytest.mark.parametrize(("modified", "still_covered"), [("v", True), ("k", False)])
def test_an_update_uncovers_fragments_only_for_indices_on_modified_fields(
    uri: str, modified: str, still_covered: bool
) -> None:
    ctx = _indexed(uri)
    assert _index_fragments(uri) == [0, 1, 2, 3]
    update = replace(
        _update_op(ctx, Side("mine", 1, (1, 2))), fields_modified=(_field_id(uri, modified),)
    )
    commit_transaction(ctx.store, ops.Transaction(ctx.manifest.version, update))
    assert _index_fragments(uri) == ([0, 1, 2, 3] if still_covered else [0, 2, 3])
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.to_table(filter="k = 12")["v"].to_pylist() == ["upd-mine-12"]
    assert ds.to_table(filter="k = 15")["v"].to_pylist() == ["v15"]


def test_overwrite_records_the_format_of_the_files_it_writes(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(_rows(np.arange(5)), uri, data_storage_version="legacy")
    # An overwrite keeps the dataset's format unless another is named.
    ll.write_dataset(_rows(np.arange(3)), uri, mode="overwrite")
    assert lance.dataset(uri).data_storage_version == "0.1"
    ll.write_dataset(_rows(np.arange(3)), uri, mode="overwrite", data_storage_version="2.0")
    ds = lance.dataset(uri)
    assert ds.data_storage_version == "2.0"
    ds.validate()
    lance.write_dataset(_rows(np.arange(3, 6)), uri, mode="append")
    assert lance.dataset(uri).to_table().equals(_rows(np.arange(6)))


# -- winners lancelet does not perform itself ------------------------------------------


@pytest.mark.parametrize("mine_kind", list(BUILDERS))
def test_a_concurrent_pylance_index_build_conflicts_with_nothing(uri: str, mine_kind: str) -> None:
    mine_side, _ = _sides("overlap")
    mine = BUILDERS[mine_kind](_read_context(uri), mine_side)
    lance.dataset(uri).create_scalar_index("k", "BTREE")  # version V_READ + 1
    assert _commit(uri, mine) == "ok"
    assert_dataset_holds(uri, V_READ + 2, EFFECTS[mine_kind](State(TABLE_AT[2]), mine_side))
    if mine_kind == "rewrite":
        # The index no longer claims the rewritten fragment: its rows are scanned.
        assert mine_side.fragment not in _index_fragments(uri)
        assert lance.dataset(uri).to_table(filter="k = 12")["v"].to_pylist() == ["v12"]


# Outcomes (mine's kind -> code) when the winner is another writer's change to its
# write-ahead logs, or a column rewrite of fragment 1 ("data_replacement").
FOREIGN = {
    "update_mem_wal_state": {
        "append": "X",
        "delete": "X",
        "overwrite": "X",
        "restore": "X",
        "config": "ok",
        "reserve": "ok",
        "rewrite": "ok",
        "update": "ok",
        "merge": "X",
        "project": "X",
    },
    "data_replacement": {
        "append": "ok",
        "delete": "R",
        "overwrite": "ok",
        "restore": "ok",
        "config": "ok",
        "reserve": "ok",
        "rewrite": "R",
        "update": "R",
        "merge": "R",
        "project": "ok",
    },
}


@pytest.mark.parametrize("winner", list(FOREIGN))
@pytest.mark.parametrize("mine_kind", list(BUILDERS))
def test_foreign_winners(uri: str, winner: str, mine_kind: str) -> None:
    from lancelet.transaction.conflicts import rebase

    mine_side, _ = _sides("overlap")
    mine = ops.Transaction(V_READ, BUILDERS[mine_kind](_read_context(uri), mine_side))
    touched = frozenset({1}) if winner == "data_replacement" else frozenset()
    theirs = ops.Transaction(V_READ, ops.Foreign(winner, touched))
    try:
        rebase(mine, theirs, V_READ + 1, DatasetStore(uri))
        outcome = "ok"
    except RetryableCommitConflictError:
        outcome = "R"
    except IncompatibleTransactionError:
        outcome = "X"
    assert outcome == FOREIGN[winner][mine_kind]


def test_dropping_columns_unlists_files_holding_nothing_else_as_pylance_does(uri: str) -> None:
    ll.dataset(uri).add_columns({"w": "k * 2"})  # one new file per fragment
    twin = uri + "-pylance"
    copy_tree(uri, twin)
    ll.dataset(uri).drop_columns(["w", "v"])
    lance.dataset(twin).drop_columns(["w", "v"])

    def layout(path: str) -> list[list[list[int]]]:
        fragments = lance.dataset(path).get_fragments()
        return [[list(d.fields) for d in f.metadata.files] for f in fragments]

    assert layout(uri) == layout(twin) == [[[0, 1]]] * 4
    assert_dataset_holds(uri, V_READ + 2, State(TABLE_AT[2].select(["k"])))
