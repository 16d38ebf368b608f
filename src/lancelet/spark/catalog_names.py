"""Table names of the lance SQL catalog, resolved in Python as the catalog resolves
them in the JVM (``java/src/org/lancelet/spark/Warehouse.java``): table ``ns.t`` of a
catalog with warehouse ``W`` is the dataset ``W/ns/t.lance``, and a name that is an
absolute path or URI (``lance.`/data/t.lance```) is that dataset.  What
``LanceTable.forName`` uses."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.sql import SparkSession

from lancelet.errors import ArgumentError

CATALOG_CLASS = "org.lancelet.spark.LanceCatalog"
SUFFIX = ".lance"
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/")
_STORAGE = "storage."


@dataclass(frozen=True)
class CatalogTable:
    catalog: str
    location: str
    storage_options: dict[str, str]


def name_parts(name: str) -> list[str]:
    """A multipart SQL name split at dots outside backticks (a doubled backtick inside
    them is one)."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    i = 0
    while i < len(name):
        char = name[i]
        if quoted and char == "`" and name[i + 1 : i + 2] == "`":
            current.append("`")
            i += 2
            continue
        if char == "`":
            quoted = not quoted
        elif char == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    if quoted:
        raise ArgumentError(f"table name {name!r}: a backtick is not closed")
    parts.append("".join(current))
    return parts


def _is_lance_catalog(spark: SparkSession, name: str) -> bool:
    return spark.conf.get(f"spark.sql.catalog.{name}", None) == CATALOG_CLASS


def resolve(spark: SparkSession, name: str) -> CatalogTable:
    """The dataset a lance catalog's table name stands for."""
    parts = name_parts(name)
    if len(parts) > 1 and _is_lance_catalog(spark, parts[0]):
        catalog, rest = parts[0], parts[1:]
    elif _is_lance_catalog(spark, spark.catalog.currentCatalog()):
        catalog, rest = spark.catalog.currentCatalog(), parts
    else:
        raise ArgumentError(
            f"table {name!r} is not in a lance catalog: name it as <catalog>.<namespace>"
            ".<table> with a catalog set up by lancelet.spark.session(warehouse=...) or "
            "configure_catalog, or use LanceTable.forPath"
        )
    prefix = f"spark.sql.catalog.{catalog}."
    storage = {
        key[len(prefix) + len(_STORAGE) :]: value
        for key, value in spark.conf.getAll.items()
        if key.startswith(prefix + _STORAGE)
    }
    return CatalogTable(catalog, _location(spark, catalog, rest, name), storage)


def _location(spark: SparkSession, catalog: str, parts: list[str], name: str) -> str:
    if len(parts) == 1 and (parts[0].startswith("/") or _URI.match(parts[0])):
        return parts[0]
    warehouse = (spark.conf.get(f"spark.sql.catalog.{catalog}.warehouse", "") or "").rstrip("/")
    if not warehouse:
        raise ArgumentError(
            f"table {name!r}: catalog {catalog!r} has no warehouse, so a table is named "
            f"by its path: {catalog}.`/data/table.lance`"
        )
    for part in parts:
        if not part or "/" in part or part.startswith("."):
            raise ArgumentError(
                f"table {name!r}: {part!r} cannot name a lance table or namespace (empty, "
                "containing '/' or starting with '.')"
            )
    return "/".join([warehouse, *parts[:-1], parts[-1] + SUFFIX])
