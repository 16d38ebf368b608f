"""The tokens a fuzzy match term stands for (measured on pylance 14.0.2).

A query token with ``fuzziness`` k matches the index's tokens within Levenshtein
distance k of it, counted in characters (insertions, deletions, substitutions: a
swap of two neighbours is 2 edits), that start with the query token's first
``prefix_length`` characters, listed in the token map's (byte) order, the query
token itself only as one of them.  (The query cuts the lists of all its tokens to
``max_expansions`` in all: :mod:`lancelet.index.fts.query`.)"""

from __future__ import annotations

from collections.abc import Sequence

from lancelet.errors import FullTextQueryError


def expansions(
    token: str,
    vocabulary: Sequence[str],
    fuzziness: int,
    prefix_length: int,
    max_expansions: int,
) -> list[str]:
    """The tokens of ``vocabulary`` (sorted) that ``token`` matches fuzzily."""
    if fuzziness < 0 or prefix_length < 0 or max_expansions < 0:
        raise FullTextQueryError(
            "full_text_query: fuzziness, prefix_length and max_expansions must not be negative"
        )
    prefix = token[:prefix_length]
    found: list[str] = []
    for candidate in vocabulary:
        if len(found) >= max_expansions:
            break
        if abs(len(candidate) - len(token)) > fuzziness or not candidate.startswith(prefix):
            continue
        if levenshtein(token, candidate, fuzziness) <= fuzziness:
            found.append(candidate)
    return found


def levenshtein(a: str, b: str, bound: int) -> int:
    """The edit distance of ``a`` and ``b`` in characters; any value above ``bound``
    may be returned as ``bound + 1``."""
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            cost = 0 if char == other else 1
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost))
        if min(current) > bound:
            return bound + 1
        previous = current
    return previous[-1]
