"""A Spark session ready for the ``lance`` data source, and writes in every save mode."""

from __future__ import annotations

import os
import sys
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from lancelet.spark.bridge import PYTHON_NAME, with_bridge
from lancelet.spark.source import FORMAT, registered_source
from lancelet.spark.storage import session_settings

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
# Light defaults: no web UI or progress bars, few shuffle partitions.  Callers override.
_DEFAULTS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    PUSHDOWN_CONF: "true",
}


def register(spark: SparkSession) -> None:
    """Make ``format("lance")`` available in ``spark``, with the session's S3A
    settings (``spark.hadoop.fs.s3a.*``) as they are now: call it again after
    changing them (see :mod:`lancelet.spark.storage`).

    Also turns on Spark's Python filter pushdown, which Spark requires of a source
    whose reader accepts filters (``lancelet.spark.compat`` says when the lance
    reader does).
    """
    settings = session_settings(spark)
    # Under both names: "lance" is this source where the JVM bridge is not loaded (a
    # JVM source of that name wins over a Python one), and the bridge finds it under
    # its own name.
    spark.dataSource.register(registered_source(settings))
    spark.dataSource.register(registered_source(settings, name=PYTHON_NAME))
    spark.conf.set(PUSHDOWN_CONF, "true")


def session(app_name: str = "lancelet", master: str = "local[*]", **conf: Any) -> SparkSession:
    """A SparkSession (the running one if any) with the ``lance`` source registered.

    Workers run this interpreter, so they import the same lancelet.  ``conf`` entries
    (``**{"spark.executor.memory": "2g"}``) override the light defaults.  A new
    session also loads the JVM bridge (:mod:`lancelet.spark.bridge`), which plans
    each query's read with only the columns, rows and counts it needs.
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in with_bridge({**_DEFAULTS, **conf}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark


_MODES = {
    "append": ("append", None),
    "overwrite": ("overwrite", None),
    "error": ("append", "create"),
    "errorifexists": ("append", "create"),
    "default": ("append", "create"),
    "ignore": ("append", "ignore"),
}


def save(df: DataFrame, path: str, mode: str = "errorifexists", **options: Any) -> None:
    """``df.write.format("lance").mode(mode).save(path)`` for every Spark save mode.

    Spark accepts only append and overwrite for Python data sources; errorifexists and
    ignore are carried out by the source itself (option ``write_mode``).
    """
    if mode.lower() not in _MODES:
        raise ValueError(f"mode must be one of {sorted(_MODES)}, not {mode!r}")
    spark_mode, write_mode = _MODES[mode.lower()]
    register(df.sparkSession)
    writer = df.write.format(FORMAT).mode(spark_mode)
    if write_mode is not None:
        writer = writer.option("write_mode", write_mode)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save(path)
