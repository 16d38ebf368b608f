"""Text to tokens as pylance 14's analyzers make them (``docs/fts/tokenizers.md``).

A base tokenizer cuts each document into raw tokens: ``simple`` (runs of letters
and numbers), ``whitespace`` (runs between ASCII spaces), ``raw`` (the whole text)
or ``ngram`` (every run of ``min_ngram_length`` to ``max_ngram_length`` characters,
or only the leading ones with ``prefix_only``; all at position 0).  Filters then
run in pylance's order on each raw token: tokens of at least ``max_token_length``
UTF-8 bytes are dropped, then lower-casing, Snowball stemming, stop-word removal
and ASCII folding, with pylance's own tables (:mod:`lancelet.index.fts.tables`).
The filters run once per distinct raw token (a column's vocabulary is far smaller
than its token count); splitting is pyarrow's.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import Stemmer

from lancelet.errors import ArgumentError, UnsupportedOptionError
from lancelet.index.fts import tables
from lancelet.index.fts.params import InvertedParams

BASE_TOKENIZERS = ("simple", "whitespace", "raw", "ngram")
# pylance's tokenizers that need language models (or ICU): refused by name.
_MODEL_TOKENIZERS = ("jieba", "lindera", "icu")


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


def check(params: InvertedParams) -> None:
    """Refuse a tokenizer, language or n-gram range lancelet does not analyze as
    pylance does."""
    base = params.base_tokenizer
    if base.split("/")[0] in _MODEL_TOKENIZERS:
        raise UnsupportedOptionError(
            f"INVERTED index: lancelet does not have pylance's {base!r} tokenizer "
            f"(it supports {', '.join(BASE_TOKENIZERS)})"
        )
    if base not in BASE_TOKENIZERS:
        raise ArgumentError(
            f"INVERTED index: unknown base_tokenizer {base!r}; one of {', '.join(BASE_TOKENIZERS)}"
        )
    if params.language not in tables.languages():
        raise ArgumentError(
            f"INVERTED index: unknown language {params.language!r}; one of "
            f"{', '.join(tables.languages())}"
        )
    if base == "ngram" and not 1 <= params.min_ngram_length <= params.max_ngram_length:
        raise ArgumentError(
            "INVERTED index: n-gram lengths must satisfy 1 <= min_ngram_length <= "
            f"max_ngram_length, got {params.min_ngram_length} and {params.max_ngram_length}"
        )


def _texts(texts: pa.Array) -> pa.Array:
    return texts.cast(pa.large_string())


def _split(texts: pa.Array, pattern: str) -> pa.Array:
    """Each row's non-empty pieces between matches of ``pattern`` (nulls: none)."""
    pieces = pc.split_pattern_regex(pc.fill_null(texts, ""), pattern)
    flat = pc.list_flatten(pieces)
    keep = pc.not_equal(flat, "")
    kept_parent = pc.filter(pc.list_parent_indices(pieces), keep).to_numpy()
    counts = np.bincount(kept_parent, minlength=len(texts))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return pa.LargeListArray.from_arrays(pa.array(offsets), pc.filter(flat, keep))


def _is_ascii(texts: pa.Array) -> bool:
    return pc.all(pc.string_is_ascii(texts)).as_py() is not False


def _split_ascii(texts: pa.Array) -> pa.Array:
    """:func:`_split` on the simple tokenizer's separators for ASCII texts: the runs of
    token bytes found on the text bytes directly (measured 10x faster than RE2 on the
    separator class, which was most of an index build's analysis)."""
    buffers = texts.buffers()
    ends = np.frombuffer(buffers[1], np.int64)[texts.offset : texts.offset + len(texts) + 1]
    valid = texts.is_valid().to_numpy(zero_copy_only=False)
    data = np.zeros(0, np.uint8) if buffers[2] is None else np.frombuffer(buffers[2], np.uint8)
    base = int(ends[0])
    data = data[base : int(ends[-1])]
    bounds = ends - base
    token = _ascii_token_bytes()[data]
    # A run starts at a token byte after a separator or at a text's start, and ends
    # likewise.
    starts_text = np.zeros(len(data) + 1, bool)
    starts_text[bounds] = True
    before = np.r_[False, token[:-1]] & ~starts_text[:-1]
    after = np.r_[token[1:], False] & ~starts_text[1:]
    first = np.flatnonzero(token & ~before)
    last = np.flatnonzero(token & ~after) + 1
    owner = np.searchsorted(bounds, first, side="right") - 1
    kept = valid[owner]
    first, last, owner = first[kept], last[kept], owner[kept]
    sizes = last - first
    value_offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    if kept.all():
        # The token bytes, separators dropped, are the tokens one after another.
        value_bytes = data[token]
    else:
        picked = np.repeat(first - value_offsets[:-1], sizes) + np.arange(int(value_offsets[-1]))
        value_bytes = data[picked]
    values = pa.LargeStringArray.from_buffers(
        len(first), pa.py_buffer(value_offsets), pa.py_buffer(value_bytes)
    )
    counts = np.bincount(owner, minlength=len(texts))
    offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)
    return pa.LargeListArray.from_arrays(pa.array(offsets), values)


