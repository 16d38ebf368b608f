"""``lance.query``'s names: full-text query objects (see
:mod:`lancelet.dataset.indices.fts_queries`;
lancelet runs no full-text search, so a scan given one refuses it)."""

from lancelet.dataset.indices.fts_queries import (
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
