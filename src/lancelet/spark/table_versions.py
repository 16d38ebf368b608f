"""A table's versions as Spark DataFrames: its history, and what restore and vacuum did.

History comes from the manifests and their transaction files.  What a transaction
file cannot say (the row counts of a delete, the condition of a merge) LanceTable
records in the transaction's properties when it commits, under ``lancelet.table.``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, timezone
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as st

from lancelet.dataset.engine import (
    Location,
    Snapshot,
    file_sizes,
    open_snapshot,
    version_record,
    versions,
)
from lancelet.table import features

_PARAMETER = "lancelet.table.parameter."
_METRIC = "lancelet.table.metric."

HISTORY_SCHEMA = st.StructType(
    [
        st.StructField("version", st.LongType(), False),
        st.StructField("timestamp", st.TimestampType(), False),
        st.StructField("operation", st.StringType(), False),
        st.StructField("operationParameters", st.MapType(st.StringType(), st.StringType())),
        st.StructField("readVersion", st.LongType()),
        st.StructField("isBlindAppend", st.BooleanType(), False),
        st.StructField("operationMetrics", st.MapType(st.StringType(), st.StringType())),
    ]
)


def counts_frame(spark: SparkSession, counts: Mapping[str, int]) -> DataFrame:
    """One row of counts, in the given order, as ``long`` columns."""
    schema = st.StructType([st.StructField(name, st.LongType(), False) for name in counts])
    return spark.createDataFrame([tuple(int(v) for v in counts.values())], schema)


def command_properties(parameters: Mapping[str, str], metrics: Mapping[str, int]) -> dict[str, str]:
    """Transaction properties recording a command's parameters and row counts."""
    out = {_PARAMETER + k: v for k, v in parameters.items()}
    out.update({_METRIC + k: str(v) for k, v in metrics.items()})
    return out


# -- history ----------------------------------------------------------------------------


def _recorded(properties: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix) :]: v for k, v in properties.items() if k.startswith(prefix)}


def history_row(snapshot: Snapshot) -> tuple[Any, ...]:
    """The version's row of the history (a transaction file removed by a cleanup that
    kept the manifest leaves it saying less)."""
    record = version_record(snapshot)
    parameters, metrics = dict(record.parameters), dict(record.metrics)
    parameters.update(_recorded(record.properties, _PARAMETER))
    metrics.update(_recorded(record.properties, _METRIC))
    return (
        record.version,
        datetime.fromtimestamp(record.timestamp_ns / 1e9, tz=timezone.utc),
        record.operation.upper(),
        parameters,
        record.read_version,
        record.blind_append,
        metrics,
    )


def history_frame(spark: SparkSession, location: Location, limit: int | None) -> DataFrame:
    """The versions on disk, newest first (the latest ``limit`` of them)."""
    if limit is not None and limit < 1:
        raise ValueError(f"{location.uri}: history limit must be positive, got {limit}")
    rows = []
    base: Location | Snapshot = location  # then a version's, to share its storage
    for version in list(reversed(versions(location)))[:limit]:
        base = open_snapshot(base, version)
        rows.append(history_row(base))
    return spark.createDataFrame(rows, HISTORY_SCHEMA)


# -- restore ----------------------------------------------------------------------------


def restore_metrics(before: Snapshot, after: Snapshot) -> dict[str, int]:
    """What a restore changed, under Delta's names."""
    old, new = file_sizes(before), file_sizes(after)
    removed, restored = old.keys() - new.keys(), new.keys() - old.keys()
    return {
        "table_size_after_restore": sum(new.values()),
        "num_of_files_after_restore": len(new),
        "num_removed_files": len(removed),
        "num_restored_files": len(restored),
        "removed_files_size": sum(old[p] for p in removed),
        "restored_files_size": sum(new[p] for p in restored),
    }


# -- time travel by timestamp -------------------------------------------------------------


def instant_micros(spark: SparkSession, timestamp: object) -> int:
    """Microseconds since the epoch of ``timestamp`` (a string or date Spark casts to a
    timestamp, in the session's time zone as Delta reads ``timestampAsOf``, or a
    ``datetime``/``date``), parsed by Spark itself."""
    from pyspark.sql import functions as F

    if isinstance(timestamp, datetime) and timestamp.tzinfo is not None:
        return int(timestamp.timestamp() * 1_000_000)
    if isinstance(timestamp, date):
        text = timestamp.isoformat(sep=" ") if isinstance(timestamp, datetime) else str(timestamp)
    elif isinstance(timestamp, str):
        text = timestamp
    else:
        raise TypeError(f"a timestamp must be a string, date or datetime, not {timestamp!r}")
    found = spark.range(1).select(F.unix_micros(F.to_timestamp(F.lit(text)))).first()
    if found is None or found[0] is None:
        raise ValueError(f"{text!r} is not a timestamp Spark can read")
    return int(found[0])


