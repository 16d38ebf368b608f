"""A scan with ``nearest=``: the k nearest rows of a vector column, with pylance's
columns, order, filters and slicing (measured on pylance 14):

* the output is the projected columns with ``_distance`` (float32) after them, unless
  named among them (or ``disable_scoring_autoprojection``); ``_rowid`` and
  ``_rowaddr`` asked for by flag come last; a batch search starts with
  ``query_index`` (int32, not null), wherever the columns name it;
* rows come by query, then distance, then row id;
* a prefilter (``prefilter=True``) selects the rows searched, so k rows come back if
  k pass it; a postfilter (the default) filters the k nearest, so fewer may, and may
  read ``_distance`` (and ``query_index``);
* ``offset`` and ``limit`` slice the result after the filter;
* ``fast_search`` searches only indexed fragments: none, without a vector index.

The search is exact (:mod:`flat_search`), or through the column's IVF_FLAT / IVF_PQ /
IVF_RQ index as pylance's (:mod:`ivf_search`); an index lancelet cannot search as pylance
does is refused unless ``use_index`` is False.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.dataset.core import arguments
from lancelet.dataset.core.options import refuse_unimplemented
from lancelet.dataset.read.flat_search import FlatSearch, vector_rows
from lancelet.dataset.read.fragment_reader import FragmentReader
from lancelet.dataset.read.ivf_search import (
    IndexPlan,
    index_plan,
    index_search,
    opened,
    opened_segments,
)
from lancelet.dataset.read.nearest import (
    DISTANCE,
    QUERY_INDEX,
    NearestQuery,
    nearest_query,
    nested_values,
    vector_field_id,
)
from lancelet.dataset.read.nearest_plan import NearestPlan
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
from lancelet.dataset.read.row_columns import live_rows_before, row_offsets
from lancelet.dataset.read.scanner import LanceScanner, default_batch_size
from lancelet.errors import UnsupportedOptionError, UnsupportedVectorIndexError, VectorQueryError
from lancelet.expr.filter import referenced_columns, to_expression
from lancelet.table import row_address
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore

# Rows a search reads at once: large enough for the matrix product to run at BLAS
# speed, small enough to bound memory (a batch of vectors and its distances).
SEARCH_BATCH = 16384


class NearestScanner(LanceScanner):
    """``LanceScanner`` for a nearest-neighbour scan (what ``scanner(nearest=...)``
    returns); every public method of a scanner is answered here."""

    def __init__(  # the scan's keywords, as LanceScanner's
        self,
        store: DatasetStore,
        manifest: Manifest,
        query: NearestQuery,
        *,
        columns: Columns | None = None,
        filter: str | pc.Expression | None = None,
        prefilter: bool = False,
        limit: int | None = None,
        offset: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        fragments: Sequence[Fragment] | None = None,
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
        self._where = f"{store.root}: nearest scan"
        self._filter_text = None if filter is None else str(filter)
        self._raw_filter = filter
        self._prefilter = prefilter
        self._limit = limit
        self._offset = offset or 0
        self._with_row_id = with_row_id
        self._with_row_address = with_row_address
        self._fragments = list(manifest.fragments if fragments is None else fragments)
        self._use_scalar_index = use_scalar_index
        self._autoproject = not disable_scoring_autoprojection
        self._batch_size = batch_size or default_batch_size()
        self._strict = strict_batch_size
        self._fast_search = fast_search
        self._index = _within(index_plan(store, manifest, query, self._where), self._fragments)
        self._searched = [] if fast_search else self._fragments
        if self._index is None:
            self._refuse_fast_search_without_index(fast_search)
        self._known = _known_schema(self._arrow, query.batch)
        # Without columns, the dataset's; named ones may include _distance and the
        # row id and address.
        schema = self._arrow if columns is None else self._known
        self._shape = projection(_named(columns, query.batch), schema, self._where)
        refuse_lineage(self._shape, "nearest-neighbour search", self._where)
        self._post = None if prefilter else to_expression(filter, self._known)

    def _refuse_fast_search_without_index(self, fast_search: bool) -> None:
        """fast_search on a column whose index is not used (use_index=False)."""
        field_id = vector_field_id(self._manifest.schema, self._query.field_path)
        for index in self._manifest.indices:
            if fast_search and not index.is_system and field_id in index.fields:
                raise UnsupportedVectorIndexError(
                    f"{self._where}: fast_search with use_index=False on column "
                    f"{self._query.column!r}, which has the index {index.name!r}"
                )

    def with_row_ids(self) -> LanceScanner:
        return NearestScanner(
            self._store, self._manifest, self._query, **{**self._arguments, "with_row_id": True}
        )

    @property
    def projected_schema(self) -> pa.Schema:
        return self._output(self._materialized(_empty_hits())).schema

    def to_table(self) -> pa.Table:
        return self._output(self._nearest_rows())

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        table = self.to_table().combine_chunks()
        size = self._batch_size if self._strict else None
        yield from table.to_batches(max_chunksize=size)

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def count_rows(self) -> int:
        return int(self._nearest_rows().num_rows)

    def _hits(self) -> pa.Table:
        """The nearest rows of each query: query_index, _rowid, _rowaddr, _distance."""
        if self._index is not None:
            return self._index_hits()
        search = FlatSearch(self._query)
        if self._searched:
            search.add_all(self._vector_batches(self._searched))
        return search.result()

    def _vector_batches(self, fragments: list[Fragment]) -> Iterator[pa.RecordBatch]:
        """The vector column, row id and address of the rows of ``fragments`` (that
        pass a prefilter)."""
        scan = LanceScanner(
            self._store,
            self._manifest,
            columns=[self._query.column],
            filter=self._raw_filter if self._prefilter else None,
            with_row_id=True,
            with_row_address=True,
            batch_size=SEARCH_BATCH,
            fragments=fragments,
            use_scalar_index=self._use_scalar_index,
        )
        return scan.to_batches()

    def _index_hits(self) -> pa.Table:
        """The nearest rows found through the column's vector index, merged with an
        exact search of the fragments it does not cover."""
        plan = self._index
        assert plan is not None
        allowed = self._allowed(plan.indexed)
        unindexed = None
        if not self._fast_search and plan.unindexed:
            unindexed = self._vector_batches(plan.unindexed)
        segments = opened_segments(self._store, self._manifest, plan)
        return index_search(
            segments,
            plan,
            self._query,
            allowed,
            self._vectors,
            unindexed,
            self._where,
            filtered=self._prefilter and self._raw_filter is not None,
        )

    def _allowed(self, fragments: list[Fragment]) -> np.ndarray:
        """The sorted addresses of the rows of ``fragments`` that may come back: the
        live ones (passing a prefilter).  Without a filter they depend only on the
        fragments and their deletions, so the store keeps them for the next query."""
        if not fragments:
            return np.zeros(0, np.uint64)
        filtered = self._prefilter and self._raw_filter is not None
        key = (self._store.root, tuple((f.id, f.physical_rows, f.deletion_file) for f in fragments))
        cache: dict[object, np.ndarray] = self._store.cache("live_addresses", limit=4)
        if not filtered and key in cache:
            return cache[key]
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
        if len(addresses) > 1 and not (addresses[1:] > addresses[:-1]).all():
            addresses = np.unique(addresses)  # fragments listed out of address order
        if not filtered:
            cache[key] = addresses
        return addresses

    def _vectors(self, addresses: np.ndarray) -> np.ndarray:
        """The vectors of the rows at ``addresses``, in that order."""
        unique, back = np.unique(addresses, return_inverse=True)
        top, *below = self._query.field_path
        rows = _rows_at(self._store, self._manifest, unique, [top], False)
        vectors, _ = vector_rows(nested_values(rows[top], below))
        return np.asarray(vectors[back.reshape(-1)])

    def _nearest_rows(self) -> pa.Table:
        """The nearest rows with every column the output and the postfilter read,
        postfiltered, offset and limited."""
        table = self._materialized(self._hits())
        if self._post is not None:
            table = table.filter(self._post)
        stop = None if self._limit is None else self._offset + self._limit
        return table.slice(self._offset, None if stop is None else stop - self._offset)

    def _reads(self) -> list[str]:
        """The dataset columns to read for the nearest rows."""
        wanted = set(self._shape.reads)
        if self._post is not None and isinstance(self._raw_filter, str):
            wanted |= referenced_columns(self._raw_filter, self._known)
        elif self._post is not None:
            wanted |= set(self._arrow.names)  # an Arrow expression does not list them
        return [n for n in self._arrow.names if n in wanted]

    def _materialized(self, hits: pa.Table) -> pa.Table:
        """``hits`` with the dataset columns read at their addresses, and the row
        offsets when asked for."""
        addresses = hits[ROW_ADDRESS].to_numpy()
        unique, back = np.unique(addresses, return_inverse=True)
        offsets = ROW_OFFSET in self._shape.special_outputs or ROW_OFFSET in self._shape.reads
        rows = _rows_at(self._store, self._manifest, unique, self._reads(), offsets)
        rows = rows.take(pa.array(back.reshape(-1).astype(np.int64)))
        # Added to the hits: a table of no columns (nothing read) would lose its rows.
        table = hits
        for name in rows.column_names:
            table = table.append_column(rows.schema.field(name), rows[name])
        return table

    def _output(self, table: pa.Table) -> pa.Table:
        """The output columns of the selected rows, in pylance's order."""
        computed = self._shape.apply(table, self._where)
        names: list[str] = []
        arrays: list[pa.ChunkedArray] = []
        if self._query.batch:
            names.append(QUERY_INDEX)
            arrays.append(table[QUERY_INDEX])
        fields = iter(computed.columns)
        for item in self._shape.layout:
            names.append(item if isinstance(item, str) else self._shape.fields[item].name)
            arrays.append(table[item] if isinstance(item, str) else next(fields))
        tail = [(self._autoproject, DISTANCE), (self._with_row_id, ROW_ID)]
        tail.append((self._with_row_address, ROW_ADDRESS))
        for wanted, name in tail:
            if wanted and name not in names:
                names.append(name)
                arrays.append(table[name])
        return pa.Table.from_arrays(arrays, schema=self._schema(names, arrays))

    def _schema(self, names: list[str], arrays: list[pa.ChunkedArray]) -> pa.Schema:
        by_name = {f.name: f for f in self._shape.fields}
        fields = []
        for name, array in zip(names, arrays, strict=True):
            if name == QUERY_INDEX and self._query.batch:
                fields.append(pa.field(name, pa.int32(), nullable=False))
            elif name in by_name and name not in SPECIAL:
                fields.append(by_name[name])
            else:
                fields.append(pa.field(name, array.type))
        return pa.schema(fields, metadata=self._arrow.metadata)

    def explain_plan(self, verbose: bool = False) -> str:
        """The plan of this search, in the shape of pylance's."""
        return "\n".join(self._plan_lines()) + "\n"

    def analyze_plan(self, count_rows: bool = False) -> str:
        if count_rows:
            raise UnsupportedOptionError("LanceScanner.analyze_plan: count_rows=True")
        rows = self.to_table().num_rows
        return f"AnalyzeExec: output_rows={rows}\n" + self.explain_plan()

    def _plan_lines(self) -> list[str]:
        plan = NearestPlan(
            uri=self._store.root,
            query=self._query,
            index=self._index,
            metric=self._search_metric(),
            fast_search=self._fast_search,
            searched_fragments=len(self._searched),
            prefilter=self._filter_text if self._prefilter else None,
            postfilter=self._filter_text if self._post is not None else None,
            reads=self._reads(),
            outputs=self.projected_schema.names,
            offset=self._offset,
            limit=self._limit,
        )
        return plan.text().splitlines()

    def _search_metric(self) -> str:
        """The metric the search measures: the index's, when it goes through one."""
        if self._index is None:
            return self._query.metric
        return opened(self._store, self._index.segment).metric


