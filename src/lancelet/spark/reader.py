"""Batch reads: one dataset version cut into input partitions of fragment row ranges.

A reader reads the version its options name (``LanceDataSource`` fixes it once per
DataFrame), so every partition of every query on a DataFrame reads the same version
even if commits land meanwhile.  A partition is a range of physical rows of one
fragment; a task reads it in slices, drops deleted rows, applies the filters Spark
pushed down and hands Spark Arrow record batches.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import datasource as sds
from pyspark.sql import types as st

from lancelet.dataset.dataset import LanceDataset
from lancelet.dataset.fragment_reader import FragmentReader
from lancelet.dataset.scanner import ROW_ADDRESS, ROW_ID, live_rows
from lancelet.errors import SchemaError
from lancelet.spark.filters import conjunction, to_expression, top_level_columns
from lancelet.spark.options import ReadOptions
from lancelet.spark.types import (
    natural_spark_type,
    same_spark_type,
    spark_arrow_schema,
    spark_schema,
)
from lancelet.spark.writer import PortableSchema
from lancelet.table.fragment import Fragment
from lancelet.transaction.store import DatasetStore

ROW_COLUMNS = (ROW_ID, ROW_ADDRESS)
_ROW_FIELD = pa.field("", pa.uint64(), nullable=False)


def open_dataset(options: ReadOptions) -> LanceDataset:
    return LanceDataset(options.path, options.version)


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
    for name, asked in ((ROW_ID, options.with_row_id), (ROW_ADDRESS, options.with_row_address)):
        if asked or name in names:
            schema = schema.add(st.StructField(name, st.LongType(), False))
    return schema


@dataclass(frozen=True)
class _Column:
    output: str  # the name Spark asked for
    source: str  # the dataset column (or row id column) it comes from


class FragmentRange(sds.InputPartition):
    """Physical rows ``[start, stop)`` of one fragment.  The fragment travels with it, so
    a task needs no manifest (decoding one per task grows with the fragment count)."""

    def __init__(self, fragment: Fragment, start: int, stop: int) -> None:
        super().__init__((fragment.id, start, stop))
        self.fragment = fragment
        self.start = start
        self.stop = stop


def _ranges(fragments: Iterable[Fragment], rows_per_partition: int) -> list[FragmentRange]:
    return [
        FragmentRange(f, start, min(start + rows_per_partition, f.physical_rows))
        for f in fragments
        if f.num_rows
        for start in range(0, f.physical_rows, rows_per_partition)
    ]


class LanceReader(sds.DataSourceReader):
    def __init__(self, schema: st.StructType, options: ReadOptions) -> None:
        dataset = open_dataset(options)
        self._uri = dataset.uri
        self._version = dataset.version
        self._lance_schema = PortableSchema.of(dataset.lance_schema)
        self._where = f"{dataset.uri} version {dataset.version}"
        self._schema = schema
        self._options = options
        self._columns = self._resolve(schema, dataset.schema)
        self._pushable = self._natural_columns(schema, dataset.schema)
        self._filters: list[pc.Expression] = []
        self._filter_columns: set[str] = set()

    # -- planning (on the driver) -----------------------------------------------------

    def _resolve(self, schema: st.StructType, arrow: pa.Schema) -> list[_Column]:
        """Spark's field names matched to dataset columns, exactly or else ignoring case."""
        by_lower: dict[str, list[str]] = {}
        for name in (*arrow.names, *ROW_COLUMNS):
            by_lower.setdefault(name.lower(), []).append(name)
        out = []
        for field in schema.fields:
            if field.name in arrow.names or field.name in ROW_COLUMNS:
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
        manifest = DatasetStore(self._uri).read_manifest(self._version)
        return _ranges(manifest.fragments, self._options.rows_per_partition)

    # -- reading (in tasks) -----------------------------------------------------------

    def read(self, partition: sds.InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, FragmentRange):
            return iter(())  # the dataset has no rows: Spark plans one empty partition
        return self._read_range(partition)

    def _read_range(self, part: FragmentRange) -> Iterator[pa.RecordBatch]:
        schema = self._lance_schema.load()
        reader = FragmentReader(DatasetStore(self._uri), schema, part.fragment)
        target = spark_arrow_schema(self._schema)
        data_columns = self._data_columns(schema.top_level_names())
        step = self._options.batch_size
        for start in range(part.start, part.stop, step):
            stop = min(start + step, part.stop)
            table = self._slice(reader, data_columns, start, stop)
            if table.num_rows:
                yield from self._to_spark(table, target).to_batches(max_chunksize=step)

    def _data_columns(self, names: list[str]) -> list[str]:
        wanted = {c.source for c in self._columns} | self._filter_columns
        return [n for n in names if n in wanted]

    def _slice(self, reader: FragmentReader, columns: list[str], start: int, stop: int) -> pa.Table:
        table = reader.read(columns, start, stop)
        table = live_rows(reader, table, start, stop, with_addresses=self._needs_addresses())
        expression = self.pushed_filter
        return table if expression is None else table.filter(expression)

    def _needs_addresses(self) -> bool:
        wanted = {c.source for c in self._columns} | self._filter_columns
        return bool(wanted & set(ROW_COLUMNS))

    def _to_spark(self, table: pa.Table, target: pa.Schema) -> pa.Table:
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
        # Each call replaces what an earlier one pushed: Spark may replay the filters
        # on a reader (to push a limit after them).
        pushed: list[pc.Expression] = []
        columns: set[str] = set()
        left = []
        for spark_filter in filters:
            expression = to_expression(spark_filter, self._pushable)
            if expression is None:
                left.append(spark_filter)
            else:
                pushed.append(expression)
                columns |= top_level_columns(spark_filter)
        self._filters, self._filter_columns = pushed, columns
        return left
