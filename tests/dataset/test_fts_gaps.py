"""Query strings in double quotes (phrases), ``include_deleted_rows`` and the plans of
a full-text search, against pylance 14."""

from __future__ import annotations

from pathlib import Path

import lance
import lance.query
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
import lancelet.query
from lancelet.errors import FullTextQueryError

TEXT = [
    "frodo was a puppy",
    "frodo was a happy puppy",
    "frodo was a very happy puppy",
    "frodo was a puppy with a tail",
    "the cat sat",
    "puppy frodo",
]
QUOTED = [
    '"frodo was a puppy"',
    '"frodo puppy"',
    '"was a" "happy puppy"',
    '"was a" tail',
    '"frodo',
    'frodo"',
    'fr"odo',
    '"frodo" "',
    '\\"frodo was\\"',
    '"frodo \\" was"',
    '""',
    '"',
    '"the"',
    ' "frodo was a puppy" ',
    '"puppy frodo"',
    'x"a puppy"y',
    '"FRODO WAS"',
    'frodo "happy puppy"',
]


def _hits(table: pa.Table) -> list[tuple[int, float]]:
    rows = zip(table["_rowid"].to_pylist(), table["_score"].to_pylist(), strict=True)
    return sorted((r, round(s, 5)) for r, s in rows)


def _outcome(ds: object, query: object, **kw: object) -> object:
    try:
        return _hits(ds.to_table(full_text_query=query, with_row_id=True, **kw))  # type: ignore[attr-defined]
    except ValueError as error:
        return "error" if "position" not in str(error) else "positions"


@pytest.fixture(scope="module", params=[True, False], ids=["positions", "no-positions"])
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    path = tmp_path_factory.mktemp("q")
    theirs = lance.write_dataset(pa.table({"text": TEXT}), path)
    theirs.create_scalar_index(
        "text", "INVERTED", with_position=request.param, remove_stop_words=False
    )
    theirs.insert(pa.table({"text": ["frodo was here", "a happy puppy"]}))
    return theirs, ll.dataset(str(path))


@pytest.mark.parametrize("query", QUOTED)
def test_quoted_strings_as_pylance(pair: tuple, query: str) -> None:
    theirs, ours = pair
    assert _outcome(ours, query) == _outcome(theirs, query)
    assert _outcome(ours, {"query": query, "columns": ["text"]}) == _outcome(
        theirs, {"query": query, "columns": ["text"]}
    )


def test_quoted_string_needs_one_column(tmp_path: Path) -> None:
    table = pa.table({"a": ["frodo was", "x"], "b": ["frodo", "was frodo"]})
    theirs = lance.write_dataset(table, tmp_path)
    for column in ("a", "b"):
        theirs.create_scalar_index(column, "INVERTED", with_position=True)
    ours = ll.dataset(str(tmp_path))
    for query in ('"frodo was"', {"query": '"frodo"', "columns": ["a", "b"]}):
        with pytest.raises(ValueError):
            theirs.to_table(full_text_query=query)
        with pytest.raises(FullTextQueryError):
            ours.to_table(full_text_query=query)
    # Not a phrase: a match over both columns.
    assert _outcome(ours, '"') == _outcome(theirs, '"')
    # Without any index the string is refused before it is parsed; a named column is
    # searched flat, as a phrase.
    flat = tmp_path / "flat"
    lance.write_dataset(table, flat)
    with pytest.raises(FullTextQueryError, match="INVERTED index"):
        ll.dataset(str(flat)).to_table(full_text_query='"frodo was"')
    query = {"query": '"frodo was"', "columns": ["b"]}
    assert _outcome(ll.dataset(str(flat)), query) == _outcome(lance.dataset(flat), query)


def test_include_deleted_rows_refused_as_pylance(pair: tuple) -> None:
    theirs, ours = pair
    for with_row_id in (True, False):
        kw = {"with_row_id": with_row_id, "include_deleted_rows": True}
        with pytest.raises(ValueError) as expected:
            theirs.to_table(full_text_query="frodo", **kw)
        with pytest.raises(FullTextQueryError) as got:
            ours.to_table(full_text_query="frodo", **kw)
        wanted = str(expected.value).split(": ", 1)[1].split(",")[0]
        assert wanted in str(got.value)


