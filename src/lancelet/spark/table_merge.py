"""``LanceTable.merge``: Delta's MERGE builder over a Lance dataset.

The join runs in Spark.  The target version is read with its row addresses and
aliased ``target`` (or the table's alias), the source by the other alias the
condition names (``source`` by default), and they are joined on the merge condition,
any boolean Spark SQL expression: its equalities between target and source columns
make it an equi-join, and serve as keys for spreading inserted rows and for noticing
concurrent inserts (without any, every row added meanwhile counts). A joined row is
*matched* (both sides), *not matched* (source only) or *not matched by source*
(target only); it takes the first clause of its category whose condition holds, or
none. Clause conditions and values are Spark SQL (strings or Columns) over
``target.x`` and ``source.x``, and new values are cast to the target column's Spark
type in Spark.

The changed rows are then hash-partitioned by target fragment, so one
task owns every change to a fragment; within a task the rows of existing target rows
come first. A task writes the updated rows, then the inserted rows, as new fragments
and deletes the old copies of updated and deleted rows through one new deletion
vector per fragment. The driver commits one Update read at the version the join
read.
"""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa
import sqlglot
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as st
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from lancelet.dataset.engine import (
    ROW_ADDRESS,
    InsertedKeys,
    Location,
    Operation,
    Snapshot,
    Update,
    apply_row_change,
    data_format,
    discard_written,
    extend_schema,
    fold_into_merge,
    open_snapshot,
    write_fragments,
)
from lancelet.errors import DatasetError, SchemaError
from lancelet.spark.source import FORMAT
from lancelet.spark.storage import as_spark_options
from lancelet.spark.table_jobs import (
    RowChanges,
    TaskOutcome,
    captured,
    commit_changes,
    gathered,
)
from lancelet.spark.table_versions import command_properties, counts_frame
from lancelet.spark.writer import PortableSchema, new_dataset_schema
from lancelet.table import row_address
from lancelet.table.fragment import Fragment
from lancelet.table.schema import LanceSchema

TARGET, SOURCE = "target", "source"
# Columns the job adds; the values of the dataset's columns keep their names.
ADDRESS = "__lancelet_target_row"
KIND = "__lancelet_kind"
_CLAUSE = "__lancelet_clause"
_IN_SOURCE = "__lancelet_in_source"
UPDATE, DELETE, INSERT = 0, 1, 2
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError)

Category = Literal["matched", "not matched", "not matched by source"]
Sql = str | Column


@dataclass(frozen=True, eq=False)
class _Clause:
    category: Category
    action: int
    condition: Sql | None
    # Column -> value; with ``from_source`` every column takes the source's value.
    values: Mapping[str, Sql]
    from_source: bool = False


@dataclass(frozen=True)
class Aliases:
    """The names the merge condition and clauses give the two sides."""

    target: str = TARGET
    source: str = SOURCE


def column_aliases(
    condition: Column, source: DataFrame, target: str, where: str
) -> tuple[tuple[tuple[str, str], ...], Aliases]:
    """No join keys (Spark plans the join from the Column itself; conflicts are then
    judged without keys) and the aliases: the table's, and the source DataFrame's own
    (``source`` if it has none).  Spark Connect keeps the plan on the server, where the
    alias cannot be read: pass SQL text there."""
    java = getattr(source, "_jdf", None)
    if java is None:
        raise TypeError(
            f"{where}: under Spark Connect pass the merge condition as SQL text, e.g. 't.id = s.id'"
        )
    plan = java.queryExecution().analyzed()
    alias = str(plan.alias()) if plan.nodeName() == "SubqueryAlias" else SOURCE
    return (), Aliases(target.lower(), alias.lower())


