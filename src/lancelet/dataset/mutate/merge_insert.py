"""merge_insert: upserts, find-or-create and replace-by-source as one Update commit.

The source rows are joined to the target's key columns (a binary search when the
target's integer keys ascend, else a hash join in Arrow; SQL semantics: null keys
match nothing).  Each join pair is a *matched* row; source
rows in no pair are *not matched*, target rows in no pair are *not matched by
source*.  Updated and inserted rows are written as new fragments, and the old copies
of updated rows, like deleted rows, go through deletion vectors, so the whole change
is one ``Update`` operation, as pylance commits it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.dataset.core import arguments
from lancelet.dataset.mutate.delete import delete_addresses
from lancelet.dataset.mutate.merge_index import indexed_targets, refuse_plan, takes_index_path
from lancelet.dataset.mutate.merge_insert_options import MergeInsertOptions
from lancelet.dataset.mutate.merge_join import sorted_target_pairs
from lancelet.dataset.mutate.merge_plan import MergeSpec, analyze_merge, explain_merge
from lancelet.dataset.mutate.update import RowRewrite
from lancelet.dataset.read import blob_v2
from lancelet.dataset.read.fragment_reader import FragmentReader
from lancelet.dataset.read.scanner import ROW_ADDRESS, LanceScanner, live_rows
from lancelet.dataset.read.take import created_at, row_ids_at
from lancelet.dataset.versions.operation_view import public_operation
from lancelet.dataset.versions.transactions import Transaction
from lancelet.dataset.write.data_files import (
    check_writable,
    conform,
    discard_data_files,
    write_fragment_files,
)
from lancelet.dataset.write.inputs import as_reader
from lancelet.errors import (
    AppendSchemaError,
    ArgumentError,
    LanceletError,
    MergeInsertError,
    SchemaError,
)
from lancelet.expr.filter import parse_filter
from lancelet.file.primary_key import key_fields
from lancelet.table import lineage, row_address
from lancelet.table.blob_v2 import values_schema
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema
from lancelet.transaction.operations import Delete, Update
from lancelet.transaction.store import DatasetStore

# The source row each join pair came from.
_SOURCE_ROW = "__merge_source_row"
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)

Planner = Callable[[Manifest], "RowRewrite[Update] | RowRewrite[Delete]"]
Runner = Callable[[Planner, int, timedelta], dict[str, int]]


def key_columns(on: str | Iterable[str] | None, schema: LanceSchema, where: str) -> tuple[str, ...]:
    """The join keys: ``on``, or the dataset's unenforced primary key (in key order)."""
    if on is None:
        key = key_fields(schema.fields)
        nested = [schema.field_path(f.id) for f in key if f.parent_id != -1]
        if nested:
            # pylance joins on every key field and fails on a nested one.
            raise MergeInsertError(
                f"{where}: merge_insert joins on the primary key when `on` is not given, "
                f'and its field "{nested[0]}" is nested: No field named "{nested[0]}"'
            )
        keys = tuple(f.name for f in key)
    else:
        keys = (on,) if isinstance(on, str) else tuple(on)
    if not keys:
        raise ArgumentError(
            f"{where}: merge_insert needs key columns: pass `on` or give the dataset a primary key"
        )
    schema.resolve(keys, where)
    return keys