def _known_schema(arrow: pa.Schema, batch: bool) -> pa.Schema:
    """The columns a projection or postfilter of a nearest scan may name: the
    dataset's, the row id and address, ``_distance`` and (in a batch) ``query_index``."""
    extra = [pa.field(DISTANCE, pa.float32())]
    if batch:
        extra.append(pa.field(QUERY_INDEX, pa.int32(), nullable=False))
    return pa.schema([*with_specials(arrow), *extra])


def _within(plan: IndexPlan | None, fragments: list[Fragment]) -> IndexPlan | None:
    """The plan searching only ``fragments`` (a fragment scan with a prefilter)."""
    if plan is None:
        return None
    chosen = {f.id for f in fragments}
    indexed = [f for f in plan.indexed if f.id in chosen]
    unindexed = [f for f in plan.unindexed if f.id in chosen]
    return dataclasses.replace(plan, indexed=indexed, unindexed=unindexed)


def _named(columns: Columns | None, batch: bool) -> Columns | None:
    """The columns without ``query_index``, which a batch search puts first anyway."""
    if batch and isinstance(columns, (list, tuple)):
        return [c for c in columns if c != QUERY_INDEX]
    return columns


def _empty_hits() -> pa.Table:
    return pa.table(
        {
            QUERY_INDEX: pa.array([], pa.int32()),
            ROW_ID: pa.array([], pa.uint64()),
            ROW_ADDRESS: pa.array([], pa.uint64()),
            DISTANCE: pa.array([], pa.float32()),
        }
    )


