"""The change feed: every commit's row changes between two versions, as Delta's
change data feed shows them.

Each commit in the range contributes its deletes, its updates (each row's
``update_preimage`` from the version before and ``update_postimage`` from the
commit's version) and its inserts, in that order and each ordered by stable row id,
with ``_change_type``, ``_commit_version`` and ``_commit_timestamp``.  Rows are read
with the range's last version's schema (Delta's choice): a column added later is
null in rows of versions before it; a column replaced (dropped and added again, or
retyped) inside the range is refused, since its values before and after are not
the same column's.  Only the fragments a commit touched are read, and of those only
the changed rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa

from lancelet.dataset.changefeed.commit_diff import CommitDiff, commit_diff, read_manifest
from lancelet.dataset.core.snapshot import Snapshot
from lancelet.dataset.read.fragment_reader import FragmentReader
from lancelet.errors import ArgumentError, ChangeFeedError
from lancelet.expr.filter import referenced_columns, to_expression
from lancelet.table import row_address
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema
from lancelet.transaction.store import DatasetStore

CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
ROW_ID = "_rowid"
INSERT, UPDATE_PREIMAGE, UPDATE_POSTIMAGE, DELETE = (
    "insert",
    "update_preimage",
    "update_postimage",
    "delete",
)
CHANGE_FIELDS = (
    pa.field(CHANGE_TYPE, pa.string(), nullable=False),
    pa.field(COMMIT_VERSION, pa.int64(), nullable=False),
    pa.field(COMMIT_TIMESTAMP, pa.timestamp("us", tz="UTC"), nullable=False),
)
DEFAULT_BATCH_SIZE = 8192
_READ_ROWS = 1 << 16


@dataclass(frozen=True)
class FeedSpec:
    """What a change feed reads: the dataset, the schema rows are read with (the
    range's last version's), the columns it outputs, its filter, and batch size."""

    store: DatasetStore
    schema: LanceSchema
    columns: tuple[str, ...]
    filter: str | None
    with_row_id: bool
    batch_size: int

    # Asked for on every read and batch; computed once (a frozen instance's
    # cached_property writes to its __dict__, which pickles along with it).
    @cached_property
    def read_columns(self) -> tuple[str, ...]:
        """The output columns and those the filter reads."""
        if self.filter is None:
            return self.columns
        everything = self._data_schema(self.schema.top_level_names())
        extra = referenced_columns(
            self.filter, pa.schema([*everything, pa.field(ROW_ID, pa.uint64()), *CHANGE_FIELDS])
        )
        names = set(self.schema.top_level_names())
        return self.columns + tuple(
            sorted(c for c in extra if c in names and c not in self.columns)
        )

    def output_schema(self) -> pa.Schema:
        return self._output_schema

    @cached_property
    def _output_schema(self) -> pa.Schema:
        fields = list(self._data_schema(list(self.columns)))
        if self.with_row_id:
            fields.append(pa.field(ROW_ID, pa.uint64(), nullable=False))
        return pa.schema([*fields, *CHANGE_FIELDS])

    def _data_schema(self, names: Sequence[str]) -> pa.Schema:
        arrow = self.schema.to_arrow()
        return pa.schema([arrow.field(n) for n in names])


def feed_versions(store: DatasetStore, start: int, end: int) -> range:
    """The commits a feed from ``start`` to ``end`` (both inclusive) reads."""
    for name, value in (("start_version", start), ("end_version", end)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ArgumentError(f"{store.root}: {name} must be a version number, not {value!r}")
    if start < 1:
        raise ArgumentError(f"{store.root}: start_version {start}: versions start at 1")
    if start > end:
        raise ArgumentError(f"{store.root}: start_version {start} is after end_version {end}")
    return range(int(start), int(end) + 1)


def feed_spec(
    store: DatasetStore,
    end: int,
    columns: Sequence[str] | None = None,
    filter: str | None = None,
    with_row_id: bool = False,
    batch_size: int | None = None,
) -> FeedSpec:
    """The feed's reading plan, checked: the columns exist in version ``end``, the
    filter parses over them and the change columns."""
    schema = read_manifest(store, end, "the change feed's schema").schema
    names = schema.top_level_names()
    if columns is None:
        chosen = tuple(names)
    elif isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
        raise ArgumentError(f"{store.root}: columns must be a list of column names")
    else:
        chosen = tuple(f.name for f in schema.resolve(list(columns), store.root))
    size = DEFAULT_BATCH_SIZE if batch_size is None else batch_size
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ArgumentError(f"{store.root}: batch_size must be a positive integer, not {size!r}")
    if filter is not None and not isinstance(filter, str):
        raise ArgumentError(f"{store.root}: the change feed's filter must be SQL text")
    spec = FeedSpec(store, schema, chosen, filter, bool(with_row_id), size)
    if filter is not None:
        to_expression(filter, _filter_schema(spec))
    return spec


def _filter_schema(spec: FeedSpec) -> pa.Schema:
    data = spec._data_schema(list(spec.read_columns))
    return pa.schema([*data, pa.field(ROW_ID, pa.uint64()), *CHANGE_FIELDS])


def change_feed(
    snapshot: Snapshot,
    start_version: int,
    end_version: int | None = None,
    *,
    columns: Sequence[str] | None = None,
    filter: str | None = None,
    with_row_id: bool = False,
    batch_size: int | None = None,
) -> pa.RecordBatchReader:
    """``LanceDataset.changes``: the feed as an Arrow stream."""
    store = snapshot.store
    end = snapshot.version if end_version is None else end_version
    commits = feed_versions(store, start_version, end)
    spec = feed_spec(store, end, columns, filter, with_row_id, batch_size)
    # Fail before the first batch when a version of the range is gone.
    for version in (commits.start - 1, *commits):
        if version >= 1:
            read_manifest(store, version, "the change feed")

    def batches() -> Iterator[pa.RecordBatch]:
        for version in commits:
            yield from commit_batches(spec, version)

    return pa.RecordBatchReader.from_batches(spec.output_schema(), batches())


def commit_batches(
    spec: FeedSpec, version: int, part: tuple[int, int] = (0, 1)
) -> Iterator[pa.RecordBatch]:
    """One commit's changes under ``spec``, batch by batch; ``part`` ``(k, n)``: only
    the k-th of n near-equal shares of them, in feed order (an update's two rows stay
    in one share), so that n tasks can read one large commit."""
    k, n = part
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in part) or not 0 <= k < n:
        raise ArgumentError(f"part must be (k, n) with 0 <= k < n, not {part!r}")
    diff = commit_diff(spec.store, version)
    if not diff.num_changes:
        return
    deleted, updated, inserted = _shares(diff, part)
    before = _Side(spec, diff.previous, version - 1) if diff.previous is not None else None
    after = _Side(spec, diff.current, version)
    # Rows are read in larger units than batches: fewer, longer reads.
    step = max(spec.batch_size, _READ_ROWS)
    if before is not None:
        for i in range(deleted.start, deleted.stop, step):
            j = min(i + step, deleted.stop)
            rows = before.read(diff.deleted[i:j])
            yield from _emit(spec, diff, rows, diff.deleted_ids[i:j], DELETE)
        for i in range(updated.start, updated.stop, step):
            j = min(i + step, updated.stop)
            ids = diff.updated_ids[i:j]
            pre = before.read(diff.updated_before[i:j])
            post = after.read(diff.updated_after[i:j])
            yield from _emit(spec, diff, pre, ids, UPDATE_PREIMAGE)
            yield from _emit(spec, diff, post, ids, UPDATE_POSTIMAGE)
    for i in range(inserted.start, inserted.stop, step):
        j = min(i + step, inserted.stop)
        rows = after.read(diff.inserted[i:j])
        yield from _emit(spec, diff, rows, diff.inserted_ids[i:j], INSERT)


def change_count(store: DatasetStore, version: int) -> int:
    """The number of change rows ``version`` makes (an update counts twice)."""
    return commit_diff(store, version).num_changes


def _shares(diff: CommitDiff, part: tuple[int, int]) -> tuple[range, range, range]:
    """The deletes, updates and inserts (index ranges) that share ``part`` of the
    commit's changes covers: its slice of them laid end to end in that order."""
    k, n = part
    sizes = (len(diff.deleted), len(diff.updated_ids), len(diff.inserted))
    total = sum(sizes)
    low, high = k * total // n, (k + 1) * total // n
    out = []
    for size in sizes:
        out.append(range(min(max(low, 0), size), min(max(high, 0), size)))
        low, high = low - size, high - size
    return out[0], out[1], out[2]


