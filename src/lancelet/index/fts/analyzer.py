"""Text to tokens as pylance 14's analyzers make them (``docs/fts/tokenizers.md``).

Base tokenizers: ``simple`` (runs of alphanumeric characters), ``whitespace`` (split on
ASCII tab, newline, form feed, carriage return and space), ``raw`` (the whole text, the
empty text included) and ``ngram`` (character n-grams of the whole text, every one at
position 0).  Filters run in pylance's order on each distinct raw token: tokens of at
least ``max_token_length`` UTF-8 bytes are dropped, then lower-casing, stemming
(Snowball, the same stems as PyStemmer on 638,187 words in each language), stop words
and ASCII folding.  The character tables and stop lists were measured on pylance
(``scripts/fts_analyzer_tables.py`` → ``_tables.py``)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import Stemmer

from lancelet.errors import ArgumentError, UnsupportedOptionError
from lancelet.index.fts import _tables, jieba
from lancelet.index.fts.params import InvertedParams

# The languages pylance accepts, spelt as it wants them (case matters).
LANGUAGES = (
    "Arabic", "Danish", "Dutch", "English", "Finnish", "French", "German", "Greek",
    "Hungarian", "Italian", "Norwegian", "Portuguese", "Romanian", "Russian", "Spanish",
    "Swedish", "Tamil", "Turkish",
)  # fmt: skip
BASE_TOKENIZERS = ("simple", "whitespace", "raw", "ngram")
# pylance's whitespace tokenizer splits on ASCII whitespace except vertical tab.
_WHITESPACE_RUN = "[\\t\\n\\f\\r ]+"


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


def _json(text: str) -> object:
    return json.loads(text)


@functools.cache
def _word_pattern() -> str:
    """An RE2 pattern of the runs of characters that are not alphanumeric."""
    ranges: list[list[int]] = _json(_tables.ALPHANUMERIC_RANGES)  # type: ignore[assignment]
    inside = "".join(f"\\x{{{a:x}}}-\\x{{{b:x}}}" if b > a else f"\\x{{{a:x}}}" for a, b in ranges)
    return "[^" + inside + "]+"


@functools.cache
def _translation(name: str) -> dict[int, str]:
    table: dict[str, str] = _json(getattr(_tables, name))  # type: ignore[assignment]
    return {int(k): v for k, v in table.items()}


@functools.cache
def stop_words(language: str) -> frozenset[str]:
    """pylance's built-in stop words of ``language`` (measured; empty for Tamil
    apart from two words found)."""
    lists: dict[str, list[str]] = _json(_tables.STOP_WORDS)  # type: ignore[assignment]
    return frozenset(lists[language])


def check_params(params: InvertedParams) -> None:
    """Refuse, naming it, an analyzer setting pylance refuses or lancelet lacks."""
    tokenizer = params.base_tokenizer
    if jieba.is_jieba(tokenizer):
        jieba.check(tokenizer)
        return
    if tokenizer.startswith(("lindera", "icu")):
        raise UnsupportedOptionError(
            f"INVERTED index: base_tokenizer {tokenizer!r} (a language model or ICU "
            "segmenter) is not supported by lancelet"
        )
    if tokenizer not in BASE_TOKENIZERS:
        raise ArgumentError(f"INVERTED index: unknown base tokenizer {tokenizer!r}")
    if params.language not in LANGUAGES:
        raise ArgumentError(
            f"INVERTED index: unknown language {params.language!r} "
            f"(pylance accepts {', '.join(LANGUAGES)})"
        )
    if tokenizer == "ngram" and not 0 < params.min_ngram_length <= params.max_ngram_length:
        raise ArgumentError(
            "INVERTED index: ngram lengths need 0 < min_ngram_length <= max_ngram_length"
        )


def _texts(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The documents as one large_string array (null: no tokens)."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    kind = texts.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _joined_lists(texts)
    if not (
        pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)
    ):
        raise ArgumentError(f"INVERTED index: cannot tokenize a column of type {kind}")
    return texts.cast(pa.large_string())


def _joined_lists(lists: pa.Array) -> pa.Array:
    """A list-of-strings document is its non-null strings joined by one space, as
    pylance measured: positions run on across the strings, raw tokens and n-grams
    span them, and a null or empty list is the empty text (a raw "" token)."""
    kind = lists.type.value_type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise ArgumentError(f"INVERTED index: cannot tokenize a column of type {lists.type}")
    values = pc.list_flatten(lists).cast(pa.large_string())
    valid = pc.is_valid(values)
    parent = pc.filter(pc.list_parent_indices(lists), valid).to_numpy()
    counts = np.bincount(parent, minlength=len(lists))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    kept = pa.LargeListArray.from_arrays(pa.array(offsets), pc.filter(values, valid))
    return pc.binary_join(kept, pa.scalar(" ", pa.large_string()))


def _ngrams(texts: pa.Array, params: InvertedParams) -> tuple[pa.Array, np.ndarray]:
    """Each document's character n-grams (start by start, shortest first: pylance's
    order) and their count per document, cut from the texts' code points with numpy."""
    low, high = params.min_ngram_length, params.max_ngram_length
    filled = pc.fill_null(texts, "")
    lengths = pc.utf8_length(filled).to_numpy().astype(np.int64)
    text = "".join(filled.to_pylist()) if len(filled) else ""
    codes = np.frombuffer(text.encode("utf-32-le"), np.uint32)
    if (codes == 0).any():  # numpy's fixed-width strings would lose trailing NULs
        return _ngrams_by_loop(texts, params)
    first = np.repeat(np.cumsum(lengths) - lengths, lengths)
    end = np.repeat(np.cumsum(lengths), lengths)
    at = np.arange(len(codes), dtype=np.int64)
    sizes = range(low, high + 1)
    # fits[p, j]: a gram of sizes[j] code points starts at p; row-major order is
    # pylance's (start by start, shortest first).
    fits = np.stack([at + n <= end for n in sizes], axis=1)
    if params.prefix_only:
        fits &= (at == first)[:, None]
    if high <= 3:  # 21 bits per code point: a gram is one int64 (no code point is 0)
        grams_all = _packed_ngrams(codes, sizes, fits)
    else:
        pieces = [
            pa.array(_windows(codes, n, fits[:, j]).view(f"<U{n}").ravel(), pa.large_string())
            for j, n in enumerate(sizes)
        ]
        keys = [at[fits[:, j]] * (high + 1) + n for j, n in enumerate(sizes)]
        order = np.argsort(np.concatenate(keys), kind="stable")
        grams_all = pa.concat_arrays(pieces).take(pa.array(order))
    size_array = np.arange(low, high + 1)
    per_doc = np.maximum(lengths[:, None] - size_array[None, :] + 1, 0)
    if params.prefix_only:
        per_doc = np.minimum(per_doc, 1)
    return grams_all, per_doc.sum(axis=1)


