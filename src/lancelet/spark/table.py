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

Conditions and values are Spark's: SQL text or Columns that Spark evaluates, for
``delete`` and ``update`` (see :mod:`lancelet.spark.table_rows`) as for merges (see
:mod:`lancelet.spark.table_merge`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict
from datetime import timedelta
from typing import Any, NoReturn

from pyspark.sql import Column, DataFrame, DataFrameReader, SparkSession
from pyspark.sql import types as st

from lancelet.dataset.dataset import LanceDataset
from lancelet.dataset.engine import (
    Delete,
    Location,
    Snapshot,
    Update,
    latest_version,
    open_snapshot,
)
from lancelet.optimize import Compaction, CompactionMetrics, RewriteResult
from lancelet.spark import table_jobs
from lancelet.spark.catalog_names import resolve
from lancelet.spark.options import dataset_path
from lancelet.spark.session import register
from lancelet.spark.source import FORMAT
from lancelet.spark.storage import as_spark_options, table_storage_options
from lancelet.spark.table_indices import indices_frame
from lancelet.spark.table_jobs import (
    CompactionRun,
    discard_rewrite_result,
    gathered,
    run_per_item,
)
from lancelet.spark.table_merge import LanceMergeBuilder
from lancelet.spark.table_rows import described, run_changes
from lancelet.spark.table_versions import (
    command_properties,
    counts_frame,
    detail_frame,
    history_frame,
    instant_micros,
    restore_metrics,
    version_at,
)
from lancelet.table import row_address

# Index types create_index builds (vector indices); the rest are scalar.
_VECTOR_INDEX_PREFIXES = ("IVF_", "HNSW", "DISKANN")


DEFAULT_RETENTION_HOURS = 168.0
RETENTION_CHECK = "spark.lancelet.retentionDurationCheck.enabled"

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


class LanceTable:
    """A Lance dataset seen from Spark; open one with :meth:`forPath`.

    It always works on the dataset's latest version.
    """

    def __init__(
        self,
        spark: SparkSession,
        uri: str,
        alias: str | None = None,
        storage_options: dict[str, str] | None = None,
    ) -> None:
        self._spark = spark
        self._uri = uri
        self._alias = alias
        self._storage = storage_options

    @classmethod
    def forPath(
        cls,
        spark: SparkSession,
        path: str,
        *,
        storage_options: Mapping[str, str] | None = None,
    ) -> LanceTable:
        """The dataset at ``path``; raises ``DatasetNotFoundError`` if there is none.

        ``storage_options`` (pylance's keys: ``endpoint``, ``aws_access_key_id``, ...)
        configure the object store, over what the session's S3A settings
        (``spark.hadoop.fs.s3a.*``, read now) give an ``s3a://`` or ``s3://`` path;
        every job of the table, on the driver and in the tasks, uses them."""
        register(spark)
        uri = dataset_path({"path": path})
        storage = table_storage_options(spark, uri, storage_options)
        open_snapshot(Location(uri, storage))  # DatasetNotFoundError if there is none
        return cls(spark, uri, storage_options=storage)

    @classmethod
    def forName(cls, spark: SparkSession, tableOrViewName: str) -> LanceTable:
        """The dataset behind a table of a lance SQL catalog (``"lance.db.flights"``,
        or ``"db.flights"`` when a lance catalog is the current one; see
        ``lancelet.spark.session(warehouse=...)``), with the catalog's storage
        options; raises ``DatasetNotFoundError`` if there is none."""
        table = resolve(spark, tableOrViewName)
        return cls.forPath(spark, table.location, storage_options=table.storage_options or None)

    @classmethod
    def isLanceTable(
        cls,
        spark: SparkSession,
        path: str,
        *,
        storage_options: Mapping[str, str] | None = None,
    ) -> bool:
        uri = dataset_path({"path": path})
        storage = table_storage_options(spark, uri, storage_options)
        return latest_version(Location(uri, storage)) is not None

    def __repr__(self) -> str:
        return f"LanceTable({self._uri!r})"

    # -- reading and versions ---------------------------------------------------------

    def alias(self, name: str) -> LanceTable:
        """The same table under an alias, which ``toDF()`` and merge conditions use
        (``table.alias("t").merge(updates.alias("s"), "t.id = s.id")``)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"{self._uri}: an alias must be a non-empty string")
        return LanceTable(self._spark, self._uri, name, self._storage)

    def toDF(self) -> DataFrame:
        """The latest version as a DataFrame (``spark.read.format("lance")``); every
        query on it reads that version, so call again to see later commits."""
        frame = self._reader().load(self._uri)
        return frame if self._alias is None else frame.alias(self._alias)

    def detail(self) -> DataFrame:
        """One row in the shape of Delta's ``DESCRIBE DETAIL`` (see
        :func:`lancelet.spark.table_versions.detail_frame`)."""
        return detail_frame(self._spark, self._latest())

    @property
    def version(self) -> int:
        """The latest version number."""
        return self._latest().version

    def history(self, limit: int | None = None) -> DataFrame:
        """The versions on disk, newest first: version, timestamp, operation (the
        transaction's kind), operationParameters, readVersion, isBlindAppend,
        operationMetrics."""
        return history_frame(self._spark, self._location(), limit)

    def restoreToVersion(self, version: int) -> DataFrame:
        """Make version ``version`` the latest, as a new version; returns Delta's
        restore metrics (files and bytes removed and restored)."""
        before = self._latest()
        dataset = LanceDataset(self._uri, version, storage_options=self._storage)
        dataset.restore()
        after = open_snapshot(before, dataset.version)
        return counts_frame(self._spark, restore_metrics(before, after))

    def restoreToTimestamp(self, timestamp: object) -> DataFrame:
        """Restore the latest version committed at or before ``timestamp`` (a string
        or date Spark reads as a timestamp in the session time zone, or a datetime),
        as :meth:`restoreToVersion` does."""
        micros = instant_micros(self._spark, timestamp)
        return self.restoreToVersion(version_at(self._location(), micros))

    def vacuum(self, retentionHours: float | None = None) -> DataFrame:
        """Remove versions older than ``retentionHours`` (default 168, a week), never
        the latest or a tagged one, and the files no remaining version needs; returns
        what was removed.  As in Delta, a retention under a week is refused unless
        ``spark.lancelet.retentionDurationCheck.enabled`` is ``false``: a reader or
        writer still working on an older version would lose its files."""
        hours = DEFAULT_RETENTION_HOURS if retentionHours is None else retentionHours
        if hours < 0:
            raise ValueError(f"{self._uri}: retentionHours must not be negative, got {hours}")
        check = self._spark.conf.get(RETENTION_CHECK, "true")
        if hours < DEFAULT_RETENTION_HOURS and str(check).strip().lower() != "false":
            raise ValueError(
                f"{self._uri}: vacuum with a retention of {hours} hours, under the "
                f"{DEFAULT_RETENTION_HOURS:g} that protects running readers and writers; "
                f'set spark.conf.set("{RETENTION_CHECK}", "false") if you are sure'
            )
        stats = self._dataset().cleanup_old_versions(older_than=timedelta(hours=hours))
        return counts_frame(self._spark, asdict(stats))

    def optimize(self) -> LanceOptimizeBuilder:
        return LanceOptimizeBuilder(self._spark, self._uri, self.toDF, storage=self._storage)

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
        those of pylance's ``create_scalar_index`` for the type; a vector index type
        (``IVF_FLAT``, ...) builds a vector index with the ``params`` of pylance's
        ``create_index`` (``num_partitions``, ``metric``...), which the ``nearest``
        read option then searches.  Built here, on the
        driver, in one commit (the storage must be shared with the executors, as for
        every other write).  Reads whose pushed filters it answers then read only the
        rows it points to; fragments written later are read whole until the index
        is brought over them (``lancelet.dataset(path).optimize.optimize_indices()``)."""
        dataset = self._dataset()
        if str(indexType).upper().startswith(_VECTOR_INDEX_PREFIXES):
            dataset.create_index(column, indexType, name, replace=replace, **params)
        else:
            dataset.create_scalar_index(column, indexType, name, replace=replace, **params)

    def dropIndex(self, name: str) -> None:
        """Remove the index ``name`` in a new version (``IndexNotFoundError`` if the
        latest version has none of that name); its files stay until ``vacuum``."""
        self._dataset().drop_index(name)

    def listIndices(self) -> DataFrame:
        """The latest version's scalar indices, one row per segment: name, type,
        fields, uuid, version (the dataset version it was built at), numFragments,
        fragmentIds and numIndexedRows (live rows of the fragments it covers)."""
        return indices_frame(self._spark, self._latest())

    # -- row-level changes ------------------------------------------------------------

    def delete(self, condition: str | Column | None = None) -> DataFrame:
        """Delete the rows matching ``condition`` (Spark SQL or a Column; all rows
        without one), as Spark evaluates it; returns ``num_affected_rows``.  No version
        is made when no row matches."""
        snapshot, changes = run_changes(self._spark, self._uri, self._storage, condition, None)
        count = changes.counts.get("num_deleted_rows", 0)
        if changes.changes_rows:
            predicate = described(condition)
            operation = Delete(changes.updated_fragments(), changes.removed, predicate)
            properties = command_properties({"command": "DELETE"}, {"numDeletedRows": count})
            table_jobs.commit_changes(snapshot, changes, operation, properties)
        return counts_frame(self._spark, {"num_affected_rows": count})

    def update(
        self,
        condition: str | Column | None = None,
        set: Mapping[str, str | Column] | None = None,
    ) -> DataFrame:
        """Set columns to values (``set={"price": "price * 2"}`` or Columns, cast to
        the column's type as Spark casts) in the rows matching ``condition`` (Spark SQL
        or a Column; all rows without one), as Spark evaluates them; returns
        ``num_affected_rows``.  The rows are rewritten as new fragments; no version is
        made when none match."""
        if not set:
            raise ValueError(f"{self._uri}: update needs set={{column: value}}")
        snapshot, changes = run_changes(self._spark, self._uri, self._storage, condition, set)
        count = changes.counts.get("num_updated_rows", 0)
        if changes.changes_rows:
            # As pylance records them: the updated columns and their nested fields.
            schema = snapshot.manifest.schema
            columns = schema.resolve(list(set), self._uri)
            fields = sorted(i for f in columns for i in schema.subtree_ids(f.id))
            operation = Update(
                changes.removed,
                changes.updated_fragments(),
                changes.new_fragments(),
                fields_for_preserving_frag_bitmap=tuple(fields),
            )
            parameters = {"command": "UPDATE", "predicate": described(condition)}
            properties = command_properties(parameters, {"numUpdatedRows": count})
            table_jobs.commit_changes(snapshot, changes, operation, properties)
        return counts_frame(self._spark, {"num_affected_rows": count})

    def merge(self, source: DataFrame, condition: str | Column) -> LanceMergeBuilder:
        """Merge ``source`` into the table, joined on ``condition`` over the table's
        columns, qualified by its alias (``target`` unless :meth:`alias` named one), and
        the source's, qualified by the other name the condition uses (the source
        DataFrame's alias, or ``source``): ``"target.id = source.id"``, or
        ``table.alias("t").merge(updates.alias("u"), "t.id = u.id")``, or the same as a
        Column (``F.col("t.id") == F.col("u.id")``; SQL text under Spark Connect).  Add
        clauses, then ``execute()``."""
        return LanceMergeBuilder(
            self._spark,
            self._uri,
            source,
            condition,
            target_alias=self._alias or "target",
            storage_options=self._storage,
        )

    # -- helpers ----------------------------------------------------------------------

    def _location(self) -> Location:
        return Location(self._uri, self._storage)

    def _dataset(self) -> LanceDataset:
        return LanceDataset(self._uri, storage_options=self._storage)

    def _reader(self) -> DataFrameReader:
        """``spark.read.format("lance")`` with the table's storage options."""
        return self._spark.read.format(FORMAT).options(**as_spark_options(self._storage))

    def _latest(self) -> Snapshot:
        return open_snapshot(self._location())


class LanceOptimizeBuilder:
    """Delta's ``DeltaOptimizeBuilder``: file compaction, of the whole table or (with
    :meth:`where`) of the fragments holding rows a condition selects."""

    def __init__(
        self,
        spark: SparkSession,
        uri: str,
        frame: Callable[[], DataFrame],
        condition: str | Column | None = None,
        storage: dict[str, str] | None = None,
    ) -> None:
        self._spark = spark
        self._uri = uri
        self._frame = frame
        self._condition = condition
        self._storage = storage

    def where(self, partitionFilter: str | Column) -> LanceOptimizeBuilder:
        """Compact only fragments holding a row that ``partitionFilter`` (Spark SQL or
        a Column; Lance tables have no partitions, so any condition) selects."""
        if not isinstance(partitionFilter, str | Column):
            raise TypeError(f"{self._uri}: where() takes SQL text or a Column")
        return LanceOptimizeBuilder(
            self._spark, self._uri, self._frame, partitionFilter, self._storage
        )

    def _excluded(self, dataset: LanceDataset) -> list[int]:
        """Fragments holding no row the condition selects, computed by Spark."""
        if self._condition is None:
            return []
        from pyspark.sql import functions as F

        frame = (
            self._spark.read.format(FORMAT)
            .options(**as_spark_options(self._storage))
            .option("version", str(dataset.version))
            .option("with_row_address", "true")
            .load(self._uri)
        )
        condition = self._condition
        selected = frame.where(F.expr(condition) if isinstance(condition, str) else condition)
        fragment = F.shiftright(F.col("_rowaddr"), row_address.OFFSET_BITS).alias("fragment")
        touched = {int(r["fragment"]) for r in selected.select(fragment).distinct().collect()}
        return [f.fragment_id for f in dataset.get_fragments() if f.fragment_id not in touched]

    def executeCompaction(self, **options: Any) -> DataFrame:
        """Rewrite small fragments, and those with many deleted rows, into fuller ones:
        planned here, each task rewritten by a Spark task, committed here.  Takes the
        options of pylance's ``compact_files`` (``target_rows_per_fragment``,
        ``defer_index_remap``, ...).  Returns one row: ``path`` and ``metrics`` (files
        and fragments added and removed)."""
        dataset = LanceDataset(self._uri, storage_options=self._storage)
        excluded = self._excluded(dataset)
        if excluded:
            given = list(options.get("excluded_fragment_ids") or [])
            options = {**options, "excluded_fragment_ids": sorted({*given, *excluded})}
        plan = Compaction.plan(dataset, options)
        location = Location(self._uri, self._storage)
        tasks = [task.json() for task in plan.tasks]
        outcomes = run_per_item(self._spark, CompactionRun(self._uri, self._storage), tasks)
        results = gathered(outcomes, lambda r: discard_rewrite_result(location, r))
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
