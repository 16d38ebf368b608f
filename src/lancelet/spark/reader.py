"""Batch reads: one dataset version cut into input partitions of fragment row ranges.

A reader reads the version its options name (``LanceDataSource`` fixes it once per
DataFrame), so every partition of every query on a DataFrame reads the same version
even if commits land meanwhile.  A partition is a range of physical rows of one
fragment; a task reads it in slices, drops deleted rows, applies the filters Spark
pushed down and hands Spark Arrow record batches.  When scalar indices answer the
pushed filters, a range carries the only rows it needs to read, and a range with no
such rows is left out (see :mod:`lancelet.spark.index_read`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import datasource as sds
from pyspark.sql import types as st

from lancelet.dataset.dataset import LanceDataset
from lancelet.dataset.engine import (
    ROW_ADDRESS,
    ROW_ID,
    FragmentRows,
    Snapshot,
    open_snapshot,
    plan_read,
    scan,
)
from lancelet.errors import ArgumentError, SchemaError
from lancelet.expr import Predicate
from lancelet.spark.filters import conjunction, to_expression, to_predicate, top_level_columns
from lancelet.spark.index_read import (
    DENSE,
    CandidateRows,
    filter_digest,
    in_range,
    pushed_predicate,
)
from lancelet.spark.local_rows import TESTED_BYTES, LocalRows, answered_locally
from lancelet.spark.options import ReadOptions
from lancelet.spark.partial_aggregate import counted
from lancelet.spark.partition_plan import (
    Piece,
    Sizing,
    partitions,
    read_bytes,
    whole_fragments,
)
from lancelet.spark.read_hints import ReadHints
from lancelet.spark.search_read import SearchPartition, search_rows
from lancelet.spark.types import (
    natural_spark_type,
    same_spark_type,
    spark_arrow_schema,
    spark_schema,
)
from lancelet.spark.writer import PortableSchema
from lancelet.table.fragment import Fragment

ROW_COLUMNS = (ROW_ID, ROW_ADDRESS)
_ROW_FIELD = pa.field("", pa.uint64(), nullable=False)
# Rows a pushed filter's columns are read in at a time: in a task of millions of rows,
# 64k-row steps spent a third of its time on each step's set-up.
_FILTERED_STEP = 1 << 18


def open_dataset(options: ReadOptions) -> LanceDataset:
    return LanceDataset(options.path, options.version, storage_options=options.storage_options)


def dataset_schema(dataset: LanceDataset, options: ReadOptions) -> st.StructType:
    """The Spark schema a read returns: the dataset's columns (or those asked for), then
    the row id and row address when asked for."""
    arrow = dataset.schema
    names = list(arrow.names if options.columns is None else options.columns)
    missing = [n for n in names if n not in arrow.names and n not in ROW_COLUMNS]
    if missing:
        raise SchemaError(
            f"{dataset.uri} version {dataset.version}: no column named {missing[0]!r}; "
            f"columns are {arrow.names}"
        )
    wanted = [n for n in names if n not in ROW_COLUMNS]
    schema = spark_schema(pa.schema([arrow.field(n) for n in wanted]), dataset.uri)
    if options.search is not None:
        schema = schema.add(st.StructField(options.search.column, st.FloatType(), True))
    for name, asked in ((ROW_ID, options.with_row_id), (ROW_ADDRESS, options.with_row_address)):
        if asked or name in names:
            schema = schema.add(st.StructField(name, st.LongType(), False))
    return schema


@dataclass(frozen=True)
class _Column:
    output: str  # the name Spark asked for
    source: str  # the dataset column (or row id column) it comes from


class FragmentRange(sds.InputPartition):
    """Physical rows ``[start, stop)`` of one fragment, or only the ``rows`` of them an
    index left.  The fragment travels with it, so a task needs no manifest (decoding
    one per task grows with the fragment count)."""

    def __init__(
        self, fragment: Fragment, start: int, stop: int, rows: CandidateRows | None = None
    ) -> None:
        super().__init__((fragment.id, start, stop))
        self.fragment = fragment
        self.start = start
        self.stop = stop
        self.rows = rows


class CountedRows(sds.InputPartition):
    """A ``COUNT(*)`` answered when the read was planned: its number of rows."""

    def __init__(self, rows: int) -> None:
        super().__init__(rows)
        self.rows = rows

    def __reduce__(self) -> tuple[type[CountedRows], tuple[int]]:
        # The bridge reads the count from the pickled partition while Spark plans the
        # query (``ReadPlan.answeredCount``): a call of this class with the number.
        return CountedRows, (self.rows,)


class FragmentRanges(sds.InputPartition):
    """Several small fragments' ranges read by one task (packed as Spark packs small
    files)."""

    def __init__(self, ranges: Sequence[FragmentRange]) -> None:
        super().__init__(tuple(r.value for r in ranges))
        self.ranges = tuple(ranges)


def fragment_ranges(
    fragments: Iterable[Fragment],
    rows_per_partition: int,
    candidates: Mapping[int, np.ndarray] | None = None,
    planned_for: str = "",
) -> list[FragmentRange]:
    """Each fragment cut into ranges of ``rows_per_partition`` rows."""
    cut = []
    for fragment in fragments:
        if fragment.num_rows:
            for start in range(0, fragment.physical_rows, rows_per_partition):
                stop = min(start + rows_per_partition, fragment.physical_rows)
                cut.append(Piece(fragment, start, stop, 0))
    return candidate_ranges(cut, candidates, planned_for)


def candidate_ranges(
    cut: Iterable[Piece], candidates: Mapping[int, np.ndarray] | None, planned_for: str
) -> list[FragmentRange]:
    """The pieces as ranges to read: whole, or carrying the few rows an index left
    (``candidates``: each fragment's physical row offsets), or left out if none."""
    out = []
    for piece in cut:
        fragment, start, stop = piece.fragment, piece.start, piece.stop
        found = None if candidates is None else candidates.get(fragment.id)
        if found is None:
            out.append(FragmentRange(fragment, start, stop))
            continue
        rows = in_range(found, start, stop)
        if len(rows) > (stop - start) * DENSE:
            out.append(FragmentRange(fragment, start, stop))
        elif len(rows):
            kept = CandidateRows.of(rows, planned_for)
            out.append(FragmentRange(fragment, start, stop, kept))
    return out


# A filtered read's columns the filters do not test count this fraction of their bytes
# in partition sizing (see LanceReader._sized).
_SKIPPED_SHARE = 4


def live_rows_counted(options: ReadOptions, snapshot: Snapshot) -> int | None:
    """The rows a ``COUNT(*)`` of a read with these options finds, from the manifest's
    row and deletion counts (as pylance's ``count_rows`` takes them), or None when only
    reading tells (a ``filter`` option, a search)."""
    if options.filter is not None or options.search is not None:
        return None
    return sum(f.num_rows for f in snapshot.manifest.fragments)


def _exact_tree(filters: Sequence[sds.Filter], schema: pa.Schema) -> Predicate | None:
    """The pushed filters as one predicate tree when every one of them has a tree and
    none tests a float column (Spark orders NaN above every number, which the tree
    spells differently from the expression), else None: the expression filters."""
    tested = set().union(*(top_level_columns(f) for f in filters))
    if any(pa.types.is_floating(schema.field(c).type) for c in tested if c in schema.names):
        return None
    if not filters or any(to_predicate(f, schema) is None for f in filters):
        return None
    return pushed_predicate(filters, schema)  # the conjunction, none left out


class LanceReader(sds.DataSourceReader):
    def __init__(self, schema: st.StructType, options: ReadOptions) -> None:
        dataset = open_dataset(options)
        self._version = dataset.version
        self._lance_schema = PortableSchema.of(dataset.lance_schema.inner)
        self._where = f"{dataset.uri} version {dataset.version}"
        self._hints = ReadHints.of(schema)
        self._output = schema
        self._options = options
        schema = self._hints.columns(schema, dataset_schema(dataset, options))
        self._schema = schema
        self._columns = self._resolve(schema, dataset.schema)
        self._pushable = self._natural_columns(schema, dataset.schema)
        self._filters: list[pc.Expression] = []
        self._filter_columns: set[str] = set()
        self._pushed: list[sds.Filter] = []  # the Spark filters behind self._filters
        self._tree: Predicate | None = None  # the same, for the kernels (_exact_tree)

    # -- planning (on the driver) -----------------------------------------------------

    def _resolve(self, schema: st.StructType, arrow: pa.Schema) -> list[_Column]:
        """Spark's field names matched to dataset columns, exactly or else ignoring case."""
        by_lower: dict[str, list[str]] = {}
        search = self._options.search
        computed = (search.column,) if search is not None else ()
        for name in (*arrow.names, *ROW_COLUMNS, *computed):
            by_lower.setdefault(name.lower(), []).append(name)
        out = []
        for field in schema.fields:
            if field.name in (*arrow.names, *ROW_COLUMNS, *computed):
                out.append(_Column(field.name, field.name))
                continue
            candidates = by_lower.get(field.name.lower(), [])
            if len(candidates) != 1:
                raise SchemaError(
                    f"{self._where}: the read schema names column {field.name!r}, which the "
                    f"dataset does not have (columns are {arrow.names})"
                )
            out.append(_Column(field.name, candidates[0]))
        return out

    @staticmethod
    def _natural_columns(schema: st.StructType, arrow: pa.Schema) -> pa.Schema:
        """Columns a pushed filter may test: read under their own name and Spark type
        (a column the read schema casts keeps its filters in Spark)."""
        fields = []
        for field in schema.fields:
            if field.name in ROW_COLUMNS:
                own = _ROW_FIELD.with_name(field.name)
            elif field.name in arrow.names:
                own = arrow.field(field.name)
            else:
                continue
            natural = natural_spark_type(own)
            if natural is not None and same_spark_type(natural, field.dataType):
                fields.append(own)
        return pa.schema(fields)

    @property
    def pushed_filter(self) -> pc.Expression | None:
        """The conjunction of the filters this reader evaluates itself."""
        return conjunction(self._filters)

    def partitions(self) -> Sequence[sds.InputPartition]:
        if self._options.search is not None:
            return [SearchPartition()]
        snapshot = open_snapshot(self._options.location(), self._version)
        planned = self._planned(snapshot)
        local = self._local(snapshot, planned)
        return planned if local is None else [local]

    def _local(self, snapshot: Snapshot, planned: Sequence[sds.InputPartition]) -> LocalRows | None:
        """A filtered read's rows or an aggregate's answers, read now, when the bridge
        asked for them (see :mod:`lancelet.spark.local_rows`), the columns read whole
        (those the filters test; every column an aggregate reads) are small enough to
        read here and the rows are few."""
        most, aggregate = self._hints.local, self._hints.aggregate
        if most is None or not (self._pushed or self._options.filter or aggregate):
            return None
        if any(isinstance(p, CountedRows) for p in planned):
            return None  # answered without reading
        tested = self._read_fields(None if aggregate is not None else self._filter_columns)
        if self._options.filter is not None:
            option = plan_read(snapshot, filter=self._options.filter)
            tested |= self._field_ids(option.filter_columns)
        if sum(read_bytes(f, tested) for f in snapshot.manifest.fragments) > TESTED_BYTES:
            return None
        # An aggregate is planned once: nothing to keep (see answered_locally).
        key = None if aggregate is not None else self._rows_key(snapshot, most)
        # No partition: Spark would read one empty one (whose aggregate is a row of zeros).
        parts = planned or [sds.InputPartition(None)]
        return answered_locally(self.read, parts, spark_arrow_schema(self._output), most, key)

    def _rows_key(self, snapshot: Snapshot, most: int) -> tuple[object, ...]:
        """What names a filtered read's rows, whichever columns it reads: the options,
        the version and the commit that made it (a dataset written again at the same
        path and version is another), the pushed filters, the limits."""
        manifest = snapshot.manifest
        return (
            repr(self._options),
            self._version,
            manifest.transaction_file,
            manifest.timestamp_ns,
            repr(self._pushed),
            self._hints.limit,
            most,
        )

    def _planned(self, snapshot: Snapshot) -> Sequence[sds.InputPartition]:
        if self._hints.counts_rows and not self._pushed:
            rows = live_rows_counted(self._options, snapshot)
            if rows is not None:
                return [CountedRows(rows)]  # no task opens a file
        if self._options.filter is not None:
            # Refuse a filter that does not parse here, before any task runs.
            plan = plan_read(snapshot, filter=self._options.filter)
            # Whole fragments: the scanner reads each filter columns first.
            tested = self._field_ids(plan.filter_columns)
            sizes = self._sizes(plan.fragments, tested)
            return self._grouped(whole_fragments(plan.fragments, sizes, self._sizing()), None, "")
        plan = plan_read(snapshot, predicate=self._index_predicate(snapshot))
        digest = filter_digest(self.pushed_filter)
        if self._options.rows_per_partition is not None:
            return fragment_ranges(
                plan.fragments, self._options.rows_per_partition, plan.candidates, digest
            )
        return self._sized(plan.fragments, plan.candidates, digest)

    def _sized(
        self,
        fragments: Sequence[Fragment],
        candidates: Mapping[int, np.ndarray] | None,
        digest: str,
    ) -> list[sds.InputPartition]:
        """Partitions of about one split's bytes of the columns read (see
        :mod:`lancelet.spark.partition_plan`).  With pushed filters, a task reads the
        columns they test whole and the others only for the rows kept, when few: those
        count a quarter of their bytes (a selective filter's partitions are then as
        many as the cores, not one per 128 MiB of columns it mostly skips)."""
        tested = self._read_fields(self._filter_columns) if self._filters else None
        sizes = self._sizes(fragments, tested)
        return self._grouped(partitions(fragments, sizes, self._sizing()), candidates, digest)

    def _sizing(self) -> Sizing:
        return Sizing(self._options.max_partition_bytes, parallelism=self._options.min_partitions)

    def _sizes(self, fragments: Sequence[Fragment], tested: set[int] | None) -> dict[int, int]:
        """Per fragment, the bytes a read takes: of the ``tested`` fields whole, of the
        other columns read a quarter (every field whole when None)."""
        fields = self._read_fields()
        tested = fields if tested is None else tested
        return {
            f.id: read_bytes(f, tested) + read_bytes(f, fields - tested) // _SKIPPED_SHARE
            for f in fragments
        }

    @staticmethod
    def _grouped(
        groups: list[list[Piece]], candidates: Mapping[int, np.ndarray] | None, digest: str
    ) -> list[sds.InputPartition]:
        out: list[sds.InputPartition] = []
        for group in groups:
            ranges = candidate_ranges(group, candidates, digest)
            if len(ranges) > 1:
                out.append(FragmentRanges(ranges))
            elif ranges:
                out.append(ranges[0])
        return out

    def _field_ids(self, names: Iterable[str]) -> set[int]:
        """The ids of the fields of the dataset's top-level columns ``names`` (others,
        like the row id, have none), nested ones included."""
        schema = self._lance_schema.load()
        wanted = set(names)
        found = [n for n in schema.top_level_names() if n in wanted]
        return {i for f in schema.resolve(found, self._where) for i in schema.subtree_ids(f.id)}

    def _read_fields(self, among: set[str] | None = None) -> set[int]:
        """The ids of the dataset fields the read decodes (nested ones included), or
        of those of the top-level columns ``among``."""
        names = self._data_columns(self._lance_schema.load().top_level_names())
        return self._field_ids(names if among is None else [n for n in names if n in among])

    def _index_predicate(self, snapshot: Snapshot) -> Predicate | None:
        """The pushed filters as a predicate tree for the scalar indices to bound."""
        if not (self._options.use_scalar_index and self._pushed and snapshot.manifest.indices):
            return None
        return pushed_predicate(self._pushed, self._pushable)

    # -- reading (in tasks) -----------------------------------------------------------

    def read(self, partition: sds.InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, CountedRows):
            return iter([counted(partition.rows, spark_arrow_schema(self._output))])
        if isinstance(partition, LocalRows):
            return partition.batches()  # read while planned; limits already applied
        if isinstance(partition, SearchPartition):
            batches = self._read_search()
        elif isinstance(partition, FragmentRange):
            batches = self._read_range(partition)
        elif isinstance(partition, FragmentRanges):
            batches = (b for r in partition.ranges for b in self._read_range(r))
        else:
            batches = iter(())  # the dataset has no rows: Spark plans one empty partition
        return self._hints.applied(batches, self._output, self._schema)

    def _read_range(self, part: FragmentRange) -> Iterator[pa.RecordBatch]:
        if self._options.filter is not None:
            yield from self._scanned(part)
            return
        schema = self._lance_schema.load()
        reader = FragmentRows(self._options.location(), schema, part.fragment)
        target = spark_arrow_schema(self._schema)
        data_columns = self._data_columns(schema.top_level_names())
        step = self._options.batch_size
        if part.rows is None:
            tables = self._slices(reader, data_columns, part.start, part.stop)
        else:
            tables = self._candidates(reader, data_columns, part.rows)
        for table in tables:
            if table.num_rows:
                yield from self._to_spark(table, target).to_batches(max_chunksize=step)

    def _read_search(self) -> Iterator[pa.RecordBatch]:
        options = self._options
        assert options.search is not None
        wanted = {c.source for c in self._columns}
        names = self._lance_schema.load().top_level_names()
        batches = search_rows(
            open_dataset(options),
            options.search,
            columns=[n for n in names if n in wanted],
            filter=options.filter,
            prefilter=options.prefilter,
            with_row_id=ROW_ID in wanted,
            with_row_address=ROW_ADDRESS in wanted,
            batch_size=options.batch_size,
        )
        target = spark_arrow_schema(self._schema)
        for batch in batches:
            yield from self._to_spark(pa.Table.from_batches([batch]), target).to_batches()

    def _scanned(self, part: FragmentRange) -> Iterator[pa.RecordBatch]:
        """A fragment's rows that the ``filter`` option selects, read by lancelet's
        scanner: filter columns first, the others only for matching rows, scalar
        indices where they cover the fragment."""
        wanted = {c.source for c in self._columns} | self._filter_columns
        batches = scan(
            open_snapshot(self._options.location(), self._version),
            [part.fragment],
            columns=self._data_columns(self._lance_schema.load().top_level_names()),
            filter=self._options.filter,
            with_row_id=ROW_ID in wanted,
            with_row_address=ROW_ADDRESS in wanted,
            batch_size=self._options.batch_size,
            use_scalar_index=self._options.use_scalar_index,
        )
        target = spark_arrow_schema(self._schema)
        expression = self.pushed_filter
        for batch in batches:
            table = pa.Table.from_batches([batch])
            if expression is not None:
                table = table.filter(expression)
            if table.num_rows:
                yield from self._to_spark(table, target).to_batches()

    def _slices(
        self, reader: FragmentRows, columns: list[str], start: int, stop: int
    ) -> Iterator[pa.Table]:
        step = self._options.batch_size
        if self.pushed_filter is not None:
            # The filter's columns are read in longer steps (each costs its set-up);
            # what they keep still reaches Spark in batches of the batch size.
            step = max(step, _FILTERED_STEP)
        for low in range(start, stop, step):
            yield self._slice(reader, columns, low, min(low + step, stop))

    def _candidates(
        self, reader: FragmentRows, columns: list[str], rows: CandidateRows
    ) -> Iterator[pa.Table]:
        """The rows an index left: only those read, the deleted ones dropped, every
        pushed filter applied."""
        expression = self.pushed_filter
        if expression is None or filter_digest(expression) != rows.planned_for:
            # Rows left out for one filter would be missing from another's answer.
            raise ArgumentError(
                f"{self._where}: a partition of fragment {reader.fragment.id} was planned "
                f"for other pushed filters than this reader's ({expression})"
            )
        offsets = np.setdiff1d(rows.offsets(), reader.deleted, assume_unique=True)
        step = self._options.batch_size
        for low in range(0, len(offsets), step):
            chunk = offsets[low : low + step]
            table = reader.take(columns, chunk, with_addresses=self._needs_addresses())
            yield table.filter(expression)

    def _data_columns(self, names: list[str]) -> list[str]:
        wanted = {c.source for c in self._columns} | self._filter_columns
        return [n for n in names if n in wanted]

    def _slice(self, reader: FragmentRows, columns: list[str], start: int, stop: int) -> pa.Table:
        expression = self.pushed_filter
        addresses = self._needs_addresses()
        if expression is None:
            return reader.live_range(columns, start, stop, with_addresses=addresses)
        tested = [c for c in columns if c in self._filter_columns]
        if not tested:  # the filters test only the row id or address
            table = reader.live_range(columns, start, stop, with_addresses=True)
            return table.filter(expression)
        tested += [c for c in ROW_COLUMNS if c in self._filter_columns]
        return reader.live_matching(columns, start, stop, (tested, expression), self._tree)

    def _needs_addresses(self) -> bool:
        wanted = {c.source for c in self._columns} | self._filter_columns
        return bool(wanted & set(ROW_COLUMNS))

    def _to_spark(self, table: pa.Table, target: pa.Schema) -> pa.Table:
        if not self._columns:
            return table.select([])  # no columns, the row count still matters (count())
        arrays = [table.column(c.source) for c in self._columns]
        out = pa.Table.from_arrays(arrays, names=[c.output for c in self._columns])
        try:
            return out.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
            raise SchemaError(
                f"{self._where}: cannot hand the rows to Spark as {self._schema.simpleString()}: "
                f"{exc}"
            ) from exc


class LanceFilteringReader(LanceReader):
    """A reader that also evaluates the filters Spark pushes down to it.

    Used only where Spark keeps a read planned with pushed filters to the query that
    pushed them (see :mod:`lancelet.spark.compat`): the filters live in the reader,
    which Spark pickles with the partitions as that query's read.
    """

    def pushFilters(self, filters: list[sds.Filter]) -> Iterable[sds.Filter]:
        if self._options.search is not None:
            # Spark's filters on a search read filter its ranked rows afterwards.
            return filters
        # Each call replaces what an earlier one pushed: Spark may replay the filters
        # on a reader (to push a limit after them).
        pushed: list[pc.Expression] = []
        taken: list[sds.Filter] = []
        columns: set[str] = set()
        left = []
        for spark_filter in filters:
            expression = to_expression(spark_filter, self._pushable)
            if expression is None:
                left.append(spark_filter)
            else:
                pushed.append(expression)
                taken.append(spark_filter)
                columns |= top_level_columns(spark_filter)
        self._filters, self._filter_columns, self._pushed = pushed, columns, taken
        self._tree = _exact_tree(taken, self._pushable)
        return left
