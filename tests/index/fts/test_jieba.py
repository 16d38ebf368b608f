"""The jieba tokenizer (the ``jieba`` extra) against pylance's: the same tokens and
positions with the same model folder, and the same answers from an index built by
each library; a missing model or dictionary is an OSError in both."""

from __future__ import annotations

import json
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.index.fts.analyzer import analyze
from lancelet.index.fts.details import parameters

WORDS = {
    "我们": 98740, "都": 202780, "有": 423765, "光明": 1219, "的": 318825, "前途": 1263,
    "前": 62779, "途": 857, "北京": 34488, "大学": 20025, "北京大学": 2053, "学生": 4350,
    "喜欢": 2964, "读书": 1185, "中国": 26063, "人民": 12537, "银行": 3470,
}  # fmt: skip
CHARACTERS = "我们都有光明的前途北京大学生喜欢读书中国人民银行很好 ,。Ab1"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    model = tmp_path / "jieba" / "default"
    model.mkdir(parents=True)
    lines = [f"{word} {count} n" for word, count in WORDS.items()]
    (model / "dict.txt").write_text("\n".join(lines) + "\n", "utf-8")
    users = tmp_path / "jieba" / "users"
    users.mkdir()
    (users / "config.json").write_text(
        json.dumps({"main": "../default/dict.txt", "users": ["u.txt"]})
    )
    (users / "u.txt").write_text("光明的前途 318825 n\n喜欢读书 5000 v\n", "utf-8")
    bad = tmp_path / "jieba" / "bad"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps({"main": "missing.txt"}))
    monkeypatch.setenv("LANCE_LANGUAGE_MODEL_HOME", str(tmp_path))
    return tmp_path


def _texts(count: int) -> list[str]:
    rng = np.random.default_rng(8)
    words = list(WORDS) + list(CHARACTERS)
    return ["".join(rng.choice(words, int(rng.integers(1, 12)))) for _ in range(count)]


@pytest.mark.parametrize("model", ["jieba", "jieba/default", "jieba/users"])
def test_tokens_and_positions_are_pylances(home: Path, model: str) -> None:
    texts = _texts(400)
    params = parameters({"base_tokenizer": model})
    found = analyze(pa.array(texts), params)
    vocabulary = found.vocabulary.to_pylist()
    ours: list[list[tuple[str, int]]] = [[] for _ in texts]
    for doc, token, position in zip(
        found.document.tolist(), found.token.tolist(), found.position.tolist(), strict=True
    ):
        ours[doc].append((vocabulary[token], position))
    for text, tokens in zip(texts, ours, strict=True):
        theirs = [(t.text, t.position) for t in lance.tokenize(text, base_tokenizer=model)]
        # lance.tokenize counts positions from the first kept token; an index keeps
        # each token's starting character (checked through phrase answers below).
        first = tokens[0][1] if tokens else 0
        assert [(token, at - first) for token, at in tokens] == theirs, text


def test_indices_answer_alike(home: Path, tmp_path: Path) -> None:
    texts = _texts(300)
    table = pa.table({"id": np.arange(len(texts)), "text": texts})
    for lib, name in ((lance, "theirs"), (ll, "ours")):
        ds = lib.write_dataset(table, str(tmp_path / name))
        ds.create_scalar_index("text", "INVERTED", base_tokenizer="jieba/users", with_position=True)
    answered = 0
    for query in ("光明", "北京大学", "喜欢读书 人民", "银行", '"都有"', '"北京大学学生"'):
        want = lance.dataset(str(tmp_path / "theirs")).to_table(full_text_query=query)
        answered += want.num_rows > 0
        for reader in (lance, ll):
            got = reader.dataset(str(tmp_path / "ours")).to_table(full_text_query=query)
            assert sorted(got["id"].to_pylist()) == sorted(want["id"].to_pylist())
            np.testing.assert_allclose(
                np.sort(got["_score"].to_numpy()), np.sort(want["_score"].to_numpy()), rtol=1e-6
            )
    assert answered >= 4


@pytest.mark.parametrize(("model", "error"), [("jieba/bad", OSError), ("jieba/absent", ValueError)])
def test_missing_models_are_refused(
    home: Path, tmp_path: Path, model: str, error: type[Exception]
) -> None:
    ds = ll.write_dataset(pa.table({"text": ["我们"]}), str(tmp_path / "ds"))
    with pytest.raises(error):
        lance.dataset(str(tmp_path / "ds")).create_scalar_index(
            "text", "INVERTED", base_tokenizer=model
        )
    with pytest.raises(error):
        ds.create_scalar_index("text", "INVERTED", base_tokenizer=model)
