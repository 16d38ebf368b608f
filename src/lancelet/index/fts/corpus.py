"""The searchable parts of a text column: the documents of an INVERTED index, and
rows not covered by one, analyzed at query time (searched "flat").

Both answer the same questions (:class:`Corpus`): how many documents hold a token,
its posting list as row addresses, term frequencies and document lengths, and its
positions; :class:`ColumnSearch` scores a token over both with the statistics
pylance uses for each (``docs/fts/bm25.md``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

import numpy as np

from lancelet.index.fts.analyzer import DocumentTokens
from lancelet.index.fts.bm25 import CorpusStats, idf, term_scores
from lancelet.index.fts.hits import Hits
from lancelet.index.fts.params import InvertedParams
from lancelet.index.fts.phrase import TokenPositions, phrase_documents
from lancelet.index.fts.reader import InvertedIndex, Partition

# Row ids an index lists -> current row addresses (``MISSING_ROW`` for none).
AddressMap = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Postings:
    """One token's documents: their rows (uint64, ascending), how often the token
    occurs in each (uint32) and each document's length in tokens (uint32)."""

    rows: np.ndarray
    frequencies: np.ndarray
    lengths: np.ndarray


def _no_postings() -> Postings:
    return Postings(np.zeros(0, np.uint64), np.zeros(0, np.uint32), np.zeros(0, np.uint32))


class Corpus(Protocol):
    @property
    def stats(self) -> CorpusStats: ...

    @property
    def has_positions(self) -> bool: ...

    def document_frequency(self, token: str) -> int: ...

    def postings(self, token: str) -> Postings: ...

    def vocabulary(self) -> list[str]: ...


