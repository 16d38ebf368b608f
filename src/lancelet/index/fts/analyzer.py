"""Text to tokens as pylance 14's analyzers make them (``docs/fts/tokenizers.md``).

INTERFACE SKELETON: the functions below are the contract the index writer and the
search use; the implementation is being written (issue 29)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancelet.index.fts.params import InvertedParams


@dataclass(frozen=True)
class DocumentTokens:
    """The kept tokens of a column's documents (one document per row), in the form
    an index stores them.

    Occurrences are ordered by (document, position).  ``vocabulary`` lists each
    distinct kept token once, in the order first met scanning the documents in
    order and each document's tokens in order (pylance's token id order)."""

    vocabulary: pa.StringArray
    # Per kept occurrence: its document (0..n-1, int64), its token (an index into
    # ``vocabulary``, int32) and its position among the base tokenizer's tokens of
    # the document (uint32; removed tokens still use up a position).
    document: np.ndarray
    token: np.ndarray
    position: np.ndarray
    # Per document: how many tokens it kept (uint32).
    num_tokens: np.ndarray


def analyze(texts: pa.Array, params: InvertedParams) -> DocumentTokens:
    """The tokens of each row of ``texts`` (string, large_string, string_view, or a
    list of those: a list row is one document); null rows have no tokens."""
    raise NotImplementedError


def query_tokens(text: str, params: InvertedParams) -> list[str]:
    """The kept tokens of a query string, in order (repeats kept)."""
    raise NotImplementedError
