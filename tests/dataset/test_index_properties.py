"""Property: an index-assisted query always returns what the plain scan returns.

A random table (``tests/dataset/row_model.py``) is written by lancelet or pylance
(format 2.0 or 2.2, a few rows per file, sometimes with stable row ids), indexed by
either library (BTREE, BITMAP, ZONEMAP, BLOOMFILTER, several on one column), then
changed by a random sequence of steps, each done by either library: deletes,
updates, appends, compactions (some deferring index remapping to the Fragment
Reuse Index), trims of that index, ``optimize_indices`` and new indices.  After every
step, random filters are run four ways and must agree:

* lancelet using its indices, and lancelet with ``use_scalar_index=False``: the same
  rows in the same order (with limit/offset, row ids and addresses sometimes);
* pylance, using the same indices: the same rows in the same order;
* for the model's own predicates, the rows the model selects (compared by ``id``,
  as a scan's order is the library's business), and the whole table must equal the
  model's after every step, in both libraries.

Filters come from the model (column-typed literals, evaluated independently) and from
the expression grammar (``tests/expr/grammar.py``: literals of other types, overflow,
LIKE wildcards and escapes), for which lancelet's plain scan is the reference.

CI runs a few seeded examples; a longer campaign:
``LANCELET_INDEX_PROPS_EXAMPLES=500 LANCELET_INDEX_PROPS_SEED=7 pytest <this file>``.
"""

from __future__ import annotations

import math
import os
import shutil
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, event, given, note, seed, settings
from hypothesis import strategies as st

import lancelet as ll
from lancelet.dataset.read import index_plan
from lancelet.errors import FilterError, IndexExistsError
from tests.dataset import row_model as model
from tests.expr.grammar import filter_sql
from tests.storage import copy_tree, scratch_dir
from tests.versions import STORAGE_VERSION

EXAMPLES = int(os.environ.get("LANCELET_INDEX_PROPS_EXAMPLES", "10"))
STEPS_MAX = int(os.environ.get("LANCELET_INDEX_PROPS_STEPS", "6"))
# Shrinking a failure takes minutes; a campaign may skip it.
PHASES = (
    list(Phase)
    if os.environ.get("LANCELET_INDEX_PROPS_SHRINK", "1") == "1"
    else [Phase.explicit, Phase.generate]
)
SEED = int(os.environ.get("LANCELET_INDEX_PROPS_SEED", "12")) + (STORAGE_VERSION == "2.0")

LIBRARIES = {"lancelet": ll, "pylance": lance}