def _windows(codes: np.ndarray, n: int, starts: np.ndarray) -> np.ndarray:
    """The n code points from each start (a bool mask over code positions)."""
    chosen = np.flatnonzero(starts[: max(len(codes) - n + 1, 0)])
    if not len(chosen):
        return np.zeros((0, n), np.uint32)
    return np.ascontiguousarray(np.lib.stride_tricks.sliding_window_view(codes, n)[chosen])


def _packed_ngrams(codes: np.ndarray, sizes: range, fits: np.ndarray) -> pa.DictionaryArray:
    """The grams as int64 (code point k at bit 21k), made distinct by pyarrow's hash
    (first-met order), and only the distinct ones turned back into strings."""
    packed = np.zeros(fits.shape, np.int64)
    wide = codes.astype(np.int64)
    for j, n in enumerate(sizes):
        for k in range(n):
            packed[: len(codes) - k, j] += wide[k:] << (21 * k)
    encoded = pc.dictionary_encode(pa.array(packed[fits]))
    distinct = encoded.dictionary.to_numpy()
    high = sizes[-1]
    unpacked = (distinct[:, None] >> (21 * np.arange(high))) & 0x1FFFFF
    names = np.ascontiguousarray(unpacked.astype(np.uint32)).view(f"<U{high}").ravel()
    return pa.DictionaryArray.from_arrays(encoded.indices, pa.array(names, pa.large_string()))


