"""BM25 against the scores pylance 14 returned (``docs/fts/bm25.md``)."""

from __future__ import annotations

import math

import numpy as np

from lancelet.index.fts import bm25
from lancelet.index.fts.bm25 import CorpusStats, idf, term_scores


def test_the_worked_example_of_the_notes() -> None:
    # ds1, query "dog": N = 5, 19 tokens, "dog" in 3 documents.
    stats = CorpusStats(5, 19)
    assert stats.average_length == np.float32(3.8)
    scores = term_scores(idf(3, 5), np.array([3, 1, 1]), np.array([4, 3, 6]), stats.average_length)
    assert scores.dtype == np.float32
    assert scores.tolist() == [0.8375484943389893, 0.5897919535636902, 0.4357844293117523]


def test_statistics_of_two_corpora_add_up() -> None:
    # Rows outside an index (3 documents, 6 tokens) scored with the index's (6, 10):
    # pylance returned 0.5722098350524902 and 0.3362208604812622 for them.
    stats = CorpusStats(6, 10).plus(CorpusStats(3, 6))
    scores = term_scores(idf(6, 9), np.array([2, 1]), np.array([2, 3]), stats.average_length)
    assert scores.tolist() == [0.5722098350524902, 0.3362208604812622]


def test_logf_is_within_an_ulp_of_the_true_logarithm() -> None:
    for x in np.linspace(1.0, 50.0, 1000, dtype=np.float32):
        ours = bm25.logf(x)
        exact = np.float32(math.log(float(x)))
        assert abs(int(ours.view(np.int32)) - int(exact.view(np.int32))) <= 1


def test_idf_is_never_negative() -> None:
    assert idf(10, 10) > 0
    assert idf(1, 1_000_000) > idf(999_999, 1_000_000) > 0
