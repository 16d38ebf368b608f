"""``spark.readStream.format("lance")``: a dataset's committed versions as a stream.

The stream first reads the version that was latest when it started (its snapshot),
then each later version's new rows, as Delta's streaming source does.  Its position
(Spark's offset, kept in the query's checkpoint) is the next unit to read: a fragment
of the snapshot, or a fragment a later version added.  Versions never change once
committed, so the rows between two positions are the same whenever they are read,
and a restarted query neither repeats nor misses any.

A version that changes rows already streamed (a delete, update, overwrite, restore
or schema change) fails the stream, unless ``ignoreDeletes`` (deletes only) or
``skipChangeCommits`` (all of them) says to skip it; compactions and index or config
commits carry no new rows and are skipped.  ``maxRowsPerTrigger`` and
``maxFilesPerTrigger`` (fragments) cap a micro-batch, at least one fragment each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import datasource as sds
from pyspark.sql import types as st
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from lancelet.dataset.engine import (
    ChangeKind,
    Location,
    Snapshot,
    latest_version,
    open_snapshot,
    schema_shape,
    version_change,
    versions,
)
from lancelet.errors import DatasetError
from lancelet.spark.options import Instant, ReadOptions, StreamOptions
from lancelet.spark.reader import LanceReader, fragment_ranges
from lancelet.table.fragment import Fragment


class StreamChangeError(DatasetError):
    """A version changed rows the stream had already delivered."""


@dataclass(frozen=True, order=True)
class Position:
    """The next unit to read: fragment ``index`` of ``version``'s snapshot (when
    ``snapshot``) or of the fragments ``version`` added."""

    version: int
    index: int
    snapshot: bool

    def as_offset(self) -> dict[str, Any]:
        return {"version": self.version, "index": self.index, "snapshot": self.snapshot}

    @classmethod
    def of(cls, offset: Mapping[str, Any]) -> Position:
        try:
            return cls(int(offset["version"]), int(offset["index"]), bool(offset["snapshot"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"lance stream: offset {offset!r} is not one lancelet wrote") from exc


class _Feed:
    """The units of each version, worked out once per version (versions never change)."""

    def __init__(self, snapshot: Snapshot, options: StreamOptions, shape: object) -> None:
        # The stream's snapshot, whose storage (and its caches) reads the other versions.
        self._snapshot_version = snapshot.version
        self._opened: Snapshot | None = snapshot
        self._options = options
        self._shape = shape
        self._units: dict[tuple[int, bool], tuple[Fragment, ...]] = {}

    def units(self, version: int, snapshot: bool) -> tuple[Fragment, ...]:
        key = (version, snapshot)
        if key not in self._units:
            self._units[key] = self._snapshot(version) if snapshot else self._added(version)
        return self._units[key]

    def _snapshot(self, version: int) -> tuple[Fragment, ...]:
        manifest = open_snapshot(self._base, version).manifest
        return tuple(f for f in manifest.fragments if f.num_rows)

    def _added(self, version: int) -> tuple[Fragment, ...]:
        change = version_change(self._base, version)
        where = f"{self._base.uri} version {version} ({change.operation})"
        if change.kind in (ChangeKind.NONE, ChangeKind.REWRITE):
            return ()
        if change.kind is ChangeKind.APPEND:
            if schema_shape(change.schema) != self._shape:
                raise StreamChangeError(
                    f"{where}: the schema differs from the stream's; restart the stream "
                    "from a new DataFrame"
                )
            return change.added
        if change.kind is ChangeKind.SCHEMA:
            raise StreamChangeError(
                f"{where}: the schema changed; restart the stream from a new DataFrame"
            )
        skip = self._options.skip_change_commits or (
            change.kind is ChangeKind.DELETE and self._options.ignore_deletes
        )
        if skip:
            return ()
        option = "skipChangeCommits"
        if change.kind is ChangeKind.DELETE:
            option = "ignoreDeletes or skipChangeCommits"
        raise StreamChangeError(
            f"{where}: the commit {change.kind.value}s rows the stream may have delivered; "
            f"set option {option} to skip such commits"
        )

    def __getstate__(self) -> dict[str, Any]:
        # Executors need none of it (a copy reopens the snapshot if it needs it).
        return {**self.__dict__, "_units": {}, "_opened": None}

    @property
    def _base(self) -> Snapshot:
        if self._opened is None:
            self._opened = open_snapshot(self._options.location(), self._snapshot_version)
        return self._opened


class LanceStreamReader(sds.DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, schema: st.StructType, options: StreamOptions, snapshot: int) -> None:
        self._options = options
        self._snapshot = snapshot
        read = ReadOptions(
            path=options.path,
            version=snapshot,
            columns=options.columns,
            rows_per_partition=options.rows_per_partition,
            batch_size=options.batch_size,
            pushdown=False,
            storage_options=options.storage_options,
        )
        self._rows = LanceReader(schema, read)  # reads a unit's rows in the tasks
        base = open_snapshot(options.location(), snapshot)
        self._feed = _Feed(base, options, schema_shape(base.manifest.schema))
        self._target: int | None = None  # the last version availableNow reads

    def initialOffset(self) -> dict[str, Any]:
        start = self._options.starting_version
        if isinstance(start, Instant):
            return Position(self._first_at_or_after(start), 0, False).as_offset()
        if start is None:
            return Position(self._snapshot, 0, True).as_offset()
        if isinstance(start, int):
            latest = self._latest()
            if start > latest:
                raise ValueError(
                    f"{self._options.path}: startingVersion {start} is after the latest "
                    f"version, {latest}"
                )
            return Position(start, 0, False).as_offset()
        return Position(self._latest() + 1, 0, False).as_offset()  # "latest"

    def _first_at_or_after(self, instant: Instant) -> int:
        """Delta's ``startingTimestamp``: the first version committed at or after it
        (none yet: the next one)."""
        base: Location | Snapshot = self._options.location()
        for version in versions(base):
            base = open_snapshot(base, version)
            if base.manifest.timestamp_ns // 1000 >= instant.micros:
                return version
        return self._latest() + 1

    def getDefaultReadLimit(self) -> ReadLimit:
        if self._options.max_rows_per_trigger is not None:
            return ReadMaxRows(self._options.max_rows_per_trigger)
        if self._options.max_files_per_trigger is not None:
            return ReadMaxFiles(self._options.max_files_per_trigger)
        return ReadAllAvailable()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """Where the stream would end if it read everything committed (Spark shows it
        in the query's progress): past the latest version."""
        return Position(self._latest() + 1, 0, False).as_offset()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        position = Position.of(start)
        last = self._target if self._target is not None else self._latest()
        budget = Budget.of(limit)
        while position.version <= last:
            units = self._feed_units(position, budget.empty)
            if units is None:
                break  # a change to refuse once what came before it is read
            if position.index >= len(units):
                position = Position(position.version + 1, 0, False)
                continue
            if not budget.admits(units[position.index].num_rows):
                break
            position = replace(position, index=position.index + 1)
        return position.as_offset() if not budget.empty else start

    def _feed_units(self, position: Position, nothing_yet: bool) -> tuple[Fragment, ...] | None:
        try:
            return self._feed.units(position.version, position.snapshot)
        except StreamChangeError:
            if nothing_yet:
                raise
            return None

    def partitions(
        self, start: dict[str, Any], end: dict[str, Any]
    ) -> Sequence[sds.InputPartition]:
        first, stop = Position.of(start), Position.of(end)
        fragments: list[Fragment] = []
        position = first
        while position < stop:
            units = self._feed.units(position.version, position.snapshot)
            if position.version == stop.version and position.snapshot == stop.snapshot:
                fragments.extend(units[position.index : stop.index])
                break
            fragments.extend(units[position.index :])
            position = Position(position.version + 1, 0, False)
        return fragment_ranges(fragments, self._options.rows_per_partition)

    def read(self, partition: sds.InputPartition) -> Any:
        return self._rows.read(partition)

    def _latest(self) -> int:
        latest = latest_version(self._options.location())
        if latest is None:
            raise DatasetError(f"{self._options.path}: the dataset is gone")
        return latest


@dataclass
class Budget:
    """What one micro-batch may still take (at least one unit, a fragment or a commit,
    as Delta's soft limits do)."""

    rows: int | None
    files: int | None
    taken: int = 0

    @classmethod
    def of(cls, limit: ReadLimit) -> Budget:
        if isinstance(limit, ReadMaxRows):
            return cls(limit.max_rows, None)
        if isinstance(limit, ReadMaxFiles):
            return cls(None, limit.max_files)
        if isinstance(limit, ReadAllAvailable):
            return cls(None, None)
        raise ValueError(f"lance stream: read limit {limit!r} is not supported")

    @property
    def empty(self) -> bool:
        return self.taken == 0

    def admits(self, rows: int) -> bool:
        """Whether the micro-batch takes a unit of ``rows`` rows (and counts it)."""
        over = (self.rows is not None and rows > self.rows) or (
            self.files is not None and self.files < 1
        )
        if over and self.taken:
            return False
        self.taken += 1
        if self.rows is not None:
            self.rows -= rows
        if self.files is not None:
            self.files -= 1
        return True