class IndexCorpus:
    """The documents of an INVERTED index: every partition of its segments (deleted
    rows included), whose statistics add up (measured: a column with two segments
    is scored with their documents, tokens and document frequencies summed)."""

    def __init__(
        self,
        segments: Sequence[InvertedIndex],
        addresses: Sequence[AddressMap | None] | None = None,
    ) -> None:
        """``addresses`` maps, per segment, the row ids it lists to current row
        addresses (stable row ids, moved rows); None: they are addresses."""
        maps = [None] * len(segments) if addresses is None else list(addresses)
        self._partitions = []
        self._rows = []
        self._as_listed: list[bool] = []
        for segment, address_map in zip(segments, maps, strict=True):
            for partition in segment.partitions:
                self._partitions.append(partition)
                self._as_listed.append(address_map is None)
                ids = partition.row_ids
                self._rows.append(ids if address_map is None else address_map(ids))
        # Whether a partition's rows ascend with its document numbers, and so the
        # rows of any posting list (checked once, not per query).
        self._ascending = [bool(np.all(r[1:] > r[:-1])) for r in self._rows]
        self.stats = CorpusStats(
            sum(s.num_docs for s in segments), sum(s.total_tokens for s in segments)
        )
        self.has_positions = all(s.params.with_position for s in segments)
        self._vocabulary: list[str] | None = None

    def lengths(self, rows: np.ndarray) -> np.ndarray:
        """The length in tokens (uint32) of the documents of ``rows``; 0 for rows
        the index holds no document of."""
        every = np.concatenate([np.zeros(0, np.uint64), *self._rows])
        sizes = np.concatenate([np.zeros(0, np.uint32), *(p.num_tokens for p in self._partitions)])
        order = np.argsort(every, kind="stable")
        every, sizes = every[order], sizes[order]
        if len(every) == 0:
            return np.zeros(len(rows), np.uint32)
        at = np.minimum(np.searchsorted(every, rows), len(every) - 1)
        found: np.ndarray = np.where(every[at] == rows, sizes[at], 0).astype(np.uint32)
        return found

    def document_frequency(self, token: str) -> int:
        total = 0
        for partition in self._partitions:
            token_id = partition.token_id(token)
            if token_id is not None:
                total += partition.document_frequency(token_id)
        return total

    def postings(self, token: str) -> Postings:
        parts = []
        for partition, rows, as_listed in zip(
            self._partitions, self._rows, self._as_listed, strict=True
        ):
            token_id = partition.token_id(token)
            if token_id is None:
                continue
            if as_listed:
                parts.append(Postings(*partition.documents(token_id)))
                continue
            docs, freqs = partition.postings(token_id)
            parts.append(Postings(rows[docs], freqs, partition.num_tokens[docs]))
        return _joined(parts)

    def scored(self, token: str, frequency: int) -> Hits:
        """The rows holding ``token`` (``frequency`` documents of the index do) and
        its BM25 score in each against the index's statistics.  Each partition keeps
        the scores with its posting lists: they only change with the statistics, and
        scoring a common token was a tenth of a query (measured 0.3 ms per token at
        1,000,000 documents)."""
        parts = []
        for partition, rows, as_listed, ascending in zip(
            self._partitions, self._rows, self._as_listed, self._ascending, strict=True
        ):
            token_id = partition.token_id(token)
            if token_id is None:
                continue
            docs, _ = partition.postings(token_id)
            found = self._scores(partition, token_id, frequency)
            at = partition.documents(token_id)[0] if as_listed else rows[docs]
            parts.append((Hits(at, found), ascending))
        return _joined_hits(parts)

    def scored_together(self, tokens: Sequence[str]) -> Hits:
        """The rows holding any of ``tokens`` (distinct: the expansions of one fuzzy
        query token), each scored by the float32 sum of their BM25 scores there,
        added in the token-id order of the row's partition.

        As pylance 14 adds them (measured, ``docs/fts/queries.md``; Lance merges one
        query token's expansions per partition): in the order of their token ids
        there (the order the partition first met them when built), neither byte
        nor query order."""
        frequencies = {token: self.document_frequency(token) for token in tokens}
        parts = []
        for partition, rows, as_listed, ascending in zip(
            self._partitions, self._rows, self._as_listed, self._ascending, strict=True
        ):
            found = [(partition.token_id(token), token) for token in tokens]
            terms = []
            for token_id, token in sorted((i, t) for i, t in found if i is not None):
                docs, _ = partition.postings(token_id)
                at = partition.documents(token_id)[0] if as_listed else rows[docs]
                scores = self._scores(partition, token_id, frequencies[token])
                if not ascending:  # Hits.summed takes rows in ascending order
                    order = np.argsort(at, kind="stable")
                    at, scores = at[order], scores[order]
                terms.append(Hits(at, scores))
            if terms:
                parts.append((Hits.summed(terms), True))
        return _joined_hits(parts)

    def _scores(self, partition: Partition, token_id: int, frequency: int) -> np.ndarray:
        """The BM25 scores of a token's postings in ``partition`` (kept there)."""
        stats = self.stats
        key = ("bm25", token_id, frequency, stats.num_docs, stats.total_tokens)
        return partition.kept(
            key, partial(_partition_scores, partition, token_id, frequency, stats)
        )

    def phrase_hits(self, tokens: Sequence[tuple[str, int]], slop: int) -> Hits:
        """The rows holding ``tokens`` (with their query positions) as a phrase
        (:mod:`lancelet.index.fts.phrase`), scored as the match of the tokens: their
        kept scores gathered at the matched documents (measured 3x faster than
        looking the rows up among each token's)."""
        frequencies = {token: self.document_frequency(token) for token, _ in tokens}
        parts = []
        # A document lies in one partition: each is matched on its own.
        for partition, addresses, ascending in zip(
            self._partitions, self._rows, self._ascending, strict=True
        ):
            ids = [partition.token_id(token) for token, _ in tokens]
            if not tokens or None in ids:
                continue
            known = [i for i in ids if i is not None]
            lists = {}
            for token_id in known:
                docs, _ = partition.postings(token_id)
                lists[token_id] = TokenPositions(docs, *partition.positions(token_id))
            at = [at for _, at in tokens]
            found = phrase_documents([lists[i] for i in known], at, slop, len(partition.row_ids))
            total = np.zeros(len(found.docs), np.float32)
            for (token, _), token_id, where in zip(tokens, known, found.where, strict=True):
                # Added in query order, as a match adds them.
                total += self._scores(partition, token_id, frequencies[token])[where]
            parts.append((Hits(addresses[found.docs], total), ascending))
        return _joined_hits(parts)

    def vocabulary(self) -> list[str]:
        """Every token of the index, sorted (kept: the index never changes)."""
        if self._vocabulary is None:
            tokens: set[str] = set()
            for partition in self._partitions:
                tokens.update(token for token, _ in partition.tokens())
            self._vocabulary = sorted(tokens)
        return self._vocabulary


