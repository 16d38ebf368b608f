"""``LanceDataSource``: the ``lance`` format of ``spark.read``, ``df.write`` and
``df.writeStream``."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import replace
from typing import ClassVar

from pyspark.sql import datasource as sds
from pyspark.sql import types as st

from lancelet.dataset.engine import Location, latest_version, open_snapshot
from lancelet.errors import DatasetNotFoundError
from lancelet.spark.bridge import PYTHON_NAME
from lancelet.spark.change_feed import (
    LanceChangeFilteringReader,
    LanceChangeReader,
    batch_commits,
    change_schema,
    feed_end,
    full_spec,
)
from lancelet.spark.change_stream import LanceChangeStreamReader
from lancelet.spark.compat import PUSHED_READ_PER_QUERY
from lancelet.spark.options import (
    ChangeFeedOptions,
    Instant,
    ReadOptions,
    change_feed_options,
    dataset_path,
    read_options,
    reads_change_feed,
    stream_options,
    version_option,
    write_options,
)
from lancelet.spark.read_hints import with_row_count
from lancelet.spark.reader import (
    LanceFilteringReader,
    LanceReader,
    dataset_schema,
    live_rows_counted,
    open_dataset,
)
from lancelet.spark.storage import storage_options
from lancelet.spark.stream import LanceStreamWriter
from lancelet.spark.stream_source import LanceStreamReader
from lancelet.spark.table_versions import version_at
from lancelet.spark.writer import LanceWriter

FORMAT = "lance"


def snapshot_version(
    options: Mapping[str, str], settings: Mapping[str, str] | None = None
) -> int | None:
    """The number of the version a read reads: the one asked for (a number or a tag,
    resolved now), else the latest; None when there is no dataset.  ``settings``: the
    session's S3A settings."""
    path = dataset_path(options)
    location = Location(path, storage_options(path, options, settings))
    asked = version_option(options)
    if isinstance(asked, Instant):
        return version_at(location, asked.micros)
    if asked is not None:
        return open_snapshot(location, asked).version
    return latest_version(location)


