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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.expr import INDEX_QUERIES, And, IndexQuery, Or, Predicate, Range
from lancelet.index.base import Searchable
from lancelet.io import accounting
from lancelet.table import row_address, sorted_sets


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
        children = _merged_ranges(predicate.children)
        bounded = [c for c in (_walk(p, columns) for p in children) if c is not None]
        return reduce(_intersect, bounded) if bounded else None
    if isinstance(predicate, Or):
        each = [_walk(p, columns) for p in predicate.children]
        every = [c for c in each if c is not None]
        if not every or len(every) != len(each):
            return None
        return reduce(_unite, every)
    return None  # Not, Opaque


def _merged_ranges(children: tuple[Predicate, ...]) -> list[Predicate]:
    """An AND's ranges on one column as one range (``a >= 3 AND a < 9``): an index
    then reads the rows between, not everything above 3 and everything below 9."""
    ranges: dict[str, Range] = {}
    rest: list[Predicate] = []
    for child in children:
        if not isinstance(child, Range):
            rest.append(child)
            continue
        known = ranges.get(child.column)
        merged = child if known is None else _intersection(known, child)
        if merged is None:
            rest.append(child)
        else:
            ranges[child.column] = merged
    return [*ranges.values(), *rest]


def _intersection(a: Range, b: Range) -> Range | None:
    """The range both allow, or None where the bounds do not order plainly (NaN, or
    values equal without being identical, as -0.0 and 0.0)."""
    low = _pick(a.low, a.low_inclusive, b.low, b.low_inclusive, pc.greater)
    high = _pick(a.high, a.high_inclusive, b.high, b.high_inclusive, pc.less)
    if low is None or high is None:
        return None
    return Range(a.column, low[0], low[1], high[0], high[1])


def _pick(
    x: pa.Scalar | None, x_inc: bool, y: pa.Scalar | None, y_inc: bool, tighter: Any
) -> tuple[pa.Scalar | None, bool] | None:
    if x is None or y is None:
        return (y, y_inc) if x is None else (x, x_inc)
    if not (_plain(x) and _plain(y) and x.type.equals(y.type)):
        return None
    if x.equals(y):
        same_sign = not pa.types.is_floating(x.type) or (
            math.copysign(1, x.as_py()) == math.copysign(1, y.as_py())
        )
        return (x, x_inc and y_inc) if same_sign else None
    if tighter(x, y).as_py():
        return x, x_inc
    if tighter(y, x).as_py():
        return y, y_inc
    return None


def _plain(value: pa.Scalar) -> bool:
    """A bound that compares as a value: not null, not NaN."""
    if not value.is_valid:
        return False
    return not pa.types.is_floating(value.type) or value.as_py() == value.as_py()


def _search(query: IndexQuery, indexed: IndexedColumn) -> Candidates | None:
    """The rows one index (all of its segments) says may match, per covered fragment."""
    out: Candidates = {}
    for index, fragments in indexed.parts:
        if not fragments:
            continue
        result = index.search(query)
        accounting.add(index_comparisons=1)
        if result is None:
            return None
        found = row_address.by_fragment(_sorted(result.addresses))
        for fragment_id in fragments:
            rows = found.get(fragment_id, _NONE)
            previous = out.get(fragment_id)
            out[fragment_id] = rows if previous is None else sorted_sets.union([previous, rows])
    return out


def _sorted(addresses: np.ndarray) -> np.ndarray:
    """Addresses as sorted and unique, whatever an index file said."""
    if len(addresses) > 1 and not (addresses[1:] > addresses[:-1]).all():
        return sorted_sets.unique(addresses)
    return addresses


_NONE = np.zeros(0, dtype=np.uint32)


def _intersect(a: Candidates, b: Candidates) -> Candidates:
    """AND: where both bound a fragment, rows in both; where one does, its rows."""
    out = dict(a)
    for fragment_id, rows in b.items():
        mine = out.get(fragment_id)
        out[fragment_id] = rows if mine is None else sorted_sets.intersection(mine, rows)
    return out


def _unite(a: Candidates, b: Candidates) -> Candidates:
    """OR: only fragments both bound, with rows in either."""
    return {f: sorted_sets.union([rows, b[f]]) for f, rows in a.items() if f in b}