class _Side:
    """One version's rows, read with the feed's schema."""

    def __init__(self, spec: FeedSpec, manifest: Manifest, version: int) -> None:
        _check_columns(spec, manifest.schema, version)
        self._spec = spec
        self._fragments = {f.id: f for f in manifest.fragments}
        self._readers: dict[int, FragmentReader] = {}
        self._version = version

    def read(self, addresses: np.ndarray) -> pa.Table:
        """The feed's columns of the rows at ``addresses``, in that order."""
        names = list(self._spec.read_columns)
        if not names:  # no column asked for: the rows still count
            return pa.table({"": pa.nulls(len(addresses))}).select([])
        fragments, offsets = row_address.unpack(addresses)
        order = np.lexsort((offsets, fragments))
        parts = [
            _read_rows(self._reader(fragment_id), names, rows.astype(np.int64))
            for fragment_id, rows in row_address.by_fragment(addresses[order]).items()
        ]
        if not parts:
            return self._spec._data_schema(names).empty_table()
        table = pa.concat_tables(parts)
        if bool(np.all(order[1:] > order[:-1])):
            return table  # asked for in address order already
        back = np.empty(len(addresses), dtype=np.int64)
        back[order] = np.arange(len(addresses), dtype=np.int64)
        return table.take(pa.array(back))

    def _reader(self, fragment_id: int) -> FragmentReader:
        reader = self._readers.get(fragment_id)
        if reader is None:
            fragment = self._fragments.get(fragment_id)
            if fragment is None:
                raise ChangeFeedError(
                    f"{self._spec.store.root}: version {self._version} has no fragment "
                    f"{fragment_id}"
                )
            reader = FragmentReader(self._spec.store, self._spec.schema, fragment)
            self._readers[fragment_id] = reader
        return reader


