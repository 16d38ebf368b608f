"""pylance 14's full-text query language evaluated over searchable text columns.

What each query means, as measured on pylance 14.0.2 (``docs/fts/queries.md``):

* **match** (a plain string, or ``MatchQuery``): the query text goes through the
  column's analyzer; each query token's BM25 score is added, in query-token order,
  repeats counted again.  OR: rows holding any token; AND: rows holding every token
  (scored the same).  ``boost`` multiplies the score.  No token (empty text, stop
  words only): no rows.
* **fuzzy** (``fuzziness`` > 0): each query token stands for the index's tokens within
  that Levenshtein distance (a transposition is 2 edits) sharing its first
  ``prefix_length`` characters, in byte order; the lists of all query tokens, one
  after another, are cut to ``max_expansions`` in all.  Each expansion is scored with
  its own statistics; a query token's expansions are added first (in the token-id
  order of the row's partition), then the query tokens' sums in query order.
  ``fuzziness=None`` matched exactly, and so do rows outside the index.
* **phrase**: rows holding the query tokens in order at the positions the query gives
  them (removed stop words keep their place), each gap allowed to grow by up to
  ``slop`` positions, never reordered; scored as the match of the same tokens.
* **boost**: the rows of ``positive``, scored ``positive - negative_boost *
  negative`` where ``negative`` matches too.
* **multi-match**: a match on each column (with its boost); a row's score is the
  largest of its columns'.  A plain string is a multi-match over every column with an
  INVERTED index; a string in double quotes is a phrase.
* **combined fields**: the columns scored as one field, BM25F
  (:mod:`lancelet.index.fts.combined`).
* **boolean**: rows matching every MUST (any SHOULD when there is no MUST), none of
  the MUST_NOT; the MUST and SHOULD scores of a row are added.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from lancelet.errors import FullTextQueryError, UnsupportedOptionError
from lancelet.index.fts import queries as q
from lancelet.index.fts.analyzer import query_terms
from lancelet.index.fts.combined import combined_hits
from lancelet.index.fts.corpus import ColumnSearch
from lancelet.index.fts.fuzzy import expansions
from lancelet.index.fts.hits import Hits, common_rows


class QueryEvaluator:
    """Evaluates full-text queries over ``columns`` (each text column a query may
    name, with how to search it); ``indexed`` lists the columns with an INVERTED
    index, in schema order (what a plain string searches)."""

    def __init__(self, columns: Mapping[str, ColumnSearch], indexed: Sequence[str]) -> None:
        self._columns = columns
        self._indexed = list(indexed)

    def hits(self, query: q.FullTextQuery) -> Hits:
        """The rows ``query`` matches and their scores."""
        if isinstance(query, q.MatchQuery):
            return self._match(query)
        if isinstance(query, q.PhraseQuery):
            return self._phrase(query)
        if isinstance(query, q.BoostQuery):
            return self._boost(query)
        if isinstance(query, q.MultiMatchQuery):
            return self._multi_match(query.query, query.columns, query.boosts, query.operator)
        if isinstance(query, q.BooleanQuery):
            return self._boolean(query)
        if isinstance(query, q.CombinedFieldsQuery):
            return self._combined(query)
        raise UnsupportedOptionError(
            f"full_text_query: lancelet does not run {type(query).__name__} searches"
        )

    def best(self, query: q.FullTextQuery | str, columns: Sequence[str] | None, count: int) -> Hits:
        """The hits of ``query`` (a query, or a query string on ``columns`` as
        :meth:`plain` takes it) that may rank among the best ``count``: for an OR
        match of one column without boost, only those scoring at least as high as
        ``count`` of them (:meth:`Hits.summed_best`), else all.  Fewer than ``count``
        hits back means all of them."""
        match = query if isinstance(query, q.MatchQuery) else None
        if isinstance(query, str):
            quoted = len(query) >= 2 and query[0] == '"' and query[-1] == '"'
            names = self._indexed if columns is None else columns
            if not quoted and len(names) == 1:
                match = q.MatchQuery(query, names[0])
        if match is None or match.boost != 1.0 or match.operator != q.FullTextOperator.OR:
            return (
                self.hits(query)
                if isinstance(query, q.FullTextQuery)
                else self.plain(query, columns)
            )
        terms = self._match_tokens(match)
        found = Hits.summed_best(terms, count)
        return Hits.summed(terms) if found is None else found

    def plain(self, text: str, columns: Sequence[str] | None) -> Hits:
        """A query string: a match on ``columns``, or on every indexed column.

        A string of two or more characters that starts and ends with a double quote is
        a phrase (slop 0) of the text between them, on one column only (measured; any
        other quote is part of the text the analyzer splits)."""
        phrase = len(text) >= 2 and text[0] == '"' and text[-1] == '"'
        if columns is None:
            if not self._indexed:
                raise FullTextQueryError(
                    "Cannot perform full text search unless an INVERTED index has been "
                    "created on at least one column"
                )
            if phrase and len(self._indexed) > 1:
                raise FullTextQueryError(
                    "full_text_query: the column must be specified in the query (a quoted "
                    "phrase with several indexed columns)"
                )
            columns = self._indexed
        if phrase:
            if len(columns) != 1:
                raise FullTextQueryError(
                    "full_text_query: Phrase queries cannot be used with multiple columns."
                )
            return self._phrase(q.PhraseQuery(text[1:-1], columns[0]))
        return self._multi_match(text, tuple(columns), None, q.FullTextOperator.OR)

    def _column(self, name: str) -> ColumnSearch:
        found = self._columns.get(name)
        if found is None:
            raise FullTextQueryError(f"full_text_query: no text column {name!r} to search")
        return found

    def _match(self, query: q.MatchQuery) -> Hits:
        tokens = self._match_tokens(query)
        # Each query token's score added in turn, in query order.
        total = Hits.summed(tokens)
        if query.operator == q.FullTextOperator.AND:
            total = total.within(common_rows([token.rows for token in tokens]))
        return total.scaled(query.boost) if query.boost != 1.0 else total

    def _match_tokens(self, query: q.MatchQuery) -> list[Hits]:
        """Per query token, in order, the rows it matches and its score in each (a
        fuzzy token's: the sum over its expansions)."""
        _refuse_granularity(query.document_granularity)
        column = self._column(query.column)
        tokens = [token for token, _ in _tokens(query.query, column)]
        if (query.fuzziness or 0) > 0 and column.indexed is not None:
            return _fuzzy_tokens(query, column, tokens)
        return [column.term(token) for token in tokens]

    def _phrase(self, query: q.PhraseQuery) -> Hits:
        _refuse_granularity(query.document_granularity)
        column = self._column(query.column)
        if not column.has_positions:
            raise FullTextQueryError(
                f"full_text_query: phrase query on column {query.column!r}: position is "
                "not found but required for phrase queries, try recreating the index "
                "with position"
            )
        if query.slop < 0:
            raise FullTextQueryError("full_text_query: slop must not be negative")
        tokens = _tokens(query.query, column)
        if not tokens:
            return Hits.empty()
        if len(tokens) == 1:
            return column.term(tokens[0][0])  # every row holding the token
        if query.slop and len({token for token, _ in tokens}) < len(tokens):
            # pylance's matching of a token that repeats within a sloppy phrase is not
            # known (docs/fts/queries.md): refused rather than answered otherwise.
            raise UnsupportedOptionError(
                f"full_text_query: phrase {query.query!r} on column {query.column!r} repeats "
                f"a token with slop {query.slop}, which lancelet does not match as pylance "
                "does; use slop 0, or a phrase without the repeated token"
            )
        return column.phrase(tokens, query.slop)

    def _boost(self, query: q.BoostQuery) -> Hits:
        positive = self.hits(query.positive)
        negative = self.hits(query.negative).within(positive.rows)
        at = np.searchsorted(positive.rows, negative.rows)
        scores = positive.scores.copy()
        scores[at] = scores[at] - np.float32(query.negative_boost) * negative.scores
        return Hits(positive.rows, scores)

    def _multi_match(
        self,
        text: str,
        columns: Sequence[str],
        boosts: Sequence[float] | None,
        operator: q.FullTextOperator,
    ) -> Hits:
        if not columns:
            raise FullTextQueryError("full_text_query: no column to search")
        weights = [1.0] * len(columns) if boosts is None else list(boosts)
        parts = [
            self._match(q.MatchQuery(text, column, boost=weight, operator=operator))
            for column, weight in zip(columns, weights, strict=True)
        ]
        return Hits.maximum(parts)

    def _combined(self, query: q.CombinedFieldsQuery) -> Hits:
        columns = [self._column(name) for name in query.columns]
        if not columns:
            raise FullTextQueryError("full_text_query: no column to search")
        params = columns[0].params
        if any(column.params != params for column in columns):
            raise UnsupportedOptionError(
                "full_text_query: CombinedFieldsQuery over columns analyzed differently"
            )
        weights = [1.0] * len(columns) if query.boosts is None else list(query.boosts)
        # A repeated token counts once here (measured), unlike in a match.
        tokens = list(dict.fromkeys(token for token, _ in _tokens(query.query, columns[0])))
        all_tokens = query.operator == q.FullTextOperator.AND
        return combined_hits(columns, weights, tokens, all_tokens)

    def _boolean(self, query: q.BooleanQuery) -> Hits:
        by_occur: dict[q.Occur, list[Hits]] = {o: [] for o in q.Occur}
        for occur, sub in query.queries:
            by_occur[occur].append(self.hits(sub))
        must, should = by_occur[q.Occur.MUST], by_occur[q.Occur.SHOULD]
        if not must and not should:
            raise FullTextQueryError(
                "full_text_query: boolean query must have at least one should/must query"
            )
        # The MUST scores added in turn, the SHOULD scores likewise, then the two sums
        # (measured: m + (s1 + s2), not (m + s1) + s2).
        total = Hits.summed([Hits.summed(must), Hits.summed(should)])
        if must:
            total = total.within(common_rows([h.rows for h in must]))
        for excluded in by_occur[q.Occur.MUST_NOT]:
            total = total.without(excluded.rows)
        return total


def _fuzzy_tokens(query: q.MatchQuery, column: ColumnSearch, tokens: list[str]) -> list[Hits]:
    """Per query token: the hits of its expansions in the index, summed
    (:meth:`ColumnSearch.expanded`), and of the token itself outside the index
    (measured: rows there are matched exactly).  The expansions of all tokens, one
    list after another, are cut to ``max_expansions`` in all."""
    vocabulary = column.vocabulary()
    fuzziness = query.fuzziness or 0
    lists = [
        expansions(token, vocabulary, fuzziness, query.prefix_length, len(vocabulary))
        for token in tokens
    ]
    room = query.max_expansions
    if sum(len(found) for found in lists) > room and query.operator == q.FullTextOperator.AND:
        raise UnsupportedOptionError(
            "full_text_query: a fuzzy AND match whose terms expand to more than "
            f"max_expansions={room} tokens"
        )
    matched = []
    for token, found in zip(tokens, lists, strict=True):
        kept, room = found[: max(room, 0)], room - len(found)
        matched.append(column.expanded(token, kept))
    return matched


def _refuse_granularity(granularity: q.DocumentGranularity | None) -> None:
    if granularity not in (None, q.DocumentGranularity.ROW):
        raise UnsupportedOptionError(
            f"full_text_query: document_granularity={granularity.value!r}: lancelet "
            "searches whole rows only"
        )


def _tokens(text: str, column: ColumnSearch) -> list[tuple[str, int]]:
    """The query's tokens through the column's analyzer, with their positions."""
    return query_terms(text, column.params)
