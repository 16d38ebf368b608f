"""A Spark session ready for the ``lance`` data source, and writes in every save mode."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from lancelet.spark.bridge import JAR, PYTHON_NAME, bridge_jar, with_bridge
from lancelet.spark.catalog_names import CATALOG_CLASS
from lancelet.spark.source import FORMAT, registered_source
from lancelet.spark.storage import session_settings

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"

log = logging.getLogger(__name__)
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


def catalog_conf(warehouse: str, name: str = "lance") -> dict[str, str]:
    """The settings of a lance SQL catalog called ``name`` whose table ``ns.t`` is the
    dataset ``<warehouse>/ns/t.lance``."""
    return {
        f"spark.sql.catalog.{name}": CATALOG_CLASS,
        f"spark.sql.catalog.{name}.warehouse": warehouse,
    }


def configure_catalog(spark: SparkSession, warehouse: str, name: str = "lance") -> bool:
    """Make ``name`` a lance SQL catalog over ``warehouse`` in ``spark``
    (``CREATE TABLE lance.db.t (...)``, ``INSERT INTO``, ``SELECT``, ``VERSION AS OF``).

    The catalog is part of the JVM bridge: where the bridge jar is not on this
    session's classpath, nothing is configured, the reason is logged, and False is
    returned.  Spark keeps a catalog once a statement has used it, so a name already
    pointing at another warehouse is refused: pick another name.
    """
    # The jar is named by the session's spark.jars (as session() and java/README.md add it).
    jars = [Path(jar).name for jar in (spark.conf.get("spark.jars", "") or "").split(",")]
    if bridge_jar() is None or JAR.name not in jars:
        log.warning(
            "lancelet: the Spark bridge is not loaded in this session, so there is "
            "no %r SQL catalog (use DataFrames and LanceTable)",
            name,
        )
        return False
    if ":/" not in warehouse:  # the JVM and Python workers would each resolve a relative one
        warehouse = os.path.abspath(warehouse)
    settings = catalog_conf(warehouse, name)
    for key, value in settings.items():
        current = spark.conf.get(key, None)
        if current is not None and current != value:
            raise ValueError(
                f"lancelet: {key} is already {current!r} in this session; "
                f"give the catalog for {warehouse!r} another name"
            )
    register(spark)  # the catalog's tables read and write through the Python source
    for key, value in settings.items():
        spark.conf.set(key, value)
    return True


def session(
    app_name: str = "lancelet",
    master: str = "local[*]",
    *,
    warehouse: str | None = None,
    **conf: Any,
) -> SparkSession:
    """A SparkSession (the running one if any) with the ``lance`` source registered.

    Workers run this interpreter, so they import the same lancelet.  ``conf`` entries
    (``**{"spark.executor.memory": "2g"}``) override the light defaults.  A new
    session also loads the JVM bridge (:mod:`lancelet.spark.bridge`), which plans
    each query's read with only the columns, rows and counts it needs.  With
    ``warehouse``, the SQL catalog ``lance`` holds the datasets under it (see
    :func:`configure_catalog`; it needs the bridge).
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in with_bridge({**_DEFAULTS, **conf}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    if warehouse is not None:
        configure_catalog(spark, warehouse)
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
