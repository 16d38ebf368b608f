"""Fuzzy expansion: the vectorized edit distance against a plain dynamic program."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.index.fts.fuzzy import distances, expansions

words = st.text(alphabet="abcdé", max_size=7)


def edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


@settings(max_examples=200, deadline=None)
@given(token=words, candidates=st.lists(words, max_size=12))
def test_distances_are_levenshtein(token: str, candidates: list[str]) -> None:
    found = distances(token, np.asarray(candidates, dtype=str))
    assert found.tolist() == [edit_distance(token, c) for c in candidates]


@settings(max_examples=200, deadline=None)
@given(
    token=words,
    vocabulary=st.lists(words, unique=True, max_size=15).map(sorted),
    fuzziness=st.integers(0, 3),
    prefix_length=st.integers(0, 3),
    max_expansions=st.integers(0, 6),
)
def test_expansions_keep_the_first_near_tokens(
    token: str, vocabulary: list[str], fuzziness: int, prefix_length: int, max_expansions: int
) -> None:
    near = [
        w
        for w in vocabulary
        if edit_distance(token, w) <= fuzziness and w.startswith(token[:prefix_length])
    ]
    found = expansions(token, vocabulary, fuzziness, prefix_length, max_expansions)
    assert found == near[:max_expansions]
