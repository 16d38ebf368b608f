"""A scan with ``full_text_query=``: the rows a full-text query matches, with their
BM25 ``_score``, in pylance's columns, order, filters and slicing (measured on
pylance 14.0.2, ``docs/fts/queries.md``):

* the output is the projected columns with ``_score`` (float32) after them unless
  named among them (or ``disable_scoring_autoprojection``); ``_rowid`` and
  ``_rowaddr`` asked for by flag come last;
* rows come by descending score; a ``limit`` keeps the best ``offset + limit`` rows,
  then ``offset`` skips some.  Of rows tied at the cut pylance keeps some, which ones
  varying from run to run; lancelet keeps those of lowest address.  A match or phrase
  on a column without an INVERTED index, without a limit, comes in row order;
* a postfilter (the default) filters the rows found (after the limit: fewer may come
  back); a prefilter (``prefilter=True``) selects the rows searched.  Rows searched
  without an index form the corpus their statistics count, so a prefilter changes
  their scores;
* deleted rows never come back, yet the index's statistics still count them; rows
  of fragments the index does not cover are searched flat (``corpus.ColumnSearch``);
* ``nearest=`` with ``full_text_query=`` is refused, as pylance refuses it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.dataset.core.options import refuse_unimplemented
from lancelet.dataset.read import fts_plan
from lancelet.dataset.read.fts_columns import column_search, inverted_segments, query_columns
from lancelet.dataset.read.nearest_scanner import _rows_at, ranked_scan_options
from lancelet.dataset.read.projection import (
    ROW_ADDRESS,
    ROW_ID,
    ROW_OFFSET,
    SPECIAL,
    Columns,
    projection,
    refuse_lineage,
    with_specials,
)
from lancelet.dataset.read.scanner import LanceScanner, default_batch_size
from lancelet.dataset.read.take import row_ids_at
from lancelet.errors import FullTextQueryError, UnsupportedOptionError
from lancelet.expr.filter import referenced_columns, to_expression
from lancelet.index.fts import queries as q
from lancelet.index.fts.corpus import ColumnSearch
from lancelet.index.fts.hits import Hits
from lancelet.index.fts.query import QueryEvaluator
from lancelet.io import accounting
from lancelet.table import row_address
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore

SCORE = "_score"


class FullTextScanner(LanceScanner):
    """``LanceScanner`` for a full-text search (what ``scanner(full_text_query=...)``
    returns)."""

    def __init__(  # the scan's keywords, as LanceScanner's
        self,
        store: DatasetStore,
        manifest: Manifest,
        query: FullTextSearch,
        *,
        columns: Columns | None = None,
        filter: str | pc.Expression | None = None,
        prefilter: bool = False,
        limit: int | None = None,
        offset: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        use_scalar_index: bool = True,
        fast_search: bool = False,
        disable_scoring_autoprojection: bool = False,
        batch_size: int | None = None,
        strict_batch_size: bool = False,
    ) -> None:
        self._arguments = {
            k: v for k, v in locals().items() if k not in ("self", "store", "manifest", "query")
        }
        self._store = store
        self._manifest = manifest
        self._query = query
        self._arrow = manifest.schema.to_arrow()
        self._where = f"{store.root}: full-text search"
        self._raw_filter = filter
        self._prefilter = prefilter
        self._limit = limit
        self._offset = offset or 0
        self._with_row_id = with_row_id
        self._with_row_address = with_row_address
        self._use_scalar_index = use_scalar_index
        self._fast_search = fast_search
        self._autoproject = not disable_scoring_autoprojection
        self._batch_size = batch_size or default_batch_size()
        self._strict = strict_batch_size
        self._known = pa.schema([*with_specials(self._arrow), pa.field(SCORE, pa.float32())])
        schema = self._arrow if columns is None else self._known
        self._shape = projection(columns, schema, self._where)
        refuse_lineage(self._shape, "full-text search", self._where)
        self._post = None if prefilter else to_expression(filter, self._known)

    def with_row_ids(self) -> LanceScanner:
        arguments = {**self._arguments, "with_row_id": True}
        return FullTextScanner(self._store, self._manifest, self._query, **arguments)

    @property
    def projected_schema(self) -> pa.Schema:
        return self._output(self._materialized(Hits.empty())).schema

    def to_table(self) -> pa.Table:
        return self._output(self._found_rows())

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        table = self.to_table().combine_chunks()
        size = self._batch_size if self._strict else None
        yield from table.to_batches(max_chunksize=size)

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def count_rows(self) -> int:
        if self._limit is not None or self._offset:
            # pylance's words (a ValueError there).
            raise FullTextQueryError(
                f"{self._where}: Cannot use limit/offset with aggregate. Apply limit to "
                "the result instead."
            )
        return int(self._found_rows().num_rows)

    def explain_plan(self, verbose: bool = False) -> str:
        """The plan of this search, in the shape of pylance's (``fts_plan``)."""
        return fts_plan.render(fts_plan.nodes(self._plan_facts(), self._describe()))

    def analyze_plan(self, count_rows: bool = False) -> str:
        """The plan with what running the search counted."""
        if count_rows:
            raise UnsupportedOptionError(f"{self._where}: analyze_plan with count_rows=True")
        counters = accounting.Counters()
        started = time.perf_counter()
        with accounting.collecting(counters):
            hits = self._hits()
        table = self._output(self._found_rows(hits))
        elapsed = f"elapsed={(time.perf_counter() - started) * 1000:.3f}ms"
        named = fts_plan.nodes(self._plan_facts(), self._describe())
        extra = {
            "ProjectionExec": f"metrics=[output_rows={table.num_rows}]",
            named[-1 if self._plan_facts().prefilter is None else -2][0]: (
                f"metrics=[output_rows={len(hits)}]"
            ),
            "Prefilter": f"metrics=[index_comparisons={counters.index_comparisons}]",
        }
        lines = [
            (name, f"{text}, {extra[name]}" if name in extra else text) for name, text in named
        ]
        return f"AnalyzeExec: {elapsed}, output_rows={table.num_rows}\n" + "".join(
            f"{'  ' * (depth + 1)}{name}: {text}\n" for depth, (name, text) in enumerate(lines)
        )

    def _plan_facts(self) -> fts_plan.FullTextPlan:
        raw = self._raw_filter
        text = None if raw is None else raw if isinstance(raw, str) else str(raw)
        return fts_plan.FullTextPlan(
            uri=self._store.root,
            outputs=self.projected_schema.names,
            reads=self._reads(),
            offset=self._offset,
            limit=self._limit,
            postfilter=text if self._post is not None else None,
            prefilter=text if self._prefilter else None,
        )

    def _describe(self) -> str:
        columns = self._query.columns_named(inverted_segments(self._manifest))
        return fts_plan.describe(self._query.query, self._query.text, columns)

    def _hits(self) -> Hits:
        """The rows the query matches among the live rows searched, by descending
        score (ties by address), the best ``offset + limit`` with a limit."""
        fragments = list(self._manifest.fragments)
        names = self._query.columns_named(inverted_segments(self._manifest))
        columns = {name: self._column(name, fragments) for name in names}
        evaluator = QueryEvaluator(columns, list(inverted_segments(self._manifest)))
        count = None if self._limit is None else self._offset + self._limit
        hits = self._query.evaluate(evaluator, count)
        if any(c.indexed is not None for c in columns.values()):
            found = len(hits)
            hits = self._live_hits(hits, fragments)
            if count is not None and len(hits) < min(found, count):
                # The best hits had rows deleted or filtered out: rows scored below
                # them may now rank, so every hit is needed.
                hits = self._live_hits(self._query.evaluate(evaluator, None), fragments)
        order = hits.ranked(count)
        if self._limit is None and self._query.row_ordered(columns):
            order = np.arange(len(hits))
        return Hits(hits.rows[order], hits.scores[order])

    def _column(self, name: str, fragments: list[Fragment]) -> ColumnSearch:
        reader = None if self._fast_search else self._read_rows
        return column_search(self._store, self._manifest, name, fragments, reader, self._where)

    def _read_rows(self, column: str, fragments: list[Fragment]) -> pa.Table:
        """``column`` and the address of the live rows of ``fragments`` (that pass a
        prefilter)."""
        scan = LanceScanner(
            self._store,
            self._manifest,
            columns=[column],
            filter=self._raw_filter if self._prefilter else None,
            with_row_address=True,
            fragments=fragments,
            use_scalar_index=self._use_scalar_index,
        )
        return scan.to_table()

    def _live_hits(self, hits: Hits, fragments: list[Fragment]) -> Hits:
        """The hits that may come back: rows of the searched fragments, not deleted
        (the index still lists deleted rows), passing a prefilter.  Only fragments
        with deletions (or all, under a prefilter) have their live rows read."""
        filtered = self._prefilter and self._raw_filter is not None
        holding = row_address.fragment_ids(hits.rows)
        # Hits are sorted by row, so their fragments come in runs.
        present = holding[np.r_[True, holding[1:] != holding[:-1]]] if len(holding) else holding
        by_id = {f.id: f for f in fragments}
        found = [by_id[int(i)] for i in present if int(i) in by_id]
        intact = [f.id for f in found if f.deletion_file is None and not filtered]
        checked = [f for f in found if f.deletion_file is not None or filtered]
        if len(intact) == len(present):
            return hits  # every hit's fragment is searched whole
        keep = np.isin(holding, np.asarray(intact, np.uint64))
        if checked:
            keep |= np.isin(hits.rows, self._allowed(checked), assume_unique=True)
        return Hits(hits.rows[keep], hits.scores[keep])

    def _allowed(self, fragments: list[Fragment]) -> np.ndarray:
        """The sorted addresses of the live rows of ``fragments`` (passing a
        prefilter)."""
        filtered = self._prefilter and self._raw_filter is not None
        scan = LanceScanner(
            self._store,
            self._manifest,
            columns=[],
            filter=self._raw_filter if filtered else None,
            with_row_address=True,
            fragments=fragments,
            use_scalar_index=self._use_scalar_index,
        )
        addresses = np.asarray(scan.to_table()[ROW_ADDRESS].to_numpy(), dtype=np.uint64)
        return np.unique(addresses)

    def _found_rows(self, hits: Hits | None = None) -> pa.Table:
        """The rows found (``hits``, else searched now) with every column the output
        and the postfilter read, postfiltered, offset and limited."""
        table = self._materialized(self._hits() if hits is None else hits)
        if self._post is not None:
            table = table.filter(self._post)
        stop = None if self._limit is None else self._offset + self._limit
        return table.slice(self._offset, None if stop is None else stop - self._offset)

    def _reads(self) -> list[str]:
        wanted = set(self._shape.reads)
        if self._post is not None and isinstance(self._raw_filter, str):
            wanted |= referenced_columns(self._raw_filter, self._known)
        elif self._post is not None:
            wanted |= set(self._arrow.names)
        return [n for n in self._arrow.names if n in wanted]

    def _materialized(self, hits: Hits) -> pa.Table:
        """The hits (row id, address, score) with the dataset columns read."""
        addresses = hits.rows
        unique, back = np.unique(addresses, return_inverse=True)
        offsets = ROW_OFFSET in self._shape.special_outputs or ROW_OFFSET in self._shape.reads
        rows = _rows_at(self._store, self._manifest, unique, self._reads(), offsets)
        rows = rows.take(pa.array(back.reshape(-1).astype(np.int64)))
        ids = addresses
        if self._manifest.stable_row_ids and len(addresses):
            ids = row_ids_at(self._store, self._manifest, addresses)
        table = pa.table(
            {
                ROW_ID: pa.array(ids, pa.uint64()),
                ROW_ADDRESS: pa.array(addresses, pa.uint64()),
                SCORE: pa.array(hits.scores, pa.float32()),
            }
        )
        for name in rows.column_names:
            table = table.append_column(rows.schema.field(name), rows[name])
        return table

    def _output(self, table: pa.Table) -> pa.Table:
        """The output columns, in pylance's order."""
        computed = self._shape.apply(table, self._where)
        names: list[str] = []
        arrays: list[pa.ChunkedArray] = []
        fields = iter(computed.columns)
        for item in self._shape.layout:
            names.append(item if isinstance(item, str) else self._shape.fields[item].name)
            arrays.append(table[item] if isinstance(item, str) else next(fields))
        tail = [(self._autoproject, SCORE), (self._with_row_id, ROW_ID)]
        tail.append((self._with_row_address, ROW_ADDRESS))
        for wanted, name in tail:
            if wanted and name not in names:
                names.append(name)
                arrays.append(table[name])
        by_name = {f.name: f for f in self._shape.fields}
        out_fields = [
            by_name[n] if n in by_name and n not in SPECIAL and n != SCORE else pa.field(n, a.type)
            for n, a in zip(names, arrays, strict=True)
        ]
        return pa.Table.from_arrays(
            arrays, schema=pa.schema(out_fields, metadata=self._arrow.metadata)
        )


