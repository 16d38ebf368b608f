"""The JVM bridge: a Java ``lance`` data source that plans each query's read of
lancelet's Python source with the columns, filters, limit and aggregates it needs.

Spark's Python data source API reads every column, pushes no limit or aggregate and
keeps one read plan per DataFrame.  The bridge (``java/`` in the repository, built
into ``jars/lancelet-spark-bridge.jar`` by ``scripts/build_bridge.py``) wraps
Spark's own Python source classes to do that per query; the rows still come from
lancelet's Python reader, in Spark's Python workers.

:func:`lancelet.spark.session` puts the jar on a new session's classpath when it was
built for the running Spark; without it (no jar, another Spark version,
``LANCELET_SPARK_BRIDGE=0``) the ``lance`` name is the pure-Python source, and the
reason is logged once.  Where the jar loads but this Spark lacks an internal it uses,
the Java source logs that once and plans reads as Spark's plain Python source does.

The jar also holds the SQL catalog (``org.lancelet.spark.LanceCatalog``, see
:func:`lancelet.spark.session.configure_catalog`); where the jar does not load there
is no catalog, and asking for one logs why.
"""

from __future__ import annotations

import functools
import logging
import os
import zipfile
from pathlib import Path

import pyspark

JAR = Path(__file__).resolve().parent / "jars" / "lancelet-spark-bridge.jar"
# The name the Java source finds lancelet's Python source under (LanceSource.PYTHON_NAME).
PYTHON_NAME = "lancelet_python"
SWITCH = "LANCELET_SPARK_BRIDGE"
_VERSION_KEY = "Lancelet-Spark-Version"

log = logging.getLogger(__name__)


def built_for(jar: Path) -> str | None:
    """The Spark version the jar was compiled against, from its manifest."""
    with zipfile.ZipFile(jar) as archive:
        manifest = archive.read("META-INF/MANIFEST.MF").decode()
    for line in manifest.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == _VERSION_KEY:
            return value.strip()
    return None


@functools.cache
def bridge_jar() -> Path | None:
    """The bridge jar to load into this Spark, or None (and why, logged once)."""
    if os.environ.get(SWITCH, "1").strip().lower() in ("0", "false", "off", "no"):
        log.info("lancelet: the Spark bridge is off (%s=0)", SWITCH)
        return None
    if not JAR.is_file():
        log.warning(
            "lancelet: no Spark bridge jar at %s (build it with scripts/build_bridge.py); "
            "the lance source runs as a pure-Python data source",
            JAR,
        )
        return None
    try:
        version = built_for(JAR)
    except (OSError, zipfile.BadZipFile, KeyError) as exc:
        log.warning("lancelet: the Spark bridge jar %s is unreadable (%s); not loaded", JAR, exc)
        return None
    if version != pyspark.__version__:
        log.warning(
            "lancelet: the Spark bridge jar was built for Spark %s, this is %s; the lance "
            "source runs as a pure-Python data source",
            version,
            pyspark.__version__,
        )
        return None
    return JAR


def with_bridge(conf: dict[str, str]) -> dict[str, str]:
    """Session settings with the bridge jar added to ``spark.jars``, when it loads."""
    jar = bridge_jar()
    if jar is None:
        return conf
    listed = [j for j in conf.get("spark.jars", "").split(",") if j]
    if str(jar) not in listed:
        listed.append(str(jar))
    return {**conf, "spark.jars": ",".join(listed)}