def _rows_at(
    store: DatasetStore,
    manifest: Manifest,
    addresses: np.ndarray,
    columns: list[str],
    offsets: bool,
) -> pa.Table:
    """The ``columns`` of the rows at ``addresses`` (sorted, unique), in that order;
    with ``offsets``, their ``_rowoffset`` too."""
    before = live_rows_before(manifest) if offsets else {}
    fragment_ids = row_address.fragment_ids(addresses)
    local = row_address.offsets(addresses).astype(np.int64)
    parts: list[pa.Table] = []
    for fragment in sorted(manifest.fragments, key=lambda f: f.id):
        chosen = fragment_ids == fragment.id
        if not chosen.any():
            continue
        reader = FragmentReader(store, manifest.schema, fragment)
        part = reader.take(columns, local[chosen])
        if offsets:
            position = row_offsets(local[chosen], reader.deleted, before[fragment.id])
            part = part.append_column(ROW_OFFSET, position)
        parts.append(part)
    if parts:
        return pa.concat_tables(parts)
    empty = FragmentReader(store, manifest.schema, Fragment(0, (), 0)).read(columns, 0, 0)
    if offsets:
        empty = empty.append_column(ROW_OFFSET, pa.array([], pa.uint64()))
    return empty


def nearest_scanner(
    store: DatasetStore,
    manifest: Manifest,
    fragments: list[Fragment] | None,
    keywords: dict[str, Any],
    call: str,
) -> NearestScanner:
    """The scan ``scanner(**keywords)`` asks for, ``nearest`` given; ``fragments`` are
    those to search (None: all)."""
    refuse_unimplemented(
        call,
        **{name: keywords[name] for name in _REFUSED if keywords.get(name) is not None},
    )
    if keywords.get("include_deleted_rows"):
        raise VectorQueryError(
            f"{call}: Cannot include deleted rows in a nearest neighbor search "
            "(include_deleted_rows)"
        )
    for name in ("order_by", "scan_stats_callback"):
        if keywords.get(name):
            raise UnsupportedOptionError(
                f"{call}: {name} with nearest (pylance ignores it in a vector search)"
            )
    query = nearest_query(keywords["nearest"], manifest.schema.to_arrow(), call)
    limit = arguments.row_count(keywords["limit"], "limit", call)
    asked_k = keywords["nearest"].get("k") if isinstance(keywords["nearest"], dict) else None
    if asked_k is None and limit:
        # pylance: without k, a limit is how many nearest rows are found.
        query = dataclasses.replace(query, k=limit)
    return NearestScanner(
        store,
        manifest,
        query,
        fragments=fragments,
        **ranked_scan_options(keywords, call),
    )


