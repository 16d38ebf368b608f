"""Batch reads of the change data feed: ``spark.read.format("lance")
.option("readChangeFeed", "true").option("startingVersion", a).load(path)``.

The rows each commit from ``startingVersion`` (or ``startingTimestamp``) to
``endingVersion`` (or ``endingTimestamp``; the latest version by default) inserted,
updated and deleted, as Delta's change data feed shows them: the data columns of
the ending version, then ``_change_type`` (``insert``, ``update_preimage``,
``update_postimage``, ``delete``), ``_commit_version`` and ``_commit_timestamp``.
The engine tells the changes apart from stable row ids and lineage
(:func:`lancelet.dataset.engine.commit_changes`), so the dataset needs stable row ids.

A read is cut into tasks by commit: one per commit that changed rows, or several
for a commit that changed more than ``rows_per_partition`` rows.  The commits and
their sizes come from metadata when the read is planned, so a commit the feed cannot
read fails the query before any task starts.  Where each query's read is planned for
it alone (the JVM bridge, Spark 5), the filters Spark pushes on data columns,
``_change_type``, ``_commit_version`` and the row id are evaluated here (those on
``_commit_version`` skip whole commits), and only the columns the query uses are read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import datasource as sds
from pyspark.sql import types as st

from lancelet.dataset.engine import (
    CHANGE_FEED_COLUMNS,
    ROW_ID,
    ChangeFeedSpec,
    FragmentRows,
    Location,
    Snapshot,
    change_feed_spec,
    change_feed_versions,
    commit_change_count,
    commit_changes,
    latest_version,
    open_snapshot,
)
from lancelet.errors import SchemaError, UnsupportedTypeError
from lancelet.spark.filters import conjunction, to_expression, top_level_columns
from lancelet.spark.options import ChangeFeedOptions, Instant
from lancelet.spark.partial_aggregate import counted
from lancelet.spark.read_hints import ReadHints
from lancelet.spark.reader import CountedRows, FragmentRange
from lancelet.spark.table_versions import version_at, version_from
from lancelet.spark.types import natural_spark_type, same_spark_type, spark_arrow_schema

CHANGE_COLUMNS = tuple(name for name, _ in CHANGE_FEED_COLUMNS)
CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP = CHANGE_COLUMNS
# Change columns whose pushed filters are evaluated here.  Not the timestamp: the
# instant a Spark timestamp literal stands for depends on settings Python cannot see.
_PUSHABLE = (ROW_ID, CHANGE_TYPE, COMMIT_VERSION)
NO_START = (
    "lance data source: no startingVersion or startingTimestamp provided for the change "
    "feed read (readChangeFeed): startingVersion or startingTimestamp is required"
)


# -- the range of commits ------------------------------------------------------------------


def feed_end(options: ChangeFeedOptions) -> int | None:
    """The version a feed read ends at (its schema's): ``endingVersion`` (at most the
    latest), the last version committed at or before ``endingTimestamp``, or the latest;
    None when there is no dataset.  Fixed once per DataFrame, as a plain read's version."""
    location = options.location()
    latest = latest_version(location)
    if latest is None:
        return None
    if isinstance(options.ending, Instant):
        return version_at(location, options.ending.micros)
    return latest if options.ending is None else min(options.ending, latest)


def batch_commits(options: ChangeFeedOptions, end: int) -> range:
    """The commits a batch read covers, as Delta checks them: a start is required, it
    may not be after the latest version nor after the end, except that two instants
    between the same two commits read nothing."""
    location = options.location()
    start = options.starting
    if start is None:
        raise ValueError(NO_START)
    if isinstance(start, Instant):
        first = version_from(location, start.micros)
        if first is None:
            raise ValueError(
                f"{location.uri}: the startingTimestamp {start.text!r} is after the latest "
                f"version, {latest_version(location)}; use a timestamp before or at its commit"
            )
        if isinstance(options.ending, Instant):
            if start.micros > options.ending.micros:
                raise ValueError(_invalid_range(first, end))
            if first == end + 1:
                return range(first, first)  # no commit between the two instants
        return _checked(location, first, end)
    if not isinstance(start, int):
        raise ValueError(f"lance data source: startingVersion={start!r} is for streams")
    latest = end if options.ending is None else latest_version(location)
    if latest is not None and start > latest:
        raise ValueError(
            f"{location.uri}: Provided Start version({start}) for reading change data is "
            "invalid. Start version cannot be greater than the latest version of the "
            f"table({latest})."
        )
    return _checked(location, start, end)


def _checked(location: Location, start: int, end: int) -> range:
    if start > end:
        raise ValueError(_invalid_range(start, end))
    return change_feed_versions(location, start, end)


def _invalid_range(start: int, end: int) -> str:
    return (
        f"lance data source: CDC range from start {start} to end {end} was invalid. "
        "End cannot be before start."
    )