class LanceDataSource(sds.DataSource):
    """Reads a dataset version as a DataFrame; writes a DataFrame or a stream into one.

    A DataFrame reads one version for all its queries: the one it names, or else the
    latest when it was loaded (load it again to read later commits).  Spark creates the
    source once per DataFrame and plans each query's read from a pickled copy, so the
    version is fixed here; a query without pushable filters may even rerun the read
    an earlier query planned (see :mod:`lancelet.spark.compat`).

    Read options: ``filter`` (the rows the DataFrame holds, in pylance's filter
    dialect: lancelet reads them with late materialization and scalar indices, the
    way to skip data while Spark 4.x pushes no filters to Python sources),
    ``version`` (a number or a tag), ``versionAsOf``, ``tag``,
    ``timestampAsOf`` (the latest version committed at or before it; an ISO date or
    timestamp, local time without an offset), ``columns`` (comma-separated
    or a JSON list), ``with_row_id``, ``with_row_address``, ``max_partition_bytes``
    (a partition's share of the bytes read, 128 MiB by default, as Spark's
    ``maxPartitionBytes``), ``min_partitions`` (the cores a small table is spread
    over; the driver's by default), ``rows_per_partition`` (a fixed cut instead),
    ``batch_size``, ``pushdown`` (evaluate the filters Spark pushes in lancelet: on by
    default, and only possible, where Spark keeps a pushed read to its query),
    ``use_scalar_index`` (let the dataset's scalar indices narrow the rows the pushed
    filters are evaluated on; true by default).

    Write options: ``max_rows_per_file``, ``data_storage_version`` and, with Spark's
    append mode, ``write_mode`` (``create``/``errorifexists`` or ``ignore``).
    Streaming writes: ``checkpointLocation`` (or ``stream_id``).

    Streaming reads (see :mod:`lancelet.spark.stream_source`): ``startingVersion``
    (a number or ``latest``), ``startingTimestamp``, ``maxRowsPerTrigger``,
    ``maxFilesPerTrigger`` (fragments), ``ignoreDeletes``, ``skipChangeCommits``,
    ``columns``, ``rows_per_partition``, ``batch_size``.

    Change data feed reads (``readChangeFeed``, see :mod:`lancelet.spark.change_feed`
    and :mod:`lancelet.spark.change_stream`): ``startingVersion``,
    ``startingTimestamp``, ``endingVersion``, ``endingTimestamp`` (batch reads),
    ``maxRowsPerTrigger``, ``maxFilesPerTrigger`` (commits; streams), ``columns``,
    ``with_row_id``, ``rows_per_partition`` (change rows per task), ``batch_size``,
    ``pushdown``.

    Every read and write takes storage options as ``storage.<key>`` with pylance's
    keys (``storage.endpoint``, ``storage.aws_access_key_id``, ...), over the S3A
    settings of the session the source was registered in (see
    :mod:`lancelet.spark.storage`).
    """

    # The session's S3A settings (``fs.s3a.*``) when the source was registered: the
    # source runs where no session is active (see :func:`registered_source`).
    s3a_settings: ClassVar[Mapping[str, str]] = {}
    # Whether each query's read is planned for it alone: true of the source the JVM
    # bridge plans reads of (lancelet.spark.bridge), and on Spark 5.
    per_query_plans: ClassVar[bool] = PUSHED_READ_PER_QUERY

    # pyspark asks sources not to override __init__; this keeps its signature and
    # behaviour, and adds the version every read of this DataFrame will read.
    def __init__(self, options: MutableMapping[str, str]) -> None:
        super().__init__(options)
        self.change_feed = reads_change_feed(options)
        if self.change_feed:  # the feed's ending version, whose schema it reads with
            self.snapshot = feed_end(self._change_options(None))
        else:
            self.snapshot = snapshot_version(options, self.s3a_settings)

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def _read_options(self, *, streaming: bool = False) -> ReadOptions:
        options = read_options(
            self.options,
            streaming=streaming,
            settings=self.s3a_settings,
            per_query=self.per_query_plans,
        )
        if self.snapshot is None:
            raise DatasetNotFoundError(f"{options.path}: no Lance dataset here")
        return replace(options, version=self.snapshot)

    def _change_options(self, streaming: bool | None) -> ChangeFeedOptions:
        return change_feed_options(
            self.options,
            streaming=streaming,
            settings=self.s3a_settings,
            per_query=self.per_query_plans,
        )

    def _version(self, path: str) -> int:
        if self.snapshot is None:
            raise DatasetNotFoundError(f"{path}: no Lance dataset here")
        return self.snapshot

    def schema(self) -> st.StructType:
        if self.change_feed:
            changes = self._change_options(None)  # serves batch and stream reads
            end = self._version(changes.path)
            return change_schema(full_spec(changes, end), f"{changes.path} version {end}")
        options = self._read_options(streaming=True)  # serves batch and stream reads
        schema = dataset_schema(open_dataset(options), options)
        if self.name() != PYTHON_NAME:
            return schema
        # The bridge answers a COUNT(*) with this, and takes it off the schema.
        rows = live_rows_counted(
            options, open_snapshot(options.location(), self._version(options.path))
        )
        return schema if rows is None else with_row_count(schema, rows)

    def reader(self, schema: st.StructType) -> LanceReader | LanceChangeReader:
        if self.change_feed:
            changes = self._change_options(False)
            end = self._version(changes.path)
            feed = LanceChangeFilteringReader if changes.pushdown else LanceChangeReader
            return feed(schema, changes, batch_commits(changes, end), end)
        options = self._read_options()
        kind = LanceFilteringReader if options.pushdown else LanceReader
        return kind(schema, options)

    def streamReader(self, schema: st.StructType) -> LanceStreamReader | LanceChangeStreamReader:
        if self.change_feed:
            changes = self._change_options(True)
            return LanceChangeStreamReader(schema, changes, self._version(changes.path))
        options = stream_options(self.options, self.s3a_settings)
        return LanceStreamReader(schema, options, self._version(options.path))

    def writer(self, schema: st.StructType, overwrite: bool) -> LanceWriter:
        options = write_options(self.options, settings=self.s3a_settings)
        return LanceWriter.create(schema, options, overwrite)

    def streamWriter(self, schema: st.StructType, overwrite: bool) -> LanceStreamWriter:
        options = write_options(self.options, streaming=True, settings=self.s3a_settings)
        return LanceStreamWriter(schema, options, overwrite)


def registered_source(s3a_settings: Mapping[str, str], name: str = FORMAT) -> type[LanceDataSource]:
    """The source to register in a session with these S3A settings, under ``name``
    (``PYTHON_NAME``: the source the JVM bridge plans each query's read of).

    Spark runs a Python data source in Python processes it starts, where no session
    is active, and hands it only the read's or write's options; the settings travel
    in the class itself, a subclass pickled by value (cloudpickle copies a class it
    cannot import by name) when the session is registered."""
    if not s3a_settings and name == FORMAT:
        return LanceDataSource
    frozen = dict(s3a_settings)
    bridged = name == PYTHON_NAME or PUSHED_READ_PER_QUERY

    class SessionLanceDataSource(LanceDataSource):
        s3a_settings: ClassVar[Mapping[str, str]] = frozen
        per_query_plans: ClassVar[bool] = bridged

        @classmethod
        def name(cls) -> str:
            return name

    return SessionLanceDataSource
