"""What every scalar index offers the query planner, whatever its layout on disk.

An index answers the leaves of the predicate tree (:mod:`lancelet.expr`) it knows
with the row addresses that may match.  An ``exact`` answer lists exactly the
matching rows among those it indexed; an inexact one (a zone map, a Bloom filter)
may list more, and the planner rechecks them.  Either way the planner applies the
full filter to the rows it reads, so an index only ever narrows a scan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from lancelet.expr import IndexQuery


@dataclass(frozen=True)
class SearchResult:
    # Sorted, unique uint64 row addresses (see lancelet.table.row_address).
    addresses: np.ndarray
    exact: bool


class Searchable(Protocol):
    def search(self, query: IndexQuery) -> SearchResult | None:
        """The rows that may match ``query``; None when this index cannot answer it."""
        ...


class ScalarIndex(Searchable, Protocol):
    def statistics(self) -> dict[str, Any]:
        """What pylance's ``index_stats(name)["indices"][i]`` shows for this segment."""
        ...
