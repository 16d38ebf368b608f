"""Reading pylance's IVF vector indices (IVF_FLAT, IVF_PQ, IVF_SQ, IVF_RQ,
IVF_HNSW_FLAT, IVF_HNSW_PQ, IVF_HNSW_SQ) and searching them.

The on-disk format is described in ``docs/vector-index-format.md``.  This package
is the index layer only: it opens an index directory and answers a nearest-neighbour
query on the rows the index holds; merging unindexed fragments, filters and deleted
rows is the query planner's job.
"""

from __future__ import annotations

from lancelet.index.vector.ivf import IvfIndex

__all__ = ["IvfIndex"]
