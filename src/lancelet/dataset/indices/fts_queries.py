"""The full-text query objects (now in :mod:`lancelet.index.fts.queries`), kept
importable from here."""

from lancelet.index.fts.queries import (
    BooleanQuery,
    BoostQuery,
    CombinedFieldsQuery,
    DocumentGranularity,
    FullTextOperator,
    FullTextQuery,
    FullTextQueryType,
    MatchQuery,
    MinHashQuery,
    MultiMatchQuery,
    Occur,
    PhraseQuery,
)

__all__ = [
    "BooleanQuery",
    "BoostQuery",
    "CombinedFieldsQuery",
    "DocumentGranularity",
    "FullTextOperator",
    "FullTextQuery",
    "FullTextQueryType",
    "MatchQuery",
    "MinHashQuery",
    "MultiMatchQuery",
    "Occur",
    "PhraseQuery",
]