def ranked_scan_options(keywords: dict[str, Any], call: str) -> dict[str, Any]:
    """The scan keywords a ranked search (nearest or full-text) takes as a plain
    scan does, checked."""
    flag, count = arguments.flag, arguments.row_count
    return {
        "columns": keywords["columns"],
        "filter": keywords["filter"],
        "prefilter": flag(keywords["prefilter"], "prefilter", call),
        "limit": count(keywords["limit"], "limit", call),
        "offset": count(keywords["offset"], "offset", call),
        "with_row_id": flag(keywords["with_row_id"], "with_row_id", call),
        "with_row_address": flag(keywords["with_row_address"], "with_row_address", call),
        "use_scalar_index": flag(keywords["use_scalar_index"], "use_scalar_index", call, True),
        "fast_search": flag(keywords["fast_search"], "fast_search", call),
        "disable_scoring_autoprojection": flag(
            keywords["disable_scoring_autoprojection"], "disable_scoring_autoprojection", call
        ),
        "batch_size": arguments.positive(keywords["batch_size"], "batch_size", call),
        "strict_batch_size": flag(keywords["strict_batch_size"], "strict_batch_size", call),
    }


# Scan keywords lancelet does not implement, refused with nearest as without it.
_REFUSED = (
    "batch_size_bytes",
    "index_segments",
    "full_text_query",
    "blob_handling",
    "row_addr_allowlist",
    "row_addr_blocklist",
)