# -- the schema ------------------------------------------------------------------------------


def full_spec(options: ChangeFeedOptions, end: int) -> ChangeFeedSpec:
    """The feed with every column the options ask for, ending at version ``end``."""
    location = options.location()
    return change_feed_spec(location, end, options.columns, with_row_id=options.with_row_id)


def change_schema(spec: ChangeFeedSpec, where: str) -> st.StructType:
    """The Spark schema of a feed read: the data columns (of the ending version), the
    row id when asked for, and Delta's change columns."""
    return _spark_schema(spec.output_schema(), where)


def _spark_schema(arrow: pa.Schema, where: str) -> st.StructType:
    clashes = [n for n in arrow.names[: -len(CHANGE_COLUMNS)] if n in CHANGE_COLUMNS]
    if clashes:
        raise SchemaError(
            f"{where}: column {clashes[0]!r} has the name of a change feed column, so the "
            "change feed cannot be read (rename it, or read other columns)"
        )
    fields = []
    for field in arrow:
        natural = natural_spark_type(field)  # the row id reads as a long
        if natural is None:
            raise UnsupportedTypeError(
                f"{where}: column {field.name!r}: Spark has no type for Arrow type {field.type}"
            )
        fields.append(st.StructField(field.name, natural, field.nullable))
    return st.StructType(fields)


# -- reading ----------------------------------------------------------------------------------


class CommitPart(sds.InputPartition):
    """Share ``part`` of ``parts`` of one commit's changes."""

    def __init__(self, version: int, part: int, parts: int) -> None:
        super().__init__((version, part, parts))
        self.version = version
        self.share = (part, parts)


def commit_sizes(at: Snapshot, versions: Iterable[int]) -> dict[int, int]:
    """How many change rows each commit makes (from metadata)."""
    return {version: commit_change_count(at, version) for version in versions}