def join_keys(
    condition: str, where: str, target: str = TARGET
) -> tuple[tuple[tuple[str, str], ...], Aliases]:
    """The (target column, source column) pairs of an AND of equalities, and the
    aliases: ``target`` (the table's alias) and the other qualifier the condition
    uses, the source's (``source`` by default, or the DataFrame's alias)."""
    if not isinstance(condition, str):
        raise TypeError(
            f"{where}: the merge condition must be SQL text or a Column, not "
            f"{type(condition).__name__}"
        )
    try:
        tree = sqlglot.parse_one(condition, read="spark")
    except (ParseError, TokenError) as exc:
        raise ValueError(f"{where}: cannot parse merge condition {condition!r}: {exc}") from exc
    qualifiers = {c.table.lower() for c in tree.find_all(exp.Column) if c.table}
    others = sorted(qualifiers - {target.lower()})
    if len(others) > 1:
        raise ValueError(
            f"{where}: the merge condition {condition!r} names {others} besides the "
            f"target ({target}); qualify source columns by one alias"
        )
    aliases = Aliases(target.lower(), others[0] if others else SOURCE)
    found = (_equality(term, aliases) for term in _conjuncts(tree))
    return tuple(k for k in found if k is not None), aliases


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    node = node.unnest()
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def _equality(term: exp.Expr, aliases: Aliases) -> tuple[str, str] | None:
    """A conjunct equating a target column with a source column, as a key pair; any
    other condition is Spark's to evaluate in the join."""
    sides = {}
    if isinstance(term, exp.EQ):
        for side in (term.this.unnest(), term.expression.unnest()):
            if isinstance(side, exp.Column) and not side.args.get("db"):
                sides[side.table.lower()] = side.name
    if set(sides) != {aliases.target, aliases.source}:
        return None
    return sides[aliases.target], sides[aliases.source]


def _named(name: str, names: Iterable[str]) -> str | None:
    """``name`` among ``names``: exactly, or else ignoring case (as Spark resolves)."""
    names = list(names)
    if name in names:
        return name
    found = [n for n in names if n.lower() == name.lower()]
    return found[0] if len(found) == 1 else None


def _sql(value: object, what: str) -> Column:
    if isinstance(value, str):
        return F.expr(value)
    if isinstance(value, Column):
        return value
    raise TypeError(f"{what} must be Spark SQL text or a Column, not {type(value).__name__}")