def _timestamps(location: Location) -> list[tuple[int, int]]:
    """Each version on disk, oldest first, with its commit time in microseconds."""
    out = []
    base: Location | Snapshot = location  # then a version's, to share its storage
    for version in versions(location):
        base = open_snapshot(base, version)
        out.append((version, base.manifest.timestamp_ns // 1000))
    return out


def version_at(location: Location, micros: int) -> int:
    """The latest version committed at or before ``micros``; an instant before the
    first version or after the latest is an error naming that version's time, as in
    Delta."""
    stamps = _timestamps(location)
    root = location.uri
    if not stamps:
        raise ValueError(f"{root}: no versions")
    earlier = [version for version, stamp in stamps if stamp <= micros]
    if not earlier:
        first = _utc(stamps[0][1])
        raise ValueError(
            f"{root}: the timestamp {_utc(micros)} is before the earliest version "
            f"available, {stamps[0][0]} committed at {first}"
        )
    if micros > stamps[-1][1] and not _same_second(micros, stamps[-1][1]):
        raise ValueError(
            f"{root}: the timestamp {_utc(micros)} is after the latest version, "
            f"{stamps[-1][0]} committed at {_utc(stamps[-1][1])}; use versionAsOf "
            f"{stamps[-1][0]} to read it"
        )
    return max(earlier)


def version_from(location: Location, micros: int) -> int | None:
    """The first version committed at or after ``micros`` (Delta's starting
    timestamp); None when the latest was committed before it."""
    return next((v for v, stamp in _timestamps(location) if stamp >= micros), None)


def _utc(micros: int) -> str:
    return datetime.fromtimestamp(micros / 1e6, tz=timezone.utc).isoformat()


def _same_second(a: int, b: int) -> bool:
    return a // 1_000_000 == b // 1_000_000


# -- detail ------------------------------------------------------------------------------

DETAIL_SCHEMA = st.StructType(
    [
        st.StructField("format", st.StringType(), False),
        st.StructField("id", st.StringType()),
        st.StructField("name", st.StringType()),
        st.StructField("description", st.StringType()),
        st.StructField("location", st.StringType(), False),
        st.StructField("createdAt", st.TimestampType()),
        st.StructField("lastModified", st.TimestampType(), False),
        st.StructField("partitionColumns", st.ArrayType(st.StringType()), False),
        st.StructField("clusteringColumns", st.ArrayType(st.StringType()), False),
        st.StructField("numFiles", st.LongType(), False),
        st.StructField("sizeInBytes", st.LongType(), False),
        st.StructField("properties", st.MapType(st.StringType(), st.StringType()), False),
        st.StructField("minReaderVersion", st.IntegerType()),
        st.StructField("minWriterVersion", st.IntegerType()),
        st.StructField("tableFeatures", st.ArrayType(st.StringType()), False),
        st.StructField("statistics", st.MapType(st.StringType(), st.StringType()), False),
    ]
)


def detail_frame(spark: SparkSession, snapshot: Snapshot) -> DataFrame:
    """Delta's ``DESCRIBE DETAIL`` row for the latest version.  Lance has no table id,
    name, partitions or protocol versions (those are null or empty); ``properties`` is
    the dataset's config, ``tableFeatures`` its feature flags, and ``numFiles`` and
    ``sizeInBytes`` count its data and deletion files."""
    latest = snapshot.manifest
    first = open_snapshot(snapshot, versions(snapshot)[0]).manifest
    files = file_sizes(snapshot)
    row: tuple[Any, ...] = (
        "lance",
        None,
        None,
        None,
        snapshot.uri,
        datetime.fromtimestamp(first.timestamp_ns / 1e9, tz=timezone.utc),
        datetime.fromtimestamp(latest.timestamp_ns / 1e9, tz=timezone.utc),
        [],
        [],
        len(files),
        sum(files.values()),
        dict(latest.config),
        None,
        None,
        features.flag_names(latest.reader_feature_flags | latest.writer_feature_flags),
        {
            "numRows": str(latest.num_rows),
            "numFragments": str(len(latest.fragments)),
            "version": str(latest.version),
        },
    )
    return spark.createDataFrame([row], DETAIL_SCHEMA)
