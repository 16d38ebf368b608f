"""A nearest-neighbour search through a multivector index (each row's vectors indexed
one by one, cosine only), as pylance 14 scores it (XTR):

* each query vector finds its ``k * 10`` best indexed vectors (pylance's default
  over-fetch, ``LANCE_XTR_OVERFETCH``), by (distance, row id); a row found several
  times keeps its best; its similarity to that query vector is ``1 - distance``;
* a row a query vector did not find is given that vector's smallest similarity
  found (``1 -`` the last distance of its list; 0 when it found nothing);
* a row's distance is the number of query vectors less the sum of its similarities,
  summed in float32 query vector by query vector as pylance sums them;
* the ``k`` best rows by (distance, row id) come back.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lancelet.dataset.read.ivf_segments import Probed

# pylance's over-fetch of candidates per query vector (LANCE_XTR_OVERFETCH unset).
OVERFETCH = 10

# A query vector and how many candidates it wants -> its candidates, best first.
Candidates = Callable[[np.ndarray, int], Probed]


def xtr_search(queries: np.ndarray, k: int, candidates: Candidates) -> Probed:
    """The ``k`` best rows for the multivector query ``queries`` (m x d)."""
    ids = np.zeros(0, np.uint64)
    addresses = np.zeros(0, np.uint64)
    sims = np.zeros(0, np.float32)
    missed = np.float32(0)
    for vector in queries:  # one step per query vector, in pylance's order
        found = candidates(vector, k * OVERFETCH)
        distances = np.asarray(found.distances, np.float32)
        floor = np.float32(1) - distances[-1] if len(distances) else np.float32(0)
        # The first time a row appears is its best (the list is sorted).
        mine, first = np.unique(found.row_ids, return_index=True)
        mine_sims = np.float32(1) - distances[first]
        at = np.searchsorted(mine, ids)
        at[at == len(mine)] = 0
        seen = mine[at] == ids if len(mine) else np.zeros(len(ids), bool)
        sims = sims + np.where(seen, mine_sims[at] if len(mine) else floor, floor).astype(
            np.float32
        )
        new = ~np.isin(mine, ids)
        ids = np.concatenate([ids, mine[new]])
        addresses = np.concatenate([addresses, found.addresses[first][new]])
        sims = np.concatenate([sims, (mine_sims[new] + missed).astype(np.float32)])
        missed = np.float32(missed + floor)
    distances = (np.float32(len(queries)) - sims).astype(np.float32)
    best = np.lexsort((ids, distances))[:k]
    return Probed(ids[best], addresses[best], distances[best])
