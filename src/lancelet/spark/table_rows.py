"""``LanceTable.delete`` and ``update`` with conditions and values in Spark's dialect.

Spark evaluates them: the version is read with its row addresses, filtered by the
condition (SQL text or a ``Column``) and, for an update, given its new values, cast
to each column's type by Spark's rules.  The rows are then hash-partitioned by
fragment and handed to the merge's task (:class:`~lancelet.spark.table_merge.MergeTask`),
which writes updated rows as new fragments and one new deletion vector per fragment.
The driver commits one Delete or Update read at the version Spark read, so every
Spark function and type rule applies, and a result equals Spark's own evaluation.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from lancelet.dataset.engine import ROW_ADDRESS, Location, Snapshot, data_format, open_snapshot
from lancelet.errors import FilterError, SchemaError
from lancelet.spark.source import FORMAT
from lancelet.spark.storage import as_spark_options
from lancelet.spark.table_jobs import RowChanges, TaskOutcome, gathered
from lancelet.spark.table_merge import ADDRESS, DELETE, KIND, UPDATE, MergeTask
from lancelet.table import row_address

Sql = str | Column


def spark_expression(value: object, what: str) -> Column:
    if isinstance(value, str):
        return F.expr(value)
    if isinstance(value, Column):
        return value
    raise TypeError(f"{what} must be Spark SQL text or a Column, not {type(value).__name__}")


def described(value: Sql | None) -> str:
    """How a condition is recorded in the history."""
    if value is None:
        return "true"
    return value if isinstance(value, str) else str(value)


def _version(
    spark: SparkSession, uri: str, storage: dict[str, str] | None, snapshot: Snapshot
) -> DataFrame:
    return (
        spark.read.format(FORMAT)
        .options(**as_spark_options(storage))
        .option("version", str(snapshot.version))
        .option("with_row_address", "true")
        .load(uri)
    )


def changed_rows(
    spark: SparkSession,
    uri: str,
    storage: dict[str, str] | None,
    snapshot: Snapshot,
    condition: Sql | None,
    values: Mapping[str, Sql] | None,
) -> DataFrame:
    """The rows ``condition`` selects, with their new values (an update) or none (a
    delete), in the shape the merge's task takes, analysed now so that a condition
    or value Spark cannot read fails before anything is written."""
    where = f"{uri}: {'update' if values else 'delete'}"
    frame = _version(spark, uri, storage, snapshot)
    columns = [f for f in frame.schema.fields if f.name != ROW_ADDRESS]
    names = {f.name for f in columns}
    if values:
        unknown = sorted(set(values) - names)
        if unknown:
            raise SchemaError(f"{where}: no column {unknown}; columns are {sorted(names)}")
    try:
        if condition is not None:
            frame = frame.where(spark_expression(condition, f"{where} condition"))
        kind = UPDATE if values else DELETE
        new = [
            (
                spark_expression(values[f.name], f"{where} value of {f.name!r}")
                if values and f.name in values
                else F.col(f"`{f.name}`")
            )
            .cast(f.dataType)
            .alias(f.name)
            for f in columns
        ]
        rows = frame.select(F.col(ROW_ADDRESS).alias(ADDRESS), F.lit(kind).alias(KIND), *new)
        rows.schema  # noqa: B018 - analyse the plan now
    except PySparkException as exc:
        raise FilterError(f"{where}: Spark cannot evaluate it: {exc}") from exc
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or 1)
    fragment = F.shiftright(F.col(ADDRESS), row_address.OFFSET_BITS)
    return rows.repartition(partitions, fragment).sortWithinPartitions(ADDRESS)


def run_changes(
    spark: SparkSession,
    uri: str,
    storage: dict[str, str] | None,
    condition: Sql | None,
    values: Mapping[str, Sql] | None,
) -> tuple[Snapshot, RowChanges]:
    """Spark's rows for the change, written by the tasks; the snapshot they changed
    and what they wrote.  ``storage``: the table's storage options, for the driver
    and the tasks."""
    snapshot = open_snapshot(Location(uri, storage))
    data_format(None, snapshot.manifest)  # refuse a dataset lancelet cannot write
    rows = changed_rows(spark, uri, storage, snapshot, condition, values)
    task = MergeTask(uri, snapshot.version, storage_options=storage)
    found = rows.mapInArrow(task, "outcome binary").collect()
    outcomes: list[TaskOutcome[RowChanges]] = [pickle.loads(r.outcome) for r in found]
    changes = RowChanges.total(gathered(outcomes, lambda c: c.discard(snapshot)))
    return snapshot, changes
