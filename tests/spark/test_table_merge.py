"""``LanceTable.merge``: Delta's merge builder, checked against a pyarrow computation
and read back by pylance; bad conditions and duplicate matches are refused without
leaving files behind."""

from __future__ import annotations

from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import lancelet as ll
from lancelet.errors import DatasetError, RetryableCommitConflictError, SchemaError
from lancelet.spark.table import LanceTable
from tests.spark.test_table import files, pylance_rows, racing_commit, unreferenced_files
from tests.versions import STORAGE_VERSION

N = 3000


def rows(start: int, stop: int, price_factor: float = 0.5) -> pa.Table:
    ids = np.arange(start, stop, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "grp": (ids % 5).astype(np.int32),
            "qty": pa.array(ids % 1000, pa.uint32()),
            "price": pa.array(ids * price_factor, mask=ids % 11 == 3),
            "name": pa.array([f"n{i}" for i in ids]),
            "tags": pa.array([[int(i % 3)] * int(i % 4) for i in ids], pa.list_(pa.int32())),
        }
    )


def source_frame(spark: SparkSession, table: pa.Table) -> DataFrame:
    # Spark has no unsigned integers: the source holds qty as a long.
    return spark.createDataFrame(table.set_column(2, "qty", table["qty"].cast(pa.int64())))


@pytest.fixture
def uri(tmp_path: Path) -> str:
    """pylance writes the target: three fragments of 1000 rows, some deleted."""
    path = str(tmp_path / "target")
    lance.write_dataset(
        rows(0, N), path, data_storage_version=STORAGE_VERSION, max_rows_per_file=1000
    )
    lance.dataset(path).delete("id % 97 = 1")
    return path


def _live() -> pa.Table:
    table = rows(0, N)
    return table.filter(pa.array(table["id"].to_numpy() % 97 != 1))


def _counts(result: DataFrame) -> dict[str, int]:
    return dict(result.collect()[0].asDict())


