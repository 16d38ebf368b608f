"""An open IVF_FLAT / IVF_PQ / IVF_SQ / IVF_RQ / IVF_HNSW_* index and its
nearest-neighbour search, as pylance 14 answers on the rows the index holds.

Search probes the ``nprobes`` partitions whose centroids are nearest the query,
scores every row in them (exactly for IVF_FLAT, through PQ distance tables for
IVF_PQ, in SQ code space for IVF_SQ, by the RaBitQ estimate for IVF_RQ), or walks
each one's HNSW graph, and keeps the ``k`` best by (distance, row id).  With a
``refine_factor`` the ``k * refine_factor`` best are re-scored exactly from the
original vectors, which the caller supplies by row id.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lancelet import io
from lancelet.errors import ArgumentError, UnsupportedVectorIndexError
from lancelet.index.vector import float32_distance, hnsw, layout, other_elements, rabitq, sq_storage
from lancelet.index.vector.hnsw import HnswGraph
from lancelet.index.vector.rabitq import RabitqStorage
from lancelet.index.vector.sq_storage import SqStorage
from lancelet.index.vector.storage import FlatStorage, PqStorage, Storage

# Row ids -> the original (rows, dimension) vectors, for refining.
VectorLookup = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class IvfIndex:
    index_type: str
    metric: str
    centroids: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    row_ids: np.ndarray
    storage: Storage
    # IVF_HNSW_*: each partition's graph, searched instead of scanning the partition.
    graphs: list[HnswGraph] | None = None
    # float16 vectors: a cosine query's unit vector is rounded to float16.
    half: bool = False

    @classmethod
    def open(cls, directory: io.Place) -> IvfIndex:
        """Open the index in ``directory`` (``_indices/<uuid>``)."""
        found = layout.read(directory)
        return cls(
            found.index_type,
            found.metric,
            found.centroids,
            found.offsets,
            found.lengths,
            found.row_ids,
            found.storage,
            found.graphs,
            found.half,
        )

    @property
    def dimension(self) -> int:
        return int(self.centroids.shape[1])

    @property
    def num_partitions(self) -> int:
        return int(self.centroids.shape[0])

    def partition(self, number: int) -> slice:
        start = int(self.offsets[number])
        return slice(start, start + int(self.lengths[number]))

    def _narrowed(self, allowed: np.ndarray | None) -> np.ndarray | None:
        """``allowed``, or None when it holds exactly the index's rows (nothing is
        then left out: the common case of a search without deletions or filter)."""
        if allowed is None or len(allowed) != len(self.row_ids):
            return allowed
        return None if np.array_equal(self._sorted_row_ids, allowed) else allowed

    @functools.cached_property
    def _sorted_row_ids(self) -> np.ndarray:
        return np.sort(self.row_ids)

    def partition_row_ids(self, number: int) -> np.ndarray:
        return self.row_ids[self.partition(number)]

    def partition_vectors(self, number: int) -> np.ndarray:
        """The stored vectors (IVF_FLAT; unit vectors for cosine) of a partition."""
        if not isinstance(self.storage, FlatStorage):
            raise ArgumentError(f"a {self.index_type} index keeps codes, not vectors")
        return self.storage.vectors[self.partition(number)]

    def partition_codes(self, number: int) -> np.ndarray:
        """The (rows, num_sub_vectors) PQ codes of a partition (IVF_PQ)."""
        if not isinstance(self.storage, PqStorage):
            raise ArgumentError(f"a {self.index_type} index keeps vectors, not codes")
        return self.storage.codes[self.partition(number)]

    def search(
        self,
        query: np.ndarray,
        k: int,
        nprobes: int,
        refine_factor: int | None = None,
        metric: str | None = None,
        vectors: VectorLookup | None = None,
        ef: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest indexed rows as (uint64 row ids, float32 distances),
        nearest first (ties by row id; as pylance's heaps leave them for SQ and
        HNSW indices)."""
        query = self._checked(query, k, nprobes, refine_factor, metric)
        if refine_factor is not None and vectors is None:
            raise ArgumentError("refine_factor needs the original vectors")
        keep = k if refine_factor is None else k * refine_factor
        row_ids, found = self.ranked(query, nprobes, keep, ef)
        if refine_factor is not None:
            assert vectors is not None
            found = float32_distance.exact(np.asarray(vectors(row_ids)), query, self.metric)
            best = _smallest(found, row_ids, k)
            row_ids, found = row_ids[best], found[best]
        return row_ids, found.astype(np.float32)

    def probed(
        self,
        query: np.ndarray,
        nprobes: int,
        keep: int | None = None,
        allowed: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every row of the ``nprobes`` partitions nearest ``query`` as (uint64 row
        ids, float32 index distances: exact for IVF_FLAT, PQ / SQ / RaBitQ
        estimates), unordered; what a planner filters and ranks itself.

        ``allowed`` (sorted row ids) drops the other rows; ``keep`` is how many
        the planner ranks (k * refine_factor): a multi-bit IVF_RQ index then
        returns only the rows pylance scores, as it skips rows by a lower bound."""
        query = self._checked(query, 1, nprobes, None, None)
        return self._probe(self._probe_query(query), nprobes, keep, allowed)

    def ranked(
        self,
        query: np.ndarray,
        nprobes: int,
        keep: int,
        ef: int | None = None,
        allowed: np.ndarray | None = None,
        refuse_ties: bool = True,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``keep`` best rows of the ``nprobes`` partitions nearest ``query`` by
        index distance, among those ``allowed`` (sorted row ids; None: all), as
        (uint64 row ids, float32 distances), in pylance's order.  Where equal
        distances straddle the cut pylance's pick is not reproduced: refused
        (TiedCutError), or with ``refuse_ties`` False taken by row id.

        IVF_FLAT / IVF_PQ / IVF_RQ: every row scored, ties by row id.  IVF_SQ:
        each partition's ``keep`` best through pylance's heap, HNSW: through its
        graph search of ``ef`` (default ``keep * 3 // 2``); then the partitions'
        rows by distance, ties in probe order."""
        query = self._probe_query(self._checked(query, keep, nprobes, None, None))
        if isinstance(self.storage, SqStorage) and self.metric == "dot":
            raise UnsupportedVectorIndexError(
                f"lancelet does not search {self.index_type} indices of metric dot: pylance "
                "sums their SQ dot products in an order not reproduced, so distances and "
                "near ties could differ (see docs/vector-index-format.md)"
            )
        if self.metric == "hamming" and self.graphs is None:
            return self._one_heap(query, nprobes, keep, allowed)
        if self.graphs is None and not isinstance(self.storage, SqStorage):
            row_ids, found = self._probe(query, nprobes, keep, allowed)
            best = _smallest(found, row_ids, keep)
            return row_ids[best], found[best]
        if ef is None or self.graphs is None:  # ef only steers a graph search
            ef = keep + keep // 2
        elif isinstance(ef, bool) or not isinstance(ef, int) or ef < keep:
            raise ArgumentError(f"ef must be an integer of at least k * refine_factor ({keep})")
        positions, found, tied = self._per_partition(query, nprobes, keep, ef, allowed)
        best = _smallest(found, self.row_ids[positions], keep + 1)
        last = float(found[best[keep - 1]]) if len(best) >= keep else np.inf
        # Equal distances straddling the cut of the merge (pylance's merge picks
        # among them in an order not reproduced), or of a graph search whose tied
        # nodes could have been among the k kept.
        if refuse_ties and (
            (len(best) > keep and found[best[keep - 1]] == found[best[keep]])
            or (np.isfinite(tied) and tied <= last)
        ):
            raise hnsw.TiedCutError(
                f"{self.index_type}: rows at the same index distance straddle the cut "
                f"to {keep} rows"
            )
        best = best[:keep]
        return self.row_ids[positions[best]], found[best]

    def _one_heap(
        self, query: np.ndarray, nprobes: int, keep: int, allowed: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """hamming: equal distances are the rule, and pylance keeps the rows one
        heap keeps when fed every probed partition's rows, partition after partition
        in probe order (measured: not a heap per partition); replayed here, then
        ordered by (distance, row id)."""
        chosen = self._probed_partitions(query, nprobes)
        parts = [self.partition(p) for p in chosen]
        empty = np.empty(0, np.int64)
        positions = np.concatenate([empty] + [np.arange(p.start, p.stop) for p in parts])
        scores = [
            self.storage.distances(query, self.centroids[p], part, self.metric)
            for p, part in zip(chosen, parts, strict=True)
        ]
        scores_all = np.concatenate(scores or [np.empty(0, np.float32)])
        allowed = self._narrowed(allowed)
        mask = None if allowed is None else members(allowed, self.row_ids[positions])
        nodes, found = hnsw.heap_best(scores_all, keep, mask)
        row_ids = self.row_ids[positions[nodes]]
        order = np.lexsort((row_ids, found))
        return row_ids[order], found[order]

    def centroid_distances(self, query: np.ndarray) -> np.ndarray:
        """The query's distance to each centroid, as partitions are chosen by."""
        query = self._checked(query, 1, 1, None, None)
        nearness: np.ndarray = float32_distance.to_centroids(
            self.centroids, self._probe_query(query), self.metric
        )
        return nearness

    def _probe_query(self, query: np.ndarray) -> np.ndarray:
        """The query the partitions are searched with: for cosine, divided by its
        length (summed as pylance does for the index type)."""
        if self.metric != "cosine":
            return query
        if query.dtype == np.float64:
            return other_elements.unit(query)
        if isinstance(self.storage, RabitqStorage):
            return rabitq.unit_query(query)
        if self.half:
            return float32_distance.unit(query).astype(np.float16).astype(np.float32)
        if isinstance(self.storage, SqStorage):
            return sq_storage.unit_query(query)
        return float32_distance.unit(query)

    def _checked(
        self, query: np.ndarray, k: int, nprobes: int, refine: int | None, metric: str | None
    ) -> np.ndarray:
        if metric is not None and float32_distance.check_metric(metric) != self.metric:
            raise ArgumentError(f"the index was built for metric {self.metric!r}, not {metric!r}")
        for name, value in (("k", k), ("nprobes", nprobes), ("refine_factor", refine)):
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise ArgumentError(f"{name} must be a positive integer, got {value!r}")
        array = np.asarray(query, dtype=other_elements.query_type(self.centroids))
        if array.shape != (self.dimension,):
            raise ArgumentError(
                f"the query has shape {array.shape}; the index holds vectors of "
                f"dimension {self.dimension}"
            )
        if not np.isfinite(array).all():
            raise ArgumentError("the query vector holds NaN or infinite values")
        return array

    def _probed_partitions(self, query: np.ndarray, nprobes: int) -> list[int]:
        nearness = float32_distance.to_centroids(self.centroids, query, self.metric)
        return np.argsort(nearness, kind="stable")[:nprobes].tolist()  # type: ignore[no-any-return]

    def _probe(
        self,
        query: np.ndarray,
        nprobes: int,
        keep: int | None = None,
        allowed: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Row ids and index distances of the rows in the probed partitions, in
        probe order (see :meth:`probed` for ``keep`` and ``allowed``)."""
        chosen = self._probed_partitions(query, nprobes)
        parts = [self.partition(p) for p in chosen]
        if not parts:
            return np.empty(0, np.uint64), np.empty(0, np.float32)
        row_ids = np.concatenate([self.row_ids[part] for part in parts])
        allowed = self._narrowed(allowed)
        mask = np.ones(len(row_ids), bool) if allowed is None else members(allowed, row_ids)
        pairs = list(zip(chosen, parts, strict=True))
        if isinstance(self.storage, RabitqStorage) and self.storage.skips_rows:
            scores = [
                self.storage.scores(query, self.centroids[p], part, self.metric)
                for p, part in pairs
            ]
            return rabitq.scored_rows(scores, row_ids, mask, keep)
        found = [
            self.storage.distances(query, self.centroids[p], part, self.metric) for p, part in pairs
        ]
        return row_ids[mask], np.concatenate(found).astype(np.float32)[mask]

    def _per_partition(
        self, query: np.ndarray, nprobes: int, keep: int, ef: int, allowed: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """Each probed partition's ``keep`` best (graph search or heap), in probe
        order, as index positions and distances, and the least distance of tied
        nodes a graph search cut; distances are computed for the whole partition at
        once and looked up as the search needs them."""
        positions = [np.empty(0, np.int64)]
        found = [np.empty(0, np.float32)]
        tied = np.inf
        allowed = self._narrowed(allowed)
        for p in self._probed_partitions(query, nprobes):  # one step per partition
            part = self.partition(p)
            scores = self.storage.distances(query, self.centroids[p], part, self.metric)
            mask = None if allowed is None else members(allowed, self.row_ids[part])
            if self.graphs is not None:
                nodes, distances, cut = self.graphs[p].search(scores, keep, ef, mask)
                tied = min(tied, cut)
            else:
                nodes, distances = hnsw.heap_best(scores, keep, mask)
            positions.append(part.start + nodes)
            found.append(distances)
        return np.concatenate(positions), np.concatenate(found).astype(np.float32), tied


def members(allowed: np.ndarray, row_ids: np.ndarray) -> np.ndarray:
    """Which of ``row_ids`` are in the sorted array ``allowed``."""
    if not len(allowed):
        return np.zeros(len(row_ids), bool)
    at = np.minimum(np.searchsorted(allowed, row_ids), len(allowed) - 1)
    return np.asarray(allowed[at] == row_ids)


def _smallest(found: np.ndarray, row_ids: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` smallest distances, by (distance, row id)."""
    if len(found) > k:
        bound = np.partition(found, k - 1)[k - 1]
        candidates = np.flatnonzero(found <= bound)
    else:
        candidates = np.arange(len(found))
    order = np.lexsort((row_ids[candidates], found[candidates]))
    return candidates[order[:k]]
