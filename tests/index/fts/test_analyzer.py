"""lancelet's analyzer against pylance's tokens: per document, the kept tokens, their
positions and counts, for every analyzer configuration; the token ids and counts of a
real pylance index for the default one."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.errors import ArgumentError, UnsupportedOptionError
from lancelet.index.fts.analyzer import LANGUAGES, analyze, query_terms
from lancelet.index.fts.params import InvertedParams

from ._pylance_tokens import index_tokens, tokenize
from .corpus import documents

lance = pytest.importorskip("lance")

CORPUS = documents(10_000)
SMALL = CORPUS[:600]

CONFIGURATIONS: list[dict[str, Any]] = [
    {},
    {"base_tokenizer": "whitespace"},
    {"base_tokenizer": "raw"},
    {"base_tokenizer": "raw", "max_token_length": None},
    {"base_tokenizer": "ngram"},
    {"base_tokenizer": "ngram", "min_ngram_length": 2, "max_ngram_length": 4},
    {"base_tokenizer": "ngram", "min_ngram_length": 1, "max_ngram_length": 5, "prefix_only": True},
    {"base_tokenizer": "ngram", "stem": True, "remove_stop_words": True},
    {"max_token_length": None},
    {"max_token_length": 4},
    {"lower_case": False},
    {"stem": False},
    {"remove_stop_words": False},
    {"custom_stop_words": ["quick", "fox", "und"]},
    # Stop words match stems, before folding: "run" drops "running", "café" drops "Cafés".
    {"custom_stop_words": ["run", "café", "runners"]},
    {"ascii_folding": False},
    {"lower_case": False, "ascii_folding": False, "stem": False, "remove_stop_words": False},
]


def _params(kwargs: dict[str, Any]) -> InvertedParams:
    values = dict(kwargs)
    if values.get("base_tokenizer") == "ngram":
        values.setdefault("stem", False)
        values.setdefault("remove_stop_words", False)
    if "custom_stop_words" in values:
        values["custom_stop_words"] = tuple(values["custom_stop_words"])
    return InvertedParams(**values)


def _per_document(texts: pa.Array, params: InvertedParams) -> list[list[tuple[str, int]]]:
    found = analyze(texts, params)
    vocabulary = found.vocabulary.to_pylist()
    out: list[list[tuple[str, int]]] = [[] for _ in range(len(texts))]
    occurrences = zip(found.document.tolist(), found.token.tolist(), found.position, strict=True)
    for doc, token, position in occurrences:
        out[doc].append((vocabulary[token], int(position)))
    for doc, tokens in enumerate(out):
        if tokens:
            first = tokens[0][1]
            out[doc] = [(w, p - first) for w, p in tokens]
    return out


@pytest.mark.parametrize("kwargs", CONFIGURATIONS, ids=lambda k: repr(k) if k else "default")
def test_tokens_equal_pylance(kwargs: dict[str, Any]) -> None:
    texts = CORPUS
    want = tokenize(texts, kwargs)
    got = _per_document(pa.array(texts, pa.string()), _params(kwargs))
    assert got == want


@pytest.mark.parametrize("language", LANGUAGES)
def test_languages_equal_pylance(language: str) -> None:
    kwargs = {"language": language}
    want = tokenize(SMALL, kwargs)
    assert _per_document(pa.array(SMALL), _params(kwargs)) == want


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string(), pa.string_view()])
def test_string_types(kind: pa.DataType) -> None:
    texts = SMALL[:200]
    assert _per_document(pa.array(texts, kind), InvertedParams()) == tokenize(texts, {})


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.none() | st.text(st.characters(max_codepoint=127), max_size=60), min_size=1, max_size=8
    )
)
def test_random_ascii_text_with_nulls(docs: list[str | None]) -> None:
    # ASCII columns take a byte-level split; nulls have no tokens.
    assert _per_document(pa.array(docs, pa.string()), InvertedParams()) == tokenize(docs, {})


@pytest.mark.parametrize(
    "kwargs", [{}, {"base_tokenizer": "whitespace"}, {"base_tokenizer": "ngram"}], ids=repr
)
def test_index_ids_and_counts_equal_pylance(tmp_path: Any, kwargs: dict[str, Any]) -> None:
    texts = pa.array(CORPUS)
    vocabulary, num_tokens = index_tokens(str(tmp_path), texts, kwargs)
    found = analyze(texts, _params(kwargs))
    assert found.vocabulary.to_pylist() == vocabulary
    assert found.num_tokens.tolist() == num_tokens


def test_refusals() -> None:
    for language in ("english", "ENGLISH", "Chinese", "Klingon"):
        with pytest.raises(ArgumentError, match="language"):
            analyze(pa.array(["x"]), InvertedParams(language=language))
    for tokenizer in ("lindera/ipadic", "icu"):  # jieba: tests/index/fts/test_jieba.py
        with pytest.raises(UnsupportedOptionError, match=tokenizer):
            analyze(pa.array(["x"]), InvertedParams(base_tokenizer=tokenizer))
    with pytest.raises(ArgumentError, match="base tokenizer"):
        analyze(pa.array(["x"]), InvertedParams(base_tokenizer="foo"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=5))
def test_random_text_default(texts: list[str]) -> None:
    assert _per_document(pa.array(texts, pa.string()), InvertedParams()) == tokenize(texts, {})


def _lists(count: int) -> list[list[str | None] | None]:
    out: list[list[str | None] | None] = []
    for i in range(count):
        start = (i * 7) % (len(CORPUS) - 5)
        out.append(None if i % 13 == 0 else CORPUS[start : start + i % 5])
    return out


@pytest.mark.parametrize(
    "kwargs", [{}, {"base_tokenizer": "raw"}, {"base_tokenizer": "ngram"}], ids=repr
)
def test_list_documents_equal_pylance_index(tmp_path: Any, kwargs: dict[str, Any]) -> None:
    documents = _lists(2000 if not kwargs else 300)
    texts = pa.array(documents, pa.list_(pa.string()))
    vocabulary, num_tokens = index_tokens(str(tmp_path), texts, kwargs)
    found = analyze(texts, _params(kwargs))
    assert found.vocabulary.to_pylist() == vocabulary
    # Rows the docs file leaves out (no token) count 0 here too.
    assert found.num_tokens.tolist() == num_tokens
    # Positions: pylance's tokens of the strings joined by a space (measured on the
    # index's positions: they run on across the strings).
    joined = [" ".join(s for s in d if s is not None) if d is not None else "" for d in documents]
    assert _per_document(texts, _params(kwargs)) == tokenize(joined, kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [k for k in CONFIGURATIONS if k.get("base_tokenizer") == "ngram"],
    ids=repr,
)
def test_ngrams_without_nul_equal_pylance(kwargs: dict[str, Any]) -> None:
    # Texts holding NUL take the per-document path; these take the numpy one.
    texts = [d for d in CORPUS if d is None or "\x00" not in d]
    assert _per_document(pa.array(texts), _params(kwargs)) == tokenize(texts, kwargs)


# Planes 0 and 1 (the whole range, 1.1M code points, passes too but takes ~20 s).
_EVERY_CODE_POINT = " ".join(
    chr(c) for c in range(0x20000) if not 0xD800 <= c < 0xE000 and chr(c) not in "\t\n\f\r "
)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base_tokenizer": "whitespace", "lower_case": True, "ascii_folding": False},
        {"base_tokenizer": "whitespace", "lower_case": False, "ascii_folding": True},
        {"base_tokenizer": "whitespace"},
        {"lower_case": False, "ascii_folding": False},
        {},
    ],
    ids=repr,
)
def test_every_code_point_equal_pylance(kwargs: dict[str, Any]) -> None:
    # Every code point as its own whitespace token: the lower-case and folding tables,
    # and (simple tokenizer) the alphanumeric set.
    options = {"stem": False, "remove_stop_words": False, "max_token_length": None, **kwargs}
    found = analyze(pa.array([_EVERY_CODE_POINT]), _params(options))
    want = lance.tokenize(_EVERY_CODE_POINT, **options)
    assert found.vocabulary.take(pa.array(found.token)).to_pylist() == [t.text for t in want]
    positions = np.array([t.position for t in want], np.int64)
    assert np.array_equal(found.position - found.position[0], positions - positions[0])


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="aAbé Z9_-.'\t" + "the running Foxes", max_size=40),
    st.sampled_from(["simple", "whitespace"]),
    st.booleans(),
    st.booleans(),
    st.sampled_from([None, 3, 6]),
)
def test_query_terms_as_analyze(
    text: str, tokenizer: str, lower_case: bool, stem: bool, max_token_length: int | None
) -> None:
    """A query string's terms split in Python are those the columnar path finds."""
    params = InvertedParams(
        base_tokenizer=tokenizer,
        lower_case=lower_case,
        stem=stem,
        max_token_length=max_token_length,
    )
    found = analyze(pa.array([text], pa.large_string()), params)
    vocabulary = found.vocabulary.to_pylist()
    want = [(vocabulary[t], int(p)) for t, p in zip(found.token, found.position, strict=True)]
    assert query_terms(text, params) == want
