"""Fuzzy matches score bit for bit as pylance 14 scores them: a query token's
expansions are added in the token-id order of the row's index partition, and the
query tokens' sums in query order.

Each case here was one float32 ulp off pylance's ``_score`` when lancelet added every
expansion in turn, in byte order (the random corpora of ``test_fts_search_random``
found the first)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import lance.query as pq
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet import query as lq


def _table(ids: list[int], texts: list[str]) -> pa.Table:
    return pa.table({"id": ids, "text": texts})


def _scores(table: pa.Table) -> dict[int, bytes]:
    """Each row's ``_score`` as float32 bytes, by id."""
    scores = table["_score"].to_numpy().astype(np.float32)
    return {i: s.tobytes() for i, s in zip(table["id"].to_pylist(), scores, strict=True)}


def _same_scores(path: Path, build: Any) -> None:
    theirs = lance.dataset(str(path)).to_table(full_text_query=build(pq))
    ours = ll.dataset(str(path)).to_table(full_text_query=build(lq))
    assert theirs.num_rows > 0
    assert _scores(ours) == _scores(theirs)


@pytest.fixture(scope="module")
def one_document(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """'apple' within 2 edits of 'apple', 'apply' and 'maple': in byte order their
    scores add up to 0.9709271, pylance gives 0.9709272 (token ids: maple first)."""
    path = tmp_path_factory.mktemp("fuzzy") / "one"
    ds = lance.write_dataset(_table([0], ["cherry maple apple maple apply box"]), str(path))
    ds.create_scalar_index("text", "INVERTED", stem=False)
    lance.write_dataset(_table([1], ["maple"]), str(path), mode="append")
    return path


@pytest.mark.parametrize("boost", [1.0, 0.5, 0.3, 1.7])
def test_expansions_add_in_token_id_order(one_document: Path, boost: float) -> None:
    _same_scores(
        one_document,
        lambda m: m.MatchQuery("apple", "text", fuzziness=2, max_expansions=4, boost=boost),
    )


def test_a_fuzzy_clause_of_a_boolean_query(one_document: Path) -> None:
    def build(m: Any) -> Any:
        fuzzy = m.MatchQuery("apple", "text", fuzziness=2, max_expansions=4)
        return m.BooleanQuery(
            [(m.Occur.SHOULD, fuzzy), (m.Occur.MUST, m.MatchQuery("maple", "text", boost=0.5))]
        )

    _same_scores(one_document, build)


def test_query_tokens_add_their_expansions_first(tmp_path: Path) -> None:
    """'box bead apply': row 7 holds expansions of all three tokens."""
    corpus = [
        "bead",
        "",
        "bead bread cheese bead apply",
        "bead cheese cheese cherry",
        "cherry bread fox maple bead",
        "",
        "bread apple bread fox",
        "apple fox apply bead bread",
    ]
    path = tmp_path / "d"
    ds = lance.write_dataset(_table(list(range(len(corpus))), corpus), str(path))
    ds.create_scalar_index("text", "INVERTED", stem=False)
    for boost in (1.0, 0.5):
        _same_scores(
            path,
            lambda m, b=boost: m.MatchQuery(
                "box bead apply", "text", fuzziness=2, max_expansions=9, boost=b
            ),
        )


def test_each_partition_adds_in_its_own_token_id_order(tmp_path: Path) -> None:
    """An index of two partitions (rows appended, then the index optimized): the
    same tokens have different ids in each."""
    batches = [
        [
            "cheese cherry",
            "bead fix cherry fix fox box cherry",
            "cheese maple bred apply",
            "maple bred cherry apply bred ample",
            "box apply",
        ],
        [
            "maple cheese fox bead apply",
            "bread cherry",
            "fox maple fox bread fox bread",
            "apply cheese cherry bred box box",
            "bead cherry bred fox",
            "box maple cherry fix box bred",
        ],
    ]
    path = str(tmp_path / "d")
    ds = lance.write_dataset(_table(list(range(5)), batches[0]), path)
    ds.create_scalar_index("text", "INVERTED", stem=False)
    ds = lance.write_dataset(_table(list(range(5, 11)), batches[1]), path, mode="append")
    ds.optimize.optimize_indices()
    _same_scores(
        tmp_path / "d",
        lambda m: m.MatchQuery("bead ample", "text", fuzziness=2, max_expansions=8),
    )