def _partition_scores(
    partition: Partition, token_id: int, frequency: int, stats: CorpusStats
) -> np.ndarray:
    docs, freqs = partition.postings(token_id)
    term_idf = idf(frequency, stats.num_docs)
    return term_scores(term_idf, freqs, partition.num_tokens[docs], stats.average_length)


def _joined_hits(parts: list[tuple[Hits, bool]]) -> Hits:
    """Hits of several partitions (disjoint rows; each with whether its rows are
    known to ascend) as one, by row."""
    if not parts:
        return Hits.empty()
    if len(parts) == 1 and parts[0][1]:
        return parts[0][0]
    found = [hits for hits, _ in parts]
    if len(found) == 1 and bool(np.all(found[0].rows[1:] > found[0].rows[:-1])):
        return found[0]
    rows = np.concatenate([p.rows for p in found])
    order = np.argsort(rows, kind="stable")
    return Hits(rows[order], np.concatenate([p.scores for p in found])[order])


def _joined(parts: list[Postings]) -> Postings:
    """Postings of several partitions (disjoint rows) as one, by row."""
    if not parts:
        return _no_postings()
    if len(parts) == 1 and (parts[0].rows[1:] > parts[0].rows[:-1]).all():
        return parts[0]
    rows = np.concatenate([p.rows for p in parts])
    order = np.argsort(rows, kind="stable")
    return Postings(
        rows[order],
        np.concatenate([p.frequencies for p in parts])[order],
        np.concatenate([p.lengths for p in parts])[order],
    )


@dataclass
class FlatCorpus:
    """Rows searched without an index: their tokens as the analyzer makes them."""

    tokens: DocumentTokens
    # The row address of each document.
    rows: np.ndarray
    has_positions: bool = True
    stats: CorpusStats = field(init=False)

    def __post_init__(self) -> None:
        docs = self.tokens
        # Documents without a token (empty, null, only removed words) are not counted,
        # as pylance's index holds none of them (measured).
        documents = int(np.count_nonzero(docs.num_tokens))
        self.stats = CorpusStats(documents, int(docs.num_tokens.sum()))
        self._number = {t: i for i, t in enumerate(docs.vocabulary.to_pylist())}
        # Occurrences by (token, document, position): each token's run, each document
        # within it.
        order = np.lexsort((docs.position, docs.document, docs.token))
        self._token = docs.token[order]
        self._document = docs.document[order]
        self._position = docs.position[order]
        bounds = np.searchsorted(self._token, np.arange(len(self._number) + 1))
        self._bounds = bounds

    def _run(self, token: str) -> tuple[np.ndarray, np.ndarray]:
        """The documents and positions of ``token``'s occurrences."""
        number = self._number.get(token)
        if number is None:
            return np.zeros(0, np.int64), np.zeros(0, np.uint32)
        start, stop = self._bounds[number], self._bounds[number + 1]
        return self._document[start:stop], self._position[start:stop]

    def document_frequency(self, token: str) -> int:
        documents, _ = self._run(token)
        return len(np.unique(documents))

    def postings(self, token: str) -> Postings:
        documents, _ = self._run(token)
        unique, counts = np.unique(documents, return_counts=True)
        return Postings(
            self.rows[unique].astype(np.uint64),
            counts.astype(np.uint32),
            self.tokens.num_tokens[unique],
        )

    def phrase_rows(self, tokens: Sequence[tuple[str, int]], slop: int) -> np.ndarray:
        lists = {token: self._positions(token) for token, _ in tokens}
        docs = phrase_documents(
            [lists[token] for token, _ in tokens],
            [at for _, at in tokens],
            slop,
            len(self.rows),
        ).docs
        found: np.ndarray = self.rows[docs].astype(np.uint64)
        return found

    def _positions(self, token: str) -> TokenPositions:
        documents, positions = self._run(token)
        unique, starts = np.unique(documents, return_index=True)
        offsets = np.append(starts, len(documents)).astype(np.int64)
        return TokenPositions(unique, offsets, positions.astype(np.uint32))

    def vocabulary(self) -> list[str]:
        return sorted(self._number)


