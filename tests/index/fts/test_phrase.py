"""Phrase matching against a plain Python reading of its rule."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.index.fts.phrase import TokenPositions, phrase_documents

_documents = st.lists(st.lists(st.integers(0, 3), max_size=12), min_size=1, max_size=25)
_query = st.lists(st.tuples(st.integers(0, 3), st.integers(1, 2)), min_size=1, max_size=4)


def _token(documents: list[list[int]], token: int) -> TokenPositions:
    docs, offsets, positions = [], [0], []
    for number, words in enumerate(documents):
        found = [at for at, word in enumerate(words) if word == token]
        if found:
            docs.append(number)
            positions.extend(found)
            offsets.append(len(positions))
    return TokenPositions(
        np.asarray(docs, np.uint32), np.asarray(offsets, np.int64), np.asarray(positions, np.uint32)
    )


def _matches(words: list[int], tokens: list[int], at: list[int], slop: int) -> bool:
    """Some start of the first token reaches every next one, each at the nearest of
    its positions ``gap .. gap + slop`` on."""
    for start, word in enumerate(words):
        if word != tokens[0]:
            continue
        reached: int | None = start
        for token, gap in zip(tokens[1:], np.diff(at).tolist(), strict=True):
            assert reached is not None
            ahead = [
                p
                for p, w in enumerate(words)
                if w == token and reached + gap <= p <= reached + gap + slop
            ]
            reached = min(ahead) if ahead else None
            if reached is None:
                break
        if reached is not None:
            return True
    return False


@settings(max_examples=300, deadline=None)
@given(_documents, _query, st.integers(0, 2))
def test_phrase_documents(
    documents: list[list[int]], query: list[tuple[int, int]], slop: int
) -> None:
    tokens = [token for token, _ in query]
    at = np.cumsum([0] + [step for _, step in query[1:]]).tolist()
    by_token = {token: _token(documents, token) for token in set(tokens)}
    got = phrase_documents([by_token[t] for t in tokens], at, slop, len(documents))
    want = [n for n, words in enumerate(documents) if _matches(words, tokens, at, slop)]
    assert got.docs.tolist() == want
    for token, where in zip(tokens, got.where, strict=True):
        assert by_token[token].docs[where].tolist() == want
