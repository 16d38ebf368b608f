"""lancelet's analyzer against pylance's (``lance.tokenize``, the analyzer its
INVERTED indices use): the same tokens at the same positions, document by document,
on a 10,000-document corpus mixing scripts, accents, punctuation, numbers, emoji,
ligatures and very long words, for every tokenizer configuration; random Unicode
text through hypothesis."""

from __future__ import annotations

from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.errors import ArgumentError, UnsupportedOptionError
from lancelet.index.fts.analyzer import analyze, check
from lancelet.index.fts.details import parameters
from lancelet.index.fts.params import InvertedParams

PIECES = [
    "The quick brown fox jumps over the lazy dog",
    "Running",
    "studies",
    "happily",
    "don't",
    "rock\u2019n\u2019roll",
    "3.14159",
    "v2.0.1",
    "foo_bar",
    "HTTPServer",
    "e-mail",
    "Café",
    "naïve",
    "Ærøskøbing",
    "straße",
    "ẞIG",
    "œuvre",
    "ﬁnancial",
    "ﬂour",
    "東京タワーは日本の首都にあります",
    "中文分词测试",
    "한국어 텍스트",
    "😀 emoji 🎉",
    "Ελληνικά",
    "ΣΊΣΥΦΟΣ",
    "Σίσυφος",
    "Русский текст",
    "العربية",
    "עברית",
    "हिन्दी",
    "\uff26\uff55\uff4c\uff4c width",
    "½ ⅓ ¼ Ⅷ ² ①",
    "İstanbul",
    "ǅemal",
    "™©€£…℃",
    "tab\tand\nnewline",
    "x" * 45,
    "supercalifragilisticexpialidocious" * 2,
    "Les élèves étudient",
    "und die Kinder spielen",
    "el niño está aquí",
    "ørsted",
    "þorn",
    "\u0131 dotless",
    "12345",
    "a",
    "",
    "THE AND OF",
    "über",
    "façade",
    "coöperate",
    "ǆ",
    "ﬀ ﬃ",
]
CONFIGURATIONS: list[dict[str, Any]] = [
    {},
    {"base_tokenizer": "whitespace"},
    {"base_tokenizer": "raw"},
    {"base_tokenizer": "ngram"},
    {"base_tokenizer": "ngram", "min_ngram_length": 2, "max_ngram_length": 4},
    {"base_tokenizer": "ngram", "min_ngram_length": 1, "max_ngram_length": 3, "prefix_only": True},
    {"lower_case": False},
    {"stem": False},
    {"remove_stop_words": False},
    {"ascii_folding": False},
    {"max_token_length": 4},
    {"max_token_length": None},
    {"custom_stop_words": ["quick", "fox", "das"]},
    {"language": "French"},
    {"language": "German", "ascii_folding": False},
    {"language": "Russian"},
    {"language": "Spanish", "lower_case": False},
    {"language": "Turkish"},
    {"language": "Greek"},
    {"language": "Arabic"},
    {"stem": False, "remove_stop_words": False, "lower_case": False, "ascii_folding": False},
]


def _corpus(count: int) -> list[str | None]:
    rng = np.random.default_rng(29)
    docs: list[str | None] = []
    for _ in range(count):
        chosen = rng.choice(len(PIECES), int(rng.integers(1, 7)))
        separator = [" ", ", ", "-", "  ", "\t", "/"][int(rng.integers(6))]
        docs.append(separator.join(PIECES[int(i)] for i in chosen))
    docs[5] = None
    return docs


CORPUS = _corpus(10_000)


def _pylance(text: str, config: dict[str, Any]) -> list[str]:
    # lance.tokenize numbers the kept tokens; an index's positions count removed
    # tokens too (tests/index/fts/test_reader.py checks those), so texts only here.
    return [t.text for t in lance.tokenize(text, **config)]


def _ours(docs: list[str | None], config: dict[str, Any]) -> list[list[tuple[str, int]]]:
    found = analyze(pa.array(docs, pa.string()), parameters(config))
    vocabulary = found.vocabulary.to_pylist()
    out: list[list[tuple[str, int]]] = [[] for _ in docs]
    for doc, token, position in zip(
        found.document.tolist(), found.token.tolist(), found.position.tolist(), strict=True
    ):
        out[doc].append((vocabulary[token], position))
    assert found.num_tokens.tolist() == [len(tokens) for tokens in out]
    return out


@pytest.mark.parametrize("config", CONFIGURATIONS, ids=lambda c: ",".join(map(str, c.items())))
def test_tokens_are_pylances(config: dict[str, Any]) -> None:
    docs = CORPUS if config.get("base_tokenizer") != "ngram" else CORPUS[:2000]
    ours = _ours(docs, config)
    for number, (text, tokens) in enumerate(zip(docs, ours, strict=True)):
        want = [] if text is None else _pylance(text, config)
        assert [token for token, _ in tokens] == want, (number, text)


def test_vocabulary_is_in_first_met_order() -> None:
    found = analyze(
        pa.array(["b a b", None, "c a"]), InvertedParams(stem=False, remove_stop_words=False)
    )
    assert found.vocabulary.to_pylist() == ["b", "a", "c"]
    assert found.document.tolist() == [0, 0, 0, 2, 2]
    assert found.token.tolist() == [0, 1, 0, 2, 1]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=60), min_size=1, max_size=8))
def test_random_unicode_text(docs: list[str]) -> None:
    for text, tokens in zip(docs, _ours(list(docs), {}), strict=True):
        assert [token for token, _ in tokens] == _pylance(text, {})


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.none() | st.text(st.characters(max_codepoint=127), max_size=60), min_size=1, max_size=8
    )
)
def test_random_ascii_text_with_nulls(docs: list[str | None]) -> None:
    # ASCII columns take a byte-level split; nulls have no tokens.
    for text, tokens in zip(docs, _ours(list(docs), {}), strict=True):
        want = [] if text is None else _pylance(text, {})
        assert [token for token, _ in tokens] == want


@pytest.mark.parametrize(
    ("config", "error"),
    [
        ({"base_tokenizer": "jieba/default"}, UnsupportedOptionError),
        ({"base_tokenizer": "lindera/ipadic"}, UnsupportedOptionError),
        ({"base_tokenizer": "icu"}, UnsupportedOptionError),
        ({"base_tokenizer": "words"}, ArgumentError),
        ({"language": "english"}, ArgumentError),
        ({"language": "Klingon"}, ArgumentError),
        ({"base_tokenizer": "ngram", "min_ngram_length": 4, "max_ngram_length": 2}, ArgumentError),
    ],
)
def test_refusals(config: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error, match="INVERTED index"):
        check(InvertedParams(**config))
