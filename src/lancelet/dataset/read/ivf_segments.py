"""The segments of a vector index searched together, and the rows they list mapped
to the rows of the version searched.

An index that ``optimize_indices`` extended has several segments (a delta per
call, or fewer after merges), each an IVF index of its own over the fragments its
bitmap holds.  pylance 14 probes each segment's ``nprobes`` partitions nearest the
query (deltas share their centroids, so the same partitions), pools every probed
row of every segment and ranks the pool as one: the ``k * refine_factor`` best of
the pool, not of each segment, are refined (measured: the per-segment alternative
answers differently with a refine factor).

A segment lists its rows by key: row addresses, or stable row ids on a dataset with
stable row ids.  Addresses listed before a compaction that deferred its remap are
carried through the Fragment Reuse Index to where the rows live now (a row the
compaction dropped is gone); stable row ids are looked up.  A row whose key maps to
no live row is left out, with one exception pylance 14 shows (measured): a stable
row id that no fragment lists any more (its row was deleted, then compacted away)
is not caught by pylance's deletion mask, so it is ranked with the rest and only
dropped when the rows are read: a search without a prefilter filter, through a
segment that covers every fragment of the version, then returns fewer than k rows
(with a prefilter filter, unindexed fragments, or a segment covering only some
fragments, pylance's mask lists the rows allowed, and ghosts are not among
them).  Such a *ghost* keeps its place here, with the address ``MISSING``, for the
search to rank and drop as pylance does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from lancelet.dataset.read import frag_reuse
from lancelet.dataset.read.take import MISSING, addresses_of_ids
from lancelet.index.frag_reuse import ReuseMap
from lancelet.index.vector import IvfIndex
from lancelet.table.index import IndexMetadata
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore


@dataclass(frozen=True)
class Probed:
    """Rows of probed partitions: their row ids (what ``_rowid`` shows and ties are
    broken by), their addresses in the version searched and their index distances."""

    row_ids: np.ndarray
    addresses: np.ndarray
    distances: np.ndarray

    def take(self, positions: np.ndarray) -> Probed:
        return Probed(self.row_ids[positions], self.addresses[positions], self.distances[positions])


# Stable row ids -> their rows' addresses (``MISSING``: no live row has the id), and
# whether each id is a ghost (no fragment lists it, deleted or not).
IdLookup = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Segment:
    """One open segment and how its row keys become rows of the version: through
    ``lookup`` when it lists stable row ids, through ``reuse`` when it lists
    addresses from before a deferred remap."""

    metadata: IndexMetadata
    index: IvfIndex
    lookup: IdLookup | None
    reuse: ReuseMap | None
    # Whether its ghosts rank (it covers every fragment of the version).
    ghosts_rank: bool = False

    def probed(self, vector: np.ndarray, nprobes: int | None) -> Probed:
        count = self.index.num_partitions if nprobes is None else nprobes
        keys, distances = self.index.probed(vector, min(count, self.index.num_partitions))
        return self.located(keys, distances)

    def located(self, keys: np.ndarray, distances: np.ndarray) -> Probed:
        """The rows ``keys`` name, where they live now; rows no longer there dropped."""
        keys = np.asarray(keys, dtype=np.uint64)
        if self.lookup is not None:
            addresses, ghosts = self.lookup(keys)
            kept = (addresses != MISSING) | (ghosts & self.ghosts_rank)
            return Probed(keys[kept], addresses[kept], distances[kept])
        if self.reuse is None:
            return Probed(keys, keys, distances)
        moved, alive = self.reuse.remap(keys)
        return Probed(moved[alive], moved[alive], distances[alive])


def open_segments(
    store: DatasetStore, manifest: Manifest, segments: Sequence[tuple[IndexMetadata, IvfIndex]]
) -> list[Segment]:
    """The open segments of one index with the version's row lookups."""
    reuse = frag_reuse.reuse_map(store, manifest)

    def lookup(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        addresses = np.asarray(addresses_of_ids(store, manifest, ids), dtype=np.uint64)
        missing = addresses == MISSING
        ghosts = np.zeros(len(ids), dtype=bool)
        if missing.any():
            ghosts[missing] = ~np.isin(ids[missing], _listed_ids(store, manifest))
        return addresses, ghosts

    every = {f.id for f in manifest.fragments}
    return [
        Segment(
            metadata,
            index,
            lookup if manifest.stable_row_ids else None,
            reuse if not manifest.stable_row_ids else None,
            metadata.fragment_bitmap is not None and every <= set(metadata.fragment_bitmap),
        )
        for metadata, index in segments
    ]


def pooled(segments: Sequence[Segment], vector: np.ndarray, nprobes: int | None) -> Probed:
    """The rows of every segment's probed partitions, pooled."""
    found = [s.probed(vector, nprobes) for s in segments]
    return Probed(
        np.concatenate([np.zeros(0, np.uint64), *(f.row_ids for f in found)]),
        np.concatenate([np.zeros(0, np.uint64), *(f.addresses for f in found)]),
        np.concatenate([np.zeros(0, np.float32), *(f.distances for f in found)]).astype(np.float32),
    )


def _listed_ids(store: DatasetStore, manifest: Manifest) -> np.ndarray:
    """Every stable row id the version's fragments list, deleted rows' too; kept by
    the store for the manifest object (held by the entry, so its id names it)."""
    cache: dict[int, tuple[Manifest, np.ndarray]] = store.cache("listed_row_ids", limit=4)
    found = cache.get(id(manifest))
    if found is not None and found[0] is manifest:
        return found[1]
    parts = [np.zeros(0, np.uint64)]
    for fragment in manifest.fragments:
        sequence = store.read_row_ids(fragment)
        if sequence is not None:
            parts.append(np.asarray(sequence, dtype=np.uint64))
    listed = np.unique(np.concatenate(parts))
    cache[id(manifest)] = (manifest, listed)
    return listed
