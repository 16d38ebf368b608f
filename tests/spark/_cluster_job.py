"""Run by ``test_cluster.py`` in its own process: the lance source on Spark's
``local-cluster`` master (a worker JVM and its executors apart from the driver, as on
a real cluster), with the session lancelet starts (so the bridge jar ships to them)."""

from __future__ import annotations

import json
import sys


def main(source: str, target: str) -> None:
    import lancelet.spark as ls
    from lancelet.spark import LanceTable

    spark = ls.session("cluster", "local-cluster[1,1,1024]", **{"spark.executor.memory": "1g"})
    try:
        df = spark.read.format("lance").load(source)
        out: dict[str, object] = {
            "count": df.count(),
            "filtered": sorted(r.id for r in df.where("k = 3").select("id").collect()),
            "limited": len(df.limit(4).collect()),
            "jars": spark.conf.get("spark.jars", ""),
        }
        df.write.format("lance").mode("append").save(target)
        LanceTable.forPath(spark, target).delete("k = 5")
        print(json.dumps(out))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