class LanceMergeBuilder:
    """Delta's ``DeltaMergeBuilder``: add ``when...`` clauses, then :meth:`execute`.

    Each method returns a new builder.  In each category the clauses are tried in
    order; only the last one may omit its condition.
    """

    def __init__(
        self,
        spark: SparkSession,
        uri: str,
        source: DataFrame,
        condition: str | Column,
        clauses: tuple[_Clause, ...] = (),
        target_alias: str = TARGET,
        evolve: bool = False,
        storage_options: dict[str, str] | None = None,
    ) -> None:
        self._where = f"{uri}: merge"
        self._evolve = evolve
        self._keys, self._aliases = (
            column_aliases(condition, source, target_alias, self._where)
            if isinstance(condition, Column)
            else join_keys(condition, self._where, target_alias)
        )
        self._spark = spark
        self._uri = uri
        self._source = source
        self._condition = condition
        self._clauses = clauses
        self._storage = storage_options

    def _with(self, clause: _Clause | None = None, evolve: bool = False) -> LanceMergeBuilder:
        clauses = self._clauses if clause is None else (*self._clauses, clause)
        return LanceMergeBuilder(
            self._spark,
            self._uri,
            self._source,
            self._condition,
            clauses,
            self._aliases.target,
            self._evolve or evolve,
            self._storage,
        )

    def withSchemaEvolution(self) -> LanceMergeBuilder:
        """Let ``whenMatchedUpdateAll``/``whenNotMatchedInsertAll`` add the source's
        columns the table lacks (null in the rows the merge does not write), as Delta
        does; the new columns and the changed rows commit as one version."""
        return self._with(evolve=True)

    def _values(self, values: Mapping[str, Sql] | None, what: str) -> Mapping[str, Sql]:
        if not values:
            raise ValueError(f"{self._where}: {what} needs at least one column to set")
        return dict(values)

    def whenMatchedUpdate(
        self, condition: Sql | None = None, set: Mapping[str, Sql] | None = None
    ) -> LanceMergeBuilder:
        """Set target columns (``{"col": "source.col + 1"}``) of matched rows; the
        others keep their values."""
        values = self._values(set, "whenMatchedUpdate")
        return self._with(_Clause("matched", UPDATE, condition, values))

    def whenMatchedUpdateAll(self, condition: Sql | None = None) -> LanceMergeBuilder:
        return self._with(_Clause("matched", UPDATE, condition, {}, from_source=True))

    def whenMatchedDelete(self, condition: Sql | None = None) -> LanceMergeBuilder:
        return self._with(_Clause("matched", DELETE, condition, {}))

    def whenNotMatchedInsert(
        self, condition: Sql | None = None, values: Mapping[str, Sql] | None = None
    ) -> LanceMergeBuilder:
        """Insert source rows no target row matches; columns not given are null."""
        given = self._values(values, "whenNotMatchedInsert")
        return self._with(_Clause("not matched", INSERT, condition, given))

    def whenNotMatchedInsertAll(self, condition: Sql | None = None) -> LanceMergeBuilder:
        return self._with(_Clause("not matched", INSERT, condition, {}, from_source=True))

    def whenNotMatchedBySourceUpdate(
        self, condition: Sql | None = None, set: Mapping[str, Sql] | None = None
    ) -> LanceMergeBuilder:
        values = self._values(set, "whenNotMatchedBySourceUpdate")
        return self._with(_Clause("not matched by source", UPDATE, condition, values))

    def whenNotMatchedBySourceDelete(self, condition: Sql | None = None) -> LanceMergeBuilder:
        return self._with(_Clause("not matched by source", DELETE, condition, {}))

    def execute(self) -> DataFrame:
        """Run the merge and commit it as one version (none when it changes no row);
        returns one row of counts (``num_affected_rows``, ``num_updated_rows``,
        ``num_deleted_rows``, ``num_inserted_rows``).  A target row that several source
        rows would update is an error."""
        _check_clauses(self._clauses, self._where)
        snapshot = open_snapshot(Location(self._uri, self._storage))
        data_format(None, snapshot.manifest)  # refuse a dataset lancelet cannot write
        target = (
            self._spark.read.format(FORMAT)
            .options(**as_spark_options(self._storage))
            .option("version", str(snapshot.version))
            .option("with_row_address", "true")
            .load(self._uri)
        )
        added = self._added_columns(target) if self._evolve else []
        plan = _Plan(
            self._where, self._keys, self._clauses, target, self._source, self._aliases, added
        )
        schema = None
        if added:
            columns = new_dataset_schema(st.StructType(added), self._where).to_arrow()
            schema = extend_schema(snapshot.manifest, columns, self._where)
        task = MergeTask(
            self._uri,
            snapshot.version,
            PortableSchema.of(schema) if schema else None,
            self._storage,
        )
        partitions = int(self._spark.conf.get("spark.sql.shuffle.partitions") or 1)
        rows = plan.changed_rows(self._condition, partitions)
        found = rows.mapInArrow(task, "outcome binary").collect()
        outcomes: list[TaskOutcome[RowChanges]] = [pickle.loads(r.outcome) for r in found]
        changes = RowChanges.total(gathered(outcomes, lambda c: c.discard(snapshot)))
        counts = {
            name: changes.counts.get(name, 0)
            for name in ("num_updated_rows", "num_deleted_rows", "num_inserted_rows")
        }
        if changes.changes_rows or schema is not None:
            self._commit(snapshot, changes, tuple(plan.keys), counts, schema)
        return counts_frame(self._spark, {"num_affected_rows": sum(counts.values()), **counts})

    def _commit(
        self,
        snapshot: Snapshot,
        changes: RowChanges,
        keys: tuple[str, ...],
        counts: Mapping[str, int],
        schema: LanceSchema | None,
    ) -> None:
        inserted = changes.inserted_fragments()
        update = Update(
            changes.removed,
            changes.updated_fragments(),
            changes.new_fragments() + inserted,
            (),
            tuple(f.id for f in snapshot.manifest.schema.fields),  # as pylance's merge_insert
            inserted_keys=InsertedKeys(snapshot, keys, inserted) if inserted else None,
        )
        operation: Operation = update
        if schema is not None:
            # New columns and changed rows in one commit: the rows' changes folded into
            # the fragment list of a Merge (any commit since is then a conflict).
            operation = fold_into_merge(snapshot, update, schema)
        properties = command_properties(
            {"command": "MERGE", "predicate": _text(self._condition)},
            {_camel(k): v for k, v in counts.items()},
        )
        commit_changes(snapshot, changes, operation, properties)

    def _added_columns(self, target: DataFrame) -> list[st.StructField]:
        """The source's columns the target lacks, which ``*All`` clauses write."""
        if not any(c.from_source for c in self._clauses):
            return []
        have = {f.name.lower() for f in target.schema.fields}
        return [f for f in self._source.schema.fields if f.name.lower() not in have]


