"""The streaming sink: one transaction per micro-batch, exactly once across restarts.

Each micro-batch commits as one Append (an Overwrite in complete mode) whose
transaction properties record the query and the batch id, in the same atomic commit as
the rows.  A query restarted from its checkpoint may replay a batch whose commit
landed before the checkpoint recorded it; the sink then finds the batch id among the
recent transactions and commits nothing.

A query is known by the id Spark keeps in its checkpoint (``<checkpoint>/metadata``),
which survives restarts; option ``stream_id`` names it explicitly instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql import datasource as sds
from pyspark.sql import types as st

from lancelet.dataset.engine import (
    Append,
    Location,
    Operation,
    Overwrite,
    Snapshot,
    latest_version,
    open_snapshot,
    version_record,
)
from lancelet.errors import VersionNotFoundError
from lancelet.spark.options import WriteOptions
from lancelet.spark.writer import (
    LanceCommitMessage,
    commit_fragments,
    discard,
    files_version,
    fragments_of,
    latest_manifest,
    new_dataset_schema,
    target_schema,
    write_task,
)

QUERY_KEY = "lancelet.spark.stream.query_id"
BATCH_KEY = "lancelet.spark.stream.batch_id"


def stream_identity(options: WriteOptions) -> str:
    """The id of the query writing: ``stream_id``, else the one in the checkpoint."""
    if options.stream_id:
        return options.stream_id
    location = options.checkpoint_location
    if not location:
        raise ValueError(
            f"{options.path}: the lance streaming sink needs option checkpointLocation "
            "(or stream_id) to commit each micro-batch exactly once"
        )
    path = location.removeprefix("file://").removeprefix("file:")
    try:
        with open(os.path.join(path, "metadata"), encoding="utf-8") as file:
            found = json.loads(file.readline())["id"]
        return str(found)
    except (OSError, ValueError, KeyError, TypeError):
        # A checkpoint this process cannot read (remote storage): its location is stable.
        return os.path.abspath(path) if "://" not in path else path


def last_committed_batch(location: Location, query: str) -> int | None:
    """The newest batch id ``query`` committed, from the transactions of the versions
    still on disk, newest first; None if none of them is the query's."""
    latest = latest_version(location)
    if latest is None:
        return None
    base: Location | Snapshot = location  # then each version's, to share its storage
    for version in range(latest, 0, -1):
        try:
            base = open_snapshot(base, version)
        except VersionNotFoundError:
            return None  # older versions were cleaned up
        properties = version_record(base).properties
        if properties.get(QUERY_KEY) == query:
            return int(properties.get(BATCH_KEY, "-1"))
    return None


class LanceStreamWriter(sds.DataSourceStreamArrowWriter):
    def __init__(self, spark: st.StructType, options: WriteOptions, overwrite: bool) -> None:
        self.uri = options.path
        self.options = options
        self.overwrite = overwrite
        self.spark = spark
        self.new_schema = new_dataset_schema(spark, self.uri)
        latest = latest_manifest(options.location())
        # Refuse an unwritable format, or one the dataset does not hold, when the query
        # starts, not at its first batch; and a schema mismatch likewise.
        files_version(latest, overwrite, options.data_storage_version)
        target_schema(spark, latest, not overwrite, self.uri, replace=True)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LanceCommitMessage:
        # Tasks read the latest version: earlier micro-batches may have created the
        # dataset since the query started.
        location = self.options.location()
        latest = latest_manifest(location)
        schema = target_schema(self.spark, latest, not self.overwrite, self.uri, replace=True)
        read_version = latest.version if latest else 0
        files = files_version(latest, self.overwrite, self.options.data_storage_version)
        return write_task(
            location, schema, iterator, self.options.max_rows_per_file, read_version, files
        )

    def commit(self, messages: Sequence[sds.WriterCommitMessage | None], batchId: int) -> None:
        location = self.options.location()
        query = stream_identity(self.options)
        done = last_committed_batch(location, query)
        if done is not None and done >= batchId:
            discard(location, messages)  # a replay of a batch already committed
            return
        fragments = tuple(fragments_of(messages))
        if not fragments and not self.overwrite:
            return
        read_version = self._read_version(location, messages)
        creates = read_version == 0
        operation: Operation = (
            Overwrite(fragments, self.new_schema)
            if creates or self.overwrite
            else Append(fragments)
        )
        properties = {QUERY_KEY: query, BATCH_KEY: str(batchId)}
        commit_fragments(
            location,
            operation,
            read_version,
            create_only=creates and not self.overwrite,
            properties=properties,
            version=self.options.data_storage_version,
        )

    def _read_version(
        self, location: Location, messages: Sequence[sds.WriterCommitMessage | None]
    ) -> int:
        """The oldest version a task wrote against: the commit is checked against every
        change since, so one that invalidates another task's files is a conflict."""
        seen = [m.read_version for m in messages if isinstance(m, LanceCommitMessage)]
        if seen:
            return min(seen)
        return latest_version(location) or 0

    def abort(self, messages: Sequence[sds.WriterCommitMessage | None], batchId: int) -> None:
        discard(self.options.location(), messages)
