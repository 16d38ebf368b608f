"""Scans: projection, filter, deletions, row ids, offset and limit.

A scan walks the chosen fragments in order, reads the projected columns plus
those the filter needs, drops deleted rows, evaluates the filter as a pyarrow
compute expression over whole batches, and trims to ``offset``/``limit``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cached_property, partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet import io
from lancelet._arrow import cast as arrow_cast
from lancelet.dataset.read.arrow_scanner import ArrowScanner
from lancelet.dataset.read.batches import coalesced, has_dictionary
from lancelet.dataset.read.blob import DEFAULT_BLOB_BUFFER_SIZE, BlobFile, take_blobs
from lancelet.dataset.read.fragment_reader import FragmentReader, live_mask
from lancelet.dataset.read.index_plan import index_candidates, searches_logged
from lancelet.dataset.read.ordering import ColumnOrdering, check_columns, sorted_table
from lancelet.dataset.read.plan import ScanFacts, ScanMetrics, analyze, explain
from lancelet.dataset.read.projection import (
    IN_FILTERS,
    LINEAGE,
    ROW_ADDRESS,
    ROW_ID,
    ROW_OFFSET,
    SPECIAL,
    Columns,
    projection,
    with_specials,
)
from lancelet.dataset.read.row_columns import live_rows_before, row_offsets, with_row_columns
from lancelet.dataset.read.run_filter import probed_by_runs
from lancelet.dataset.read.scan_stats import ScanRecorder, ScanStatistics
from lancelet.dataset.read.staged_filter import (
    Stage,
    apply_stages,
    attach,
    staged_read,
    stages_of,
)
from lancelet.errors import (
    ArgumentError,
    CorruptDatasetError,
    CorruptIndexError,
    UnsupportedOptionError,
)
from lancelet.expr import Predicate
from lancelet.expr.arrow import filter_table
from lancelet.expr.filter import is_volatile, referenced_columns, to_expression
from lancelet.expr.from_sql import predicate_tree
from lancelet.index.planner import Candidates
from lancelet.io import accounting
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "ROW_ADDRESS",
    "ROW_ID",
    "LanceScanner",
    "live_rows",
    "with_row_columns",
]

DEFAULT_BATCH_SIZE = 8192
_NOT_ARGUMENTS = frozenset({"self", "store", "manifest"})
# pylance's environment variable for the batch size of scans that give none.
BATCH_SIZE_VARIABLE = "LANCE_DEFAULT_BATCH_SIZE"
# Rows read at once when the result is gathered whole: a default-sized fragment in one
# read, so page chunks pass through without being cut and copied.
_WHOLE_FRAGMENT = 1 << 20
# A filtered table is read this many rows at a time, not a whole fragment: measured
# on lineitem SF0.1 (one 600k-row fragment), the fastest step, and the filter's
# columns peak lower; smaller steps cost each range's set-up (Acero plans, decoder
# state), about 2 ms.  A count, which keeps nothing, reads whole fragments.
_FILTERED_STEP = 1 << 18
_OFFSET = "_lancelet_offset"
_READ_STEP = 64 * 1024


# Tables of fewer rows are filtered whole: staging costs a call of Arrow's engine per
# stage, more than it saves on a few rows.
_STAGED = 4096

# Candidates of more than this share of a fragment's rows are cheaper to find by a scan
# (pages read whole and filtered) than to take one by one.
_SPARSE = 0.05


def live_rows(
    reader: FragmentReader, table: pa.Table, start: int, stop: int, *, with_addresses: bool
) -> pa.Table:
    """Physical rows ``[start, stop)`` of a fragment read into ``table``: deleted ones
    dropped, and the row id and address columns added when asked for (a row's id is
    its address unless the dataset has stable row ids)."""
    if with_addresses:
        table = with_row_columns(reader, table, np.arange(start, stop, dtype=np.uint32))
    keep = live_mask(reader, start, stop)
    return table if keep is None else table.filter(pa.array(keep))


def _ranges(rows: int, step: int, candidates: np.ndarray | None) -> list[tuple[int, int]]:
    """The row ranges, of at most ``step`` rows, a scan of a fragment of ``rows`` rows
    reads: all of them, or (when an index bounded the filter to ``candidates``, sorted)
    each step's span from its first candidate to its last: other rows cannot match."""
    if candidates is None:
        return [(start, min(start + step, rows)) for start in range(0, rows, step)]
    wanted = candidates.astype(np.int64)
    wanted = wanted[wanted < rows]
    _, firsts = np.unique(wanted // step, return_index=True)
    lasts = np.append(firsts[1:], len(wanted)) - 1
    return list(zip(wanted[firsts].tolist(), (wanted[lasts] + 1).tolist(), strict=True))


def _late_only(late_materialization: bool | Sequence[str] | None) -> frozenset[str] | None:
    """The columns a scan reads only for the rows that pass its filter: None means
    every column the filter does not read (True and the default), else those named
    (none for False)."""
    if late_materialization is False:
        return frozenset()
    if late_materialization is None or late_materialization is True:
        return None
    return frozenset(late_materialization)


def default_batch_size() -> int:
    """The batch size of a scan that names none: the environment's, else 8192."""
    given = os.environ.get(BATCH_SIZE_VARIABLE)
    if given is None:
        return DEFAULT_BATCH_SIZE
    try:
        size = int(given)
    except ValueError:
        size = 0
    if size < 1:
        raise ArgumentError(f"{BATCH_SIZE_VARIABLE}={given!r} is not a positive integer")
    return size


def _conformed(table: pa.Table, schema: pa.Schema) -> pa.Table:
    try:
        return arrow_cast.cast(table, schema)
    except (pa.ArrowException, ValueError) as exc:
        # Live rows that contradict the schema, such as nulls in a non-nullable column.
        raise CorruptDatasetError(f"the data read does not fit the schema: {exc}") from exc


class _Parsed:
    """A SQL filter over one schema object: its expression, the columns it reads, and
    its predicate tree (made when first asked for: only scans that may use an index
    need it)."""

    def __init__(self, sql: str, schema: pa.Schema) -> None:
        self.sql = sql
        self.schema = schema
        expression = to_expression(sql, schema)
        assert expression is not None
        self.expression: pc.Expression = expression
        wanted = referenced_columns(sql, schema)
        self.columns = [n for n in schema.names if n in wanted]
        self._tree: Predicate | None = None

    @cached_property
    def stages(self) -> list[Stage] | None:
        """The filter's conjuncts as stages, cheapest first (None: not staged)."""
        return stages_of(self.sql, self.schema)

    @property
    def tree(self) -> Predicate:
        if self._tree is None:
            self._tree = predicate_tree(self.sql, self.schema)
        return self._tree


# (filter, id(schema)) -> the filter parsed; an entry holds its schema, so the id names
# no other schema while the entry lives.  Parsing is cached below by (filter, schema)
# too, but hashing a schema costs tens of microseconds, as much as a quick lookup's
# decoding of a column.
_PARSED: dict[tuple[str, int], _Parsed] = {}
_PARSED_KEPT = 64


def _parsed(sql: str, schema: pa.Schema) -> _Parsed:
    if is_volatile(sql):
        return _Parsed(sql, schema)  # reads the clock: parsed anew for each scan
    key = (sql, id(schema))
    found = _PARSED.get(key)
    if found is not None and found.schema is schema:
        return found
    found = _PARSED[key] = _Parsed(sql, schema)
    while len(_PARSED) > _PARSED_KEPT:
        _PARSED.pop(next(iter(_PARSED)), None)
    return found


class LanceScanner(ArrowScanner):
    def __init__(
        self,
        store: DatasetStore,
        manifest: Manifest,
        *,
        columns: Columns | None = None,
        filter: str | pc.Expression | None = None,
        limit: int | None = None,
        offset: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        batch_size: int | None = None,
        strict_batch_size: bool = False,
        fragments: Sequence[Fragment] | None = None,
        use_scalar_index: bool = True,
        order_by: Sequence[ColumnOrdering] = (),
        include_deleted_rows: bool = False,
        late_materialization: bool | Sequence[str] | None = None,
        scan_stats_callback: Callable[[ScanStatistics], Any] | None = None,
    ) -> None:
        # The scan as asked for, to repeat it with row ids (blobs in to_pandas).
        self._arguments = {k: v for k, v in locals().items() if k not in _NOT_ARGUMENTS}
        self._recorder = ScanRecorder(scan_stats_callback)
        self._store = store
        self._manifest = manifest
        self._arrow = manifest.schema.to_arrow()
        self._where = f"{store.root}: scan"
        self._projection = projection(columns, self._arrow, self._where)
        self._with_row_id = with_row_id or ROW_ID in self._projection.special_outputs
        self._with_row_address = with_row_address or ROW_ADDRESS in self._projection.special_outputs
        if include_deleted_rows and not self._with_row_id:
            # As pylance: a deleted row is told apart by its null row id.
            raise ArgumentError(
                f"{self._where}: include_deleted_rows is set but with_row_id is false"
            )
        self._include_deleted = include_deleted_rows
        self._filter_schema = with_specials(self._arrow, IN_FILTERS)
        parsed = self._set_filter(filter)
        asked = self._projection.special_outputs | set(self._filter_columns)
        self._lineage = bool(asked & set(LINEAGE))
        # Arguments were checked at the API (scannable.py, arguments.py).
        self._limit = limit
        self._offset = offset or 0
        self._batch_size = batch_size or default_batch_size()
        self._strict = strict_batch_size
        self._fragments = list(manifest.fragments if fragments is None else fragments)
        self._order = tuple(order_by)
        self._late = _late_only(late_materialization)
        # Cleared when a range read showed the filter's first stage not selective: the
        # scan's other ranges then read every filter column at once.
        self._stage_reads = True
        self._offsets_before: dict[int, int] | None = None
        # pylance sorts by neither lineage column.
        check_columns(self._order, with_specials(self._arrow), self._where)
        self._metrics = ScanMetrics()
        self._plan_indices(parsed if use_scalar_index and manifest.indices else None)

    def _set_filter(self, filter: str | pc.Expression | None) -> _Parsed | None:
        """Take the scan's filter over the dataset's and the system columns: its
        compute expression, the columns it reads, and its text (for plans and
        statistics).  Returns the parse of a SQL filter (None: not SQL)."""
        parsed = _parsed(filter, self._filter_schema) if isinstance(filter, str) else None
        if parsed is not None:
            self._filter: pc.Expression | None = parsed.expression
            self._filter_columns = parsed.columns
            self._filter_text: str | None = parsed.sql
            self._parsed_filter: _Parsed | None = parsed
        else:
            self._parsed_filter = None
            self._filter = to_expression(filter, self._filter_schema)
            self._filter_columns = self._columns_of(filter)
            self._filter_text = None if filter is None else str(filter)
        return parsed

    def _plan_indices(self, parsed: _Parsed | None) -> None:
        """Bound the rows the SQL filter ``parsed`` can match by the dataset's scalar
        indices (None: no index is used)."""
        # The filter's predicate tree, when an index may answer part of it: the planner
        # reads it, and the rows an index bounded are filtered by it (see _indexed).
        self._predicate: Predicate | None = None
        self._candidates: Candidates | None = None
        self._index_searches: list[Any] = []
        if parsed is None:
            return
        self._predicate = parsed.tree
        with (
            searches_logged() as self._index_searches,
            accounting.collecting(self._recorder.planning),
        ):
            self._candidates = self._plan(parsed.sql)

    def _plan(self, sql: str) -> Candidates | None:
        return index_candidates(
            self._store,
            self._manifest,
            sql,
            self._filter_schema,
            self._fragments,
            predicate=self._predicate,
        )

    def _columns_of(self, filter: str | pc.Expression | None) -> list[str]:
        if filter is None:
            return []
        if isinstance(filter, str):
            wanted = referenced_columns(filter, self._filter_schema)
            return [n for n in self._filter_schema.names if n in wanted]
        # A compute expression does not list its fields, so read them all.
        return list(self._filter_schema.names)

    def with_row_ids(self) -> LanceScanner:
        """The same scan with ``_rowid`` as its last column."""
        return LanceScanner(self._store, self._manifest, **{**self._arguments, "with_row_id": True})

    def column_source(self, name: str) -> str | None:
        """The dataset column the output column ``name`` is, as stored (renamed by a
        mapping of columns or not); None for a computed one."""
        columns = self._arguments["columns"]
        source = columns.get(name) if isinstance(columns, Mapping) else name
        return source if source in self._arrow.names else None

    def take_blobs(self, column: str, row_ids: pa.Array) -> list[BlobFile | None]:
        """The blobs of the dataset's blob column ``column`` in the rows ``row_ids``."""
        selection = (row_ids, None, None)
        return take_blobs(self._store, self._manifest, column, selection, DEFAULT_BLOB_BUFFER_SIZE)

    @property
    def filter_columns(self) -> frozenset[str]:
        """The columns the scan's filter tests (none without a filter)."""
        return frozenset(self._filter_columns)

    @property
    def dataset_schema(self) -> pa.Schema:
        """The schema of the dataset scanned, before projection."""
        return self._arrow

    @property
    def projected_schema(self) -> pa.Schema:
        fields = [
            pa.field(item, pa.uint64()) if isinstance(item, str) else self._projection.fields[item]
            for item in self._layout
        ]
        return pa.schema(fields, metadata=self._arrow.metadata)

    @property
    def _layout(self) -> list[int | str]:
        """The output columns in order (see Projection.layout); row ids and addresses
        asked for by flag come last (named among the columns or not), as in pylance."""
        flags = self._arguments
        flagged = [(flags["with_row_id"], ROW_ID), (flags["with_row_address"], ROW_ADDRESS)]
        # A column asked for by flag goes last even when the columns name it too.
        last = [name for wanted, name in flagged if wanted]
        return [item for item in self._projection.layout if item not in last] + last

    def _read_columns(self) -> list[str]:
        wanted = set(self._projection.reads)
        wanted |= {c for c in self._filter_columns if c not in SPECIAL}
        wanted |= {key.column_name for key in self._order if key.column_name not in SPECIAL}
        return [n for n in self._arrow.names if n in wanted]

    def _fragment_tables(self, fragment: Fragment, step: int) -> Iterator[pa.Table]:
        candidates = self._candidates.get(fragment.id) if self._candidates else None
        self._metrics.fragments_scanned += 1
        reader = FragmentReader(self._store, self._manifest.schema, fragment)
        columns = self._read_columns()
        sparse = candidates is not None and len(candidates) <= fragment.physical_rows * _SPARSE
        # With deleted rows, an index decides which come back, as in pylance: those it
        # lists (it was built before they were deleted), not others the filter matches.
        if candidates is not None and (sparse or self._include_deleted):
            yield from self._indexed(reader, columns, candidates, step)
            return
        late = self._late_columns(columns)
        probe = [c for c in columns if c not in late]
        for start, stop in _ranges(fragment.physical_rows, step, candidates):
            self._metrics.ranges_scanned += 1
            self._metrics.rows_scanned += stop - start
            if self._filter is None or not (late or self._read_stages(stop - start)):
                table = self._live(reader, reader.read(columns, start, stop), start, stop)
                yield table if self._filter is None else self._apply_filter(table)
            else:
                table = self._late_materialized(reader, probe, late, start, stop)
                if table.num_rows:
                    yield table

    def _late_columns(self, columns: list[str]) -> list[str]:
        """The columns of ``columns`` read after the filter, for the rows it passed."""
        if self._filter is None:
            return []
        late = [c for c in columns if c not in self._filter_columns]
        return late if self._late is None else [c for c in late if c in self._late]

    def _indexed(
        self, reader: FragmentReader, columns: list[str], candidates: np.ndarray, step: int
    ) -> Iterator[pa.Table]:
        """The rows of a fragment an index bounded the filter to: only those read, the
        deleted ones dropped, the whole filter applied."""
        fragment = reader.fragment
        if len(candidates) and int(candidates[-1]) >= fragment.physical_rows:
            raise CorruptIndexError(
                f"{self._where}: an index lists row {int(candidates[-1])} of fragment "
                f"{fragment.id}, which has {fragment.physical_rows} rows"
            )
        offsets = candidates
        if not self._include_deleted:
            offsets = np.setdiff1d(candidates, reader.deleted, assume_unique=True)
        for start in range(0, len(offsets), step):
            chunk = offsets[start : start + step]
            self._metrics.ranges_scanned += 1
            self._metrics.rows_scanned += len(chunk)
            table = reader.take(columns, chunk.astype(np.int64))
            if self._needs_address():
                table = self._with_system_columns(reader, table, chunk)
            assert self._filter is not None  # candidates come from a filter
            table = self._filtered(table)
            if table.num_rows:
                yield table

    def _filtered(self, table: pa.Table) -> pa.Table:
        """``table`` filtered: by the predicate tree, its kernels run at once, where it
        takes the filter (it selects what the filter selects, see lancelet.expr), else
        by the filter's expression through Arrow's query engine, which costs more to
        set up than the few rows of an indexed lookup take to evaluate."""
        assert self._filter is not None
        return filter_table(table, self._predicate, self._filter)

    def _apply_filter(self, table: pa.Table) -> pa.Table:
        """``table.filter`` by the scan's filter: conjunct by conjunct, cheapest first,
        when the filter allows it (see staged_filter) and the table is not small."""
        assert self._filter is not None
        parsed = self._parsed_filter
        stages = None if parsed is None or table.num_rows < _STAGED else parsed.stages
        if stages is None:
            return self._filtered(table)
        return apply_stages(table, stages, self._filter)

    def _needs_address(self) -> bool:
        return (
            self._with_row_id
            or self._with_row_address
            or bool(self._projection.special_reads)
            or bool(set(SPECIAL) & set(self._filter_columns))
            or ROW_OFFSET in self._projection.special_outputs
            or self._lineage
            or any(key.column_name in SPECIAL for key in self._order)
        )

    def _live(self, reader: FragmentReader, table: pa.Table, start: int, stop: int) -> pa.Table:
        if self._needs_address():
            offsets = np.arange(start, stop, dtype=np.uint32)
            table = self._with_system_columns(reader, table, offsets)
        if self._include_deleted:
            return table
        return live_rows(reader, table, start, stop, with_addresses=False)

    def _with_system_columns(
        self, reader: FragmentReader, table: pa.Table, offsets: np.ndarray
    ) -> pa.Table:
        """``table``, the given physical rows of a fragment, with their row id, address
        and (when asked for) offset among the dataset's live rows; a deleted row (kept
        only with ``include_deleted_rows``) has a null id and address, as in pylance."""
        # A deleted row kept (include_deleted_rows) keeps its lineage, as in pylance.
        table = with_row_columns(reader, table, offsets, lineage=self._lineage)
        deleted = reader.deleted
        if ROW_OFFSET in self._projection.special_outputs:
            first = self._live_rows_before(reader.fragment.id)
            table = table.append_column(ROW_OFFSET, row_offsets(offsets, deleted, first))
        if self._include_deleted and len(deleted):
            alive = pa.array(~np.isin(offsets, deleted))
            for name in (ROW_ID, ROW_ADDRESS):
                index = table.schema.get_field_index(name)
                nulled = pc.if_else(alive, table[name], pa.scalar(None, pa.uint64()))
                table = table.set_column(index, name, nulled)
        return table

    def _live_rows_before(self, fragment_id: int) -> int:
        """The live rows of the dataset's fragments before this one."""
        if self._offsets_before is None:
            self._offsets_before = live_rows_before(self._manifest)
        if fragment_id not in self._offsets_before:
            raise ArgumentError(f"{self._where}: fragment {fragment_id} is not in the dataset")
        return self._offsets_before[fragment_id]

    def _late_materialized(
        self, reader: FragmentReader, probe: list[str], late: list[str], start: int, stop: int
    ) -> pa.Table:
        """Filter on the columns the filter needs, then read the others only for the rows
        that passed: a selective filter then decodes little of the wide columns.  A
        staged filter reads each stage's columns only for the rows still in."""
        stages = self._read_stages(stop - start)
        if stages is not None:
            live = partial(self._live, reader, start=start, stop=stop)
            assert self._filter is not None
            span = (start, stop)
            table, self._stage_reads = staged_read(
                reader, stages, self._filter, span, live, _OFFSET
            )
        else:
            found, parsed = None, self._parsed_filter
            plain = not (self._needs_address() or self._include_deleted)
            if plain and parsed is not None and len(probe) == 1:
                found = probed_by_runs(reader, probe, (start, stop), parsed.tree, _OFFSET)
            table = self._probed(reader, probe, start, stop) if found is None else found
        return attach(reader, table, late, (start, stop), _OFFSET).drop_columns([_OFFSET])

    def _probed(self, reader: FragmentReader, probe: list[str], start: int, stop: int) -> pa.Table:
        """The ``probe`` columns of the live rows of ``[start, stop)`` the filter keeps,
        with their offsets: read for every row, then filtered."""
        table = reader.read(probe, start, stop)
        offsets = pa.array(np.arange(start, stop, dtype=np.uint32))
        table = self._live(reader, table.append_column(_OFFSET, offsets), start, stop)
        return self._apply_filter(table)

    def _read_stages(self, rows: int) -> list[Stage] | None:
        """The filter's stages when a range of ``rows`` rows reads their columns stage by
        stage: not for system columns or deleted rows kept, nor when late
        materialization was set."""
        parsed = self._parsed_filter
        if parsed is None or rows < _STAGED or self._late is not None or not self._stage_reads:
            return None
        if self._include_deleted or self._needs_address():
            return None
        return parsed.stages

    def _tables(self, step: int) -> Iterator[pa.Table]:
        schema = self.projected_schema
        layout = self._layout
        # Columns already of the schema's types need no cast, unless a field may not be
        # null (the cast checks that): the table is then just given the schema.
        nullable = all(field.nullable for field in schema)
        selected = self._ordered(step) if self._order else self._selected(step)
        for table in selected:
            if not layout:
                yield table.select([])
                continue
            computed = self._projection.apply(table, self._where)
            columns = [
                table[item] if isinstance(item, str) else computed.column(item) for item in layout
            ]
            if nullable and [column.type for column in columns] == schema.types:
                yield pa.Table.from_arrays(columns, schema=schema)
            else:
                yield _conformed(pa.Table.from_arrays(columns, names=schema.names), schema)

    def _selected(self, step: int) -> Iterator[pa.Table]:
        """Live rows that pass the filter, after offset and limit, not yet projected."""
        skip = self._offset
        remaining = self._limit
        for fragment in self._fragments:
            if remaining == 0:
                return
            rows = self._rows_of(fragment)
            if self._filter is None and skip >= rows:
                skip -= rows  # the whole fragment falls before the offset
                continue
            for table in self._read(fragment, step):
                if skip:
                    dropped = min(skip, table.num_rows)
                    table, skip = table.slice(dropped), skip - dropped
                if remaining is not None:
                    table = table.slice(0, remaining)
                    remaining -= table.num_rows
                if table.num_rows:
                    yield table
                if remaining == 0:
                    return

    def _read(self, fragment: Fragment, step: int) -> Iterator[pa.Table]:
        """A fragment's rows that pass the filter, counted for the scan's metrics; a
        filter's few rows per range read are gathered into whole batches, as pylance
        gathers them (not across fragments, nor for dictionaries, whose chunks may
        not be joined, nor under a limit, which the first rows may meet)."""
        candidates = self._candidates.get(fragment.id) if self._candidates else None
        if candidates is not None and not len(candidates):
            return  # an index says no row of the fragment matches: nothing to open
        tables = self._fragment_tables(fragment, step)
        # A whole table (step: a fragment) is joined by its caller.
        batched = step < _WHOLE_FRAGMENT and self._filter is not None and self._limit is None
        if batched and self._joinable:
            tables = coalesced(tables, self._batch_size)
        for table in tables:
            self._metrics.output_rows += table.num_rows
            yield table

    @cached_property
    def _joinable(self) -> bool:
        """Whether the chunks of the columns read may be joined (no dictionaries)."""
        return not any(map(has_dictionary, self._arrow.types))

    def _facts(self) -> ScanFacts:
        reads = self._read_columns()
        return ScanFacts(
            uri=self._store.root,
            reads=reads,
            late=self._late_columns(reads),
            num_fragments=len(self._fragments),
            filter=self._filter_text,
            filter_columns=self._filter_columns,
            with_row_id=self._with_row_id,
            with_row_address=self._with_row_address,
            include_deleted_rows=self._include_deleted,
            index_searches=tuple(self._index_searches),
            order=self._order,
            offset=self._offset,
            limit=self._limit,
            output=self.projected_schema.names,
            batch_size=self._batch_size,
            metrics=self._metrics,
        )

    def explain_plan(self, verbose: bool = False) -> str:
        """The plan of this scan: what it reads, filters, sorts, slices and returns."""
        return explain(self._facts(), verbose)

    def analyze_plan(self, count_rows: bool = False) -> str:
        """Run the scan and return its plan with what each step cost."""
        if count_rows:
            raise UnsupportedOptionError("LanceScanner.analyze_plan: count_rows=True")
        self._metrics = ScanMetrics()
        return analyze(self._facts(), self.to_table)

    def _rows_of(self, fragment: Fragment) -> int:
        return fragment.physical_rows if self._include_deleted else fragment.num_rows

    def _ordered(self, step: int) -> Iterator[pa.Table]:
        """The rows that pass the filter, sorted by ``order_by``, then offset and limit
        applied, as pylance does: the sort needs every row before the first is known."""
        tables = [t for f in self._fragments for t in self._read(f, step)]
        if not tables:
            return
        whole = sorted_table(pa.concat_tables(tables), self._order, self._where)
        start = min(self._offset, whole.num_rows)
        stop = whole.num_rows if self._limit is None else min(start + self._limit, whole.num_rows)
        for first in range(start, stop, step):
            yield whole.slice(first, min(step, stop - first))

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        return self._recorder.stream(self._batches())

    def _batches(self) -> Iterator[pa.RecordBatch]:
        # Read in steps of several batches: fewer, larger reads cut page decoding and
        # per-call overhead; the output is still cut to the batch size.
        # A multiple of the batch size, so that only a fragment's last batch is short.
        size = self._batch_size
        tables = self._tables(-(-max(size, _READ_STEP) // size) * size)
        if self._strict:
            yield from exact_batches(tables, self._batch_size)
            return
        for table in tables:
            yield from table.to_batches(max_chunksize=self._batch_size)

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def to_table(self) -> pa.Table:
        return self._recorder.run(self._table)

    def _table(self) -> pa.Table:
        tables = list(self._tables(step=self._whole_step))
        if not self._layout:
            # Arrow's concatenation of tables without columns drops their rows.
            rows = sum(t.num_rows for t in tables)
            return pa.table([pa.nulls(rows)], names=["_"]).select([])
        if not tables:
            return self.projected_schema.empty_table()
        return pa.concat_tables(tables)

    def count_rows(self) -> int:
        return self._recorder.run(self._count_rows)

    def _count_rows(self) -> int:
        if self._filter is None:
            total = sum(self._rows_of(f) for f in self._fragments) - self._offset
            total = max(total, 0)
            return total if self._limit is None else min(total, self._limit)
        return sum(t.num_rows for t in self._selected(step=_WHOLE_FRAGMENT))

    @property
    def _whole_step(self) -> int:
        """The rows read at a time for a whole table: a fragment at once, or, under a
        filter on local files, whose columns are read and mostly dropped, a part of
        one (an object store's requests cost more than the memory saved)."""
        if self._filter is None or not io.is_local(self._store.root):
            return _WHOLE_FRAGMENT
        return _FILTERED_STEP


def exact_batches(tables: Iterator[pa.Table], size: int) -> Iterator[pa.RecordBatch]:
    """Batches of exactly ``size`` rows (the last may be shorter), cut across tables."""
    for whole in coalesced(tables, size):
        yield from whole.combine_chunks().to_batches(max_chunksize=size)