class MergeInsertBuilder(MergeInsertOptions):
    """pylance's builder: choose what happens to each category of rows, then
    :meth:`execute`."""

    def __init__(
        self,
        store: DatasetStore,
        schema: LanceSchema,
        on: str | Iterable[str] | None,
        run: Runner,
        manifest: Manifest | None = None,
    ) -> None:
        self._store = store
        # The version explain_plan and analyze_plan describe (default: the latest).
        self._manifest = manifest
        self._spec = MergeSpec(key_columns(on, schema, f"{store.root}: merge_insert"))
        self._run = run
        self._retries = 10
        self._timeout = timedelta(seconds=30)

    def when_matched_update_all(self, condition: str | None = None) -> MergeInsertBuilder:
        """Replace matched target rows with their source rows; with ``condition`` (SQL
        over ``target.col`` and ``source.col``) only the pairs it holds for."""
        self._spec = replace(self._spec, matched="update", update_condition=condition)
        return self

    def when_matched_delete(self) -> MergeInsertBuilder:
        self._spec = replace(self._spec, matched="delete", update_condition=None)
        return self

    def when_matched_fail(self) -> MergeInsertBuilder:
        self._spec = replace(self._spec, matched="fail", update_condition=None)
        return self

    def when_not_matched_insert_all(self) -> MergeInsertBuilder:
        self._spec = replace(self._spec, insert=True)
        return self

    def when_not_matched_by_source_delete(self, expr: str | None = None) -> MergeInsertBuilder:
        """Delete target rows no source row matches (only those matching ``expr``, SQL
        over the target's columns, if given)."""
        self._spec = replace(self._spec, delete_unmatched=True, delete_condition=expr)
        return self

    def use_index(self, use_index: bool) -> MergeInsertBuilder:
        """Whether the join may look the source keys up in a scalar index on the key
        (the default) rather than scan the whole key column; see :mod:`.merge_index`."""
        if not isinstance(use_index, bool):
            raise TypeError(
                f"argument 'use_index': {type(use_index).__name__!r} object is not an "
                "instance of 'bool'"
            )
        self._spec = replace(self._spec, use_index=use_index)
        return self

    def conflict_retries(self, max_retries: int) -> MergeInsertBuilder:
        self._retries = arguments.unsigned(max_retries, "max_retries", "conflict_retries")
        return self

    def retry_timeout(self, timeout: timedelta) -> MergeInsertBuilder:
        if not isinstance(timeout, timedelta):
            raise TypeError(f"retry_timeout: timeout must be a datetime.timedelta, not {timeout!r}")
        self._timeout = timeout
        return self

    def _planned_on(self) -> Manifest:
        if self._manifest is not None:
            return self._manifest
        return self._store.read_manifest(self._store.latest_version())

    def explain_plan(self, schema: pa.Schema | None = None, verbose: bool = False) -> str:
        """The plan of this merge for source data of ``schema`` (default: the
        dataset's), checked as :meth:`execute` checks the data."""
        manifest = self._planned_on()
        self._refuse_index_path(manifest, "explain_plan")
        arrow = manifest.schema.to_arrow()
        source = arrow if schema is None else schema
        if not isinstance(source, pa.Schema):
            raise TypeError(f"explain_plan: schema must be a pyarrow.Schema, not {schema!r}")
        label = f"{self._store.root}: merge_insert"
        _source_columns(source.empty_table(), arrow, self._spec.on, label)
        return explain_merge(self._store, manifest, self._spec, source, verbose)

    def _refuse_index_path(self, manifest: Manifest, what: str) -> None:
        spec = self._spec
        if takes_index_path(manifest, spec.on, spec.use_index, spec.delete_unmatched):
            raise refuse_plan(self._store.root, what)

    def analyze_plan(self, data_obj: Any, *, schema: pa.Schema | None = None) -> str:
        """Run this merge on ``data_obj`` without committing it (the files it writes
        are removed) and return its plan with what it did."""
        self._checked_spec()
        manifest = self._planned_on()
        self._refuse_index_path(manifest, "plan reporting")
        source = as_reader(data_obj, schema).read_all()
        return analyze_merge(self._store, manifest, self._spec, source, plan_merge_insert)

    def execute(self, data_obj: Any, *, schema: pa.Schema | None = None) -> dict[str, int]:
        """Run the merge and commit it; returns the counts of inserted, updated and
        deleted rows."""
        spec = self._checked_spec()
        # Kept whole: a retry after a conflict joins the same rows again.
        source = as_reader(data_obj, schema).read_all()
        return self._run(
            lambda manifest: plan_merge_insert(self._store, manifest, source, spec),
            self._retries,
            self._timeout,
        )

    def execute_uncommitted(
        self, data_obj: Any, *, schema: pa.Schema | None = None
    ) -> tuple[Transaction, dict[str, int]]:
        """Write the merge's files without committing: the transaction to pass to
        ``LanceDataset.commit``, and the counts it will have."""
        if self._manifest is None:
            raise ArgumentError("execute_uncommitted needs the dataset version it reads")
        planned = plan_merge_insert(
            self._store,
            self._manifest,
            as_reader(data_obj, schema).read_all(),
            self._checked_spec(),
        )
        txn = Transaction(self._manifest.version, public_operation(planned.operation))
        return txn, planned.counts

    def _checked_spec(self) -> MergeSpec:
        spec = self._spec
        # when_matched_fail alone checks that no source row matches, as in pylance.
        if spec.matched == "keep" and not spec.insert and not spec.delete_unmatched:
            raise ArgumentError(
                f"{self._store.root}: this merge_insert changes nothing; call "
                "when_matched_update_all, when_not_matched_insert_all or "
                "when_not_matched_by_source_delete first"
            )
        return spec