def _text(condition: str | Column) -> str:
    """The condition as history records it (a Column in Spark's own notation)."""
    if isinstance(condition, str):
        return condition
    java = getattr(condition, "_jc", None)
    return str(java.toString()) if java is not None else str(condition)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _check_clauses(clauses: tuple[_Clause, ...], where: str) -> None:
    if not clauses:
        raise ValueError(
            f"{where}: a merge needs at least one whenMatched..., whenNotMatched... or "
            "whenNotMatchedBySource... clause"
        )
    for category in ("matched", "not matched", "not matched by source"):
        conditions = [c.condition for c in clauses if c.category == category]
        if any(c is None for c in conditions[:-1]):
            raise ValueError(
                f"{where}: when there are several {category} clauses, only the last one "
                "may omit its condition"
            )


# -- the Spark side ---------------------------------------------------------------------


class _Plan:
    """The joined rows, each with the clause it takes, as the rows to change."""

    def __init__(
        self,
        where: str,
        keys: tuple[tuple[str, str], ...],
        clauses: tuple[_Clause, ...],
        target: DataFrame,
        source: DataFrame,
        aliases: Aliases,
        added: list[st.StructField] | None = None,
    ) -> None:
        self.where = where
        self.aliases = aliases
        self.clauses = clauses
        self.target = target
        self.source = source
        # The target's columns, then those schema evolution adds (null in the rows an
        # update does not take from the source).
        self.added = {f.name for f in added or []}
        self.columns = [f for f in target.schema.fields if f.name != ROW_ADDRESS]
        self.columns += list(added or [])
        self.keys = [self.target_name(t) for t, _ in keys]
        for _, source_key in keys:
            self._source_name(source_key)

    def target_name(self, name: str) -> str:
        prefix = self.aliases.target + "."
        bare = name[len(prefix) :] if name.lower().startswith(prefix) else name
        found = _named(bare, (f.name for f in self.columns))
        if found is None:
            raise SchemaError(
                f"{self.where}: the target has no column {name!r}; columns are "
                f"{[f.name for f in self.columns]}"
            )
        return found

    def _source_name(self, name: str) -> str:
        found = _named(name, self.source.columns)
        if found is None:
            raise SchemaError(
                f"{self.where}: the source has no column {name!r}; columns are "
                f"{self.source.columns}"
            )
        return found

    def _join_type(self) -> str:
        inserts = any(c.category == "not matched" for c in self.clauses)
        by_source = any(c.category == "not matched by source" for c in self.clauses)
        return {
            (True, True): "full_outer",
            (True, False): "right_outer",
            (False, True): "left_outer",
        }.get((inserts, by_source), "inner")

    def _chosen_clause(self) -> Column:
        in_target = F.col(f"{self.aliases.target}.{ROW_ADDRESS}").isNotNull()
        in_source = F.col(f"{self.aliases.source}.{_IN_SOURCE}").isNotNull()
        categories = {
            "matched": in_target & in_source,
            "not matched": ~in_target,
            "not matched by source": ~in_source,
        }
        chosen: Column | None = None
        for index, clause in enumerate(self.clauses):
            holds = categories[clause.category]
            if clause.condition is not None:
                holds = holds & _sql(clause.condition, f"{self.where}: a clause condition")
            chosen = (F.when if chosen is None else chosen.when)(holds, F.lit(index))
        assert chosen is not None
        return chosen

    def _value(self, clause: _Clause, given: Mapping[str, Sql], name: str) -> Column:
        """Column ``name`` of a row written by ``clause``; ``given``: its values by
        target column."""
        if clause.from_source:
            return F.col(f"{self.aliases.source}.`{self._source_name(name)}`")
        if name in given:
            return _sql(given[name], f"{self.where}: the value of column {name!r}")
        kept = clause.action == UPDATE and name not in self.added
        return F.col(f"{self.aliases.target}.`{name}`") if kept else F.lit(None)

    def _new_values(self) -> list[Column]:
        """Each target column's new value, in its Spark type (null in deleted rows)."""
        writes = {i: c for i, c in enumerate(self.clauses) if c.action != DELETE}
        given = {
            i: {self.target_name(k): v for k, v in c.values.items()} for i, c in writes.items()
        }
        out = []
        for field in self.columns:
            value = (
                self._choice({i: self._value(c, given[i], field.name) for i, c in writes.items()})
                if writes
                else F.lit(None)
            )
            out.append(value.cast(field.dataType).alias(field.name))
        return out

    @staticmethod
    def _choice(values: Mapping[int, Column]) -> Column:
        """``values[i]`` for the rows taking clause ``i``."""
        chosen = F.col(_CLAUSE)
        out: Column | None = None
        for index, value in values.items():
            out = (F.when if out is None else out.when)(chosen == index, value)
        assert out is not None
        return out

    def changed_rows(self, condition: str | Column, partitions: int) -> DataFrame:
        """Per changed row: its target address (null when inserted), its kind and its
        new values; partitioned by target fragment, existing rows first."""
        target = self.target.alias(self.aliases.target)
        source = self.source.withColumn(_IN_SOURCE, F.lit(True)).alias(self.aliases.source)
        on = condition if isinstance(condition, Column) else F.expr(condition)
        joined = target.join(source, on, self._join_type())
        chosen = joined.withColumn(_CLAUSE, self._chosen_clause())
        kinds = self._choice({i: F.lit(c.action) for i, c in enumerate(self.clauses)})
        rows = chosen.where(F.col(_CLAUSE).isNotNull()).select(
            F.col(f"{self.aliases.target}.{ROW_ADDRESS}").alias(ADDRESS),
            kinds.alias(KIND),
            *self._new_values(),
        )
        address = F.col(ADDRESS)
        # Inserted rows spread over the partitions by key.
        spread = self.keys or [f.name for f in self.columns]
        bucket = F.lit(-1) - F.pmod(
            F.xxhash64(*[F.col(f"`{k}`") for k in spread]), F.lit(partitions)
        )
        fragment = F.when(
            address.isNotNull(), F.shiftright(address, row_address.OFFSET_BITS)
        ).otherwise(bucket)
        return rows.repartition(partitions, fragment).sortWithinPartitions(address.isNull())


