"""``LanceTable``: row-level changes and version maintenance of a dataset from Spark,
in the shape of Delta Lake's ``DeltaTable``::

    table = LanceTable.forPath(spark, "/data/events")
    table.delete("day < date '2024-01-01'")
    table.update("id = 3", set={"score": "score + 1"})
    (table.merge(updates, "target.id = source.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute())
    table.optimize().executeCompaction()
    table.history().show()

Every change is one Spark job: its tasks read and write the files, the driver commits
one version read at the version the job planned from (see
:mod:`lancelet.spark.table_jobs`).  When a concurrent commit changed the same rows the
commit fails with ``RetryableCommitConflictError`` (``IncompatibleTransactionError``
when, for example, the table was restored meanwhile) and nothing the job wrote is
left behind.

``delete`` and ``update`` conditions and ``set`` expressions are lancelet's SQL, the
dialect of pylance's filters, evaluated by the tasks per fragment; merge conditions
and values are Spark SQL (see :mod:`lancelet.spark.table_merge`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, replace
from datetime import timedelta
from typing import Any, NoReturn

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import types as st

from lancelet.dataset.dataset import LanceDataset
from lancelet.dataset.delete import plan_delete
from lancelet.dataset.update import plan_update
from lancelet.optimize import Compaction, CompactionMetrics, RewriteResult
from lancelet.spark import table_jobs
from lancelet.spark.options import read_options
from lancelet.spark.session import register
from lancelet.spark.source import FORMAT
from lancelet.spark.table_indices import indices_frame
from lancelet.spark.table_jobs import (
    CompactionRun,
    DeleteTask,
    RowChanges,
    TaskOutcome,
    UpdateTask,
    discard_rewrite_result,
    gathered,
    run_per_item,
)
from lancelet.spark.table_merge import LanceMergeBuilder
from lancelet.spark.table_versions import (
    command_properties,
    counts_frame,
    history_frame,
    restore_metrics,
)
from lancelet.table.manifest import Manifest
from lancelet.transaction import operations as ops
from lancelet.transaction.store import DatasetStore

DEFAULT_RETENTION_HOURS = 168.0

_COMPACTION_METRICS = st.StructType(
    [
        st.StructField("path", st.StringType(), False),
        st.StructField(
            "metrics",
            st.StructType(
                [
                    st.StructField(name, st.LongType(), False)
                    for name in (
                        "numFilesAdded",
                        "numFilesRemoved",
                        "numFragmentsAdded",
                        "numFragmentsRemoved",
                    )
                ]
            ),
            False,
        ),
    ]
)


def _sql_text(value: object, what: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Column):
        raise TypeError(
            f'{what}: pass SQL text (like "price > 10"), not a pyspark Column; '
            "a Column cannot be turned back into SQL reliably"
        )
    raise TypeError(f"{what} must be SQL text, not {type(value).__name__}")


def _without_fragments(manifest: Manifest) -> Manifest:
    """The version with no rows: planning on it checks a change's arguments and
    writes nothing."""
    return replace(manifest, fragments=())


class LanceTable:
    """A Lance dataset seen from Spark; open one with :meth:`forPath`.

    It always works on the dataset's latest version.
    """

    def __init__(self, spark: SparkSession, uri: str) -> None:
        self._spark = spark
        self._uri = uri

    @classmethod
    def forPath(cls, spark: SparkSession, path: str) -> LanceTable:
        """The dataset at ``path``; raises ``DatasetNotFoundError`` if there is none."""
        register(spark)
        uri = read_options({"path": path}).path
        DatasetStore(uri).latest_version()
        return cls(spark, uri)

    @classmethod
    def isLanceTable(cls, spark: SparkSession, path: str) -> bool:
        return DatasetStore(read_options({"path": path}).path).latest_location() is not None

    def __repr__(self) -> str:
        return f"LanceTable({self._uri!r})"

    # -- reading and versions ---------------------------------------------------------

    def toDF(self) -> DataFrame:
        """The latest version as a DataFrame (``spark.read.format("lance")``); every
        query on it reads that version, so call again to see later commits."""
        return self._spark.read.format(FORMAT).load(self._uri)

    @property
    def version(self) -> int:
        """The latest version number."""
        return self._store().latest_version()

    def history(self, limit: int | None = None) -> DataFrame:
        """The versions on disk, newest first: version, timestamp, operation (the
        transaction's kind), operationParameters, readVersion, isBlindAppend,
        operationMetrics."""
        return history_frame(self._spark, self._store(), limit)

    def restoreToVersion(self, version: int) -> DataFrame:
        """Make version ``version`` the latest, as a new version; returns Delta's
        restore metrics (files and bytes removed and restored)."""
        store = self._store()
        before = store.read_manifest(store.latest_version())
        dataset = LanceDataset(self._uri, version)
        dataset.restore()
        after = store.read_manifest(dataset.version)
        return counts_frame(self._spark, restore_metrics(store, before, after))

    def vacuum(self, retentionHours: float | None = None) -> DataFrame:
        """Remove versions older than ``retentionHours`` (default 168, a week), never
        the latest or a tagged one, and the files no remaining version needs; returns
        what was removed."""
        hours = DEFAULT_RETENTION_HOURS if retentionHours is None else retentionHours
        if hours < 0:
            raise ValueError(f"{self._uri}: retentionHours must not be negative, got {hours}")
        stats = LanceDataset(self._uri).cleanup_old_versions(older_than=timedelta(hours=hours))
        return counts_frame(self._spark, asdict(stats))

    def optimize(self) -> LanceOptimizeBuilder:
        return LanceOptimizeBuilder(self._spark, self._uri)

    # -- scalar indices ---------------------------------------------------------------

    def createIndex(
        self,
        column: str,
        indexType: str,
        name: str | None = None,
        replace: bool = True,
        **params: Any,
    ) -> None:
        """Build a scalar index (``BTREE``, ``BITMAP``, ``LABEL_LIST``, ``ZONEMAP`` or
        ``BLOOMFILTER``) on ``column`` (a dotted path reaches into structs) over every
        fragment of the latest version, and commit it as a new version.  ``params`` are
        those of pylance's ``create_scalar_index`` for the type.  Built here, on the
        driver, in one commit (the storage must be shared with the executors, as for
        every other write).  Reads whose pushed filters it answers then read only the
        rows it points to; fragments written later are read whole until the index
        is brought over them (``lancelet.dataset(path).optimize.optimize_indices()``)."""
        LanceDataset(self._uri).create_scalar_index(
            column, indexType, name, replace=replace, **params
        )

    def dropIndex(self, name: str) -> None:
        """Remove the index ``name`` in a new version (``IndexNotFoundError`` if the
        latest version has none of that name); its files stay until ``vacuum``."""
        LanceDataset(self._uri).drop_index(name)

    def listIndices(self) -> DataFrame:
        """The latest version's scalar indices, one row per segment: name, type,
        fields, uuid, version (the dataset version it was built at), numFragments,
        fragmentIds and numIndexedRows (live rows of the fragments it covers)."""
        _, manifest = self._latest()
        return indices_frame(self._spark, manifest)

    # -- row-level changes ------------------------------------------------------------

    def delete(self, condition: str | None = None) -> DataFrame:
        """Delete the rows matching ``condition`` (all rows without one); returns
        ``num_affected_rows``.  No version is made when no row matches."""
        predicate = "true" if condition is None else _sql_text(condition, "delete condition")
        store, manifest = self._latest()
        plan_delete(store, _without_fragments(manifest), predicate)
        task = DeleteTask(self._uri, manifest.version, predicate)
        changes = self._per_fragment(task, store, manifest)
        count = changes.counts.get("num_deleted_rows", 0)
        if changes.changes_rows:
            operation = ops.Delete(changes.updated_fragments(), changes.removed, predicate)
            properties = command_properties({"command": "DELETE"}, {"numDeletedRows": count})
            table_jobs.commit_changes(store, manifest, changes, operation, properties)
        return counts_frame(self._spark, {"num_affected_rows": count})

    def update(
        self, condition: str | None = None, set: Mapping[str, str] | None = None
    ) -> DataFrame:
        """Set columns to SQL expressions (``set={"price": "price * 2"}``) in the rows
        matching ``condition`` (all rows without one); returns ``num_affected_rows``.
        The rows are rewritten as new fragments; no version is made when none match."""
        if not set:
            raise ValueError(f"{self._uri}: update needs set={{column: SQL expression}}")
        updates = {name: _sql_text(value, f"set[{name!r}]") for name, value in set.items()}
        where = None if condition is None else _sql_text(condition, "update condition")
        store, manifest = self._latest()
        checked = plan_update(store, _without_fragments(manifest), updates, where)
        task = UpdateTask(self._uri, manifest.version, updates, where)
        changes = self._per_fragment(task, store, manifest)
        count = changes.counts.get("num_updated_rows", 0)
        if changes.changes_rows:
            operation = replace(
                checked.operation,  # the fields it changes, as pylance records them
                removed_fragment_ids=changes.removed,
                updated_fragments=changes.updated_fragments(),
                new_fragments=changes.new_fragments(),
            )
            parameters = {"command": "UPDATE", "predicate": where or "true"}
            properties = command_properties(parameters, {"numUpdatedRows": count})
            table_jobs.commit_changes(store, manifest, changes, operation, properties)
        return counts_frame(self._spark, {"num_affected_rows": count})

    def merge(self, source: DataFrame, condition: str) -> LanceMergeBuilder:
        """Merge ``source`` into the table, joined on ``condition`` over ``target.``
        and ``source.`` columns (``"target.id = source.id"``); add clauses, then
        ``execute()``."""
        return LanceMergeBuilder(self._spark, self._uri, source, condition)

    # -- helpers ----------------------------------------------------------------------

    def _store(self) -> DatasetStore:
        return DatasetStore(self._uri)

    def _latest(self) -> tuple[DatasetStore, Manifest]:
        store = self._store()
        return store, store.read_manifest(store.latest_version())

    def _per_fragment(
        self,
        task: DeleteTask | UpdateTask,
        store: DatasetStore,
        manifest: Manifest,
    ) -> RowChanges:
        """``task`` on every fragment of ``manifest``, one Spark task each."""
        fragments = [f.to_json() for f in manifest.fragments]
        outcomes: list[TaskOutcome[RowChanges]] = run_per_item(
            self._spark.sparkContext, task, fragments
        )
        return RowChanges.total(gathered(outcomes, lambda c: c.discard(store, manifest)))


class LanceOptimizeBuilder:
    """Delta's ``DeltaOptimizeBuilder``: file compaction."""

    def __init__(self, spark: SparkSession, uri: str) -> None:
        self._spark = spark
        self._uri = uri

    def executeCompaction(self, **options: Any) -> DataFrame:
        """Rewrite small fragments, and those with many deleted rows, into fuller ones:
        planned here, each task rewritten by a Spark task, committed here.  Takes the
        options of pylance's ``compact_files`` (``target_rows_per_fragment``, ...).
        Returns one row: ``path`` and ``metrics`` (files and fragments added and
        removed)."""
        dataset = LanceDataset(self._uri)
        plan = Compaction.plan(dataset, options)
        store = DatasetStore(self._uri)
        tasks = [task.json() for task in plan.tasks]
        outcomes = run_per_item(self._spark.sparkContext, CompactionRun(self._uri), tasks)
        results = gathered(outcomes, lambda r: discard_rewrite_result(store, r))
        rewrites = [RewriteResult.from_json(r) for r in results]
        metrics = Compaction.commit(dataset, rewrites, options) if rewrites else CompactionMetrics()
        row = (
            self._uri,
            (
                metrics.files_added,
                metrics.files_removed,
                metrics.fragments_added,
                metrics.fragments_removed,
            ),
        )
        return self._spark.createDataFrame([row], _COMPACTION_METRICS)

    def executeZOrderBy(self, *columns: str) -> NoReturn:
        raise NotImplementedError(f"{self._uri}: Lance datasets cannot be Z-ordered")

    def where(self, partitionFilter: str) -> NoReturn:
        raise NotImplementedError(f"{self._uri}: Lance datasets have no partitions to filter on")
