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

from lancelet.errors import CorruptDatasetError
from lancelet.table import features
from lancelet.table.manifest import Manifest
from lancelet.transaction import operations as ops
from lancelet.transaction.operations.kind import Description
from lancelet.transaction.registry import describe, kind_of
from lancelet.transaction.store import DatasetStore

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


def _transaction(store: DatasetStore, manifest: Manifest) -> ops.Transaction | None:
    if not manifest.transaction_file:
        return None
    try:
        return store.read_transaction(manifest.transaction_file)
    except CorruptDatasetError:
        return None  # removed by a cleanup that kept the manifest: history says less


def history_row(store: DatasetStore, version: int) -> tuple[Any, ...]:
    manifest = store.read_manifest(version)
    txn = _transaction(store, manifest)
    operation = txn.operation if txn is not None else None
    described = describe(operation) if operation is not None else Description()
    parameters, metrics = dict(described.parameters), dict(described.metrics)
    properties = txn.properties if txn is not None else {}
    parameters.update(_recorded(properties, _PARAMETER))
    metrics.update(_recorded(properties, _METRIC))
    return (
        manifest.version,
        datetime.fromtimestamp(manifest.timestamp_ns / 1e9, tz=timezone.utc),
        kind_of(operation).upper(),
        parameters,
        txn.read_version if txn is not None and txn.read_version else None,
        isinstance(operation, ops.Append),
        metrics,
    )


def history_frame(spark: SparkSession, store: DatasetStore, limit: int | None) -> DataFrame:
    """The versions on disk, newest first (the latest ``limit`` of them)."""
    if limit is not None and limit < 1:
        raise ValueError(f"{store.root}: history limit must be positive, got {limit}")
    versions = [location.version for location in reversed(store.list_versions())]
    rows = [history_row(store, v) for v in versions[:limit]]
    return spark.createDataFrame(rows, HISTORY_SCHEMA)


# -- restore ----------------------------------------------------------------------------


def _size(store: DatasetStore, path: str, recorded: int | None = None) -> int:
    if recorded:
        return recorded
    try:
        return store.io.size_of(path)
    except OSError:
        return 0


def _files(store: DatasetStore, manifest: Manifest) -> dict[str, int]:
    """The data and deletion files of a version, by path, with their sizes."""
    out: dict[str, int] = {}
    for fragment in manifest.fragments:
        for data_file in fragment.files:
            path = store.data_path(data_file.path, data_file.base_id)
            out[path] = _size(store, path, data_file.file_size_bytes)
        if fragment.deletion_file is not None:
            path = store.deletion_path(fragment.id, fragment.deletion_file)
            out[path] = _size(store, path)
    return out


def restore_metrics(store: DatasetStore, before: Manifest, after: Manifest) -> dict[str, int]:
    """What a restore changed, under Delta's names."""
    old, new = _files(store, before), _files(store, after)
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


def version_at(store: DatasetStore, micros: int) -> int:
    """The latest version committed at or before ``micros``; an instant before the
    first version or after the latest is an error naming that version's time, as in
    Delta."""
    stamps = [
        (location.version, store.read_manifest(location.version).timestamp_ns // 1000)
        for location in store.list_versions()
    ]
    if not stamps:
        raise ValueError(f"{store.root}: no versions")
    earlier = [version for version, stamp in stamps if stamp <= micros]
    if not earlier:
        first = _utc(stamps[0][1])
        raise ValueError(
            f"{store.root}: the timestamp {_utc(micros)} is before the earliest version "
            f"available, {stamps[0][0]} committed at {first}"
        )
    if micros > stamps[-1][1] and not _same_second(micros, stamps[-1][1]):
        raise ValueError(
            f"{store.root}: the timestamp {_utc(micros)} is after the latest version, "
            f"{stamps[-1][0]} committed at {_utc(stamps[-1][1])}; use versionAsOf "
            f"{stamps[-1][0]} to read it"
        )
    return max(earlier)


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


def detail_frame(spark: SparkSession, store: DatasetStore) -> DataFrame:
    """Delta's ``DESCRIBE DETAIL`` row for the latest version.  Lance has no table id,
    name, partitions or protocol versions (those are null or empty); ``properties`` is
    the dataset's config, ``tableFeatures`` its feature flags, and ``numFiles`` and
    ``sizeInBytes`` count its data and deletion files."""
    locations = store.list_versions()
    latest = store.read_manifest(locations[-1].version)
    first = store.read_manifest(locations[0].version)
    files = _files(store, latest)
    row: tuple[Any, ...] = (
        "lance",
        None,
        None,
        None,
        store.root,
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
