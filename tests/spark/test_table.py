"""``LanceTable``: delete, update, history, restore, vacuum and compaction from Spark,
each checked against a pyarrow computation and read back by pylance (with validate);
conflicts with concurrent commits and failing tasks leave no trace."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import lancelet as ll
from lancelet.errors import (
    DatasetNotFoundError,
    FilterError,
    RetryableCommitConflictError,
    SchemaError,
)
from lancelet.spark import table_jobs
from lancelet.spark.table import LanceTable

N = 3000


def rows(start: int, stop: int) -> pa.Table:
    ids = np.arange(start, stop, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "grp": (ids % 5).astype(np.int32),
            "n32": ids.astype(np.int32),
            "price": pa.array(ids * 0.5, mask=ids % 11 == 3),
            "name": pa.array([f"n{i}" for i in ids]),
            "tags": pa.array([[int(i % 3)] * int(i % 4) for i in ids], pa.list_(pa.int32())),
        }
    )


def files(uri: str) -> set[str]:
    return {
        os.path.relpath(os.path.join(folder, name), uri)
        for folder, _, names in os.walk(uri)
        for name in names
    }


def pylance_rows(uri: str, version: int | None = None) -> pa.Table:
    """The rows pylance reads (after validating the version), in id order."""
    dataset = lance.dataset(uri, version=version)
    dataset.validate()
    return dataset.to_table().sort_by("id")


def changed(table: pa.Table, mask: np.ndarray, **columns: Callable[[pa.Table], Any]) -> pa.Table:
    """``table`` with ``columns`` recomputed (from the old rows) where ``mask`` holds."""
    for name, compute in columns.items():
        index = table.schema.get_field_index(name)
        new = pc.if_else(pa.array(mask), compute(table), table[name])
        table = table.set_column(index, table.schema.field(index), new.cast(table[name].type))
    return table


@pytest.fixture
def uri(tmp_path: Path) -> str:
    """Three fragments of 1000 rows written by lancelet."""
    path = str(tmp_path / "table")
    ll.write_dataset(rows(0, N), path, max_rows_per_file=1000)
    return path


def test_delete_across_fragments(spark: SparkSession, uri: str) -> None:
    table = LanceTable.forPath(spark, uri)
    result = table.delete("id < 1000 OR grp = 3")
    ids = np.arange(N)
    gone = (ids < 1000) | (ids % 5 == 3)
    assert result.collect()[0].asDict() == {"num_affected_rows": int(gone.sum())}
    assert pylance_rows(uri).equals(rows(0, N).filter(pa.array(~gone)))
    txn = lance.dataset(uri).read_transaction(2).operation
    assert type(txn).__name__ == "Delete" and txn.predicate == "id < 1000 OR grp = 3"
    assert txn.deleted_fragment_ids == [0]
    assert sorted(f.id for f in txn.updated_fragments) == [1, 2]

    # pylance deletes more; lancelet's job reads its deletion files, then deletes the rest.
    lance.dataset(uri).delete("id >= 2900")
    assert table.toDF().count() == int((~gone & (ids < 2900)).sum())
    assert table.delete().collect()[0].num_affected_rows == int((~gone & (ids < 2900)).sum())
    assert lance.dataset(uri).count_rows() == 0
    assert table.version == 4
    # Nothing left to delete: no new version.
    assert table.delete("id = 1").collect()[0].num_affected_rows == 0
    assert table.version == 4


def test_update_rewrites_matching_rows(spark: SparkSession, uri: str) -> None:
    table = LanceTable.forPath(spark, uri)
    result = table.update(
        "grp = 2 AND id >= 500", set={"price": "price * 2 + 1", "grp": "grp + 10"}
    )
    ids = np.arange(N)
    mask = (ids % 5 == 2) & (ids >= 500)
    assert result.collect()[0].num_affected_rows == int(mask.sum())
    want = changed(
        rows(0, N),
        mask,
        price=lambda t: pc.add(pc.multiply(t["price"], 2), 1),
        grp=lambda t: pc.add(t["grp"], 10),
    )
    assert pylance_rows(uri).equals(want)
    txn = lance.dataset(uri).read_transaction(2).operation
    assert type(txn).__name__ == "Update"
    assert sum(f.physical_rows for f in txn.new_fragments) == int(mask.sum())
    assert txn.fields_for_preserving_frag_bitmap == [1, 3]  # grp and price

    # Without a condition every row is rewritten.
    table.update(set={"name": "'all'"})
    want = want.set_column(4, "name", pa.array(["all"] * N))
    assert pylance_rows(uri).equals(want)


def test_spark_conditions_and_values(spark: SparkSession, uri: str) -> None:
    """Conditions and values are Spark's: Columns and Spark-only functions work, and
    the result equals Spark's own evaluation of the same expressions."""
    table = LanceTable.forPath(spark, uri)
    frame = spark.read.format("lance").option("version", "1").load(uri)
    condition = F.col("name").startswith("n1") & (F.col("grp") != 2)
    value = F.concat_ws("-", F.col("name"), F.lit("x"))
    expected = frame.withColumn("name", F.when(condition, value).otherwise(F.col("name"))).where(
        ~(F.col("id") < 5) | F.col("id").isNull()
    )
    assert table.update(condition, set={"name": value}).collect()[0].num_affected_rows == (
        frame.where(condition).count()
    )
    assert table.delete("id < 5 AND startswith(name, 'n')").collect()[0][0] == 5
    want = expected.toArrow().sort_by("id")
    got = pylance_rows(uri)
    assert got.select(want.column_names).cast(want.schema).equals(want)


