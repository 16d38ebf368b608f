"""The index queries a sorted-values index answers, reduced to what it compares.

Equals, Range and a string prefix (LIKE 'p%') become a key interval, IsIn a set of
keys, IsNull itself; keys are :func:`lancelet.index.ordering.search_keys`.  Literals
must already have the indexed column's type.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import ArgumentError
from lancelet.expr import Equals, IndexQuery, IsIn, IsNull, LikePrefix, Range
from lancelet.index import ordering


@dataclass(frozen=True)
class Interval:
    low: pa.Scalar | None  # search key; None: unbounded
    low_inclusive: bool
    high: pa.Scalar | None
    high_inclusive: bool

    def mask(self, keys: pa.Array) -> pa.Array:
        """Which keys lie in the interval (nulls never do)."""
        mask = pc.is_valid(keys)
        if self.low is not None:
            op = pc.greater_equal if self.low_inclusive else pc.greater
            mask = pc.and_(mask, op(keys, self.low))
        if self.high is not None:
            op = pc.less_equal if self.high_inclusive else pc.less
            mask = pc.and_(mask, op(keys, self.high))
        return pc.fill_null(mask, False)


@dataclass(frozen=True)
class KeySet:
    keys: pa.Array  # search keys, no nulls

    def mask(self, keys: pa.Array) -> pa.Array:
        return pc.fill_null(pc.is_in(keys, value_set=self.keys), False)


@dataclass(frozen=True)
class Nulls:
    def mask(self, keys: pa.Array) -> pa.Array:
        return pc.is_null(keys)


Plan = Interval | KeySet | Nulls


def _literal(value: pa.Scalar, dtype: pa.DataType, column: str) -> pa.Scalar:
    if not isinstance(value, pa.Scalar) or value.type != dtype:
        got = value.type if isinstance(value, pa.Scalar) else type(value).__name__
        raise ArgumentError(f"column {column!r}: a literal of type {got} for an index of {dtype}")
    return value


def plan(query: IndexQuery, dtype: pa.DataType) -> Plan | None:
    """What ``query`` compares, or None when a sorted-values index cannot answer it.
    A query no row can match (a null literal) becomes an empty key set."""
    if isinstance(query, IsNull):
        return Nulls()
    if isinstance(query, Equals):
        value = _literal(query.value, dtype, query.column)
        if not value.is_valid:
            return _nothing(dtype)
        key = ordering.search_key(value)
        return Interval(key, True, key, True)
    if isinstance(query, Range):
        bounds = [
            None if b is None else _literal(b, dtype, query.column) for b in (query.low, query.high)
        ]
        if any(b is not None and not b.is_valid for b in bounds):
            return _nothing(dtype)  # a comparison with NULL is never true
        low, high = (None if b is None else ordering.search_key(b) for b in bounds)
        return Interval(low, query.low_inclusive, high, query.high_inclusive)
    if isinstance(query, IsIn):
        values = query.values
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if values.type != dtype:
            raise ArgumentError(
                f"column {query.column!r}: IN values of type {values.type} for an index of {dtype}"
            )
        return KeySet(ordering.search_keys(values.drop_null()).unique())
    if isinstance(query, LikePrefix) and (
        pa.types.is_string(dtype) or pa.types.is_large_string(dtype)
    ):
        # Strings starting with p lie in [p, successor(p)): Arrow orders strings by
        # their UTF-8 bytes, which is code point order.
        after = _successor(query.prefix)
        return Interval(
            pa.scalar(query.prefix, dtype),
            True,
            None if after is None else pa.scalar(after, dtype),
            False,
        )
    return None


def _nothing(dtype: pa.DataType) -> KeySet:
    """The plan of a query no row can match."""
    return KeySet(pa.array([], ordering.search_keys(pa.array([], dtype)).type))


def _successor(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix``; None when
    there is none (the prefix is empty or all U+10FFFF)."""
    chars = list(prefix)
    while chars:
        code = ord(chars[-1]) + 1
        if code <= 0x10FFFF:
            chars[-1] = chr(0xE000 if 0xD800 <= code <= 0xDFFF else code)
            return "".join(chars)
        chars.pop()
    return None
