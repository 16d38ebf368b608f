"""Filters as a predicate tree that the Arrow evaluator, the index planner and the
Spark filter translation all read."""

from lancelet.expr.nodes import (
    INDEX_QUERIES,
    And,
    Contains,
    Equals,
    HasAll,
    HasAny,
    IndexQuery,
    IsIn,
    IsNull,
    LikePrefix,
    Not,
    Opaque,
    Or,
    Predicate,
    Range,
)

__all__ = [
    "INDEX_QUERIES",
    "And",
    "Contains",
    "Equals",
    "HasAll",
    "HasAny",
    "IndexQuery",
    "IsIn",
    "IsNull",
    "LikePrefix",
    "Not",
    "Opaque",
    "Or",
    "Predicate",
    "Range",
]
