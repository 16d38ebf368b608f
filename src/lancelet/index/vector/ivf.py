"""An open IVF_FLAT / IVF_PQ / IVF_RQ index and its nearest-neighbour search, as
pylance 14 answers on the rows the index holds.

Search probes the ``nprobes`` partitions whose centroids are nearest the query,
scores every row in them (exactly for IVF_FLAT, through PQ distance tables for
IVF_PQ, by the RaBitQ estimate for IVF_RQ) and keeps the ``k`` best by (distance,
row id).  With a ``refine_factor`` the ``k * refine_factor`` best are re-scored
exactly from the original vectors, which the caller supplies by row id.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lancelet import io
from lancelet.errors import ArgumentError
from lancelet.index.vector import float32_distance, layout, rabitq
from lancelet.index.vector.rabitq import RabitqStorage
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
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest indexed rows as (uint64 row ids, float32 distances),
        nearest first (ties by row id)."""
        query = self._checked(query, k, nprobes, refine_factor, metric)
        keep = k if refine_factor is None else k * refine_factor
        row_ids, found = self._probe(self._probe_query(query), nprobes, keep)
        best = _smallest(found, row_ids, keep)
        row_ids, found = row_ids[best], found[best]
        if refine_factor is not None:
            if vectors is None:
                raise ArgumentError("refine_factor needs the original vectors")
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
        ids, float32 index distances: exact for IVF_FLAT, PQ estimates for IVF_PQ),
        unordered; what a planner filters and ranks itself.

        ``allowed`` (sorted row ids) drops the other rows; ``keep`` is how many
        the planner ranks (k * refine_factor): a multi-bit IVF_RQ index then
        returns only the rows pylance scores, as it skips rows by a lower bound."""
        query = self._checked(query, 1, nprobes, None, None)
        return self._probe(self._probe_query(query), nprobes, keep, allowed)

    def _probe_query(self, query: np.ndarray) -> np.ndarray:
        """The query the partitions are searched with: for cosine, divided by its
        length (summed as pylance does for the index type)."""
        if self.metric != "cosine":
            return query
        if isinstance(self.storage, RabitqStorage):
            return rabitq.unit_query(query)
        return float32_distance.unit(query)

    def _checked(
        self, query: np.ndarray, k: int, nprobes: int, refine: int | None, metric: str | None
    ) -> np.ndarray:
        if metric is not None and float32_distance.check_metric(metric) != self.metric:
            raise ArgumentError(f"the index was built for metric {self.metric!r}, not {metric!r}")
        for name, value in (("k", k), ("nprobes", nprobes), ("refine_factor", refine)):
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise ArgumentError(f"{name} must be a positive integer, got {value!r}")
        array = np.asarray(query, dtype=np.float32)
        if array.shape != (self.dimension,):
            raise ArgumentError(
                f"the query has shape {array.shape}; the index holds vectors of "
                f"dimension {self.dimension}"
            )
        if not np.isfinite(array).all():
            raise ArgumentError("the query vector holds NaN or infinite values")
        return array

    def _probe(
        self,
        query: np.ndarray,
        nprobes: int,
        keep: int | None = None,
        allowed: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Row ids and index distances of the rows in the probed partitions, in
        probe order (see :meth:`probed` for ``keep`` and ``allowed``)."""
        nearness = float32_distance.to_centroids(self.centroids, query, self.metric)
        chosen = np.argsort(nearness, kind="stable")[:nprobes]
        parts = [self.partition(int(p)) for p in chosen]
        if not parts:
            return np.empty(0, np.uint64), np.empty(0, np.float32)
        row_ids = np.concatenate([self.row_ids[part] for part in parts])
        mask = np.ones(len(row_ids), bool) if allowed is None else _allowed(row_ids, allowed)
        pairs = list(zip(chosen.tolist(), parts, strict=True))
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


def _allowed(row_ids: np.ndarray, allowed: np.ndarray) -> np.ndarray:
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