def test_bad_arguments_change_nothing(spark: SparkSession, uri: str) -> None:
    table = LanceTable.forPath(spark, uri)
    before = files(uri)
    with pytest.raises(ValueError, match="needs set"):
        table.update("id = 1")
    with pytest.raises(SchemaError, match="no column"):
        table.update(set={"nope": "1"})
    with pytest.raises(FilterError, match="Spark cannot evaluate"):
        table.delete("nope = 1")
    with pytest.raises(FilterError, match="Spark cannot evaluate"):
        table.delete("id = = 1")
    with pytest.raises(TypeError, match="Spark SQL text or a Column"):
        table.delete(3)  # type: ignore[arg-type]
    assert table.version == 1 and files(uri) == before
    with pytest.raises(DatasetNotFoundError):
        LanceTable.forPath(spark, os.path.join(uri, "missing"))
    assert LanceTable.isLanceTable(spark, uri)
    assert not LanceTable.isLanceTable(spark, os.path.join(uri, "missing"))


def test_failing_job_leaves_the_dataset_as_it_was(spark: SparkSession, uri: str) -> None:
    before = files(uri)
    table = LanceTable.forPath(spark, uri)
    # Spark's ANSI arithmetic overflows int32 from id 2148 on: the job fails in the
    # stage that computes the values, before any task writes a file.
    with pytest.raises(Exception, match="(?i)overflow"):
        table.update(set={"n32": "n32 * 1000000"})
    assert files(uri) == before
    assert lance.dataset(uri).version == 1
    assert pylance_rows(uri).equals(rows(0, N))


def racing_commit(
    monkeypatch: pytest.MonkeyPatch, uri: str, change: Callable[[], object]
) -> set[str]:
    """Before a job's commit, ``change`` commits (once); returns the files it added,
    once it has."""
    theirs: set[str] = set()
    ran: list[bool] = []
    commit = table_jobs.commit

    def racing(*args: Any, **kwargs: Any) -> Any:
        if not ran:
            ran.append(True)
            start = files(uri)
            change()
            theirs.update(files(uri) - start)
        return commit(*args, **kwargs)

    monkeypatch.setattr(table_jobs, "commit", racing)
    return theirs


def unreferenced_files(uri: str) -> set[str]:
    """Data and deletion files that no version (as pylance reads them) refers to."""
    used = set()
    for version in lance.dataset(uri).versions():
        for fragment in lance.dataset(uri, version=version["version"]).get_fragments():
            used |= {os.path.join("data", f.path) for f in fragment.data_files()}
            deletion = fragment.metadata.deletion_file
            if deletion is not None:
                used.add(deletion.path(fragment.fragment_id))
    return {p for p in files(uri) if p.startswith(("data", "_deletions"))} - used