@functools.cache
def _ascii_token_bytes() -> np.ndarray:
    """Which bytes are token characters, for ASCII texts (from the measured table)."""
    table = np.zeros(256, bool)
    for first, last in tables.alnum_ranges():
        if first <= 0x7F:
            table[first : min(last, 0x7F) + 1] = True
    return table


def _grams(text: str, params: InvertedParams) -> list[str]:
    low, high = params.min_ngram_length, params.max_ngram_length
    starts = range(1) if params.prefix_only else range(len(text))
    return [
        text[start : start + size]
        for start in starts
        for size in range(low, high + 1)
        if start + size <= len(text)
    ]


def _base_tokens(texts: pa.Array, params: InvertedParams) -> tuple[pa.Array, np.ndarray]:
    """Each document's raw tokens (a large list of strings per row) and each raw
    token's position."""
    texts = _texts(texts)
    base = params.base_tokenizer
    if base in ("simple", "whitespace"):
        if base == "simple" and _is_ascii(texts):
            tokens = _split_ascii(texts)
        else:
            pattern = tables.separator_pattern() if base == "simple" else tables.WHITESPACE_PATTERN
            tokens = _split(texts, pattern)
        offsets = tokens.offsets.to_numpy()
        counts = np.diff(offsets)
        position = np.arange(offsets[-1], dtype=np.int64) - offsets[:-1].repeat(counts)
        return tokens, position.astype(np.uint32)
    if base == "raw":
        # The whole text, even empty, is the one token (measured); nulls have none.
        counts = np.where(texts.is_null().to_numpy(zero_copy_only=False), 0, 1)
        values = pc.drop_null(texts)
    else:
        grams = [[] if t is None else _grams(t, params) for t in texts.to_pylist()]
        counts = np.array([len(g) for g in grams], np.int64)
        values = pa.array([g for row in grams for g in row], pa.large_string())
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    tokens = pa.LargeListArray.from_arrays(pa.array(offsets), values)
    return tokens, np.zeros(int(offsets[-1]), np.uint32)


@functools.cache
def _stemmer(language: str) -> Any:
    return Stemmer.Stemmer(language.lower())


def _filtered(raw: list[str], params: InvertedParams) -> list[str | None]:
    """Each distinct raw token as kept (None: removed by a filter)."""
    stem = _stemmer(params.language).stemWord if params.stem else None
    stops: frozenset[str] = frozenset()
    if params.remove_stop_words:
        custom = params.custom_stop_words
        stops = frozenset(custom) if custom is not None else tables.stop_words(params.language)
    lower, fold = tables.lower_table(), tables.fold_table()
    out: list[str | None] = []
    limit = params.max_token_length
    for token in raw:
        if limit is not None and len(token.encode()) >= limit:
            out.append(None)
            continue
        if params.lower_case:
            token = token.translate(lower)
        if stem is not None:
            token = stem(token)
        if token in stops:
            out.append(None)
            continue
        out.append(token.translate(fold) if params.ascii_folding else token)
    return out


def analyze(texts: pa.Array, params: InvertedParams) -> DocumentTokens:
    """The tokens of each row of ``texts`` (string, large_string, string_view, or a
    list of those: a list row is one document); null rows have no tokens."""
    check(params)
    tokens, position = _base_tokens(texts, params)
    counts = np.diff(tokens.offsets.to_numpy())
    document = np.repeat(np.arange(len(texts), dtype=np.int64), counts)
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