# -- planning ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Outcome:
    """What a merge does to each row: pairs (source row, target address) whose target
    row is replaced, other target rows deleted, and source rows inserted."""

    updated_pairs: pa.Table
    deleted: np.ndarray
    inserted: np.ndarray

    def counts(self) -> dict[str, int]:
        return {
            "num_inserted_rows": len(self.inserted),
            "num_updated_rows": self.updated_pairs.num_rows,
            "num_deleted_rows": len(self.deleted),
        }


def plan_merge_insert(
    store: DatasetStore, manifest: Manifest, source: pa.Table, spec: MergeSpec
) -> RowRewrite[Update]:
    """Write the new rows and the deletion vectors of one merge; nothing is committed.
    Every check runs before anything is written, and a failure while writing removes
    what was written."""
    label = f"{store.root}: merge_insert"
    check_writable(manifest)
    # Rows flow with their blob v2 values (the source's, or read from the target).
    schema = values_schema(manifest.schema.to_arrow())
    keys = key_columns(spec.on, manifest.schema, label)
    source = _source_columns(source, schema, keys, label)
    outcome = _classify(store, manifest, source, keys, spec, label)
    new_rows = _new_rows(store, manifest, source, outcome, schema, label)
    replaced = outcome.updated_pairs.column(ROW_ADDRESS).to_numpy()
    new_fragments = _write_new_rows(store, manifest, new_rows, replaced)
    try:
        updated, removed = delete_addresses(
            store, manifest, np.concatenate([replaced, outcome.deleted])
        )
    except BaseException:
        discard_data_files(store, new_fragments)
        raise
    inserted_keys = None
    if len(outcome.inserted):
        inserted_keys = KeySet(store, keys, source.take(outcome.inserted).select(list(keys)))
    every_field = tuple(f.id for f in manifest.schema.fields)  # as pylance records it
    operation = Update(
        removed, updated, tuple(new_fragments), (), every_field, inserted_keys=inserted_keys
    )
    return RowRewrite(operation, outcome.counts())


def _classify(
    store: DatasetStore,
    manifest: Manifest,
    source: pa.Table,
    keys: tuple[str, ...],
    spec: MergeSpec,
    where: str,
) -> _Outcome:
    target = None
    if takes_index_path(manifest, keys, spec.use_index, spec.delete_unmatched):
        target = indexed_targets(store, manifest, source.column(keys[0]), keys[0])
    if target is None:
        target = LanceScanner(store, manifest, columns=[*keys, ROW_ADDRESS]).to_table()
    pairs = _join(source, target, keys, where)
    updated_pairs, deleted = _matched_rows(store, manifest, source, pairs, spec, where)
    if spec.delete_unmatched:
        matched = pairs.column(ROW_ADDRESS).to_numpy()
        deleted = np.concatenate(
            [deleted, _unmatched_targets(store, manifest, target, matched, spec)]
        )
    return _Outcome(updated_pairs, deleted, _inserted_rows(source, pairs, spec))


def _source_columns(
    source: pa.Table, schema: pa.Schema, keys: tuple[str, ...], where: str
) -> pa.Table:
    """The source's columns in the dataset's order; it may leave some out (they keep
    their values in updated rows and are null in inserted ones), but not the keys.
    A mismatch is an OSError as well, as in pylance (which checks it as an append)."""
    unexpected = [n for n in source.column_names if n not in schema.names]
    if unexpected:
        raise AppendSchemaError(f"{where}: the data has columns the dataset lacks: {unexpected}")
    missing_keys = [k for k in keys if k not in source.column_names]
    if missing_keys:
        raise AppendSchemaError(f"{where}: key column {missing_keys[0]!r} is missing from the data")
    for name in source.column_names:
        want, got = schema.field(name).type, source.schema.field(name).type
        if want != got:
            raise AppendSchemaError(
                f"{where}: column {name!r} is {got} in the data but {want} in the dataset"
            )
    return source.select([n for n in schema.names if n in source.column_names])


