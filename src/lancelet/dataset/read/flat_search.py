"""Exact (flat) nearest-neighbour search: every live row's vector measured, the k
nearest kept, as pylance searches a column without a vector index.

Vectors stream in batches from a scan (with the filter when it is a prefilter); each
batch is screened against all queries with one matrix product
(:func:`lancelet.index.vector.distance.screened`), and only the rows that can still
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
from lancelet.index.vector.distance import compute_dtype, exact, margins, screened

# pylance's float32 distances: values closer than this (relative) may round together.
_FLOAT32_ROUNDING = 2.0**-22


@dataclass
class _Nearest:
    """One query's nearest rows so far, in order: float32 distances, ids, addresses."""

    distances: np.ndarray
    ids: np.ndarray
    addresses: np.ndarray

    def worst(self, k: int) -> float:
        """The k-th distance held (inf while fewer than k are)."""
        return float(self.distances[k - 1]) if len(self.distances) >= k else np.inf


class FlatSearch:
    """A running exact search of ``query``: :meth:`add` batches, then :meth:`result`."""

    def __init__(self, query: NearestQuery) -> None:
        self._query = query
        self._compute = compute_dtype(query.element)
        self._queries = query.queries.astype(self._compute)
        empty = np.zeros(0, np.uint64)
        self._nearest = [
            _Nearest(np.zeros(0, np.float32), empty, empty) for _ in range(len(query.queries))
        ]

    def add_all(self, batches: Iterable[pa.RecordBatch | pa.Table]) -> FlatSearch:
        for batch in batches:
            self.add(batch)
        return self

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Measure a batch holding the vector column, ``_rowid`` and ``_rowaddr``."""
        if not batch.num_rows:
            return
        vectors, valid = vector_rows(batch.column(self._query.column))
        ids = np.asarray(batch.column(ROW_ID).to_numpy(), dtype=np.uint64)
        addresses = np.asarray(batch.column(ROW_ADDRESS).to_numpy(), dtype=np.uint64)
        screen_vectors = vectors.astype(self._compute, copy=False)
        distances = screened(self._query.metric, screen_vectors, self._queries)
        bounds = margins(self._query.metric, screen_vectors, self._queries)
        for i, nearest in enumerate(self._nearest):
            worst = nearest.worst(self._query.k)
            rows = self._candidates(distances[i], float(bounds[i]), valid, worst)
            if len(rows):
                self._merge(i, vectors[rows], ids[rows], addresses[rows])

    def _candidates(
        self, screen: np.ndarray, bound: float, valid: np.ndarray, worst: float
    ) -> np.ndarray:
        """The rows of a batch that may be among a query's k nearest: possibly within
        the distance range, and no farther than the k-th nearest (of those held, or of
        the batch's rows surely in range) by more than the screen's error.  A NaN
        screen keeps its row: the exact measure decides (an infinite query screens as
        NaN but measures inf)."""
        k = self._query.k
        maybe, surely = valid.copy(), valid.copy()
        for bound_value, below in ((self._query.lower, True), (self._query.upper, False)):
            if bound_value is None:
                continue
            slack = bound + abs(bound_value) * _FLOAT32_ROUNDING
            if below:
                maybe &= ~(screen < bound_value - slack)
                surely &= screen >= bound_value + slack
            else:
                maybe &= ~(screen >= bound_value + slack)
                surely &= screen < bound_value - slack
        rows = np.flatnonzero(maybe)
        limit = worst
        inside = screen[surely]
        inside = inside[~np.isnan(inside)]
        if len(inside) >= k:
            limit = min(limit, float(np.partition(inside, k - 1)[k - 1]))
        if np.isfinite(limit):
            reach = limit + bound + abs(limit) * _FLOAT32_ROUNDING
            rows = rows[~(screen[rows] > reach)]
        return rows

    def _merge(self, i: int, vectors: np.ndarray, ids: np.ndarray, addresses: np.ndarray) -> None:
        """Measure candidates exactly and keep the query's k nearest."""
        measured = exact(self._query.metric, vectors, self._query.queries[i])
        distances = measured.astype(np.float32)
        keep = ~np.isnan(distances)
        lower, upper = self._query.lower, self._query.upper
        if lower is not None:
            keep &= distances >= np.float32(lower)
        if upper is not None:
            keep &= distances < np.float32(upper)
        held = self._nearest[i]
        all_distances = np.concatenate([held.distances, distances[keep]])
        all_ids = np.concatenate([held.ids, ids[keep]])
        all_addresses = np.concatenate([held.addresses, addresses[keep]])
        order = np.lexsort((all_ids, all_distances))[: self._query.k]
        self._nearest[i] = _Nearest(all_distances[order], all_ids[order], all_addresses[order])

    def result(self) -> pa.Table:
        """The nearest rows of every query in order (query, distance, row id):
        ``query_index`` (int32), ``_rowid``, ``_rowaddr``, ``_distance`` (float32)."""
        counts = [len(n.ids) for n in self._nearest]
        positions = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
        return pa.table(
            {
                QUERY_INDEX: pa.array(positions, pa.int32()),
                ROW_ID: pa.array(_joined([n.ids for n in self._nearest], np.uint64)),
                ROW_ADDRESS: pa.array(_joined([n.addresses for n in self._nearest], np.uint64)),
                DISTANCE: pa.array(_joined([n.distances for n in self._nearest], np.float32)),
            }
        )


def _joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate([np.zeros(0, dtype), *parts]).astype(dtype)


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