def test_upsert(spark: SparkSession, uri: str) -> None:
    source = rows(2900, 3100, price_factor=3.0)
    result = (
        LanceTable.forPath(spark, uri)
        .merge(source_frame(spark, source), "target.id = source.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    # Target rows 2900..2999 that pylance deleted are not matched: they are inserted.
    live = _live()
    matched = int(pc.sum(pc.greater_equal(live["id"], 2900)).as_py())
    assert _counts(result) == {
        "num_affected_rows": 200,
        "num_updated_rows": matched,
        "num_deleted_rows": 0,
        "num_inserted_rows": 200 - matched,
    }
    want = pa.concat_tables([live.filter(pc.field("id") < 2900), source])
    assert pylance_rows(uri).equals(want)
    txn = lance.dataset(uri).read_transaction(3).operation
    assert type(txn).__name__ == "Update" and txn.removed_fragment_ids == []
    assert [f.id for f in txn.updated_fragments] == [2]


def test_every_kind_of_clause(spark: SparkSession, uri: str) -> None:
    ids = np.concatenate([np.arange(0, 100), np.arange(5000, 5050)])
    source = pa.table(
        {
            "id": ids,
            # Matched rows: even ids are deleted, odd ones updated; new rows are
            # inserted unless marked "d" (5000..5009).
            "op": np.where((ids % 2 == 0) & (ids < 100) | (ids < 5010) & (ids >= 5000), "d", "u"),
            "value": ids * 2.0,
        }
    )
    table = LanceTable.forPath(spark, uri)
    result = (
        table.merge(spark.createDataFrame(source), "source.id = target.id")
        .whenMatchedDelete("source.op = 'd'")
        .whenMatchedUpdate(set={"price": "target.price + source.value", "Name": "'merged'"})
        .whenNotMatchedInsert(
            condition=F.col("source.op") == "u",
            values={"id": "source.id", "price": F.col("source.value")},
        )
        .whenNotMatchedBySourceDelete("target.id % 10 = 0")
        .execute()
    )
    live = _live()
    live_ids = live["id"].to_numpy()
    matched = np.isin(live_ids, ids)
    deleted = matched & (live_ids % 2 == 0) | ~matched & (live_ids % 10 == 0)
    updated = matched & (live_ids % 2 == 1)
    kept = live.filter(pa.array(~deleted))
    is_updated = pa.array(updated[~deleted])
    # price = id / 2 + id * 2
    kept = kept.set_column(
        3, "price", pc.if_else(is_updated, pc.multiply(kept["price"], 5), kept["price"])
    )
    kept = kept.set_column(4, "name", pc.if_else(is_updated, "merged", kept["name"]))
    # Source rows whose target row pylance deleted (1 and 98) are not matched either.
    new_ids = ids[~np.isin(ids, live_ids) & (source["op"].to_numpy(zero_copy_only=False) == "u")]
    n = len(new_ids)
    inserted = pa.table(
        {
            "id": new_ids,
            "grp": pa.nulls(n, pa.int32()),
            "qty": pa.nulls(n, pa.uint32()),
            "price": new_ids * 2.0,
            "name": pa.nulls(n, pa.string()),
            "tags": pa.nulls(n, pa.list_(pa.int32())),
        }
    )
    assert _counts(result) == {
        "num_affected_rows": int(deleted.sum() + updated.sum()) + n,
        "num_updated_rows": int(updated.sum()),
        "num_deleted_rows": int(deleted.sum()),
        "num_inserted_rows": n,
    }
    assert n == 41
    assert pylance_rows(uri).equals(pa.concat_tables([kept, inserted]).sort_by("id"))
    history = table.history(1).collect()[0]
    assert history.operation == "UPDATE"
    assert history.operationParameters["predicate"] == "source.id = target.id"
    assert history.operationMetrics["numInsertedRows"] == str(n)


def test_duplicate_matches_leave_nothing_behind(spark: SparkSession, uri: str) -> None:
    before = files(uri)
    doubled = pa.concat_tables([rows(10, 20), rows(10, 20)])
    merge = (
        LanceTable.forPath(spark, uri)
        .merge(source_frame(spark, doubled), "target.id = source.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
    )
    with pytest.raises(DatasetError, match="multiple source rows matched"):
        merge.execute()
    assert files(uri) == before
    assert lance.dataset(uri).version == 2
    # Matching a row twice to delete it is fine.
    deleted = (
        LanceTable.forPath(spark, uri)
        .merge(source_frame(spark, doubled), "target.id = source.id")
        .whenMatchedDelete()
        .execute()
    )
    assert _counts(deleted)["num_deleted_rows"] == 10
    assert pylance_rows(uri).equals(_live().filter((pc.field("id") < 10) | (pc.field("id") >= 20)))


def test_refused_conditions_and_clauses(spark: SparkSession, uri: str) -> None:
    table = LanceTable.forPath(spark, uri)
    source = source_frame(spark, rows(0, 5))
    with pytest.raises(ValueError, match="besides the target"):
        table.merge(source, "target.id = source.id AND target.grp = other.grp")
    with pytest.raises(ValueError, match="cannot parse"):
        table.merge(source, "target.id = = source.id")
    with pytest.raises(TypeError, match="SQL text or a Column"):
        table.merge(source, 42)  # type: ignore[arg-type]
    merge = table.merge(source, "target.id = source.id")
    with pytest.raises(ValueError, match="at least one"):
        merge.execute()
    with pytest.raises(ValueError, match="only the last one"):
        merge.whenMatchedDelete().whenMatchedUpdateAll().execute()
    with pytest.raises(SchemaError, match="target has no column 'nope'"):
        table.merge(source, "target.nope = source.id").whenMatchedDelete().execute()
    with pytest.raises(SchemaError, match="source has no column 'grp'"):
        table.merge(source.drop("grp"), "target.id = source.id").whenMatchedUpdateAll().execute()
    assert lance.dataset(uri).version == 2


def test_concurrent_insert_of_the_same_key_conflicts(
    spark: SparkSession, uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = LanceTable.forPath(spark, uri)
    before = files(uri)
    appended = racing_commit(
        monkeypatch, uri, lambda: ll.write_dataset(rows(5005, 5006), uri, mode="append")
    )
    merge = table.merge(source_frame(spark, rows(4990, 5010)), "target.id = source.id")
    with pytest.raises(RetryableCommitConflictError, match="inserted keys"):
        merge.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert files(uri) == before | appended
    assert lance.dataset(uri).version == 3
    # Another key added meanwhile is no conflict.
    monkeypatch.undo()
    racing_commit(monkeypatch, uri, lambda: ll.write_dataset(rows(6000, 6001), uri, mode="append"))
    counts = _counts(merge.whenNotMatchedInsertAll().execute())
    assert counts["num_inserted_rows"] == 19  # 5005 is in the table now
    want = pa.concat_tables([_live(), rows(4990, 5010), rows(6000, 6001)])
    assert pylance_rows(uri).equals(want.sort_by("id"))
    assert unreferenced_files(uri) == set()


def test_lancelet_written_target_and_reads_back(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "ours")
    ll.write_dataset(rows(0, 500), uri, max_rows_per_file=200)
    table = LanceTable.forPath(spark, uri)
    table.merge(
        source_frame(spark, rows(450, 550)), "target.id = source.id"
    ).whenNotMatchedInsertAll().execute()
    assert pylance_rows(uri).equals(rows(0, 550))
    # pylance changes the table; Spark reads its change through the table.
    lance.dataset(uri).delete("id >= 500")
    got = table.toDF().orderBy("id").toArrow()
    assert got.num_rows == 500
    assert got["id"].to_pylist() == list(range(500))


@pytest.mark.parametrize(
    "condition",
    [
        "target.id = source.id AND source.grp <> 2",  # an equi-join with a filter
        "abs(target.id - source.id) < 1 AND source.grp <> 2",  # no equality at all
    ],
)
def test_any_boolean_condition(spark: SparkSession, uri: str, condition: str) -> None:
    source = rows(2990, 3010, price_factor=3.0)
    counts = _counts(
        LanceTable.forPath(spark, uri)
        .merge(source_frame(spark, source), condition)
        .whenMatchedUpdateAll()
        .execute()
    )
    ids, grp = source["id"].to_numpy(), source["grp"].to_numpy()
    live = set(_live()["id"].to_pylist())
    hit = [i for i, g in zip(ids.tolist(), grp.tolist(), strict=True) if i in live and g != 2]
    assert counts["num_updated_rows"] == len(hit)
    got = pylance_rows(uri)
    prices = dict(zip(got["id"].to_pylist(), got["price"].to_pylist(), strict=True))
    new = dict(zip(source["id"].to_pylist(), source["price"].to_pylist(), strict=True))
    assert all(prices[i] == new[i] for i in hit)
    assert got.num_rows == _live().num_rows