def _join(source: pa.Table, target: pa.Table, keys: tuple[str, ...], where: str) -> pa.Table:
    """Every (source row, target row address) pair whose keys are equal, in source order."""
    pairs = sorted_target_pairs(source, target, keys, _SOURCE_ROW, ROW_ADDRESS)
    if pairs is not None:
        return pairs
    left = source.select(list(keys)).append_column(
        _SOURCE_ROW, pa.array(np.arange(source.num_rows, dtype=np.int64))
    )
    try:
        # The hash table is built on the right-hand input: make that the smaller one.
        small, large = (left, target) if left.num_rows <= target.num_rows else (target, left)
        pairs = large.join(small, list(keys), join_type="inner")
    except _ARROW_ERRORS as exc:
        raise SchemaError(f"{where}: cannot join on key columns {list(keys)}: {exc}") from exc
    pairs = pairs.select([_SOURCE_ROW, ROW_ADDRESS])
    return pairs.sort_by([(_SOURCE_ROW, "ascending"), (ROW_ADDRESS, "ascending")])


def _matched_rows(
    store: DatasetStore,
    manifest: Manifest,
    source: pa.Table,
    pairs: pa.Table,
    spec: MergeSpec,
    where: str,
) -> tuple[pa.Table, np.ndarray]:
    """The pairs whose target row is replaced by its source row, and the addresses of
    the matched target rows that are deleted."""
    none = np.empty(0, dtype=np.uint64)
    if spec.matched == "fail" and pairs.num_rows:
        raise MergeInsertError(
            f"{where}: {pairs.num_rows} source rows match existing rows "
            "(when_matched_fail); nothing was changed"
        )
    if spec.matched == "delete":
        return pairs.slice(0, 0), np.unique(pairs.column(ROW_ADDRESS).to_numpy())
    if spec.matched != "update":
        return pairs.slice(0, 0), none
    if spec.update_condition is not None and pairs.num_rows:
        pairs = _where_condition(store, manifest, source, pairs, spec.update_condition, where)
    addresses = pairs.column(ROW_ADDRESS).to_numpy()
    if bool(np.all(addresses[1:] > addresses[:-1])):
        return pairs, none  # ascending (source rows in table order): no target twice
    unique, counts = np.unique(addresses, return_counts=True)
    if len(unique) and counts.max() > 1:
        raise MergeInsertError(
            f"{where}: several source rows match the same target row "
            f"({row_address.describe(unique[counts > 1][0])}); each target row may be updated "
            "by one source row only"
        )
    # Updated rows are written in the table's order, as pylance writes them.
    return pairs.take(np.argsort(addresses, kind="stable")), none


def _where_condition(
    store: DatasetStore,
    manifest: Manifest,
    source: pa.Table,
    pairs: pa.Table,
    condition: str,
    where: str,
) -> pa.Table:
    """The pairs for which ``condition`` holds; it sees each side as a struct column,
    so ``target.x`` and ``source.x`` name the two versions of column ``x``."""
    addresses = pairs.column(ROW_ADDRESS).to_numpy()
    target_rows = rows_at(store, manifest, addresses, manifest.schema.to_arrow().names)
    source_rows = source.take(pairs.column(_SOURCE_ROW))
    sides = pa.table(
        {
            "target": target_rows.to_struct_array(),
            "source": source_rows.to_struct_array(),
        }
    )
    predicate = parse_filter(condition, sides.schema)
    try:
        keep = sides.append_column("row", pa.array(np.arange(pairs.num_rows))).filter(predicate)
    except _ARROW_ERRORS as exc:
        raise SchemaError(f"{where}: cannot evaluate condition {condition!r}: {exc}") from exc
    return pairs.take(keep.column("row"))


def _unmatched_targets(
    store: DatasetStore,
    manifest: Manifest,
    target: pa.Table,
    matched: np.ndarray,
    spec: MergeSpec,
) -> np.ndarray:
    """Addresses of the target rows no source row matched (and ``delete_condition``
    selects)."""
    candidates = target
    if spec.delete_condition is not None:
        scan = LanceScanner(store, manifest, columns=[ROW_ADDRESS], filter=spec.delete_condition)
        candidates = scan.to_table()
    addresses = candidates.column(ROW_ADDRESS).to_numpy()
    out: np.ndarray = addresses[~np.isin(addresses, matched)]
    return out