def test_concurrent_delete_of_the_same_rows_conflicts(
    spark: SparkSession, uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = LanceTable.forPath(spark, uri)
    before = files(uri)
    theirs = racing_commit(monkeypatch, uri, lambda: ll.dataset(uri).delete("id = 5"))
    with pytest.raises(RetryableCommitConflictError, match="also changed rows"):
        table.update("id < 10", set={"price": "0.0"})
    # Only the concurrent delete committed; the job's files are gone.
    assert lance.dataset(uri).version == 2
    assert files(uri) == before | theirs
    assert pylance_rows(uri).equals(rows(0, N).filter(pc.field("id") != 5))


def test_concurrent_delete_of_other_rows_is_rebased(
    spark: SparkSession, uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = LanceTable.forPath(spark, uri)
    # Fragment 0 loses other rows meanwhile: the deletion vectors are united.
    racing_commit(monkeypatch, uri, lambda: ll.dataset(uri).delete("id IN (500, 2500)"))
    assert table.update("id < 10", set={"price": "-1.0"}).collect()[0].num_affected_rows == 10
    assert lance.dataset(uri).version == 3
    ids = np.arange(N)
    want = changed(rows(0, N), ids < 10, price=lambda t: pa.array(np.full(len(t), -1.0)))
    assert pylance_rows(uri).equals(want.filter(pa.array((ids != 500) & (ids != 2500))))
    assert unreferenced_files(uri) == set()


def test_history_restore_and_vacuum(spark: SparkSession, uri: str) -> None:
    table = LanceTable.forPath(spark, uri)
    table.delete("grp = 0")
    table.update("id < 100", set={"name": "'x'"})
    lance.dataset(uri).delete("id = 2999")  # pylance commits one too
    history = table.history().collect()
    assert [r.version for r in history] == [4, 3, 2, 1]
    assert [r.operation for r in history] == ["DELETE", "UPDATE", "DELETE", "OVERWRITE"]
    assert [r.readVersion for r in history] == [3, 2, 1, None]
    assert history[3].isBlindAppend is False
    assert history[2].operationParameters["predicate"] == "grp = 0"
    assert history[2].operationMetrics["numDeletedRows"] == str(N // 5)
    assert history[1].operationMetrics["numUpdatedRows"] == "80"
    assert history[0].operationParameters["predicate"] == "id = 2999"
    assert table.history(2).count() == 2
    times = [r.timestamp for r in history]
    assert times == sorted(times, reverse=True)

    metrics = table.restoreToVersion(1).collect()[0]
    assert metrics.num_of_files_after_restore == 3
    assert metrics.num_restored_files == 0  # version 1's data files are all still used
    assert metrics.num_removed_files > 0  # deletion files and the update's new files
    assert table.version == 5
    assert table.history(1).collect()[0].operation == "RESTORE"
    assert pylance_rows(uri).equals(rows(0, N))
    assert pylance_rows(uri, version=4).num_rows == N - N // 5 - 1

    # As in Delta, a retention under a week needs the safety check turned off.
    with pytest.raises(ValueError, match="retentionDurationCheck"):
        table.vacuum(retentionHours=0)
    assert [v["version"] for v in lance.dataset(uri).versions()] == [1, 2, 3, 4, 5]
    spark.conf.set("spark.lancelet.retentionDurationCheck.enabled", "false")
    try:
        stats = table.vacuum(retentionHours=0).collect()[0]
    finally:
        spark.conf.unset("spark.lancelet.retentionDurationCheck.enabled")
    assert stats.old_versions == 4
    assert stats.data_files_removed == 1  # the update's new fragment
    assert [v["version"] for v in lance.dataset(uri).versions()] == [5]
    fragments = lance.dataset(uri).get_fragments()
    used = {os.path.join("data", d.path) for f in fragments for d in f.data_files()}
    assert {p for p in files(uri) if p.startswith("data")} == used
    assert not os.listdir(os.path.join(uri, "_deletions"))
    assert pylance_rows(uri).equals(rows(0, N))


def test_optimize_compacts_small_fragments(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "small")
    for start in range(0, 1800, 300):
        ll.write_dataset(rows(start, start + 300), uri, mode="append" if start else "create")
    table = LanceTable.forPath(spark, uri)
    table.delete("id % 7 = 0")
    result = table.optimize().executeCompaction(target_rows_per_fragment=1000)
    metrics = result.collect()[0].metrics
    assert metrics.numFragmentsRemoved == 6 and metrics.numFragmentsAdded == 1
    ids = np.arange(1800)
    want = rows(0, 1800).filter(pa.array(ids % 7 != 0))
    assert pylance_rows(uri).equals(want)
    fragments = lance.dataset(uri).get_fragments()
    assert len(fragments) == 1 and fragments[0].metadata.deletion_file is None
    assert table.history(1).collect()[0].operation == "REWRITE"
    # Nothing left to compact: no new version.
    version = table.version
    assert table.optimize().executeCompaction().collect()[0].metrics.numFragmentsAdded == 0
    assert table.version == version
