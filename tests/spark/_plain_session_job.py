"""Run by ``test_registration.py`` in its own process: ``format("lance")`` in a plain
SparkSession that lancelet never touched (Spark's static registration finds
``pyspark_lancelet``), from the main thread and another thread."""

from __future__ import annotations

import json
import os
import sys
import threading

os.environ["PYSPARK_PYTHON"] = sys.executable


def main(path: str) -> None:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    spark = builder.getOrCreate()
    try:
        out: dict[str, object] = {"count": spark.read.format("lance").load(path).count()}
        found: list[int] = []
        worker = threading.Thread(
            target=lambda: found.append(
                spark.read.format("lance").load(path).where("v < 10").count()
            )
        )
        worker.start()
        worker.join()
        out["thread"] = found
        spark.createDataFrame([(1000, 1)], "id long, v long").write.format("lance").mode(
            "append"
        ).save(path)
        print(json.dumps(out))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
