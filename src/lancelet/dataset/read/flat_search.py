"""Exact (flat) nearest-neighbour search: every live row's vector measured, the k
nearest kept, as pylance searches a column without a vector index.

Vectors stream in batches from a scan (with the filter when it is a prefilter); each
batch is screened against all queries with one matrix product
(:func:`lancelet.index.vector.distance.screen`), and only the rows that can still
be among the k nearest (their screened distance within the error bound of the k-th)
are measured exactly and merged into a running top k per query.  Memory is one batch
plus k rows per query.

The order is pylance's: distance as float32, then row id; rows whose distance is NaN
(a null vector, NaN in a vector, a zero vector under cosine) are never returned.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancelet.dataset.read.nearest import DISTANCE, QUERY_INDEX, NearestQuery
from lancelet.dataset.read.projection import ROW_ADDRESS, ROW_ID
from lancelet.index.vector.distance import compute_dtype, exact, screen
from lancelet.index.vector.multivector import multivector_distances

# pylance's float32 distances: values closer than this (relative) may round together.
_FLOAT32_ROUNDING = 2.0**-22


@dataclass(frozen=True)
class _Nearest:
    """The nearest rows held, of every query, in order (query, distance, row id), at
    most k per query: query positions, float32 distances, row ids and addresses."""

    queries: np.ndarray
    distances: np.ndarray
    ids: np.ndarray
    addresses: np.ndarray

    @classmethod
    def empty(cls) -> _Nearest:
        no_rows = np.zeros(0, np.uint64)
        return cls(np.zeros(0, np.int64), np.zeros(0, np.float32), no_rows, no_rows)

    def worst(self, k: int, count: int) -> np.ndarray:
        """Per query (of ``count``), the k-th distance held (inf while fewer are)."""
        held = np.bincount(self.queries, minlength=count)
        firsts = np.concatenate([[0], np.cumsum(held)[:-1]])
        out = np.full(count, np.inf)
        full = held >= k
        out[full] = self.distances[firsts[full] + k - 1]
        return out


class FlatSearch:
    """A running exact search of ``query``: :meth:`add` batches, then :meth:`result`."""

    def __init__(self, query: NearestQuery) -> None:
        self._query = query
        self._compute = compute_dtype(query.element)
        self._queries = query.queries.astype(self._compute)
        self._nearest = _Nearest.empty()
        # A multivector query is one query, however many vectors it has.
        self._worst = np.full(1 if query.multivector else len(query.queries), np.inf)

    def add_all(self, batches: Iterable[pa.RecordBatch | pa.Table]) -> FlatSearch:
        for batch in batches:
            self.add(batch)
        return self

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Measure a batch holding the vector column, ``_rowid`` and ``_rowaddr``."""
        if not batch.num_rows:
            return
        if self._query.multivector:
            self._add_multivectors(batch)
            return
        vectors, valid = vector_rows(batch.column(self._query.column))
        screen_vectors = vectors.astype(self._compute, copy=False)
        distances, bounds = screen(self._query.metric, screen_vectors, self._queries)
        which, rows = self._candidates(distances, bounds, valid)
        if len(rows):
            ids = np.asarray(batch.column(ROW_ID).to_numpy(), dtype=np.uint64)
            addresses = np.asarray(batch.column(ROW_ADDRESS).to_numpy(), dtype=np.uint64)
            self._merge(which, vectors[rows], ids[rows], addresses[rows])

    def _add_multivectors(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Measure a batch of multivector rows: every row, exactly (no screen)."""
        vectors, starts, rows = multivector_rows(batch.column(self._query.column))
        if not len(rows):
            return
        distances = multivector_distances(self._query.metric, vectors, starts, self._queries)
        ids = np.asarray(batch.column(ROW_ID).to_numpy(), dtype=np.uint64)[rows]
        addresses = np.asarray(batch.column(ROW_ADDRESS).to_numpy(), dtype=np.uint64)[rows]
        self._keep(np.zeros(len(rows), np.int64), distances, ids, addresses)

    def _candidates(
        self, screened: np.ndarray, bounds: np.ndarray, valid: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The (query, row) pairs of a batch whose row may be among the query's k
        nearest: possibly within the distance range, and no farther than the k-th
        nearest (of those held, or of the batch's rows surely in range) by more than
        the screen's error.  A NaN screen keeps its row: the exact measure decides
        (an infinite query screens as NaN but measures inf)."""
        k = self._query.k
        maybe, surely = valid[None, :], valid[None, :]
        for bound_value, below in ((self._query.lower, True), (self._query.upper, False)):
            if bound_value is None:
                continue
            slack = (bounds + abs(bound_value) * _FLOAT32_ROUNDING)[:, None]
            if below:
                maybe = maybe & ~(screened < bound_value - slack)
                surely = surely & (screened >= bound_value + slack)
            else:
                maybe = maybe & ~(screened >= bound_value + slack)
                surely = surely & (screened < bound_value - slack)
        limit = self._worst
        if screened.shape[1] >= k:
            inside = screened if surely.all() else np.where(surely, screened, np.inf)
            # NaN sorts last: a k-th that is NaN means fewer than k, and fmin skips it.
            limit = np.fmin(limit, np.partition(inside, k - 1, axis=1)[:, k - 1])
        with np.errstate(invalid="ignore"):
            reach = limit + bounds + np.abs(limit) * _FLOAT32_ROUNDING
        # flatnonzero and divmod: several times faster than a 2-D nonzero.
        pairs = np.flatnonzero(maybe & ~(screened > reach[:, None]))
        which, rows = np.divmod(pairs, screened.shape[1])
        return which, rows

    def _merge(
        self, which: np.ndarray, vectors: np.ndarray, ids: np.ndarray, addresses: np.ndarray
    ) -> None:
        """Measure candidates (the rows ``vectors`` for the queries ``which``) exactly
        and keep each query's k nearest."""
        measured = exact(self._query.metric, vectors, self._query.queries[which])
        self._keep(which, measured, ids, addresses)

    def _keep(
        self, which: np.ndarray, measured: np.ndarray, ids: np.ndarray, addresses: np.ndarray
    ) -> None:
        """Keep each query's k nearest of those held and the rows measured (float64
        distances to the queries ``which``), within the distance range."""
        distances = measured.astype(np.float32)
        keep = ~np.isnan(distances)
        lower, upper = self._query.lower, self._query.upper
        if lower is not None:
            keep &= distances >= np.float32(lower)
        if upper is not None:
            keep &= distances < np.float32(upper)
        held = self._nearest
        queries = np.concatenate([held.queries, which[keep]])
        all_distances = np.concatenate([held.distances, distances[keep]])
        all_ids = np.concatenate([held.ids, ids[keep]])
        order = np.lexsort((all_ids, all_distances, queries))
        ordered = queries[order]
        rank = np.arange(len(order)) - np.searchsorted(ordered, ordered, side="left")
        order = order[rank < self._query.k]
        all_addresses = np.concatenate([held.addresses, addresses[keep]])
        self._nearest = _Nearest(
            queries[order], all_distances[order], all_ids[order], all_addresses[order]
        )
        self._worst = self._nearest.worst(self._query.k, len(self._worst))

    def result(self) -> pa.Table:
        """The nearest rows of every query in order (query, distance, row id):
        ``query_index`` (int32), ``_rowid``, ``_rowaddr``, ``_distance`` (float32)."""
        nearest = self._nearest
        return pa.table(
            {
                QUERY_INDEX: pa.array(nearest.queries.astype(np.int32), pa.int32()),
                ROW_ID: pa.array(nearest.ids, pa.uint64()),
                ROW_ADDRESS: pa.array(nearest.addresses, pa.uint64()),
                DISTANCE: pa.array(nearest.distances, pa.float32()),
            }
        )


def vector_rows(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A fixed-size-list column (or a tensor column over one) as an n x d array, and
    which rows hold a whole vector (neither the vector nor an element null)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    dim = array.type.list_size
    values = array.values.slice(array.offset * dim, len(array) * dim)
    valid = np.ones(len(array), dtype=bool)
    if array.null_count:
        valid &= array.is_valid().to_numpy(zero_copy_only=False)
    if values.null_count:
        element_valid = values.is_valid().to_numpy(zero_copy_only=False)
        valid &= element_valid.reshape(-1, dim).all(axis=1)
        values = values.fill_null(0)
    flat = values.to_numpy(zero_copy_only=False)
    return flat.reshape(len(array), dim), valid


def multivector_rows(
    column: pa.ChunkedArray | pa.Array,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A list-of-vectors column as (the vectors of its non-empty, non-null rows as one
    n x d array, where each row's vectors start in it, those rows' positions).  Null
    vectors and null elements read as zeros, as pylance reads them."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    offsets = array.offsets.to_numpy().astype(np.int64)
    lengths = np.diff(offsets)
    keep = lengths > 0
    if array.null_count:
        keep &= array.is_valid().to_numpy(zero_copy_only=False)
    inner = array.values.slice(offsets[0], offsets[-1] - offsets[0])
    dim = inner.type.list_size
    values = inner.values.slice(inner.offset * dim, len(inner) * dim)
    flat = values.fill_null(0) if values.null_count else values
    vectors = flat.to_numpy(zero_copy_only=False).reshape(len(inner), dim)
    if inner.null_count:
        vectors = np.where(inner.is_null().to_numpy(zero_copy_only=False)[:, None], 0, vectors)
    owned = np.repeat(keep, lengths)
    if not owned.all():
        vectors = vectors[owned]
    kept = lengths[keep]
    starts = np.concatenate([[0], np.cumsum(kept)[:-1]]).astype(np.int64)
    return vectors, starts, np.flatnonzero(keep)