@pytest.fixture(scope="module")
def filtered(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    path = tmp_path_factory.mktemp("f")
    text = ["lance database test", "full text search", "lance search text"] + ["other"] * 7
    theirs = lance.write_dataset(pa.table({"id": list(range(1, 11)), "text": text}), path)
    theirs.create_scalar_index("id", "BTREE")
    theirs.create_scalar_index("text", "INVERTED")
    return theirs, ll.dataset(str(path))


def _node_lines(plan: str, keep: tuple[str, ...]) -> list[tuple[int, str]]:
    """(depth, node name) of the nodes named in ``keep``."""
    out = []
    for line in plan.splitlines():
        name = line.strip().split(":")[0]
        if name in keep:
            out.append((len(line) - len(line.lstrip()), name))
    return out


@pytest.mark.parametrize(
    "kw",
    [{}, {"limit": 2}, {"columns": ["id"]}, {"filter": "id <= 1"}, {"offset": 1, "limit": 1}],
)
def test_explain_plan_shape_as_pylance(filtered: tuple, kw: dict) -> None:
    theirs, ours = filtered
    keep = ("ProjectionExec", "GlobalLimitExec", "MatchQuery")
    mine = ours.scanner(full_text_query="lance search text", **kw).explain_plan()
    ref = theirs.scanner(full_text_query="lance search text", **kw).explain_plan()
    assert [n for _, n in _node_lines(mine, keep)] == [n for _, n in _node_lines(ref, keep)]
    for line in ("MatchQuery: column=text, query=[lance search text]", "skip=", "expr=["):
        assert (line in mine) == (line in ref)
    ref_expr = ref.split("expr=[")[1].split("]")[0]
    names = [part.split(" as ")[-1] for part in ref_expr.split(", ")]
    assert mine.split("expr=[")[1].split("]")[0] == ", ".join(names)


def test_analyze_plan_counts_the_prefilter_index(filtered: tuple) -> None:
    theirs, ours = filtered
    kw = {"full_text_query": "lance search text", "filter": "id <= 1", "prefilter": True}
    assert "index_comparisons=1" in theirs.scanner(**kw).analyze_plan()
    plan = ours.scanner(**kw).analyze_plan()
    assert "index_comparisons=1" in plan
    rows = theirs.to_table(**kw).num_rows
    assert f"output_rows={rows}" in plan


def _list_rows(rng: np.random.Generator, n: int) -> pa.Array:
    words = np.array(["lance", "database", "the", "search", "running", "runs", "Search", "x", "y"])
    rows: list[list[str] | None] = []
    for _ in range(n):
        if rng.random() < 0.05:
            rows.append(None)
            continue
        rows.append(
            [" ".join(rng.choice(words, rng.integers(0, 4))) for _ in range(rng.integers(4))]
        )
    return pa.array(rows, pa.list_(pa.string()))


@pytest.mark.parametrize("seed", [1, 2])
def test_lists_outside_the_index_as_pylance(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = pa.table({"text": _list_rows(rng, 30), "t2": _list_rows(rng, 30)})
    theirs = lance.write_dataset(table, tmp_path)
    theirs.create_scalar_index("text", "INVERTED", with_position=True)
    theirs.insert(pa.table({"text": _list_rows(rng, 20), "t2": _list_rows(rng, 20)}))
    ours = ll.dataset(str(tmp_path))
    queries: list[tuple[object, object]] = [
        ("lance", "lance"),
        ("search running", "search running"),
        ('"database lance"', '"database lance"'),
        (
            lance.query.PhraseQuery("lance database", "text", slop=1),
            ll.query.PhraseQuery("lance database", "text", slop=1),
        ),
        (lance.query.MatchQuery("Search the", "t2"), ll.query.MatchQuery("Search the", "t2")),
        (lance.query.PhraseQuery("x y", "t2"), ll.query.PhraseQuery("x y", "t2")),
    ]
    for theirs_query, our_query in queries:
        for kw in ({}, {"limit": 3}, {"prefilter": True, "filter": "array_length(text) >= 2"}):
            expected = _outcome(theirs, theirs_query, **kw)
            assert isinstance(expected, list)
            assert _outcome(ours, our_query, **kw) == expected


def test_first_index_of_a_column_is_searched(tmp_path: Path) -> None:
    texts = ["Frodo was a puppy", "Frodo was a happy puppy", "the cats running"]
    theirs = lance.write_dataset(pa.table({"text": texts}), tmp_path)
    theirs.create_scalar_index(
        "text", "INVERTED", with_position=True, remove_stop_words=False, stem=False
    )
    theirs.create_scalar_index("text", "INVERTED", name="no_pos_idx", with_position=False)
    theirs.insert(pa.table({"text": ["was a puppy running"]}))
    theirs.create_scalar_index("text", "INVERTED", name="third", lower_case=False)
    ours = ll.dataset(str(tmp_path))
    for query in ('"was a puppy"', "was a puppy", "cats running", "Frodo"):
        assert _outcome(ours, query) == _outcome(theirs, query)


def _nested(ids: range, texts: list[str]) -> pa.Table:
    labels = pa.array([f"label_{i}" for i in ids])
    data = pa.StructArray.from_arrays([pa.array(texts), labels], names=["text", "label"])
    return pa.table({"id": list(ids), "data": data})


@pytest.mark.parametrize("builder", ["pylance", "lancelet"])
def test_nested_field_index_as_pylance(tmp_path: Path, builder: str) -> None:
    texts = [
        f"document {i} about lance database" if i % 3 else f"doc {i} search" for i in range(20)
    ]
    lance.write_dataset(_nested(range(20), texts), tmp_path)
    maker = lance.dataset(tmp_path) if builder == "pylance" else ll.dataset(str(tmp_path))
    maker.create_scalar_index("data.text", index_type="INVERTED", with_position=True)
    more = [f"lance search {i}" for i in range(5)]
    lance.write_dataset(_nested(range(20, 25), more), tmp_path, mode="append")
    theirs, ours = lance.dataset(tmp_path), ll.dataset(str(tmp_path))
    cases: list[tuple[object, object, dict]] = [
        ("lance", "lance", {}),
        ("search", "search", {"limit": 2}),
        ("database", "database", {"filter": "data.label = 'label_5'", "prefilter": True}),
        ('"lance database"', '"lance database"', {}),
        ({"query": "lance", "columns": ["data.text"]},) * 2 + ({},),  # type: ignore[list-item]
        (
            lance.query.MatchQuery("search", "data.text"),
            ll.query.MatchQuery("search", "data.text"),
            {},
        ),
    ]
    for theirs_query, our_query, kw in cases:
        expected = _outcome(theirs, theirs_query, **kw)
        assert isinstance(expected, list) and expected
        assert _outcome(ours, our_query, **kw) == expected
    assert (
        ours.to_table(full_text_query="lance").schema
        == theirs.to_table(full_text_query="lance").schema
    )