# -- the executor side ------------------------------------------------------------------


class _SortedRows:
    """A task's rows, those of existing target rows first (the job sorted them so)."""

    def __init__(self, batches: Iterator[pa.RecordBatch]) -> None:
        self._batches = batches
        self._rest: pa.RecordBatch | None = None

    def targeted(self) -> Iterator[pa.RecordBatch]:
        for batch in self._batches:
            inserted = batch.column(ADDRESS).null_count
            if not inserted:
                yield batch
                continue
            first = batch.num_rows - inserted
            if first:
                yield batch.slice(0, first)
            self._rest = batch.slice(first)
            return

    def untargeted(self) -> Iterator[pa.RecordBatch]:
        rest = [] if self._rest is None else [self._rest]
        for batch in itertools.chain(rest, self._batches):
            # Guards the order the job relies on.
            assert batch.column(ADDRESS).null_count == batch.num_rows, "rows out of order"
            yield batch


class _TargetRows:
    """Addresses of the target rows a task updates and deletes."""

    def __init__(self) -> None:
        self._updated: list[np.ndarray] = []
        self._deleted: list[np.ndarray] = []

    def add(self, batch: pa.RecordBatch, kinds: np.ndarray) -> None:
        addresses = batch.column(ADDRESS).to_numpy().astype(np.uint64)
        self._updated.append(addresses[kinds == UPDATE])
        self._deleted.append(addresses[kinds == DELETE])

    def in_order(self) -> np.ndarray:
        """Updated addresses in the order their new rows were written."""
        return np.concatenate(self._updated) if self._updated else np.empty(0, np.uint64)

    def checked(self, where: str) -> tuple[np.ndarray, np.ndarray]:
        """Updated and deleted addresses; refuses a target row that several source
        rows change (deleting it twice is harmless)."""
        none = np.empty(0, np.uint64)
        updated = np.concatenate(self._updated) if self._updated else none
        deleted = np.unique(np.concatenate(self._deleted)) if self._deleted else none
        unique, counts = np.unique(updated, return_counts=True)
        clash = np.concatenate([unique[counts > 1], np.intersect1d(unique, deleted)])
        if len(clash):
            row = int(clash[0])
            raise DatasetError(
                f"{where}: multiple source rows matched and attempted to modify the same "
                f"target row ({row_address.describe(row)}); make each "
                "target row match one source row"
            )
        return unique, deleted


