"""Which rows a filter may select, as far as the indices know.

The planner walks the predicate tree (:mod:`lancelet.expr`).  A leaf on an indexed
column becomes the addresses its index returns, for the fragments that index
covers; AND intersects them fragment by fragment (any one indexed conjunct
bounds the rows), OR unites them where every disjunct is indexed; NOT and
conditions no index answers bound nothing.  The answer is always a superset of
the matching rows of each covered fragment: the scanner then reads only those
rows and applies the whole filter to them, so an index can only make a scan
cheaper, never change its result.  Fragments outside the answer are scanned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce

import numpy as np

from lancelet.expr import INDEX_QUERIES, And, IndexQuery, Or, Predicate
from lancelet.index.base import Searchable
from lancelet.table import row_address


@dataclass(frozen=True)
class IndexedColumn:
    """The indices of one column: a delta index is several, each with the fragments
    it covers (those still present and unchanged in the version being read)."""

    parts: tuple[tuple[Searchable, frozenset[int]], ...]


# fragment id -> candidate physical offsets (sorted, unique, uint32)
Candidates = dict[int, np.ndarray]


def plan(predicate: Predicate, columns: Mapping[str, Sequence[IndexedColumn]]) -> Candidates | None:
    """Candidate rows per covered fragment; None when the indices bound nothing.
    A column may have several indices: each one that answers a leaf bounds it."""
    return _walk(predicate, columns)


def _walk(
    predicate: Predicate, columns: Mapping[str, Sequence[IndexedColumn]]
) -> Candidates | None:
    if isinstance(predicate, INDEX_QUERIES):
        answers = [_search(predicate, index) for index in columns.get(predicate.column, ())]
        bounded = [a for a in answers if a is not None]
        return reduce(_intersect, bounded) if bounded else None
    if isinstance(predicate, And):
        bounded = [c for c in (_walk(p, columns) for p in predicate.children) if c is not None]
        return reduce(_intersect, bounded) if bounded else None
    if isinstance(predicate, Or):
        each = [_walk(p, columns) for p in predicate.children]
        every = [c for c in each if c is not None]
        if not every or len(every) != len(each):
            return None
        return reduce(_unite, every)
    return None  # Not, Opaque


def _search(query: IndexQuery, indexed: IndexedColumn) -> Candidates | None:
    """The rows one index (all of its segments) says may match, per covered fragment."""
    out: Candidates = {}
    for index, fragments in indexed.parts:
        if not fragments:
            continue
        result = index.search(query)
        if result is None:
            return None
        found = row_address.by_fragment(_sorted(result.addresses))
        for fragment_id in fragments:
            rows = found.get(fragment_id, _NONE)
            previous = out.get(fragment_id)
            out[fragment_id] = rows if previous is None else np.union1d(previous, rows)
    return out


def _sorted(addresses: np.ndarray) -> np.ndarray:
    """Addresses as sorted and unique, whatever an index file said."""
    if len(addresses) > 1 and not (addresses[1:] > addresses[:-1]).all():
        return np.unique(addresses)
    return addresses


_NONE = np.zeros(0, dtype=np.uint32)


def _intersect(a: Candidates, b: Candidates) -> Candidates:
    """AND: where both bound a fragment, rows in both; where one does, its rows."""
    out = dict(a)
    for fragment_id, rows in b.items():
        mine = out.get(fragment_id)
        out[fragment_id] = rows if mine is None else np.intersect1d(mine, rows, assume_unique=True)
    return out


def _unite(a: Candidates, b: Candidates) -> Candidates:
    """OR: only fragments both bound, with rows in either."""
    return {f: np.union1d(rows, b[f]) for f, rows in a.items() if f in b}
