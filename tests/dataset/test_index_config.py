"""``lancelet.indices.IndexConfig`` (an index type with its parameters) and the
full-text query objects of ``lancelet.query``, against pylance's."""

from __future__ import annotations

from pathlib import Path

import lance
import lance.query as pq
import pyarrow as pa
import pytest
from lance.indices import IndexConfig as PylanceConfig

import lancelet as ll
from lancelet import query
from lancelet.errors import (
    ArgumentError,
    FullTextQueryError,
    UnsupportedIndexError,
    UnsupportedOptionError,
)
from lancelet.indices import IndexConfig
from tests.versions import STORAGE_VERSION


@pytest.fixture
def path(tmp_path: Path) -> Path:
    table = pa.table({"x": range(5000), "s": [f"w{i % 9}" for i in range(5000)]})
    ll.write_dataset(table, tmp_path, data_storage_version=STORAGE_VERSION)
    return tmp_path


@pytest.mark.parametrize(
    ("kind", "params"),
    [("zonemap", {"rows_per_zone": 64}), ("BTREE", {}), ("bloomfilter", {"number_of_items": 100})],
)
def test_config_builds_what_pylance_builds(
    path: Path, tmp_path_factory: pytest.TempPathFactory, kind: str, params: dict[str, int]
) -> None:
    ll.dataset(path).create_scalar_index("x", IndexConfig(kind, params))
    other = tmp_path_factory.mktemp("pylance")
    lance.write_dataset(ll.dataset(path).to_table(), other, data_storage_version=STORAGE_VERSION)
    lance.dataset(other).create_scalar_index("x", PylanceConfig(kind, params))
    mine, theirs = ll.dataset(path), lance.dataset(other)
    assert (
        mine.stats.index_stats("x_idx")["indices"] == theirs.stats.index_stats("x_idx")["indices"]
    )
    assert [i["type"] for i in mine.list_indices()] == [i["type"] for i in theirs.list_indices()]
    assert lance.dataset(path).to_table(filter="x = 77")["x"].to_pylist() == [77]


def test_config_parameters_are_checked_as_keywords_are(path: Path) -> None:
    ds = ll.dataset(path)
    with pytest.raises(UnsupportedOptionError):
        ds.create_scalar_index("x", IndexConfig("btree", {"zone_size": 8}))
    with pytest.raises(UnsupportedOptionError):
        ds.create_scalar_index("x", IndexConfig("zonemap", {}), rows_per_zone=8)
    with pytest.raises(ArgumentError, match="JSON column"):  # a ValueError in pylance too
        ds.create_scalar_index("s", IndexConfig("json", {"target_index_type": "btree"}))
    with pytest.raises(UnsupportedIndexError):
        ds.create_scalar_index("s", "JSON")  # pylance: only in an IndexConfig
    assert ll.dataset(path).list_indices() == []


def test_query_objects_take_pylances_arguments() -> None:
    match = query.MatchQuery(
        "a b", "s", boost=2.0, fuzziness=1, operator=query.FullTextOperator.AND
    )
    phrase = query.PhraseQuery("a b", "s", slop=1)
    assert match.query_type() == query.FullTextQueryType.MATCH
    assert phrase.query_type() == query.FullTextQueryType.MATCH_PHRASE
    both = match & phrase
    assert isinstance(both, query.BooleanQuery)
    assert [o for o, _ in both.queries] == [query.Occur.MUST, query.Occur.MUST]
    either = match | phrase
    assert isinstance(either, query.BooleanQuery)
    assert [o for o, _ in either.queries] == [query.Occur.SHOULD, query.Occur.SHOULD]
    boost = query.BoostQuery(match, phrase, negative_boost=0.3)
    assert boost.query_type() == query.FullTextQueryType.BOOST
    multi = query.MultiMatchQuery("a", ["s", "t"], boosts=[1.0, 2.0])
    assert multi.query_type() == query.FullTextQueryType.MULTI_MATCH
    # pylance's enums have the same members and values
    for name in ("Occur", "FullTextOperator", "FullTextQueryType", "DocumentGranularity"):
        mine = {m.name: m.value for m in getattr(query, name)}
        assert mine == {m.name: m.value for m in getattr(pq, name)}


def test_query_objects_refuse_what_pylance_refuses() -> None:
    with pytest.raises(AttributeError):  # pylance: 'str' object has no attribute 'value'
        pq.MatchQuery("a", "s", operator="AND")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        query.MatchQuery("a", "s", operator="AND")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        query.BooleanQuery([("MUST", query.MatchQuery("a", "s"))])  # type: ignore[list-item]


def test_a_query_string_needs_an_inverted_index(path: Path) -> None:
    with pytest.raises(ValueError, match="INVERTED index"):
        lance.dataset(path).to_table(full_text_query="w1")
    with pytest.raises(FullTextQueryError, match="INVERTED index"):
        ll.dataset(path).to_table(full_text_query="w1")


@pytest.mark.parametrize("kind", ["BTREE", "BITMAP", "ZONEMAP", "BLOOMFILTER"])
def test_fragment_ids_are_refused_as_pylance_refuses_them(path: Path, kind: str) -> None:
    with pytest.raises(ValueError, match="create_index_uncommitted"):
        lance.dataset(path).create_scalar_index("x", kind, fragment_ids=[0])
    with pytest.raises(ValueError, match="create_index_uncommitted"):
        ll.dataset(path).create_scalar_index("x", kind, fragment_ids=[0])
    assert ll.dataset(path).list_indices() == []
