"""The predicate tree: what a filter says, in a form every reader of it can inspect.

pyarrow compute expressions do not expose their structure, so a filter is kept as
this small tree.  The Arrow evaluator turns it into a compute expression, the index
planner looks for the leaves an index can answer, and the Spark layer builds it
from pushed-down filters.

Leaves name one column (``column``: a top-level name, or a dotted path into
structs) and carry literals already in that column's Arrow type, so an index
compares like with like.  A condition the tree has no leaf for is an
:class:`Opaque` leaf: evaluated by Arrow, never by an index.

What each leaf means exactly (NULLs, floats' total order, -0.0, NaN) is spelled out
in :mod:`lancelet.expr.arrow`, which evaluates it; an index answering a leaf must
select the same rows.  Trees come from SQL (:mod:`lancelet.expr.from_sql`) and from
Spark's pushed filters (:func:`lancelet.spark.filters.to_predicate`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa


@dataclass(frozen=True)
class Equals:
    """``column = value``; ``value`` is never null (``= NULL`` is never true)."""

    column: str
    value: pa.Scalar


@dataclass(frozen=True)
class Range:
    """``low <(=) column <(=) high``; a ``None`` bound is unbounded."""

    column: str
    low: pa.Scalar | None = None
    low_inclusive: bool = True
    high: pa.Scalar | None = None
    high_inclusive: bool = True


@dataclass(frozen=True)
class IsIn:
    """``column IN (values)``; ``values`` holds no nulls, in the column's type."""

    column: str
    values: pa.Array


@dataclass(frozen=True)
class IsNull:
    column: str


@dataclass(frozen=True)
class LikePrefix:
    """``column LIKE 'prefix%'`` with no other wildcard (case-sensitive)."""

    column: str
    prefix: str


@dataclass(frozen=True)
class HasAny:
    """``array_has_any(column, values)``: a list column holding any of ``values`` (no
    nulls, in the list's item type)."""

    column: str
    values: pa.Array


@dataclass(frozen=True)
class HasAll:
    """``array_has_all(column, values)``: a list column holding every one of ``values``
    (no nulls, in the list's item type)."""

    column: str
    values: pa.Array


@dataclass(frozen=True)
class Contains:
    """``contains(column, substring)``: a string column holding ``substring``
    (case-sensitive)."""

    column: str
    substring: str


@dataclass(frozen=True)
class Opaque:
    """Any other condition, as SQL text the Arrow evaluator understands."""

    sql: str


@dataclass(frozen=True)
class And:
    children: tuple[Predicate, ...]


@dataclass(frozen=True)
class Or:
    children: tuple[Predicate, ...]


@dataclass(frozen=True)
class Not:
    child: Predicate


# The leaves an index may answer: each names the single column it reads.
IndexQuery = Equals | Range | IsIn | IsNull | LikePrefix | HasAny | HasAll | Contains
INDEX_QUERIES = (Equals, Range, IsIn, IsNull, LikePrefix, HasAny, HasAll, Contains)
Predicate = IndexQuery | Opaque | And | Or | Not
