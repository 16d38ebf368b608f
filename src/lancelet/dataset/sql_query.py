"""``LanceDataset.sql``: pylance's SQL query builder, run by lancelet.

``dataset.sql("SELECT ...")`` returns a :class:`SqlQueryBuilder`; ``build()`` gives a
:class:`SqlQuery` whose ``to_batch_records()`` / ``to_stream_reader()`` run it.  What
lancelet runs, and what it refuses, is described in :mod:`lancelet.expr.query.statement`;
the result's column names, types and nullability are DataFusion's
(:mod:`lancelet.expr.query.naming`, :mod:`lancelet.expr.query.aggregate`).  The query
engine (:mod:`lancelet.expr.query`) reads the dataset through :class:`_DatasetSource`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lancelet.dataset.read.projection import ROW_ADDRESS, ROW_ID
from lancelet.errors import ArgumentError
from lancelet.expr.query.execute import run_query
from lancelet.expr.query.statement import table_name as registered_name

if TYPE_CHECKING:
    from lancelet.dataset.dataset import LanceDataset

__all__ = ["SqlMethods", "SqlQuery", "SqlQueryBuilder"]

# DataFusion's default batch size: the most rows a result batch holds.
DEFAULT_BATCH_SIZE = 8192


@dataclass(frozen=True)
class QueryOptions:
    """What the builder set: the table's name and the scan's options."""

    table_name: str = "dataset"
    with_row_id: bool = False
    with_row_addr: bool = False
    scan_options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _DatasetSource:
    """The dataset as the query engine reads it (:class:`lancelet.expr.query.execute.
    QuerySource`): its columns, with ``_rowid`` / ``_rowaddr`` when the builder asked
    for them, scanned with the builder's scan options."""

    dataset: LanceDataset
    options: QueryOptions

    @property
    def name(self) -> str:
        return self.options.table_name

    @property
    def schema(self) -> pa.Schema:
        options = self.options
        specials = [ROW_ID] * options.with_row_id + [ROW_ADDRESS] * options.with_row_addr
        fields = [*self.dataset.schema, *(pa.field(name, pa.uint64()) for name in specials)]
        return pa.schema(fields)

    def read(self, columns: Sequence[str], filter: str | None) -> pa.Table:
        return self.dataset.to_table(
            columns=[n for n in columns if n not in (ROW_ID, ROW_ADDRESS)],
            filter=filter,
            with_row_id=ROW_ID in columns or None,
            with_row_address=ROW_ADDRESS in columns or None,
            **self.options.scan_options,
        )


class SqlQuery:
    """An executable SQL query, made by :meth:`SqlQueryBuilder.build`; each call runs
    it anew on the dataset's version."""

    def __init__(self, dataset: LanceDataset, sql: str, options: QueryOptions, batch_size: int):
        self._dataset = dataset
        self._sql = sql
        self._options = options
        self._batch_size = batch_size

    def _table(self) -> pa.Table:
        return run_query(_DatasetSource(self._dataset, self._options), self._sql)

    def to_batch_records(self) -> list[pa.RecordBatch]:
        """The result as record batches (none at all when it has no rows, as in pylance)."""
        table = self._table()
        if table.num_rows == 0:
            return []
        batches: list[pa.RecordBatch] = table.combine_chunks().to_batches(self._batch_size)
        return batches

    def to_stream_reader(self) -> pa.RecordBatchReader:
        """The result as a reader of record batches."""
        table = self._table()
        batches = table.combine_chunks().to_batches(max_chunksize=self._batch_size)
        return pa.RecordBatchReader.from_batches(table.schema, batches)


class SqlQueryBuilder:
    """Options of a SQL query over a dataset; ``build()`` makes the query."""

    def __init__(self, dataset: LanceDataset, sql: str) -> None:
        self._dataset = dataset
        self._sql = sql
        self._options = QueryOptions()
        self._batch_size = DEFAULT_BATCH_SIZE

    def table_name(self, table_name: str) -> SqlQueryBuilder:
        """The name the query's FROM clause calls the dataset (default ``dataset``)."""
        self._options = replace(self._options, table_name=registered_name(table_name))
        return self

    def with_row_id(self, with_row_id: bool = True) -> SqlQueryBuilder:
        """Make the ``_rowid`` column available (and part of ``SELECT *``)."""
        self._options = replace(self._options, with_row_id=_flag(with_row_id, "with_row_id"))
        return self

    def with_row_addr(self, with_row_addr: bool = True) -> SqlQueryBuilder:
        """Make the ``_rowaddr`` column available (and part of ``SELECT *``)."""
        flag = _flag(with_row_addr, "with_row_addr")
        self._options = replace(self._options, with_row_addr=flag)
        return self

    def blob_handling(self, blob_handling: str) -> SqlQueryBuilder:
        """How blob columns are returned, as the scanner's ``blob_handling``."""
        return self._scan_option("blob_handling", blob_handling)

    def batch_size(self, batch_size: int) -> SqlQueryBuilder:
        """The most rows a result batch holds."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ArgumentError(f"batch_size must be a positive integer, not {batch_size!r}")
        self._batch_size = batch_size
        return self

    def batch_size_bytes(self, batch_size_bytes: int) -> SqlQueryBuilder:
        """The scan's ``batch_size_bytes``."""
        return self._scan_option("batch_size_bytes", batch_size_bytes)

    def _scan_option(self, name: str, value: object) -> SqlQueryBuilder:
        scan = {**self._options.scan_options, name: value}
        self._options = replace(self._options, scan_options=scan)
        # The scanner checks (and refuses) what lancelet does not support, now.
        self._dataset.scanner(columns=[], **scan)
        return self

    def build(self) -> SqlQuery:
        return SqlQuery(self._dataset, self._sql, self._options, self._batch_size)


def _flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {value!r}")
    return value


class SqlMethods:
    """``LanceDataset.sql``, mixed into ``LanceDataset``."""

    def sql(self, sql: str) -> SqlQueryBuilder:
        """A SQL query over this version of the dataset, called ``dataset`` in the
        query's FROM clause unless ``table_name`` says otherwise."""
        if not isinstance(sql, str):
            raise TypeError(f"LanceDataset.sql: the query must be a string, not {sql!r}")
        return SqlQueryBuilder(self, sql)  # type: ignore[arg-type]