@dataclass(frozen=True)
class ColumnSearch:
    """A text column to search: its index's documents, the rows outside it, or both.

    Measured on pylance 14: indexed rows are scored with the index's statistics
    alone; rows outside the index with those of the index and of the searched rows
    outside it added together (document count, token count, document frequency)."""

    column: str
    params: InvertedParams
    indexed: IndexCorpus | None
    flat: FlatCorpus | None

    @property
    def has_positions(self) -> bool:
        parts = [p for p in (self.indexed, self.flat) if p is not None]
        return all(p.has_positions for p in parts)

    def term(self, token: str, indexed: bool = True) -> Hits:
        """The rows holding ``token`` and its BM25 score in each, in the index and
        outside it (or outside it only: not ``indexed``)."""
        parts: list[Hits] = []
        base = CorpusStats(0, 0)
        base_frequency = 0
        if self.indexed is not None:
            base, base_frequency = self.indexed.stats, self.indexed.document_frequency(token)
            if indexed:
                parts.append(self.indexed.scored(token, base_frequency))
        if self.flat is not None:
            stats = self.flat.stats.plus(base)
            frequency = self.flat.document_frequency(token) + base_frequency
            parts.append(_scored(self.flat.postings(token), frequency, stats))
        return Hits.disjoint_union(parts)

    def phrase(self, tokens: Sequence[tuple[str, int]], slop: int) -> Hits:
        """The rows holding ``tokens`` at their relative query positions, each gap
        between consecutive tokens at most ``slop`` longer than in the query, over
        both parts, scored as the match of the same tokens."""
        parts = []
        if self.indexed is not None:
            parts.append(self.indexed.phrase_hits(tokens, slop))
        if self.flat is not None:
            rows = np.sort(self.flat.phrase_rows(tokens, slop))
            parts.append(Hits.summed([self.term(t, indexed=False).within(rows) for t, _ in tokens]))
        return Hits.disjoint_union(parts)

    def expanded(self, token: str, expansions: Sequence[str]) -> Hits:
        """The rows one fuzzy query token matches: in the index, those holding any of
        its ``expansions`` (index tokens), scored by the sum of their scores
        (:meth:`IndexCorpus.scored_together`); outside it, those holding ``token``
        itself (measured: fuzzy terms match exactly there)."""
        parts = [self.term(token, indexed=False)]
        if self.indexed is not None and expansions:
            parts.insert(0, self.indexed.scored_together(expansions))
        return Hits.disjoint_union(parts)

    def vocabulary(self) -> list[str]:
        """The tokens fuzzy matching expands to: the index's (measured: a column
        searched without an index matches fuzzy terms exactly)."""
        return [] if self.indexed is None else self.indexed.vocabulary()


def _scored(postings: Postings, frequency: int, stats: CorpusStats) -> Hits:
    if len(postings.rows) == 0:
        return Hits.empty()
    scores = term_scores(
        idf(frequency, stats.num_docs),
        postings.frequencies,
        postings.lengths,
        stats.average_length,
    )
    return Hits(postings.rows, scores)