class World:
    """The dataset under test, the model of its rows, and a dataset object per library
    kept across steps (so that what a lancelet object caches, such as open indices, is
    used across versions)."""

    def __init__(self, path: str, names: list[str], pools: model.Pools, next_id: int) -> None:
        self.path = path
        self.names = names
        self.pools = pools
        self.rows: list[model.Row] = []
        self.next_id = next_id
        self.searches = 0
        self._handles: dict[str, Any] = {}
        # version -> (rows, columns) of the model at that version
        self.history: dict[int, tuple[list[model.Row], list[str]]] = {}

    def __repr__(self) -> str:
        return f"World({self.names})"

    @property
    def columns(self) -> list[str]:
        return ["id", *model.leaf_columns(self.names)]

    def arrow(self, rows: list[model.Row]) -> pa.Table:
        return model.to_arrow(rows, self.names)

    def admit(self, rows: list[model.Row]) -> list[model.Row]:
        """Rows as Arrow stores them (float32 values rounded): what reads return."""
        stored: list[model.Row] = self.arrow(rows).to_pylist()
        return stored

    def handle(self, lib: str) -> Any:
        """``lib``'s dataset object, at the latest version."""
        found = self._handles.get(lib)
        if found is None or found.version != found.latest_version:
            found = self._handles[lib] = LIBRARIES[lib].dataset(self.path)
        return found

    def record(self) -> None:
        """Remember the model's rows as the latest version's."""
        self.history[self.handle("lancelet").version] = (list(self.rows), list(self.names))

    def indices(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.handle("lancelet").list_indices()
        return found


class View:
    """What the checks read: one version of the dataset (None: the latest) and the
    model's rows at that version."""

    def __init__(self, world: World, version: int | None) -> None:
        self.world = world
        self.version = version
        latest = (world.rows, world.names)
        self.rows, self.names = latest if version is None else world.history[version]
        self._handles: dict[str, Any] = {}

    @property
    def columns(self) -> list[str]:
        return ["id", *model.leaf_columns(self.names)]

    def arrow(self, rows: list[model.Row]) -> pa.Table:
        return model.to_arrow(rows, self.names)

    def handle(self, lib: str) -> Any:
        if self.version is None:
            return self.world.handle(lib)
        if lib not in self._handles:
            self._handles[lib] = LIBRARIES[lib].dataset(self.world.path, version=self.version)
        return self._handles[lib]

    def indices(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.handle("lancelet").list_indices()
        return found


# --- comparing rows ------------------------------------------------------------------


def _exact(value: Any) -> Any:
    """A value that compares equal only to the same bits: NaN's sign and -0.0 count."""
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, dict):
        return {k: _exact(v) for k, v in value.items()}
    return value


def rows(table: pa.Table) -> list[dict[str, Any]]:
    return [_exact(r) for r in table.to_pylist()]


def by_id(values: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(values, key=lambda r: int(r["id"]))


# --- the steps -----------------------------------------------------------------------


@st.composite
def worlds(draw: st.DrawFn, root: str) -> World:
    names = draw(st.lists(st.sampled_from(model.OPTIONAL), min_size=1, max_size=4, unique=True))
    names = [n for n in model.OPTIONAL if n in names]
    storage = draw(st.sampled_from(["2.0", "2.2"]))
    pools = model.Pools.draw(draw, names, null_structs=storage != "2.0")
    count = draw(st.integers(0, 60))
    rows = draw(model.rows_strategy(names, pools, 0, count))
    world = World(os.path.join(root, "ds"), names, pools, count)
    world.rows = world.admit(rows)
    lib = draw(st.sampled_from(sorted(LIBRARIES)))
    args: dict[str, Any] = dict(
        max_rows_per_file=draw(st.integers(3, 30)),
        data_storage_version=storage,
        enable_stable_row_ids=draw(st.integers(0, 2)) == 0,
    )
    note(f"{lib}.write_dataset({rows}, {args})")
    LIBRARIES[lib].write_dataset(world.arrow(rows), world.path, **args)
    return world


def _create_index(data: st.DataObject, world: World, lib: str) -> None:
    column = data.draw(st.sampled_from(world.columns), "column")
    kind = data.draw(st.sampled_from(model.index_kinds(column)), "kind")
    name = data.draw(st.sampled_from([None, None, "ix_a", "ix_b"]), "name")
    params: dict[str, Any] = {}
    # Small zones, so that a fragment has several (pylance 14 ignores these parameters).
    if lib == "lancelet" and kind == "ZONEMAP" and data.draw(st.booleans(), "small zones"):
        params["rows_per_zone"] = data.draw(st.integers(1, 8), "rows_per_zone")
    if lib == "lancelet" and kind == "BLOOMFILTER" and data.draw(st.booleans(), "small zones"):
        params["number_of_items"] = data.draw(st.integers(1, 8), "number_of_items")
    note(f"{lib}: create_scalar_index({column!r}, {kind!r}, name={name!r}, **{params})")
    try:
        world.handle(lib).create_scalar_index(column, kind, name=name, **params)
    except (IndexExistsError, RuntimeError) as e:
        # A name another column's index holds: both libraries refuse.
        assert name is not None and "exist" in str(e).lower(), e
        event("index name taken")
        return
    event(f"index {kind}")


def _delete(data: st.DataObject, world: World, lib: str) -> None:
    pred = data.draw(model.predicate(world.columns, world.rows), "delete where")
    note(f"{lib}: delete({pred.sql()!r})")
    world.handle(lib).delete(pred.sql())
    world.rows = [r for r in world.rows if pred.eval(r) is not True]


def _update(data: st.DataObject, world: World, lib: str) -> None:
    columns = [c for c in world.names if c != "st" and model.literals(c)]
    if not columns:
        return
    column = data.draw(st.sampled_from(columns), "update column")
    value = data.draw(st.sampled_from([model.NULL, *model.literals(column)]), "value")
    pred = data.draw(st.none() | model.predicate(world.columns, world.rows), "where")
    where = None if pred is None else pred.sql()
    note(f"{lib}: update({{{column!r}: {value.sql!r}}}, where={where!r})")
    world.handle(lib).update({column: value.sql}, where=where)
    changed = [
        {**r, column: value.value} if pred is None or pred.eval(r) is True else r
        for r in world.rows
    ]
    world.rows = world.admit(changed)


def _append(data: st.DataObject, world: World, lib: str) -> None:
    count = data.draw(st.integers(1, 25), "append rows")
    new = data.draw(model.rows_strategy(world.names, world.pools, world.next_id, count), "rows")
    world.next_id += count
    per_file = data.draw(st.integers(3, 30), "max_rows_per_file")
    note(f"{lib}: append {count} rows, max_rows_per_file={per_file}")
    LIBRARIES[lib].write_dataset(
        world.arrow(new), world.path, mode="append", max_rows_per_file=per_file
    )
    world.rows += world.admit(new)


def _overwrite(data: st.DataObject, world: World, lib: str) -> None:
    count = data.draw(st.integers(0, 25), "overwrite rows")
    new = data.draw(model.rows_strategy(world.names, world.pools, world.next_id, count), "rows")
    world.next_id += count
    per_file = data.draw(st.integers(3, 30), "max_rows_per_file")
    note(f"{lib}: overwrite with {count} rows, max_rows_per_file={per_file}")
    LIBRARIES[lib].write_dataset(
        world.arrow(new), world.path, mode="overwrite", max_rows_per_file=per_file
    )
    world.rows = world.admit(new)


def _merge_insert(data: st.DataObject, world: World, lib: str) -> None:
    """An upsert on ``id``: matched rows replaced, new ones inserted (sometimes), rows
    the source lacks deleted (sometimes)."""
    known = [r["id"] for r in world.rows]
    keys = data.draw(
        st.lists(
            st.sampled_from(known) | st.integers(world.next_id, world.next_id + 20),
            unique=True,
            max_size=12,
        )
        if known
        else st.lists(st.integers(world.next_id, world.next_id + 20), unique=True, max_size=12),
        "keys",
    )
    world.next_id += 21
    source = world.admit(
        [data.draw(model.rows_strategy(world.names, world.pools, k, 1), "row")[0] for k in keys]
    )
    insert = data.draw(st.booleans(), "insert")
    delete = data.draw(st.integers(0, 4), "delete by source") == 0
    note(f"{lib}: merge_insert(id) of {source}, insert={insert}, delete_by_source={delete}")
    builder = world.handle(lib).merge_insert("id").when_matched_update_all()
    if insert:
        builder = builder.when_not_matched_insert_all()
    if delete:
        builder = builder.when_not_matched_by_source_delete()
    builder.execute(world.arrow(source))
    by_key = {r["id"]: r for r in source}
    kept = [by_key.get(r["id"], r) for r in world.rows if not delete or r["id"] in by_key]
    present = {r["id"] for r in world.rows}
    world.rows = kept + ([r for r in source if r["id"] not in present] if insert else [])


def _restore(data: st.DataObject, world: World, lib: str) -> None:
    older = sorted(world.history)[:-1]
    if not older:
        return
    version = data.draw(st.sampled_from(older), "version")
    note(f"{lib}: restore version {version}")
    LIBRARIES[lib].dataset(world.path, version=version).restore()
    rows, names = world.history[version]
    world.rows, world.names = list(rows), list(names)


def _drop_index(data: st.DataObject, world: World, lib: str) -> None:
    names = sorted({i["name"] for i in world.indices()})
    if not names:
        return
    name = data.draw(st.sampled_from(names), "index")
    note(f"{lib}: drop_index({name!r})")
    world.handle(lib).drop_index(name)


def _drop_column(data: st.DataObject, world: World, lib: str) -> None:
    if len(world.names) < 2:
        return
    column = data.draw(st.sampled_from(world.names), "drop column")
    note(f"{lib}: drop_columns([{column!r}])")
    world.handle(lib).drop_columns([column])
    world.names = [n for n in world.names if n != column]
    world.rows = [{k: v for k, v in r.items() if k != column} for r in world.rows]


def _compact(data: st.DataObject, world: World, lib: str) -> None:
    args: dict[str, Any] = dict(target_rows_per_fragment=data.draw(st.integers(4, 120), "target"))
    if data.draw(st.booleans(), "materialize"):
        args["materialize_deletions_threshold"] = data.draw(
            st.sampled_from([0.01, 0.1, 0.5]), "threshold"
        )
    # pylance refuses to defer on a dataset with stable row ids; lancelet then
    # remaps as without deferral.
    stable = ll.dataset(world.path)._manifest.stable_row_ids
    if data.draw(st.booleans(), "defer") and (lib == "lancelet" or not stable):
        args["defer_index_remap"] = True
        event("deferred compaction")
    note(f"{lib}: compact_files({args})")
    world.handle(lib).optimize.compact_files(**args)


def _trim(data: st.DataObject, world: World, lib: str) -> None:
    """Drop the reuse versions no segment needs (pylance has no such call)."""
    note("lancelet: optimize.cleanup_frag_reuse_index()")
    if world.handle("lancelet").optimize.cleanup_frag_reuse_index():
        event("reuse versions trimmed")


def _optimize(data: st.DataObject, world: World, lib: str) -> None:
    args: dict[str, Any] = dict(num_indices_to_merge=data.draw(st.sampled_from([0, 1]), "merge"))
    if data.draw(st.integers(0, 4), "retrain") == 0:
        args["retrain"] = True
    names = sorted({i["name"] for i in world.indices()})
    if names and data.draw(st.integers(0, 2), "some") == 0:
        args["index_names"] = data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    note(f"{lib}: optimize_indices({args})")
    dataset = world.handle(lib)
    try:
        dataset.optimize.optimize_indices(**args)
    except OSError as e:
        # pylance 14 bug: adding fragments to an index on a struct field looks the
        # field up by its own name among the top-level columns ("No column with name
        # a"); it fails, changing nothing.
        nested = any("." in i.field_names[0] for i in lance.dataset(world.path).describe_indices())
        if not (lib == "pylance" and nested and "No column with name" in str(e)):
            raise
        assert lance.dataset(world.path).version == dataset.version
        event("pylance bug: optimize_indices on a struct field")


# name -> (step, weight)
STEPS = {
    "delete": (_delete, 4),
    "update": (_update, 4),
    "append": (_append, 4),
    "compact": (_compact, 5),
    "trim": (_trim, 1),
    "optimize": (_optimize, 4),
    "index": (_create_index, 4),
    "merge_insert": (_merge_insert, 2),
    "overwrite": (_overwrite, 1),
    "restore": (_restore, 1),
    "drop_index": (_drop_index, 1),
    "drop_column": (_drop_column, 1),
}
STEP_NAMES = [name for name, (_, weight) in STEPS.items() for _ in range(weight)]


# --- the checks ----------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    sql: str
    options: dict[str, Any]


@st.composite
def query_options(draw: st.DrawFn, view: View) -> dict[str, Any]:
    """Scan options: a window, row ids and addresses, a projection, some fragments."""
    options: dict[str, Any] = {}
    if draw(st.integers(0, 3)) == 0:
        options["limit"] = draw(st.integers(0, 12))
        if draw(st.booleans()):
            options["offset"] = draw(st.integers(0, 12))
    if draw(st.integers(0, 3)) == 0:
        options["with_row_id"] = True
    if draw(st.integers(0, 5)) == 0:
        options["with_row_address"] = True
    if draw(st.integers(0, 5)) == 0:
        others = draw(st.lists(st.sampled_from(view.names), unique=True))
        options["columns"] = ["id", *others]
    if draw(st.integers(0, 5)) == 0:
        ids = [f.fragment_id for f in view.handle("lancelet").get_fragments()]
        options["fragments"] = draw(st.lists(st.sampled_from(ids), unique=True)) if ids else []
    return options


def scan(view: View, lib: str, query: Query, **extra: Any) -> list[dict[str, Any]]:
    """``query`` run by ``lib`` (fragments named by id are that library's objects)."""
    dataset = view.handle(lib)
    options = {**query.options, **extra}
    if "fragments" in options:
        options["fragments"] = [dataset.get_fragment(i) for i in options["fragments"]]
    return rows(dataset.scanner(filter=query.sql, **options).to_table())


def _agree(view: View, query: Query, *, pylance_filter: str = "") -> list[dict[str, Any]]:
    """lancelet with and without its indices, and pylance: the same rows in order;
    returns them.

    ``pylance_filter`` says why pylance may read the filter otherwise than lancelet
    (then pylance may refuse it, and its indexed answer need only equal its own plain
    scan): for the grammar's filters, semantics that differ on purpose (a double-quoted
    name is a string to pylance, a column to lancelet when it names one; see
    ``lancelet.expr.filter``); for some of the model's, pylance's bugs."""
    before = view.world.searches
    indexed = scan(view, "lancelet", query)
    if view.world.searches > before:
        event("an index answered")
    plain = scan(view, "lancelet", query, use_scalar_index=False)
    assert indexed == plain, f"lancelet's indexed scan differs from its plain scan: {query}"
    try:
        answer = scan(view, "pylance", query)
    except (ValueError, OSError):
        if not pylance_filter:
            raise
        event(f"pylance refused: {pylance_filter}")
        return plain
    if pylance_filter and answer != plain:
        # pylance reads the filter otherwise: its indexed answer need only equal its
        # own plain scan (up to its window bug).
        reference = scan(view, "pylance", query, use_scalar_index=False)
        if answer != reference and _pylance_window_bug(view, query):
            assert len(answer) == len(reference), f"pylance's window has another size: {query}"
        else:
            why = f"pylance's indexed scan differs from its plain scan: {query}"
            assert answer == reference, why
        event(f"pylance reads otherwise: {pylance_filter}")
        return plain
    if answer != plain and _pylance_window_bug(view, query):
        whole = {k: v for k, v in query.options.items() if k not in ("limit", "offset")}
        every = scan(view, "lancelet", Query(query.sql, whole), use_scalar_index=False)
        assert len(answer) == len(plain), f"pylance's window has another size: {query}"
        assert all(row in every for row in answer), f"pylance returns other rows: {query}"
        event("pylance bug: window of a partly indexed scan out of order")
        return plain
    if answer != plain and _pylance_zone_map_nan_bug(view, query.sql):
        assert _subsequence(answer, plain), f"pylance returns rows the scan does not: {query}"
        event("pylance bug: zone map misses NaNs")
        return plain
    assert answer == plain, f"pylance differs from lancelet: {query}"
    return plain


def _pylance_zone_map_nan_bug(view: View, sql: str) -> bool:
    """Whether ``sql`` names a float column holding NaNs that has a zone map.

    pylance 14's zone map search misses NaNs: a zone of NaNs alone (which its writer
    records with a null min) never matches a range, and a negative NaN never matches
    ``< x`` (it is below every number in the total order pylance's scans use).  Its
    answers then lack rows, never have extra ones (``test_zone_map_zones_holding_only_nans``
    shows lancelet answering these queries)."""
    for index in view.indices():
        if index["type"] != "ZoneMap":
            continue
        column = index["fields"][0]
        if model.value_type(column) not in ("f32", "f64"):
            continue
        nans = any(
            isinstance(v, float) and math.isnan(v)
            for v in (model.cell(r, column) for r in view.rows)
        )
        if nans and column.lower() in sql.lower():
            return True
    return False


def _pylance_window_bug(view: View, query: Query) -> bool:
    """Whether pylance may take ``query``'s limit/offset window out of scan order.

    pylance 14 answers an indexed query over fragments some index does not cover with
    the covered fragments' rows first when a limit or offset is given (without one, its
    rows come in scan order): fragments [2, 1] with an index on fragment 1 only and
    ``limit=8`` gives 8 rows of fragment 1, not fragment 2's row then 7 of fragment 1.
    The window then holds the right number of matching rows, not the first ones."""
    if "limit" not in query.options and "offset" not in query.options:
        return False
    scanned = query.options.get("fragments")
    if scanned is None:
        scanned = [f.fragment_id for f in view.handle("lancelet").get_fragments()]
    return any(not set(scanned) <= set(i["fragment_ids"]) for i in view.indices())


def _pylance_filter_bug(pred: model.Pred) -> str:
    """Why pylance may read the model's ``pred`` wrongly ("" if it should not).

    pylance 14 (DataFusion's simplifier) merges IN lists on one column without minding
    a NULL in them: ``id NOT IN (NULL, -1) OR id NOT IN (1, 2)`` selects every row, its
    first part being NULL (never true) for ``id`` 1 and 2 and the second FALSE."""
    lists = [p for p in model.walk(pred) if isinstance(p, model.InList)]
    for one in lists:
        if model.NULL in one.items and any(o is not one and o.column == one.column for o in lists):
            return "IN lists holding NULL merged (pylance bug)"
    return ""


def _subsequence(part: list[dict[str, Any]], whole: list[dict[str, Any]]) -> bool:
    rest = iter(whole)
    return all(any(row == other for other in rest) for row in part)


def _check_model_query(data: st.DataObject, view: View) -> None:
    # The Fragment Reuse Index a deferred compaction adds indexes no column.
    indexed = [i["fields"][0] for i in view.indices() if i["fields"]]
    pred = data.draw(model.predicate(view.columns, view.rows, indexed), "query")
    query = Query(pred.sql(), data.draw(query_options(view), "options"))
    bug = _pylance_filter_bug(pred)
    got = _agree(view, query, pylance_filter=bug)
    if "limit" in query.options or "offset" in query.options:
        whole = {k: v for k, v in query.options.items() if k not in ("limit", "offset")}
        full = _agree(view, Query(query.sql, whole), pylance_filter=bug)
        start = query.options.get("offset", 0)
        stop = start + query.options["limit"] if "limit" in query.options else None
        assert got == full[start:stop], f"limit/offset is not a window of the scan: {query}"
        return
    selected = model.select(view.rows, pred)
    if "fragments" in query.options:
        # The model knows rows, not fragments: which rows those fragments hold.
        held = scan(view, "lancelet", Query("true", {"fragments": query.options["fragments"]}))
        ids = {r["id"] for r in held}
        selected = [r for r in selected if r["id"] in ids]
    else:
        count = view.handle("lancelet").count_rows(filter=query.sql)
        assert count == len(selected), f"count_rows differs from the model: {query}"
    want = view.arrow(selected)
    if "columns" in query.options:
        want = want.select(query.options["columns"])
    plain = [{k: v for k, v in r.items() if not k.startswith("_")} for r in got]
    assert by_id(plain) == by_id(rows(want)), f"the scan differs from the model: {query}"


def _check_grammar_query(data: st.DataObject, view: View) -> None:
    empty = model.schema(view.names).empty_table().drop_columns(["id"])
    sql = data.draw(filter_sql(empty), "grammar query")
    query = Query(sql, data.draw(query_options(view), "options"))
    try:
        view.handle("lancelet").count_rows(filter=sql, use_scalar_index=False)
    except (FilterError, pa.ArrowInvalid):
        event("grammar filter refused")
        return
    _agree(view, query, pylance_filter="a grammar filter")


def check(data: st.DataObject, world: World) -> None:
    """The latest version, and sometimes an older one (time travel), read as the model
    says by both libraries, then queried."""
    versions: list[int | None] = [None]
    older = sorted(world.history)[:-1]
    if older and data.draw(st.integers(0, 3), "time travel") == 0:
        versions.append(data.draw(st.sampled_from(older), "version"))
    for version in versions:
        view = View(world, version)
        want = by_id(rows(view.arrow(view.rows)))
        for lib in LIBRARIES:
            got = by_id(rows(view.handle(lib).to_table()))
            assert got == want, f"{lib} reads other rows than the model's at version {version}"
        for _ in range(2):
            _check_model_query(data, view)
        _check_grammar_query(data, view)


@contextmanager
def counting_searches(world: World) -> Iterator[None]:
    real = index_plan.opened

    def counting(*args: Any) -> Any:
        index = real(*args)

        class Counted:
            def search(self, query: Any) -> Any:
                world.searches += 1
                return index.search(query)

            def __getattr__(self, name: str) -> Any:
                return getattr(index, name)

        return Counted()

    with mock.patch.object(index_plan, "opened", counting):
        yield


@contextmanager
def kept_on_failure(world: World) -> Iterator[None]:
    """With LANCELET_INDEX_PROPS_KEEP set, a failing example's dataset is copied there."""
    try:
        yield
    except BaseException:
        keep = os.environ.get("LANCELET_INDEX_PROPS_KEEP")
        if keep:
            shutil.rmtree(keep, ignore_errors=True)
            copy_tree(world.path, keep)
        raise


@seed(SEED)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    phases=PHASES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_indexed_queries_equal_plain_scans(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with scratch_dir(tmp_path_factory.getbasetemp()) as root:
        world = data.draw(worlds(root), "world")
        with counting_searches(world), kept_on_failure(world):
            for _ in range(data.draw(st.integers(1, 3), "indices")):
                _create_index(data, world, data.draw(st.sampled_from(sorted(LIBRARIES))))
            world.record()
            check(data, world)
            for _ in range(data.draw(st.integers(1, STEPS_MAX), "steps")):
                step = data.draw(st.sampled_from(STEP_NAMES), "step")
                lib = data.draw(st.sampled_from(sorted(LIBRARIES)), "library")
                STEPS[step][0](data, world, lib)
                world.record()
                check(data, world)
