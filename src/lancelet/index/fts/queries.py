"""Full-text query objects, with pylance's names and constructors (``lance.query``).

A scan's ``full_text_query`` takes them (:mod:`lancelet.index.fts.query` says what
each means).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

_MAX_FIELD_BOOST = 1048576


class FullTextQueryType(Enum):
    MATCH = "match"
    MATCH_PHRASE = "match_phrase"
    BOOST = "boost"
    MULTI_MATCH = "multi_match"
    COMBINED_FIELDS = "combined_fields"
    BOOLEAN = "boolean"


class FullTextOperator(Enum):
    AND = "AND"
    OR = "OR"


class DocumentGranularity(str, Enum):
    """The unit one full-text document is: a row, or an element of a list."""

    ROW = "row"
    LIST_ELEMENT = "list_element"


class Occur(Enum):
    SHOULD = "SHOULD"
    MUST = "MUST"
    MUST_NOT = "MUST_NOT"


def _require(value: Any, kind: type | tuple[type, ...], name: str) -> None:
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        wanted = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise TypeError(f"{name} must be {wanted}, got {type(value).__name__}")


def _granularity(value: DocumentGranularity | None) -> DocumentGranularity | None:
    if value is not None:
        _require(value, DocumentGranularity, "document_granularity")
    return value


def _columns(columns: Sequence[str], boosts: Sequence[float] | None) -> tuple[str, ...]:
    if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
        raise TypeError("columns must be a list of column names")
    if boosts is not None and len(boosts) != len(columns):
        raise ValueError("boosts must give one boost per column")
    return tuple(columns)


class FullTextQuery(abc.ABC):
    """A full-text query; ``a & b`` and ``a | b`` combine two into a BooleanQuery."""

    @abc.abstractmethod
    def query_type(self) -> FullTextQueryType:
        """The kind of query."""

    def __and__(self, other: FullTextQuery) -> FullTextQuery:
        return BooleanQuery([(Occur.MUST, self), (Occur.MUST, other)])

    def __or__(self, other: FullTextQuery) -> FullTextQuery:
        return BooleanQuery([(Occur.SHOULD, self), (Occur.SHOULD, other)])


class MatchQuery(FullTextQuery):
    """Rows whose ``column`` contains the terms of ``query``."""

    def __init__(
        self,
        query: str,
        column: str,
        *,
        boost: float = 1.0,
        fuzziness: int | None = 0,
        max_expansions: int = 50,
        operator: FullTextOperator = FullTextOperator.OR,
        prefix_length: int = 0,
        document_granularity: DocumentGranularity | None = None,
    ):
        _require(query, str, "query")
        _require(column, str, "column")
        _require(operator, FullTextOperator, "operator")
        self.query, self.column = query, column
        self.boost, self.fuzziness, self.max_expansions = boost, fuzziness, max_expansions
        self.operator, self.prefix_length = operator, prefix_length
        self.document_granularity = _granularity(document_granularity)

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.MATCH


class PhraseQuery(FullTextQuery):
    """Rows whose ``column`` contains ``query`` as a phrase, within ``slop`` positions."""

    def __init__(
        self,
        query: str,
        column: str,
        *,
        slop: int = 0,
        document_granularity: DocumentGranularity | None = None,
    ):
        _require(query, str, "query")
        _require(column, str, "column")
        _require(slop, int, "slop")
        self.query, self.column, self.slop = query, column, slop
        self.document_granularity = _granularity(document_granularity)

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.MATCH_PHRASE


class BoostQuery(FullTextQuery):
    """``positive``'s matches, scored down by ``negative_boost`` where ``negative`` matches."""

    def __init__(
        self, positive: FullTextQuery, negative: FullTextQuery, *, negative_boost: float = 0.5
    ):
        _require(positive, FullTextQuery, "positive")
        _require(negative, FullTextQuery, "negative")
        self.positive, self.negative, self.negative_boost = positive, negative, negative_boost

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.BOOST


class _ColumnsQuery(FullTextQuery):
    """A match query over several columns."""

    def __init__(
        self,
        query: str,
        columns: list[str],
        *,
        boosts: list[float] | None = None,
        operator: FullTextOperator = FullTextOperator.OR,
    ):
        _require(query, str, "query")
        _require(operator, FullTextOperator, "operator")
        self.query, self.columns = query, _columns(columns, boosts)
        self.boosts, self.operator = boosts, operator


class MultiMatchQuery(_ColumnsQuery):
    """A match query over several columns, each scored on its own."""

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.MULTI_MATCH


class CombinedFieldsQuery(_ColumnsQuery):
    """A match query over several columns taken as one field (BM25F)."""

    def __init__(
        self,
        query: str,
        columns: list[str],
        *,
        boosts: list[float] | None = None,
        operator: FullTextOperator = FullTextOperator.OR,
    ):
        super().__init__(query, columns, boosts=boosts, operator=operator)
        for column, boost in zip(self.columns, boosts or (), strict=False):
            # pylance's bounds (a ValueError there too).
            if not (isinstance(boost, (int, float)) and 1 <= boost <= _MAX_FIELD_BOOST):
                raise ValueError(
                    f"combined_fields boost for column {column!r} must be a finite value "
                    f"in [1, {_MAX_FIELD_BOOST}], got {boost}"
                )

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.COMBINED_FIELDS


class BooleanQuery(FullTextQuery):
    """Queries combined by their ``Occur``: every MUST, any SHOULD, no MUST_NOT."""

    def __init__(self, queries: list[tuple[Occur, FullTextQuery]]):
        for occur, query in queries:
            _require(occur, Occur, "occur")
            _require(query, FullTextQuery, "query")
        self.queries = list(queries)

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.BOOLEAN


@dataclass
class MinHashQuery:
    """A MinHash similarity search over a column with a MinHash LSH index."""

    text: str
    column: str