class FullTextSearch:
    """A ``full_text_query`` argument, checked: a query object, or a query string
    with the columns to search (None: every column with an INVERTED index)."""

    def __init__(self, value: Any, call: str) -> None:
        self.query: q.FullTextQuery | None = None
        self.text = ""
        self.columns: list[str] | None = None
        if isinstance(value, q.FullTextQuery):
            self.query = value
        elif isinstance(value, str):
            self.text = value
        elif isinstance(value, dict):
            self._from_dict(value, call)
        else:
            raise TypeError(
                f"{call}: full_text_query must be a string, a dict or a FullTextQuery, "
                f"not {type(value).__name__}"
            )

    def _from_dict(self, value: dict[str, Any], call: str) -> None:
        unknown = set(value) - {"query", "columns"}
        if unknown:
            raise TypeError(f"{call}: full_text_query has unknown keys {sorted(unknown)}")
        text, columns = value.get("query"), value.get("columns")
        if not isinstance(text, str):
            raise TypeError(f"{call}: full_text_query's query must be a string")
        if columns is not None and (
            isinstance(columns, str) or not all(isinstance(c, str) for c in columns)
        ):
            raise TypeError(f"{call}: full_text_query's columns must be a list of names")
        self.text = text
        self.columns = None if columns is None else list(columns)

    def columns_named(self, indexed: dict[str, Any]) -> list[str]:
        """The columns the search reads."""
        if self.query is not None:
            return query_columns(self.query)
        return list(indexed) if self.columns is None else list(dict.fromkeys(self.columns))

    def evaluate(self, evaluator: QueryEvaluator, count: int | None) -> Hits:
        """The hits, or with ``count`` at least those that may rank among the best
        ``count`` (:meth:`QueryEvaluator.best`)."""
        if count is not None:
            return evaluator.best(
                self.text if self.query is None else self.query, self.columns, count
            )
        if self.query is not None:
            return evaluator.hits(self.query)
        return evaluator.plain(self.text, self.columns)

    def row_ordered(self, columns: dict[str, ColumnSearch]) -> bool:
        """Whether pylance returns the hits in row order (without a limit): a match
        or phrase query (or a query string on one column) on a column searched
        without an index (measured; other queries come by score)."""
        single = isinstance(self.query, (q.MatchQuery, q.PhraseQuery)) or (
            self.query is None and self.columns is not None and len(self.columns) == 1
        )
        return single and all(c.indexed is None for c in columns.values())