def commit_parts(sizes: dict[int, int], rows_per_partition: int) -> list[CommitPart]:
    """Each commit that changed rows as tasks of at most about ``rows_per_partition``
    change rows."""
    out: list[CommitPart] = []
    for version, rows in sizes.items():
        parts = -(-rows // rows_per_partition)
        out.extend(CommitPart(version, k, parts) for k in range(parts))
    return out


@dataclass(frozen=True)
class _Column:
    output: str  # the name Spark asked for
    source: str  # the feed's column it comes from


class ChangeRows:
    """What a feed read hands Spark: the engine's rows (read as ``spec`` says: the
    columns of the read schema), those the pushed filters keep, as the read schema's
    columns in Spark's Arrow types."""

    def __init__(
        self, read: st.StructType, full: ChangeFeedSpec, end: int, options: ChangeFeedOptions
    ) -> None:
        location = options.location()
        self._columns = _resolve(read, full.output_schema().names, f"{location.uri} version {end}")
        wanted = {c.source for c in self._columns}
        data = [n for n in full.columns if n in wanted]
        self.spec: ChangeFeedSpec = change_feed_spec(
            location, end, data, with_row_id=ROW_ID in wanted, batch_size=options.batch_size
        )
        self.location = location
        self.read = read
        self._target = spark_arrow_schema(read)
        self._pushable = _pushable(read, self.spec.output_schema())
        self._filters: list[pc.Expression] = []
        self._on_version: list[pc.Expression] = []  # filters testing _commit_version only

    def push(self, filters: Sequence[sds.Filter]) -> list[sds.Filter]:
        """Take the filters this read evaluates exactly; the others are returned.  Each
        call replaces the last (Spark may push the same filters again)."""
        taken: list[pc.Expression] = []
        on_version: list[pc.Expression] = []
        left = []
        for spark_filter in filters:
            expression = to_expression(spark_filter, self._pushable)
            if expression is None:
                left.append(spark_filter)
                continue
            taken.append(expression)
            if top_level_columns(spark_filter) == {COMMIT_VERSION}:
                on_version.append(expression)
        self._filters, self._on_version = taken, on_version
        return left

    @property
    def filtered(self) -> bool:
        """Whether pushed filters drop rows here."""
        return bool(self._filters)

    def keeps_commit(self, version: int) -> bool:
        """Whether rows of commit ``version`` can pass the filters on ``_commit_version``."""
        expression = conjunction(self._on_version)
        if expression is None:
            return True
        one = pa.table({COMMIT_VERSION: pa.array([version], pa.int64())})
        return bool(one.filter(expression).num_rows)

    def commit(self, part: CommitPart) -> Iterator[pa.RecordBatch]:
        return self._handed(commit_changes(self.spec, part.version, part.share))

    def snapshot(self, part: FragmentRange, version: int, micros: int) -> Iterator[pa.RecordBatch]:
        """Rows of a fragment of version ``version`` (the spec's) as inserts committed
        then: how a stream without a starting version delivers the table first."""
        spec = self.spec
        reader = FragmentRows(self.location, spec.schema, part.fragment)
        step = spec.batch_size
        for low in range(part.start, part.stop, step):
            high = min(low + step, part.stop)
            table = reader.live_range(list(spec.columns), low, high, with_addresses=True)
            if table.num_rows:
                yield from self._handed(
                    iter(_as_inserts(spec, table, version, micros).to_batches())
                )

    def _handed(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        expression = conjunction(self._filters)
        for batch in batches:
            table = pa.Table.from_batches([batch])
            if expression is not None:
                table = table.filter(expression)
            if table.num_rows:
                yield from self._to_spark(table).to_batches()

    def _to_spark(self, table: pa.Table) -> pa.Table:
        if not self._columns:
            return table.select([])  # no columns, the row count still matters (count())
        arrays = [table.column(c.source) for c in self._columns]
        out = pa.Table.from_arrays(arrays, names=[c.output for c in self._columns])
        try:
            return out.cast(self._target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
            raise SchemaError(
                f"{self.location.uri}: cannot hand the change feed's rows to Spark as "
                f"{self.read.simpleString()}: {exc}"
            ) from exc


def _resolve(read: st.StructType, names: Sequence[str], where: str) -> list[_Column]:
    """Spark's field names matched to the feed's columns, exactly or else ignoring case."""
    by_lower: dict[str, list[str]] = {}
    for name in names:
        by_lower.setdefault(name.lower(), []).append(name)
    out = []
    for field in read.fields:
        found = [field.name] if field.name in names else by_lower.get(field.name.lower(), [])
        if len(found) != 1:
            raise SchemaError(
                f"{where}: the read schema names column {field.name!r}, which the change "
                f"feed does not have (columns are {list(names)})"
            )
        out.append(_Column(field.name, found[0]))
    return out


def _pushable(read: st.StructType, output: pa.Schema) -> pa.Schema:
    """The columns a pushed filter may test: read under their own name and Spark type."""
    data = output.names[: -len(CHANGE_COLUMNS)]
    fields = []
    for field in read.fields:
        if field.name not in output.names or (
            field.name not in data and field.name not in _PUSHABLE
        ):
            continue
        own = output.field(field.name)
        natural = natural_spark_type(own)
        if natural is not None and same_spark_type(natural, field.dataType):
            fields.append(own)
    return pa.schema(fields)


def _as_inserts(spec: ChangeFeedSpec, table: pa.Table, version: int, micros: int) -> pa.Table:
    n = table.num_rows
    arrays = [table.column(c) for c in spec.columns]
    if spec.with_row_id:
        arrays.append(table.column(ROW_ID))
    stamp = pa.scalar(micros, pa.timestamp("us", tz="UTC"))
    arrays += [
        pa.array(["insert"] * n, pa.string()),
        pa.array(np.full(n, version, dtype=np.int64)),
        pa.repeat(stamp, n),
    ]
    schema = spec.output_schema()
    out: pa.Table = pa.Table.from_arrays(arrays, names=schema.names).cast(schema)
    return out


class LanceChangeReader(sds.DataSourceReader):
    """A batch read of the feed over ``commits``, with the columns (and, through the
    JVM bridge, limit or partial aggregates) the query asks for."""

    def __init__(
        self, schema: st.StructType, options: ChangeFeedOptions, commits: range, end: int
    ) -> None:
        full = full_spec(options, end)
        self._hints = ReadHints.of(schema)
        self._output = schema
        read = self._hints.columns(schema, change_schema(full, f"{options.path} version {end}"))
        self._rows = ChangeRows(read, full, end, options)
        self._commits = commits
        self._end = end
        self._rows_per_partition = options.rows_per_partition

    def partitions(self) -> Sequence[sds.InputPartition]:
        snapshot = open_snapshot(self._rows.location, self._end)  # one storage for all
        kept = (v for v in self._commits if self._rows.keeps_commit(v))
        sizes = commit_sizes(snapshot, kept)
        if self._hints.counts_rows and not self._rows.filtered:
            # COUNT(*): the commits' change rows, counted from metadata; no task runs.
            return [CountedRows(sum(sizes.values()))]
        return commit_parts(sizes, self._rows_per_partition)

    def read(self, partition: sds.InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, CountedRows):
            return iter([counted(partition.rows, spark_arrow_schema(self._output))])
        # Spark plans one empty partition when there are none.
        batches = self._rows.commit(partition) if isinstance(partition, CommitPart) else iter(())
        return self._hints.applied(batches, self._output, self._rows.read)


class LanceChangeFilteringReader(LanceChangeReader):
    """A feed read that also evaluates the filters Spark pushes: only where Spark keeps
    a read planned with pushed filters to that query (see :mod:`lancelet.spark.compat`)."""

    def pushFilters(self, filters: list[sds.Filter]) -> Iterable[sds.Filter]:
        return self._rows.push(filters)
