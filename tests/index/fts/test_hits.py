"""Merging and ranking of scored rows, against plain Python computations."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.index.fts.hits import Hits, sorted_union

# Few distinct scores, so that ties (also at a limit's cut) are common.
# Rows close together (merged in a dense array) or far apart (merged sorted).
_scored_rows = st.dictionaries(
    st.integers(0, 300) | st.integers(0, 2**40),
    st.sampled_from([0.5, 1.25, 2.0, 3.5, 0.375]),
    max_size=60,
)


def _hits(scored: dict[int, float]) -> Hits:
    rows = sorted(scored)
    return Hits(np.asarray(rows, np.uint64), np.asarray([scored[r] for r in rows], np.float32))


@settings(max_examples=200, deadline=None)
@given(_scored_rows, st.none() | st.integers(0, 70))
def test_ranked_is_the_full_sorts_head(scored: dict[int, float], count: int | None) -> None:
    hits = _hits(scored)
    want = sorted(scored.items(), key=lambda item: (-item[1], item[0]))
    if count is not None:
        want = want[:count]
    order = hits.ranked(count)
    got = list(zip(hits.rows[order].tolist(), hits.scores[order].tolist(), strict=True))
    assert got == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sets(st.integers(0, 2**40), max_size=40), max_size=4))
def test_sorted_union(parts: list[set[int]]) -> None:
    arrays = [np.asarray(sorted(p), np.uint64) for p in parts]
    assert sorted_union(arrays).tolist() == sorted(set().union(*parts))


@settings(max_examples=200, deadline=None)
@given(st.lists(_scored_rows, max_size=4))
def test_summed_adds_in_part_order(parts: list[dict[int, float]]) -> None:
    want: dict[int, np.float32] = {}
    for part in parts:
        for row, score in part.items():
            want[row] = np.float32(want.get(row, np.float32(0)) + np.float32(score))
    got = Hits.summed([_hits(p) for p in parts])
    assert got.rows.tolist() == sorted(want)
    assert got.scores.tolist() == [float(want[r]) for r in sorted(want)]


@settings(max_examples=200, deadline=None)
@given(st.lists(_scored_rows, max_size=4))
def test_maximum_keeps_the_best_score(parts: list[dict[int, float]]) -> None:
    want: dict[int, float] = {}
    for part in parts:
        for row, score in part.items():
            want[row] = max(want.get(row, -np.inf), float(np.float32(score)))
    got = Hits.maximum([_hits(p) for p in parts])
    assert got.rows.tolist() == sorted(want)
    assert got.scores.tolist() == [want[r] for r in sorted(want)]


@settings(max_examples=200, deadline=None)
@given(_scored_rows, st.lists(st.integers(0, 300) | st.integers(0, 2**40), max_size=80))
def test_within_keeps_the_hits_of_rows(scored: dict[int, float], rows: list[int]) -> None:
    got = _hits(scored).within(np.asarray(sorted(rows), np.uint64))
    kept = sorted(set(scored) & set(rows))
    assert got.rows.tolist() == kept
    assert got.scores.tolist() == [scored[r] for r in kept]


@settings(max_examples=300, deadline=None)
@given(st.lists(_scored_rows, max_size=4), st.integers(0, 30), st.booleans())
def test_summed_best_ranks_as_summed(
    parts: list[dict[int, float]], count: int, repeat: bool
) -> None:
    """The best ``count`` of the cut sums are those of all sums, ties included."""
    hits = [_hits(p) for p in parts]
    if repeat and hits:
        hits.append(hits[0])  # a repeated term: parts of the same rows
    best = Hits.summed_best(hits, count)
    every = Hits.summed(hits)
    if best is None:
        return
    assert len(best) >= min(count, len(every))
    floor = best.scores.min()
    kept = every.scores >= floor
    assert np.array_equal(best.rows, every.rows[kept])
    assert np.array_equal(best.scores, every.scores[kept])
    want = every.ranked(count)
    got = best.ranked(count)
    assert np.array_equal(best.rows[got], every.rows[want])


@settings(max_examples=200, deadline=None)
@given(_scored_rows, st.sets(st.integers(0, 300) | st.integers(0, 2**40), max_size=40))
def test_within_and_without(scored: dict[int, float], chosen: set[int]) -> None:
    hits = _hits(scored)
    rows = np.asarray(sorted(chosen), np.uint64)
    inside = hits.within(rows)
    outside = hits.without(rows)
    assert inside.rows.tolist() == [r for r in sorted(scored) if r in chosen]
    assert outside.rows.tolist() == [r for r in sorted(scored) if r not in chosen]
    assert inside.scores.tolist() == [scored[r] for r in inside.rows.tolist()]
