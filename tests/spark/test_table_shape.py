"""``LanceTable`` in the shape of Delta's ``DeltaTable``: aliases in merges,
``detail()``, ``restoreToTimestamp``, ``history(limit)``, ``isLanceTable``, the
vacuum retention check and ``optimize().where(...)``; results checked against
pyarrow computations and read back by pylance."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import lancelet as ll
from lancelet.spark.table import LanceTable
from tests.spark.test_table_merge import rows, source_frame


@pytest.fixture
def uri(tmp_path: Path) -> str:
    path = str(tmp_path / "table")
    ll.write_dataset(rows(0, 300), path, max_rows_per_file=100)
    return path


@pytest.mark.parametrize("as_column", [False, True])
def test_merge_with_aliases(spark: SparkSession, uri: str, as_column: bool) -> None:
    table = LanceTable.forPath(spark, uri)
    updates = source_frame(spark, rows(250, 350, price_factor=2.0)).alias("u")
    condition = (F.col("t.id") == F.col("u.id")) if as_column else "t.id = u.id"
    counts = (
        table.alias("t")
        .merge(updates, condition)
        .whenMatchedUpdate(condition="u.grp <> 0", set={"t.price": "u.price"})
        .whenNotMatchedInsertAll()
        .execute()
        .collect()[0]
    )
    old, new = rows(0, 300), rows(250, 350, price_factor=2.0)
    matched = new.filter(pa.array(new["id"].to_numpy() < 300))
    changed = int(np.count_nonzero(matched["grp"].to_numpy() != 0))
    assert (counts.num_updated_rows, counts.num_inserted_rows) == (changed, 50)
    got = lance.dataset(uri).to_table().sort_by("id")
    expected_price = old["price"].to_pylist()
    for row in matched.to_pylist():
        if row["grp"] != 0:
            expected_price[row["id"]] = row["price"]
    expected_price += new["price"].to_pylist()[50:]
    assert got["price"].to_pylist() == expected_price
    # A condition naming a third alias is refused before anything runs.
    with pytest.raises(ValueError, match="besides the target"):
        table.alias("t").merge(updates, "t.id = u.id AND t.grp = x.grp")


def test_detail(spark: SparkSession, uri: str) -> None:
    ll.dataset(uri).delete("id < 10")
    row = LanceTable.forPath(spark, uri).detail().collect()[0]
    dataset = lance.dataset(uri)
    assert row.format == "lance" and row.location == uri
    assert row.numFiles == 3 + 1  # three data files, one deletion file
    assert row.partitionColumns == [] and row.properties == {}
    assert row.statistics["numRows"] == str(dataset.count_rows())
    assert "deletion files" in row.tableFeatures
    latest = dataset.versions()[-1]["timestamp"]
    assert abs(row.lastModified.timestamp() - latest.timestamp()) < 1


def test_restore_to_timestamp(spark: SparkSession, uri: str) -> None:
    time.sleep(1.1)
    middle = datetime.now(timezone.utc)
    time.sleep(1.1)
    ll.dataset(uri).delete("id < 100")
    table = LanceTable.forPath(spark, uri)
    table.restoreToTimestamp(middle)
    assert lance.dataset(uri).count_rows() == 300
    assert table.history(1).collect()[0].operation == "RESTORE"
    # As Spark reads a timestamp string, in the session's time zone (UTC here).
    table.restoreToTimestamp(middle.strftime("%Y-%m-%d %H:%M:%S.%f"))
    assert lance.dataset(uri).count_rows() == 300
    with pytest.raises(ValueError, match="before the earliest version"):
        table.restoreToTimestamp("2000-01-01")
    with pytest.raises(ValueError, match="after the latest version"):
        table.restoreToTimestamp("2999-01-01")
    assert [h.version for h in table.history(2).collect()] == [4, 3]


def test_is_lance_table(spark: SparkSession, uri: str, tmp_path: Path) -> None:
    assert LanceTable.isLanceTable(spark, uri)
    assert not LanceTable.isLanceTable(spark, str(tmp_path / "nothing"))


def test_optimize_where_compacts_only_selected_fragments(spark: SparkSession, uri: str) -> None:
    before = [f.fragment_id for f in lance.dataset(uri).get_fragments()]
    table = LanceTable.forPath(spark, uri)
    # Rows 0..199 live in the first two fragments; the third stays as it is.
    table.optimize().where(F.col("id") < 200).executeCompaction()
    after = [f.fragment_id for f in lance.dataset(uri).get_fragments()]
    assert before[2] in after and before[0] not in after and len(after) == 2
    table.optimize().where("id >= 1000").executeCompaction()  # no fragment: no change
    assert [f.fragment_id for f in lance.dataset(uri).get_fragments()] == after
    assert (
        lance.dataset(uri).to_table().sort_by("id").equals(ll.dataset(uri).to_table().sort_by("id"))
    )
    assert lance.dataset(uri).to_table().sort_by("id")["id"].to_pylist() == list(range(300))


def test_merge_with_schema_evolution(spark: SparkSession, uri: str) -> None:
    table = LanceTable.forPath(spark, uri)
    source = source_frame(spark, rows(250, 350)).withColumn("note", F.concat(F.lit("v"), "id"))
    before = lance.dataset(uri).version
    counts = (
        table.merge(source, "target.id = source.id")
        .withSchemaEvolution()
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
        .collect()[0]
    )
    assert (counts.num_updated_rows, counts.num_inserted_rows) == (50, 50)
    dataset = lance.dataset(uri)
    dataset.validate()
    assert dataset.version == before + 1  # one commit: the column and the rows
    assert dataset.schema.names == [*rows(0, 1).schema.names, "note"]
    got = dataset.to_table().sort_by("id")
    ids = got["id"].to_numpy()
    assert ids.tolist() == list(range(350))
    notes = got["note"].to_pylist()
    assert notes == [f"v{i}" if i >= 250 else None for i in ids]
    # Spark reads the evolved table, and a later plain append fits it.
    assert spark.read.format("lance").load(uri).where("note IS NOT NULL").count() == 100
