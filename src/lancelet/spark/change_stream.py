"""``spark.readStream.format("lance").option("readChangeFeed", "true")``: every
commit's row changes as a stream, as Delta's change data feed stream delivers them.

Each micro-batch carries the changes of whole commits after the last one delivered,
in the batch reads' columns (:mod:`lancelet.spark.change_feed`).  Without
``startingVersion`` the stream starts as Delta's does: the rows of the version that
was latest when the DataFrame was made, as ``insert`` rows of that version, then the
commits after it.  Deletes, updates, upserts and compactions are what the feed is
for, so none of them stops the stream; a commit that changes the schema does (restart
the query from a new DataFrame, which reads with the new schema).

The stream's position (Spark's offset, kept in the query's checkpoint) is the next
commit to read, or, while the first snapshot is read, its next fragment.  Commits
never change once made, so a restarted query neither repeats nor misses one.
``maxFilesPerTrigger`` caps the commits of a micro-batch (the fragments, while the
snapshot is read) and ``maxRowsPerTrigger`` its change rows (counted from metadata);
a micro-batch always takes at least one commit or fragment.
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
    Snapshot,
    commit_change_count,
    latest_version,
    open_snapshot,
    schema_shape,
)
from lancelet.errors import DatasetError
from lancelet.spark.change_feed import (
    ChangeRows,
    CommitPart,
    commit_parts,
    full_spec,
)
from lancelet.spark.options import ChangeFeedOptions, Instant
from lancelet.spark.reader import FragmentRange, fragment_ranges
from lancelet.spark.stream_source import Budget, StreamChangeError
from lancelet.spark.table_versions import version_from
from lancelet.table.fragment import Fragment

_MARK = "changeFeed"  # in every offset, so no other stream's checkpoint is taken for one


@dataclass(frozen=True)
class Position:
    """The next unit to read: commit ``version`` (``index`` 0), or while ``snapshot``,
    fragment ``index`` of ``version``'s snapshot."""

    version: int
    index: int
    snapshot: bool

    def as_offset(self) -> dict[str, Any]:
        return {"version": self.version, "index": self.index, "snapshot": self.snapshot, _MARK: 1}

    @classmethod
    def of(cls, offset: Mapping[str, Any]) -> Position:
        if offset.get(_MARK) != 1:
            raise ValueError(
                f"lance change feed stream: offset {offset!r} was not written by a change "
                "feed stream (readChangeFeed); give the query a new checkpointLocation"
            )
        try:
            return cls(int(offset["version"]), int(offset["index"]), bool(offset["snapshot"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"lance change feed stream: offset {offset!r} is damaged") from exc

    def next_commit(self) -> Position:
        return Position(self.version + 1, 0, False)


class LanceChangeStreamReader(sds.DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, schema: st.StructType, options: ChangeFeedOptions, snapshot: int) -> None:
        self._options = options
        self._snapshot = snapshot  # the DataFrame's version: its schema is the stream's
        self._rows = ChangeRows(schema, full_spec(options, snapshot), snapshot, options)
        base = open_snapshot(options.location(), snapshot)
        self._stamp = base.manifest.timestamp_ns // 1000
        self._shape = schema_shape(base.manifest.schema)
        self._opened: Snapshot | None = base  # reads the other versions (its storage)
        self._fragments: tuple[Fragment, ...] | None = None  # the snapshot's
        self._same_schema: dict[int, bool] = {}
        self._sizes: dict[int, int] = {}  # change rows by commit (commits never change)
        self._target: int | None = None  # the last version availableNow reads

    def __getstate__(self) -> dict[str, Any]:
        # Tasks read from the partitions alone.
        return {
            **self.__dict__,
            "_opened": None,
            "_fragments": None,
            "_same_schema": {},
            "_sizes": {},
        }

    @property
    def _base(self) -> Snapshot:
        if self._opened is None:
            self._opened = open_snapshot(self._options.location(), self._snapshot)
        return self._opened

    # -- where the stream is ---------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        start = self._options.starting
        if start is None:
            return Position(self._snapshot, 0, True).as_offset()
        if isinstance(start, Instant):
            # Delta's startingTimestamp: the first version committed at or after it
            # (none yet: the next one).
            found = version_from(self._options.location(), start.micros)
            version = self._latest() + 1 if found is None else found
            return Position(version, 0, False).as_offset()
        if start == "latest":
            return Position(self._latest() + 1, 0, False).as_offset()
        assert isinstance(start, int)
        latest = self._latest()
        if start > latest:
            raise ValueError(
                f"{self._options.path}: Provided Start version({start}) for reading change "
                "data is invalid. Start version cannot be greater than the latest version "
                f"of the table({latest})."
            )
        return Position(start, 0, False).as_offset()

    def getDefaultReadLimit(self) -> ReadLimit:
        if self._options.max_rows_per_trigger is not None:
            return ReadMaxRows(self._options.max_rows_per_trigger)
        if self._options.max_files_per_trigger is not None:
            return ReadMaxFiles(self._options.max_files_per_trigger)
        return ReadAllAvailable()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return Position(self._latest() + 1, 0, False).as_offset()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        position = Position.of(start)
        last = self._target if self._target is not None else self._latest()
        budget = Budget.of(limit)
        while position.snapshot:
            units = self._snapshot_fragments()
            if position.index >= len(units):
                position = position.next_commit()
            elif budget.admits(units[position.index].num_rows):
                position = replace(position, index=position.index + 1)
            else:
                return position.as_offset()
        while position.version <= last and self._readable(position.version, budget.empty):
            counted = budget.rows is not None  # counting reads the commit's metadata
            rows = self._size(position.version) if counted else 0
            if not budget.admits(rows):
                break
            position = position.next_commit()
        return position.as_offset() if not budget.empty else start

    def _readable(self, version: int, nothing_yet: bool) -> bool:
        """Whether commit ``version`` is read with the stream's schema; a commit that
        changed it fails the stream once what came before it is delivered."""
        if version <= self._snapshot:
            return True  # read with a later schema: the engine checks the columns
        if version not in self._same_schema:
            schema = open_snapshot(self._base, version).manifest.schema
            self._same_schema[version] = schema_shape(schema) == self._shape
        if self._same_schema[version]:
            return True
        if nothing_yet:
            raise StreamChangeError(
                f"{self._options.path} version {version}: the schema changed; restart the "
                "stream from a new DataFrame (it reads the change feed with the new schema)"
            )
        return False

    def _size(self, version: int) -> int:
        if version not in self._sizes:
            self._sizes[version] = commit_change_count(self._base, version)
        return self._sizes[version]

    def _snapshot_fragments(self) -> tuple[Fragment, ...]:
        if self._fragments is None:
            fragments = self._base.manifest.fragments
            self._fragments = tuple(f for f in fragments if f.num_rows)
        return self._fragments

    def _latest(self) -> int:
        latest = latest_version(self._options.location())
        if latest is None:
            raise DatasetError(f"{self._options.path}: the dataset is gone")
        return latest

    # -- what a micro-batch reads ------------------------------------------------------

    def partitions(
        self, start: dict[str, Any], end: dict[str, Any]
    ) -> Sequence[sds.InputPartition]:
        first, stop = Position.of(start), Position.of(end)
        out: list[sds.InputPartition] = []
        per_task = self._options.rows_per_partition
        if first.snapshot:
            units = self._snapshot_fragments()
            high = stop.index if stop.snapshot else len(units)
            out.extend(fragment_ranges(units[first.index : high], per_task))
            if stop.snapshot:
                return out
            first = first.next_commit()
        sizes = {v: self._size(v) for v in range(first.version, stop.version)}
        out.extend(commit_parts(sizes, per_task))
        return out

    def read(self, partition: sds.InputPartition) -> Any:
        if isinstance(partition, CommitPart):
            return self._rows.commit(partition)
        if isinstance(partition, FragmentRange):
            return self._rows.snapshot(partition, self._snapshot, self._stamp)
        return iter(())

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: offsets are versions, which stay as they are."""
