"""``lance.query``'s names: full-text query objects (see
:mod:`lancelet.index.fts.queries` and :mod:`lancelet.index.fts.query`)."""

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