def _inserted_rows(source: pa.Table, pairs: pa.Table, spec: MergeSpec) -> np.ndarray:
    if not spec.insert:
        return np.empty(0, dtype=np.int64)
    unmatched = np.ones(source.num_rows, dtype=bool)
    unmatched[pairs.column(_SOURCE_ROW).to_numpy()] = False  # rows are positions: a mask
    out: np.ndarray = np.flatnonzero(unmatched)
    return out


def _new_rows(
    store: DatasetStore,
    manifest: Manifest,
    source: pa.Table,
    outcome: _Outcome,
    schema: pa.Schema,
    where: str,
) -> pa.Table:
    """Updated rows (source values over the target's, for columns the source omits)
    then inserted rows (nulls for omitted columns), in the dataset's schema."""
    pairs = outcome.updated_pairs
    updated = source.take(pairs.column(_SOURCE_ROW))
    new = source.take(pa.array(outcome.inserted, pa.int64()))
    omitted = [n for n in schema.names if n not in source.column_names]
    if omitted:
        addresses = pairs.column(ROW_ADDRESS).to_numpy()
        kept = blob_v2.values_of(store, manifest, rows_at(store, manifest, addresses, omitted),
                                 addresses)  # fmt: skip
        for name in omitted:
            updated = updated.append_column(schema.field(name), kept.column(name))
            new = new.append_column(
                schema.field(name), pa.nulls(new.num_rows, schema.field(name).type)
            )
    rows = pa.concat_tables([updated.select(schema.names), new.select(schema.names)])
    reader = conform(rows.to_reader(), schema, where)
    # Checked now, before any file is written: the rows are in memory anyway.
    return pa.Table.from_batches(list(reader), schema=schema)


def _write_new_rows(
    store: DatasetStore, manifest: Manifest, rows: pa.Table, replaced: np.ndarray
) -> list[Fragment]:
    """Write the updated rows (the first ``len(replaced)``) then the inserted ones, in
    one stream as pylance does.  With stable row ids an updated row keeps its id and
    creation version; an inserted one gets a new id at commit (``lineage.carried``)."""
    written = write_fragment_files(
        store, rows.to_reader(), manifest.schema, manifest.data_storage_version
    )
    if not manifest.stable_row_ids:
        return written
    try:
        ids = row_ids_at(store, manifest, replaced)
        created = created_at(store, manifest, replaced)
        return lineage.carried(written, ids, created, then_new=True)
    except BaseException:
        discard_data_files(store, written)
        raise


def rows_at(
    store: DatasetStore, manifest: Manifest, addresses: np.ndarray, columns: list[str]
) -> pa.Table:
    """The given columns of the rows at ``addresses``, in that order."""
    if not len(addresses):
        return manifest.schema.to_arrow().empty_table().select(columns)
    unique, back = np.unique(addresses.astype(np.uint64), return_inverse=True)
    parts = []
    for fragment_id, rows in row_address.by_fragment(unique).items():
        fragment = manifest.fragment(fragment_id)
        assert fragment is not None, f"row address of unknown fragment {fragment_id}"
        reader = FragmentReader(store, manifest.schema, fragment)
        parts.append(reader.take(columns, rows.astype(np.int64)))
    return pa.concat_tables(parts).take(pa.array(back.reshape(-1)))


# -- concurrent inserts -----------------------------------------------------------------


@dataclass(frozen=True)
class KeySet:
    """The keys this merge inserts, to check against rows other writers added since."""

    store: DatasetStore
    on: tuple[str, ...]
    keys: pa.Table

    def found_in(self, fragments: tuple[Fragment, ...], schema: LanceSchema) -> bool:
        for fragment in fragments:
            try:
                theirs = _live_keys(self.store, schema, fragment, self.on)
                if self.keys.join(theirs, list(self.on), join_type="left semi").num_rows:
                    return True
            except (LanceletError, *_ARROW_ERRORS):
                # Keys that cannot be compared (a column renamed or retyped meanwhile):
                # assume the worst, so the merge re-runs on the new data.
                return True
        return False


def _live_keys(
    store: DatasetStore, schema: LanceSchema, fragment: Fragment, on: tuple[str, ...]
) -> pa.Table:
    reader = FragmentReader(store, schema, fragment)
    rows = fragment.physical_rows
    return live_rows(reader, reader.read(list(on), 0, rows), 0, rows, with_addresses=False)
