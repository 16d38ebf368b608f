"""The tokens a fuzzy match term stands for (measured on pylance 14.0.2).

A query token with ``fuzziness`` k matches the index's tokens within Levenshtein
distance k of it, counted in characters (insertions, deletions, substitutions: a
swap of two neighbours is 2 edits), that start with the query token's first
``prefix_length`` characters, listed in the token map's (byte) order, the query
token itself only as one of them.  (The query cuts the lists of all its tokens to
``max_expansions`` in all: :mod:`lancelet.index.fts.query`.)"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lancelet.errors import FullTextQueryError


def expansions(
    token: str,
    vocabulary: Sequence[str],
    fuzziness: int,
    prefix_length: int,
    max_expansions: int,
) -> list[str]:
    """The tokens of ``vocabulary`` (sorted) that ``token`` matches fuzzily, at
    most ``max_expansions`` of them, in vocabulary order."""
    if fuzziness < 0 or prefix_length < 0 or max_expansions < 0:
        raise FullTextQueryError(
            "full_text_query: fuzziness, prefix_length and max_expansions must not be negative"
        )
    if not len(vocabulary) or max_expansions == 0:
        return []
    words = np.asarray(vocabulary, dtype=str)
    # Cheap filters first: a distance is at least the difference of the lengths.
    near = np.abs(np.char.str_len(words) - len(token)) <= fuzziness
    prefix = token[:prefix_length]
    if prefix:
        near &= np.char.startswith(words, prefix)
    candidates = words[near]
    within = candidates[distances(token, candidates) <= fuzziness]
    return [str(word) for word in within[:max_expansions]]


def distances(token: str, candidates: np.ndarray) -> np.ndarray:
    """The Levenshtein distance, in characters, from ``token`` to each of
    ``candidates`` (an array of str), all candidates at once."""
    count = len(candidates)
    if count == 0:
        return np.zeros(0, np.int64)
    lengths = np.char.str_len(candidates)
    width = max(1, int(lengths.max()))
    # Each candidate as a row of code points, padded with 0 past its end (padding
    # never changes the columns up to the candidate's length).
    codes = np.asarray(candidates, dtype=f"<U{width}").view(np.uint32).reshape(count, width)
    steps = np.arange(width + 1)
    previous = np.broadcast_to(steps, (count, width + 1)).copy()
    for row, char in enumerate(token, 1):
        best = np.empty_like(previous)
        best[:, 0] = row
        substituted = previous[:, :-1] + (codes != ord(char))
        best[:, 1:] = np.minimum(substituted, previous[:, 1:] + 1)
        # Insertions: column j can also be reached from column k < j at j - k more.
        previous = np.minimum.accumulate(best - steps, axis=1) + steps
    result: np.ndarray = previous[np.arange(count), lengths]
    return result
