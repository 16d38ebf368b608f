"""Text to tokens as pylance 14's analyzers make them (``docs/fts/tokenizers.md``).

A first version: the simple and whitespace base tokenizers with the default
filters, vectorized over the distinct raw tokens (a column's vocabulary is far
smaller than its token count).  Filters run in pylance's order: tokens of at least
``max_token_length`` UTF-8 bytes are dropped, then lower-casing, stemming, stop
words and ASCII folding.  Exact tables (folding, stop words) and the other base
tokenizers are being completed (issue 29)."""

from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import ArgumentError
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


# pylance's English stop words (measured: docs/fts/tokenizers.md).
_ENGLISH_STOP_TEXT = """
    i me my myself we our ours ourselves you your yours yourself yourselves he him
    his himself she her hers herself it its itself they them their theirs themselves
    what which who whom this that these those am is are was were be been being have
    has had having do does did doing should a an the and but if or because as until
    while of at by for with about against between into through during before after
    above below to from up down in out on off over under again further then once here
    there when where why how all any both each few more most other some such only own
    same so than too very can will just now re"""
ENGLISH_STOP_WORDS = frozenset(_ENGLISH_STOP_TEXT.split())


@functools.cache
def _word_pattern() -> str:
    """An RE2 pattern of the runs of characters Rust's ``char::is_alphanumeric``
    accepts (Unicode Alphabetic or Numeric), built once from the ``regex`` module's
    Unicode tables (RE2 has no Alphabetic property)."""
    import regex

    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    ranges = []
    for run in regex.finditer(r"[\p{Alphabetic}\p{N}]+", every):
        first, last = ord(run.group()[0]), ord(run.group()[-1])
        ranges.append(f"\\x{{{first:x}}}-\\x{{{last:x}}}" if last > first else f"\\x{{{first:x}}}")
    return "[^" + "".join(ranges) + "]+"


def _base_tokens(texts: pa.Array, params: InvertedParams) -> pa.ListArray:
    """Each document's base tokens (a list of strings per row, nulls empty)."""
    texts = pc.fill_null(texts.cast(pa.large_string()), "")
    if params.base_tokenizer == "simple":
        pieces = pc.split_pattern_regex(texts, _word_pattern())
    elif params.base_tokenizer == "whitespace":
        pieces = pc.split_pattern_regex(texts, r"\s+")
    else:
        raise ArgumentError(
            f"INVERTED index: base_tokenizer {params.base_tokenizer!r} is not supported yet"
        )
    flat = pc.list_flatten(pieces)
    keep = pc.not_equal(flat, "")
    parent = pc.list_parent_indices(pieces)
    kept_parent = pc.filter(parent, keep)
    counts = np.bincount(kept_parent.to_numpy(), minlength=len(texts))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return pa.LargeListArray.from_arrays(pa.array(offsets), pc.filter(flat, keep))


def _lower(token: str) -> str:
    # Rust lower-cases character by character: no final-sigma rule (str.lower has one).
    return token.lower() if token.isascii() else "".join(c.lower() for c in token)


def _fold(token: str) -> str:
    if token.isascii():
        return token
    decomposed = unicodedata.normalize("NFKD", token)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _filtered(raw: list[str], params: InvertedParams) -> list[str | None]:
    """Each distinct raw token as kept (None: removed by a filter)."""
    stemmer = None
    if params.stem:
        import Stemmer

        stemmer = Stemmer.Stemmer(params.language.lower())
    stops: frozenset[str] = frozenset()
    if params.remove_stop_words:
        custom = params.custom_stop_words
        stops = frozenset(custom) if custom is not None else ENGLISH_STOP_WORDS
    out: list[str | None] = []
    limit = params.max_token_length
    for token in raw:
        if limit is not None and len(token.encode()) >= limit:
            out.append(None)
            continue
        if params.lower_case:
            token = _lower(token)
        if stemmer is not None:
            token = stemmer.stemWord(token)
        if token in stops:
            out.append(None)
            continue
        out.append(_fold(token) if params.ascii_folding else token)
    return out


def analyze(texts: pa.Array, params: InvertedParams) -> DocumentTokens:
    """The tokens of each row of ``texts`` (string, large_string, string_view, or a
    list of those: a list row is one document); null rows have no tokens."""
    tokens = _base_tokens(texts, params)
    offsets = tokens.offsets.to_numpy()
    counts = np.diff(offsets)
    document = np.repeat(np.arange(len(texts), dtype=np.int64), counts)
    position = (np.arange(len(document), dtype=np.int64) - offsets[:-1].repeat(counts)).astype(
        np.uint32
    )
    encoded = pc.dictionary_encode(tokens.values)
    kept = _filtered(encoded.dictionary.to_pylist(), params)
    # The kept tokens of the raw ones, as a number (-1: removed).
    final_names = sorted({t for t in kept if t is not None})
    number = {t: i for i, t in enumerate(final_names)}
    raw_to_final = np.array([-1 if t is None else number[t] for t in kept] + [-1], np.int64)
    final = raw_to_final[encoded.indices.to_numpy(zero_copy_only=False)]
    keep = final >= 0
    document, position, final = document[keep], position[keep], final[keep]
    # Token ids in the order first met.
    order_met = np.full(len(final_names), -1, np.int64)
    firsts = np.unique(final, return_index=True)
    met = np.argsort(firsts[1], kind="stable")
    order_met[firsts[0][met]] = np.arange(len(met))
    vocabulary = pa.array([final_names[i] for i in firsts[0][met]], pa.string())
    return DocumentTokens(
        vocabulary,
        document,
        order_met[final].astype(np.int32),
        position,
        np.bincount(document, minlength=len(texts)).astype(np.uint32),
    )


def query_tokens(text: str, params: InvertedParams) -> list[str]:
    """The kept tokens of a query string, in order (repeats kept)."""
    found = analyze(pa.array([text], pa.large_string()), params)
    return [found.vocabulary[int(t)].as_py() for t in found.token]