def _in_dataset_types(batch: pa.RecordBatch, schema: pa.Schema, where: str) -> pa.RecordBatch:
    try:
        return batch.select(schema.names).cast(schema)
    except _ARROW_ERRORS as exc:
        raise SchemaError(f"{where}: the new rows do not fit the dataset's schema: {exc}") from exc


@dataclass(frozen=True)
class MergeTask:
    """One task of a merge: Spark's ``mapInArrow`` function, yielding its pickled
    :class:`TaskOutcome`."""

    uri: str
    read_version: int
    # The schema rows are written under when the merge adds columns.
    schema: PortableSchema | None = None
    # The table's storage options (see lancelet.spark.storage).
    storage_options: dict[str, str] | None = None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        outcome = captured(lambda: self._run(batches))
        yield pa.record_batch([pa.array([pickle.dumps(outcome)], pa.binary())], ["outcome"])

    def _run(self, batches: Iterator[pa.RecordBatch]) -> RowChanges:
        where = f"{self.uri}: merge"
        snapshot = open_snapshot(Location(self.uri, self.storage_options), self.read_version)
        manifest = snapshot.manifest
        lance_schema = manifest.schema if self.schema is None else self.schema.load()
        schema = lance_schema.to_arrow()
        rows, targets = _SortedRows(batches), _TargetRows()
        new: list[Fragment] = []
        inserted: list[Fragment] = []
        try:
            version = manifest.data_storage_version
            new += write_fragments(
                snapshot,
                self._written(rows.targeted(), schema, where, targets),
                lance_schema,
                version,
                conform_as=where,
            )
            inserted += write_fragments(
                snapshot,
                self._written(rows.untargeted(), schema, where, None),
                lance_schema,
                version,
                conform_as=where,
            )
            updated_rows, deleted_rows = targets.checked(where)
            # Updated rows keep their ids (stable row ids), as in a merge_insert.
            change = apply_row_change(
                snapshot, deleted=deleted_rows, rewritten=new, moved_from=targets.in_order()
            )
        except BaseException:
            discard_written(snapshot, new + inserted)
            raise
        counts = {
            "num_updated_rows": len(updated_rows),
            "num_deleted_rows": len(deleted_rows),
            "num_inserted_rows": sum(f.physical_rows for f in inserted),
        }
        return RowChanges.written(
            change.updated, change.removed, change.rewritten, inserted, counts
        )

    @staticmethod
    def _written(
        batches: Iterable[pa.RecordBatch],
        schema: pa.Schema,
        where: str,
        targets: _TargetRows | None,
    ) -> pa.RecordBatchReader:
        """The new rows among ``batches``, in the dataset's types; the addresses of the
        target rows they change go to ``targets``."""

        def rows() -> Iterator[pa.RecordBatch]:
            for batch in batches:
                kinds = batch.column(KIND).to_numpy(zero_copy_only=False)
                if targets is not None:
                    targets.add(batch, kinds)
                written = kinds != DELETE
                if written.any():
                    yield _in_dataset_types(batch.filter(pa.array(written)), schema, where)

        return pa.RecordBatchReader.from_batches(schema, rows())