def _ngrams_by_loop(texts: pa.Array, params: InvertedParams) -> tuple[pa.Array, np.ndarray]:
    low, high, prefix_only = params.min_ngram_length, params.max_ngram_length, params.prefix_only
    grams: list[str] = []
    counts = np.zeros(len(texts), np.int64)
    for row, text in enumerate(texts.to_pylist()):
        if text is None:
            continue
        before = len(grams)
        last_start = 0 if prefix_only else len(text) - low
        for start in range(min(last_start, len(text) - low) + 1):
            longest = min(high, len(text) - start)
            grams.extend(text[start : start + n] for n in range(low, longest + 1))
        counts[row] = len(grams) - before
    return pa.array(grams, pa.large_string()), counts


def _is_ascii(texts: pa.Array) -> bool:
    return pc.all(pc.string_is_ascii(texts)).as_py() is not False


def _split_ascii(texts: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The simple tokenizer's tokens of ASCII texts and their count per text: the runs
    of token bytes found on the text bytes directly (measured 10x faster than RE2 on
    the separator class, which was most of an index build's analysis)."""
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
    return values, np.bincount(owner, minlength=len(texts)).astype(np.int64)


@functools.cache
def _ascii_token_bytes() -> np.ndarray:
    """Which bytes are token characters, for ASCII texts (from the measured table)."""
    ranges: list[list[int]] = _json(_tables.ALPHANUMERIC_RANGES)  # type: ignore[assignment]
    table = np.zeros(256, bool)
    for first, last in ranges:
        if first <= 0x7F:
            table[first : min(last, 0x7F) + 1] = True
    return table


def _base_tokens(
    texts: pa.Array, params: InvertedParams
) -> tuple[pa.Array, np.ndarray, np.ndarray | None]:
    """All documents' base tokens in order, their count per document and their
    positions (None: each token's number in its document)."""
    tokenizer = params.base_tokenizer
    if jieba.is_jieba(tokenizer):
        return jieba.tokens(texts, tokenizer)
    if tokenizer == "ngram":
        grams, counts = _ngrams(texts, params)
        return grams, counts, np.zeros(int(counts.sum()), np.int64)
    if tokenizer == "raw":
        valid = pc.is_valid(texts)
        counts = valid.to_numpy(zero_copy_only=False).astype(np.int64)
        return pc.filter(texts, valid), counts, np.zeros(int(counts.sum()), np.int64)
    if tokenizer == "simple" and _is_ascii(texts):
        values, counts = _split_ascii(texts)
        return values, counts, None
    pattern = _word_pattern() if tokenizer == "simple" else _WHITESPACE_RUN
    pieces = pc.split_pattern_regex(pc.fill_null(texts, ""), pattern)
    flat = pc.list_flatten(pieces)
    keep = pc.not_equal(flat, "")
    parent = pc.filter(pc.list_parent_indices(pieces), keep)
    counts = np.bincount(parent.to_numpy(), minlength=len(texts)).astype(np.int64)
    return pc.filter(flat, keep), counts, None


def _each(function: Callable[[str], str], tokens: list[str | None]) -> list[str | None]:
    return [None if t is None else function(t) for t in tokens]


def _filtered(raw: pa.Array, params: InvertedParams) -> list[str | None]:
    """Each distinct raw token as kept (None: removed by a filter)."""
    tokens: list[str | None] = raw.to_pylist()
    if params.max_token_length is not None:
        too_long = pc.greater_equal(pc.binary_length(raw), params.max_token_length)
        tokens = [None if drop else t for t, drop in zip(tokens, too_long.to_pylist(), strict=True)]
    return _kept(tokens, params)


def _kept(tokens: list[str | None], params: InvertedParams) -> list[str | None]:
    """Each token (None: already dropped) through the filters after the length cut."""
    if params.lower_case:
        lower = _translation("LOWER")
        tokens = _each(lambda t: t.lower() if t.isascii() else t.translate(lower), tokens)
    if params.stem:
        stemmer = Stemmer.Stemmer(params.language.lower())
        present = [t for t in tokens if t is not None]
        stems = iter(stemmer.stemWords(present))
        tokens = [None if t is None else next(stems) for t in tokens]
    if params.remove_stop_words:
        custom = params.custom_stop_words
        stops = frozenset(custom) if custom is not None else stop_words(params.language)
        tokens = [None if t in stops else t for t in tokens]
    if params.ascii_folding:
        fold = _translation("FOLD")
        tokens = _each(lambda t: t if t.isascii() else t.translate(fold), tokens)
    return tokens


def analyze(texts: pa.Array | pa.ChunkedArray, params: InvertedParams) -> DocumentTokens:
    """The tokens of each row of ``texts`` (string, large_string, string_view, or a
    list of strings: one document per row); null strings have no tokens."""
    check_params(params)
    texts = _texts(texts)
    tokens, counts, position = _base_tokens(texts, params)
    starts = np.concatenate([[0], np.cumsum(counts)])
    document = np.repeat(np.arange(len(texts), dtype=np.int64), counts)
    if position is None:
        position = np.arange(len(document), dtype=np.int64) - starts[:-1].repeat(counts)
    encoded = tokens if isinstance(tokens, pa.DictionaryArray) else pc.dictionary_encode(tokens)
    kept = _filtered(encoded.dictionary, params)
    # The kept tokens of the raw ones, as a number (-1: removed).
    final_names = sorted({t for t in kept if t is not None})
    number = {t: i for i, t in enumerate(final_names)}
    raw_to_final = np.array([-1 if t is None else number[t] for t in kept] + [-1], np.int64)
    final = raw_to_final[encoded.indices.to_numpy(zero_copy_only=False)]
    keep = final >= 0
    document, position, final = document[keep], position[keep], final[keep]
    # Token ids in the order first met (pyarrow's hash keeps first-met order).
    met = pc.dictionary_encode(pa.array(final, pa.int64()))
    first_met = met.dictionary.to_numpy()
    vocabulary = pa.array([final_names[i] for i in first_met], pa.string())
    return DocumentTokens(
        vocabulary,
        document,
        met.indices.to_numpy().astype(np.int32),
        position.astype(np.uint32),
        np.bincount(document, minlength=len(texts)).astype(np.uint32),
    )


def query_tokens(text: str, params: InvertedParams) -> list[str]:
    """The kept tokens of a query string, in order (repeats kept)."""
    return [token for token, _ in query_terms(text, params)]


def query_terms(text: str, params: InvertedParams) -> list[tuple[str, int]]:
    """The kept tokens of a query string with their positions, in order, as
    :func:`analyze` makes them.  An ASCII text for the simple tokenizer is split
    here, in Python: a query's few words cost 0.3 ms through the columnar path."""
    if params.base_tokenizer != "simple" or not text.isascii():
        found = analyze(pa.array([text], pa.large_string()), params)
        vocabulary = found.vocabulary.to_pylist()
        return [(vocabulary[t], int(p)) for t, p in zip(found.token, found.position, strict=True)]
    check_params(params)
    raw = _ascii_words().findall(text)
    distinct: list[str | None] = list(dict.fromkeys(raw))
    limit = params.max_token_length
    if limit is not None:  # ASCII: a character is a byte
        distinct = [None if t is None or len(t) >= limit else t for t in distinct]
    kept = dict(zip(dict.fromkeys(raw), _kept(distinct, params), strict=True))
    return [(word, at) for at, token in enumerate(raw) if (word := kept[token]) is not None]


@functools.cache
def _ascii_words() -> re.Pattern[str]:
    """The runs of token characters of an ASCII text (those of :func:`_split_ascii`)."""
    characters = "".join(re.escape(chr(int(b))) for b in np.flatnonzero(_ascii_token_bytes()))
    return re.compile(f"[{characters}]+")
