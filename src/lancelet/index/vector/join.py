"""Joining small partitions, as pylance 14's ``optimize_indices`` does (measured;
``docs/vector-index-format.md``): every partition holding fewer rows than the bound
(over every segment, with the new rows) is removed at once, unless all are, when
the largest stays (of equals, the last); the rows of the removed ones go to the nearest remaining
centroid by the index's distance (squared l2; cosine ``1 - cos``; dot ``1 - c·x``),
and for IVF_PQ are encoded again against it.  pylance picks among the 64 remaining
centroids nearest the removed one; with at most 65 partitions that is all of them,
which is the only case lancelet joins."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from lancelet.index.vector.segment_writer import Quantizer, SegmentRows

# pylance's reassignment candidates: the removed centroid's nearest REASSIGN_RANGE.
REASSIGN_RANGE = 64

# Row keys -> (found, (found rows, d) vectors, unit for cosine) of the live rows.
VectorsByKey = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def joined_partitions(totals: np.ndarray, bound: int) -> np.ndarray:
    """The partitions pylance removes (bool per partition)."""
    small = totals < bound
    if len(totals) and small.all():
        # pylance removes the smallest first, the lower number first among equals:
        # the last left is the largest, the higher number among equals (measured).
        small[len(totals) - 1 - int(np.argmax(totals[::-1]))] = False
    return small


def joined(
    rows: SegmentRows, removed: np.ndarray, rule: Quantizer, vectors_by_key: VectorsByKey
) -> tuple[SegmentRows, Quantizer]:
    """``rows`` (partitions numbered by ``rule``) with the ``removed`` partitions'
    rows moved to the remaining ones (renumbered in order); rows whose vectors are
    gone (deleted) are dropped, as pylance reads the vectors again."""
    kept = np.flatnonzero(~removed)
    survivor = replace(rule, centroids=rule.centroids[kept])
    renumber = np.full(len(removed), -1, dtype=np.int64)
    renumber[kept] = np.arange(len(kept))
    moving = removed[rows.partitions]
    staying = rows.take(np.flatnonzero(~moving))
    staying = SegmentRows(staying.row_ids, renumber[staying.partitions], staying.payload)
    keys = rows.row_ids[moving]
    found, vectors = vectors_by_key(keys)
    keys = keys[found]
    partitions = np.argmin(_distances(vectors, survivor.centroids, rule.metric), axis=1)
    moved = SegmentRows(keys, partitions, survivor.payload(vectors, partitions))
    return SegmentRows.concat([staying, moved]), survivor


def _distances(vectors: np.ndarray, centroids: np.ndarray, metric: str) -> np.ndarray:
    x = vectors.astype(np.float64)
    c = centroids.astype(np.float64)
    out: np.ndarray
    if metric == "dot":
        out = 1 - x @ c.T
    elif metric == "cosine":
        norms = np.linalg.norm(c, axis=1)
        unit = c / np.where(norms > 0, norms, 1)[:, None]
        out = 1 - x @ unit.T
    else:
        out = (x * x).sum(1)[:, None] - 2 * x @ c.T + (c * c).sum(1)[None, :]
    return out
