"""PySpark integration: the ``lance`` data source (batch read and write, streaming sink
and source, change data feed).

``lancelet.spark.session()`` starts (or reuses) a SparkSession with the source
registered; ``lancelet.spark.register(spark)`` registers it in an existing one.  Then::

    spark.read.format("lance").load(path)
    df.write.format("lance").mode("append").save(path)
    df.writeStream.format("lance").option("checkpointLocation", ckpt).start(path)
    spark.read.format("lance").options(readChangeFeed=True, startingVersion=2).load(path)

``lancelet.spark.session(warehouse=...)`` (or ``configure_catalog``) adds the SQL
catalog ``lance`` (``CREATE TABLE lance.db.t ...``, where the JVM bridge loads), and
``LanceTable.forPath(spark, path)`` runs deletes, updates, merges, compaction,
history, restore and vacuum as Spark jobs that commit once.

On S3 (``s3a://`` or ``s3://`` paths) the source takes the session's
``spark.hadoop.fs.s3a.*`` settings, and ``storage.<key>`` options with pylance's
``storage_options`` keys (see :mod:`lancelet.spark.storage`).

Needs the ``spark`` extra (``pip install lancelet[spark]``).
"""

import importlib.util

if importlib.util.find_spec("pyspark") is None:
    raise ImportError(
        "lancelet.spark needs PySpark and pandas: pip install 'lancelet[spark]'",
        name="pyspark",
    )

from lancelet.spark.session import configure_catalog, register, save, session
from lancelet.spark.source import FORMAT, LanceDataSource
from lancelet.spark.table import LanceTable

__all__ = [
    "FORMAT",
    "LanceDataSource",
    "LanceTable",
    "configure_catalog",
    "register",
    "save",
    "session",
]
