"""``CombinedFieldsQuery``: several columns scored as one field (BM25F), as
measured on pylance 14.0.2 (``docs/fts/queries.md``).

With column boosts ``w`` (1 by default), for each query token::

    tf     = sum_c w_c * tf_c          dl = sum_c w_c * dl_c      (float32, column order)
    N      = max_c N_c                 n  = max_c n_c(token)
    avgdl  = (sum_c w_c * total_tokens_c) / N   (in float64, then rounded to float32)
    score  = idf(n, N) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

and a row's score is the sum over the distinct query tokens in query order (a
repeated token counts once, unlike in a match).  The rows are those
holding any token in any column (all tokens with AND).  Only columns searched
wholly through their INVERTED index are supported.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lancelet.errors import UnsupportedOptionError
from lancelet.index.fts.bm25 import K1, B, idf
from lancelet.index.fts.corpus import ColumnSearch, IndexCorpus
from lancelet.index.fts.hits import Hits, common_rows

_ONE = np.float32(1.0)


def combined_hits(
    columns: Sequence[ColumnSearch],
    weights: Sequence[float],
    tokens: Sequence[str],
    all_tokens: bool,
) -> Hits:
    """The BM25F hits of ``tokens`` over ``columns`` (``all_tokens``: AND)."""
    corpora = [_indexed_only(column) for column in columns]
    boosts = [np.float32(w) for w in weights]
    num_docs = max(c.stats.num_docs for c in corpora)
    # The average length in float64 from the float32 boosts, then rounded: this
    # matched pylance on 163/163 random scores, float32 steps on 158.
    total = sum(float(b) * c.stats.total_tokens for c, b in zip(corpora, boosts, strict=True))
    average = np.float32(total / num_docs if num_docs else 0.0)
    terms = [_term(corpora, boosts, token, num_docs, average) for token in tokens]
    hits = Hits.summed(terms)
    if all_tokens:
        hits = hits.within(common_rows([t.rows for t in terms]))
    return hits


def _indexed_only(column: ColumnSearch) -> IndexCorpus:
    if column.indexed is None or column.flat is not None:
        raise UnsupportedOptionError(
            f"full_text_query: CombinedFieldsQuery on column {column.column!r}, which has "
            "rows outside an INVERTED index: lancelet combines indexed columns only"
        )
    return column.indexed


def _term(
    corpora: Sequence[IndexCorpus],
    boosts: Sequence[np.float32],
    token: str,
    num_docs: int,
    average: np.float32,
) -> Hits:
    postings = [corpus.postings(token) for corpus in corpora]
    rows = np.unique(np.concatenate([np.zeros(0, np.uint64), *(p.rows for p in postings)]))
    if len(rows) == 0:
        return Hits.empty()
    frequency = np.zeros(len(rows), np.float32)
    length = np.zeros(len(rows), np.float32)
    for corpus, found, boost in zip(corpora, postings, boosts, strict=True):
        counts = np.zeros(len(rows), np.float32)
        counts[np.searchsorted(rows, found.rows)] = found.frequencies
        frequency += boost * counts
        length += boost * corpus.lengths(rows).astype(np.float32)
    documents = max(corpus.document_frequency(token) for corpus in corpora)
    with np.errstate(divide="ignore", invalid="ignore"):
        norm = K1 * ((_ONE - B) + (B * length) / average)
        scores = idf(documents, num_docs) * ((frequency * (K1 + _ONE)) / (frequency + norm))
    return Hits(rows, scores.astype(np.float32))
