"""Run by ``test_connect.py`` in its own process: LanceTable's jobs through a Spark
Connect client (a local Connect server; the client has no SparkContext).  Prints
one JSON line of what each call returned."""

from __future__ import annotations

import json
import os
import sys

os.environ["PYSPARK_PYTHON"] = sys.executable


def main(path: str) -> None:
    from pyspark.sql import SparkSession

    from lancelet.spark.table import LanceTable

    spark = (
        SparkSession.builder.remote("local[2]")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    try:
        assert not hasattr(spark, "sparkContext") or type(spark).__module__.startswith(
            "pyspark.sql.connect"
        )
        table = LanceTable.forPath(spark, path)
        out = {
            "session": type(spark).__module__,
            "deleted": table.delete("id < 10").collect()[0][0],
            "updated": table.update("id < 20", set={"v": "v + 1"}).collect()[0][0],
            "compacted": table.optimize().executeCompaction().collect()[0]["metrics"][3],
            "count": spark.read.format("lance").load(path).count(),
        }
        updates = spark.createDataFrame([(5, 500), (50, 5000)], "id long, v long").alias("s")
        merged = (
            table.alias("t")
            .merge(updates, "t.id = s.id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
            .collect()[0]
        )
        out["merged"] = [merged["num_updated_rows"], merged["num_inserted_rows"]]
        print(json.dumps(out))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
