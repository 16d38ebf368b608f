"""One local Spark session for every Spark test; the directory is skipped without
pyspark or a Java runtime."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _spark_available() -> bool:
    has_java = shutil.which("java") is not None or bool(os.environ.get("JAVA_HOME"))
    return has_java and importlib.util.find_spec("pyspark") is not None


if not _spark_available():
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    import lancelet.spark

    session = lancelet.spark.session(
        "lancelet-tests",
        "local[2]",
        **{
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.sql.session.timeZone": "UTC",
            "spark.driver.memory": "1g",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def tasks_read(spark: SparkSession) -> Iterator[None]:
    """The test's filtered reads run as tasks: the bridge answers none while planning
    (``spark.lancelet.bridge.localRows`` 0; see ``lancelet.spark.local_rows``)."""
    spark.conf.set("spark.lancelet.bridge.localRows", "0")
    try:
        yield
    finally:
        spark.conf.unset("spark.lancelet.bridge.localRows")