def full_text_scanner(
    store: DatasetStore,
    manifest: Manifest,
    fragments: Sequence[Fragment] | None,
    keywords: dict[str, Any],
    call: str,
) -> FullTextScanner:
    """The scan ``scanner(**keywords)`` asks for, ``full_text_query`` given."""
    if keywords.get("nearest") is not None:
        raise FullTextQueryError(f"{call}: Cannot have both nearest and full text search")
    if fragments is not None or keywords.get("fragments") is not None:
        raise UnsupportedOptionError(f"{call}: full_text_query over chosen fragments")
    refuse_unimplemented(
        call,
        **{name: keywords[name] for name in _REFUSED if keywords.get(name) is not None},
    )
    if keywords.get("include_deleted_rows"):
        # pylance refuses it, both messages measured (ValueErrors there).
        if not keywords.get("with_row_id"):
            raise FullTextQueryError(
                f"{call}: include_deleted_rows is set but with_row_id is false"
            )
        raise FullTextQueryError(f"{call}: Cannot include deleted rows in an FTS search")
    for name in ("order_by", "scan_stats_callback", "late_materialization"):
        if keywords.get(name):
            raise UnsupportedOptionError(f"{call}: {name} with full_text_query")
    return FullTextScanner(
        store,
        manifest,
        FullTextSearch(keywords["full_text_query"], call),
        **ranked_scan_options(keywords, call),
    )


# Scan keywords lancelet does not implement, refused with full_text_query too.
_REFUSED = (
    "batch_size_bytes",
    "index_segments",
    "blob_handling",
    "row_addr_allowlist",
    "row_addr_blocklist",
)
