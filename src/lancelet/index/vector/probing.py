"""How many IVF partitions a query probes when it names no ``nprobes``: pylance
14's automatic count as measured (``docs/vector-index-format.md``, "Default
nprobes"), taken on the generous side where the measurements leave it open.

The automatic count ``A`` is the larger of a count by ``k`` (6 for k <= 10, 11 to
100, 15 to 200, 22 to 500, 29 to 1000, 98 beyond: pylance's buckets) and, for l2
(where it was measured), the partitions whose centroid is within a ratio of the nearest
centroid's distance (pylance searches those for queries far from the data;
measured ratios 1.266 at k <= 10 and 1.33 above).  ``search_effort`` ``e``
interpolates geometrically: ``ceil(A^(2e))`` up to 0.5 and
``ceil(A^(2-2e) * P^(2e-1))`` above, P the partition count; ``minimum_nprobes`` and
``maximum_nprobes`` bound the result.  pylance's count can still exceed this for
some queries (its rule for far queries is not fully established), so a default
search may probe fewer partitions than pylance's and find other rows; with an
explicit ``nprobes`` the search is pylance's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

_BUCKETS = ((10, 6), (100, 11), (200, 15), (500, 22), (1000, 29))
_BEYOND = 98


@dataclass(frozen=True)
class Probing:
    """A query's probing bounds: pylance's ``search_effort`` (None: 0.5),
    ``minimum_nprobes`` and ``maximum_nprobes``."""

    k: int
    effort: float | None = None
    minimum: int | None = None
    maximum: int | None = None

    def count(self, nearness: np.ndarray, metric: str) -> int:
        """Partitions to probe, given the query's distance to each centroid
        (``nearness``, smaller is nearer) under ``metric``."""
        partitions = len(nearness)
        if not partitions:
            return 0
        automatic = min(max(_by_k(self.k), _within_ratio(nearness, metric, self.k)), partitions)
        effort = 0.5 if self.effort is None else self.effort
        if effort <= 0.5:
            wanted = math.ceil(float(automatic) ** (2 * effort))
        else:
            scale = float(automatic) ** (2 - 2 * effort) * float(partitions) ** (2 * effort - 1)
            wanted = math.ceil(scale)
        if self.minimum is not None:
            wanted = max(wanted, self.minimum)
        if self.maximum is not None:
            wanted = min(wanted, self.maximum)
        chosen: int = max(1, min(int(wanted), partitions))
        return chosen


def _by_k(k: int) -> int:
    return next((count for most, count in _BUCKETS if k <= most), _BEYOND)


def _within_ratio(nearness: np.ndarray, metric: str, k: int) -> int:
    """Partitions whose centroid distance is within pylance's ratio of the nearest."""
    if metric != "l2":
        return 0
    nearest = float(np.min(nearness))
    if not nearest > 0:
        return 0
    ratio = 1.266 if k <= 10 else 1.33
    return int(np.count_nonzero(nearness <= nearest * ratio))
