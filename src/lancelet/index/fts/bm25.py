"""pylance 14's BM25 ``_score``, bit for bit (``docs/fts/bm25.md``).

Every step is float32, in this order (k1 = 1.2, b = 0.75)::

    avgdl   = f32(total_tokens) / f32(N)
    idf(t)  = logf(1 + (N - n + 0.5) / (n + 0.5))
    norm    = k1 * ((1 - b) + (b * dl) / avgdl)
    score_t = idf(t) * ((f * (k1 + 1)) / (f + norm))

and a document's score is the float32 sum of its terms' scores in query-token order
(a fuzzy query token's expansions summed first: :mod:`lancelet.index.fts.query`).
``N`` counts every document of the index (deleted rows too), ``n`` the documents
holding the term, both summed over all partitions.

``logf`` is the C library's: glibc's ``logf`` is not correctly rounded, and pylance
follows it (measured: ``float32(math.log(x))`` differs from it on about 0.5% of idf
arguments).  Where no C math library can be loaded, ``float32(math.log(x))`` is used
instead and an idf may then be 1 ulp off pylance's.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

K1 = np.float32(1.2)
B = np.float32(0.75)
_ONE = np.float32(1.0)
_HALF = np.float32(0.5)


@functools.cache
def _c_logf() -> Callable[[float], float] | None:
    """The C library's single-precision natural logarithm, or None without one."""
    name = ctypes.util.find_library("m")
    if name is None:
        return None
    try:
        library = ctypes.CDLL(name)
    except OSError:
        return None
    logf = library.logf
    logf.restype = ctypes.c_float
    logf.argtypes = [ctypes.c_float]
    return logf


def logf(x: np.float32) -> np.float32:
    """``ln(x)`` in float32 as the C library's ``logf`` computes it."""
    c_logf = _c_logf()
    value = math.log(float(x)) if c_logf is None else c_logf(float(x))
    result: np.float32 = np.float32(value)
    return result


@dataclass(frozen=True)
class CorpusStats:
    """The statistics BM25 scores against: how many documents there are and how
    many tokens they hold in all."""

    num_docs: int
    total_tokens: int

    @property
    def average_length(self) -> np.float32:
        average: np.float32 = np.float32(0.0)
        if self.num_docs:
            average = np.float32(np.float32(self.total_tokens) / np.float32(self.num_docs))
        return average

    def plus(self, other: CorpusStats) -> CorpusStats:
        """The statistics of both corpora taken as one."""
        return CorpusStats(self.num_docs + other.num_docs, self.total_tokens + other.total_tokens)


def idf(document_frequency: int, num_docs: int) -> np.float32:
    """The inverse document frequency of a term held by ``document_frequency`` of
    ``num_docs`` documents."""
    n = np.float32(document_frequency)
    ratio = (np.float32(num_docs) - n + _HALF) / (n + _HALF)
    return logf(np.float32(_ONE + ratio))


def term_scores(
    term_idf: np.float32,
    frequencies: np.ndarray,
    document_lengths: np.ndarray,
    average_length: np.float32,
) -> np.ndarray:
    """The BM25 scores (float32) of one term in documents holding it ``frequencies``
    times, of ``document_lengths`` tokens each."""
    f = np.asarray(frequencies, np.float32)
    dl = np.asarray(document_lengths, np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        norm = K1 * ((_ONE - B) + (B * dl) / average_length)
        tf = (f * (K1 + _ONE)) / (f + norm)
    return np.asarray(term_idf * tf, np.float32)