# Rows that fill at least this share of the span they lie in are read as the span
# (one ranged read, then an Arrow take) rather than taken one by one: an update of
# clustered rows, and the new fragment an update writes, read as ranges.
_DENSE = 0.25


def _read_rows(reader: FragmentReader, names: list[str], rows: np.ndarray) -> pa.Table:
    """Columns ``names`` of the sorted physical ``rows``."""
    first, last = int(rows[0]), int(rows[-1])
    span = last - first + 1
    if len(rows) < _DENSE * span:
        return reader.take(names, rows)
    table = reader.read(names, first, last + 1)
    if len(rows) == span:
        return table
    return table.take(pa.array(rows - first))


def _check_columns(spec: FeedSpec, schema: LanceSchema, version: int) -> None:
    """Rows of ``version`` can be read with the feed's schema: each column read is
    the same field there (same id, name and type) or absent (added later).  Field
    ids alone do not say it: an overwrite with a new schema numbers fields afresh."""
    then = {f.id: f for f in schema.top_level()}
    names = {f.name for f in schema.top_level()}
    then_arrow = schema.to_arrow()
    now_arrow = spec.schema.to_arrow()
    for field in spec.schema.resolve(list(spec.read_columns), spec.store.root):
        old = then.get(field.id)
        if old is None and field.name not in names:
            continue  # added after ``version``: null in its rows
        if (
            old is None
            or old.name != field.name
            or then_arrow.field(old.name).type != now_arrow.field(field.name).type
        ):
            raise ChangeFeedError(
                f"{spec.store.root}: column {field.name!r} is not the same column in "
                f"version {version} (renamed, retyped, or dropped and added again since); "
                "read the change feed in ranges that do not cross that change"
            )


def _emit(
    spec: FeedSpec, diff: CommitDiff, rows: pa.Table, ids: np.ndarray, change: str
) -> Iterator[pa.RecordBatch]:
    n = rows.num_rows
    stamp = pa.scalar(diff.timestamp_ns // 1000, pa.timestamp("us", tz="UTC"))
    table = rows.append_column(ROW_ID, pa.array(ids, pa.uint64()))
    table = table.append_column(CHANGE_FIELDS[0], pa.repeat(pa.scalar(change, pa.string()), n))
    table = table.append_column(
        CHANGE_FIELDS[1], pa.array(np.full(n, diff.version, dtype=np.int64))
    )
    table = table.append_column(CHANGE_FIELDS[2], pa.repeat(stamp, n))
    if spec.filter is not None:
        table = table.filter(to_expression(spec.filter, table.schema))
    table = table.select(
        [
            *spec.columns,
            *([ROW_ID] if spec.with_row_id else []),
            CHANGE_TYPE,
            COMMIT_VERSION,
            COMMIT_TIMESTAMP,
        ]
    )
    table = table.cast(spec.output_schema())
    yield from table.to_batches(max_chunksize=spec.batch_size)
