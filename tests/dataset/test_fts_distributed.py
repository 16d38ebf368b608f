"""Distributed INVERTED builds (``create_scalar_index(..., fragment_ids=,
index_uuid=)``, ``merge_index_metadata``, a detail-less ``CreateIndex`` commit), as
pylance 14's own tests make them: lancelet's and pylance's builds over the same
multi-fragment data, each searched by both libraries, against pylance searching its
own build."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import lance
import lance.query as pq
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lance.dataset import Index as PylanceIndex

import lancelet as ll
from lancelet import io
from lancelet import query as lq
from lancelet.errors import UnsupportedFunctionError
from lancelet.index.fts.reader import InvertedIndex
from tests.versions import STORAGE_VERSION

WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "hello",
    "world",
    "and",
    "of",
    "a",
    "zebra",
    "yak",
    "sleeps",
]
PARAMS: list[dict[str, Any]] = [{}, {"with_position": True}, {"remove_stop_words": False}]
MATCHES = ["fox", "quick dog", "hello world zebra", "the", "sleeping foxes", "nothing"]
PHRASES = ["lazy dog", "quick brown fox", "the zebra"]


def texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 9, n)
    return [" ".join(rng.choice(WORDS, k)) for k in lengths]


def write_both(root: Path, text: list[str], rows_per_file: int) -> tuple[str, str]:
    """The same table written by each library, in the same fragments."""
    table = pa.table({"id": np.arange(len(text)), "text": text})
    ours, theirs = str(root / "ours"), str(root / "theirs")
    ll.write_dataset(table, ours, max_rows_per_file=rows_per_file)
    lance.write_dataset(table, theirs, max_rows_per_file=rows_per_file)
    return ours, theirs


def build_distributed(lib: Any, path: str, **params: Any) -> str:
    """pylance's ``build_distributed_fts_index`` helper, through ``lib``; the uuid.
    Fragments are built last first: the merge orders them itself."""
    ds = lib.dataset(path)
    index_id = str(uuid.uuid4())
    fragment_ids = [f.fragment_id for f in ds.get_fragments()]
    for fragment_id in reversed(fragment_ids):
        returned = ds.create_scalar_index(
            column="text",
            index_type="INVERTED",
            name="text_idx",
            replace=False,
            index_uuid=index_id,
            fragment_ids=[fragment_id],
            **params,
        )
        assert returned is None
    assert lib.dataset(path).version == ds.version == 1  # nothing committed
    ds.merge_index_metadata(index_id, index_type="INVERTED")
    index = _index_class(lib)(
        uuid=index_id,
        name="text_idx",
        fields=[ds.schema.get_field_index("text")],
        dataset_version=ds.version,
        fragment_ids=set(fragment_ids),
        index_version=0,
    )
    lib.LanceDataset.commit(
        path,
        lib.LanceOperation.CreateIndex(new_indices=[index], removed_indices=[]),
        read_version=ds.version,
    )
    return index_id


def _index_class(lib: Any) -> Any:
    return PylanceIndex if lib is lance else ll.Index


def scored(table: pa.Table) -> list[tuple[int, float]]:
    return sorted(zip(table["_rowid"].to_pylist(), table["_score"].to_pylist(), strict=True))


def same(theirs: pa.Table, ours: pa.Table) -> None:
    assert theirs.num_rows == ours.num_rows
    for (r1, s1), (r2, s2) in zip(scored(theirs), scored(ours), strict=True):
        assert r1 == r2
        assert abs(s1 - s2) <= 1e-6


def search(lib: Any, path: str, query: Any) -> pa.Table:
    return lib.dataset(path).to_table(full_text_query=query, columns=["id"], with_row_id=True)


def queries(lib: Any, with_position: bool) -> list[Any]:
    found: list[Any] = list(MATCHES)
    module = pq if lib is lance else lq
    found += [module.MatchQuery(m, "text") for m in MATCHES[:3]]
    if with_position:
        found += [module.PhraseQuery(p, "text") for p in PHRASES]
    return found


def index_dir(path: str, index_id: str) -> io.Place:
    return io.Place(io.FileIO.for_uri(path, None), os.path.join(path, "_indices", index_id))


def same_merged(ours: str, our_id: str, theirs: str, their_id: str) -> None:
    """One merged partition, documents and tokens in the order pylance merges them."""
    mine, pylance_s = (
        InvertedIndex.open(index_dir(p, u)) for p, u in ((ours, our_id), (theirs, their_id))
    )
    assert [p.number for p in mine.partitions] == [p.number for p in pylance_s.partitions]
    assert mine.params == pylance_s.params
    for a, b in zip(mine.partitions, pylance_s.partitions, strict=True):
        if STORAGE_VERSION == "2.0":
            # Both merge the smallest staged partition first, by file size, and
            # lancelet's 2.0 files are not pylance's size: the same documents and
            # tokens, in an order of their own (scores do not depend on it).
            mine_docs = sorted(zip(a.row_ids.tolist(), a.num_tokens.tolist(), strict=True))
            theirs = sorted(zip(b.row_ids.tolist(), b.num_tokens.tolist(), strict=True))
            assert mine_docs == theirs
            assert sorted(t for t, _ in a.tokens()) == sorted(t for t, _ in b.tokens())
            continue
        assert np.array_equal(a.row_ids, b.row_ids)
        assert np.array_equal(a.num_tokens, b.num_tokens)
        assert a.tokens() == b.tokens()


@pytest.mark.local_files(
    "reads the index files on local disk (staging folder, sizes, merged partition)"
)
@pytest.mark.parametrize("params", PARAMS, ids=["default", "with_position", "stop_words"])
def test_both_libraries_on_both_builds(tmp_path: Path, params: dict[str, Any]) -> None:
    ours, theirs = write_both(tmp_path, texts(60, 1), 16)
    our_id = build_distributed(ll, ours, **params)
    their_id = build_distributed(lance, theirs, **params)
    with_position = params.get("with_position", False)
    for reference, ours_query in zip(
        queries(lance, with_position), queries(ll, with_position), strict=True
    ):
        expected = search(lance, theirs, reference)
        same(expected, search(lance, ours, reference))  # pylance on lancelet's build
        same(expected, search(ll, ours, ours_query))
        same(expected, search(ll, theirs, ours_query))
    same_merged(ours, our_id, theirs, their_id)
    # The staged files are gone after the merge, in both.
    for path, index_id in ((ours, our_id), (theirs, their_id)):
        assert not os.listdir(os.path.join(path, "_indices", index_id, "staging"))


@pytest.mark.local_files(
    "reads the index files on local disk (staging folder, sizes, merged partition)"
)
def test_listed_as_pylance_lists_it(tmp_path: Path) -> None:
    ours, theirs = write_both(tmp_path, texts(40, 2), 16)
    build_distributed(ll, ours)
    build_distributed(lance, theirs)
    for path in (ours, theirs):
        expected = lance.dataset(path)
        got = ll.dataset(path)
        (want,), (have,) = expected.describe_indices(), got.describe_indices()
        assert (have.type_url, have.index_type, have.details) == ("", "Unknown", {})
        assert (want.type_url, want.index_type, want.details) == ("", "Unknown", {})
        assert have.num_rows_indexed == want.num_rows_indexed
        # The commit records the index directory's files, in both libraries.
        assert have.total_size_bytes == want.total_size_bytes
        assert want.total_size_bytes == sum(
            os.path.getsize(os.path.join(root, f))
            for root, _, files in os.walk(os.path.join(path, "_indices"))
            for f in files
        )
        assert [i["type"] for i in got.list_indices()] == ["Unknown"]
        stats, want_stats = (
            got.stats.index_stats("text_idx"),
            expected.stats.index_stats("text_idx"),
        )
        for key in ("index_type", "indices", "num_indexed_rows", "num_indexed_fragments"):
            assert stats[key] == want_stats[key]


def test_a_later_commit_keeps_the_index_undetailed(tmp_path: Path) -> None:
    ours, _ = write_both(tmp_path, texts(40, 3), 16)
    build_distributed(ll, ours)
    ll.write_dataset(pa.table({"id": [99], "text": ["fox again"]}), ours, mode="append")
    assert lance.dataset(ours).describe_indices()[0].type_url == ""
    expected = search(lance, ours, "fox")
    same(expected, search(ll, ours, "fox"))


@pytest.mark.local_files(
    "reads the index files on local disk (staging folder, sizes, merged partition)"
)
@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 10_000), rows=st.integers(1, 60), per_file=st.integers(3, 20))
def test_random_data(tmp_path_factory: Any, seed: int, rows: int, per_file: int) -> None:
    root = tmp_path_factory.mktemp("random")
    ours, theirs = write_both(root, texts(rows, seed), per_file)
    our_id = build_distributed(ll, ours, with_position=True)
    their_id = build_distributed(lance, theirs, with_position=True)
    same_merged(ours, our_id, theirs, their_id)
    for query in ("fox", "lazy dog", "hello zebra yak"):
        expected = search(lance, theirs, query)
        same(expected, search(lance, ours, query))
        same(expected, search(ll, ours, query))
    same(
        search(lance, theirs, pq.PhraseQuery("lazy dog", "text")),
        search(ll, theirs, lq.PhraseQuery("lazy dog", "text")),
    )


def test_merge_errors(tmp_path: Path) -> None:
    ours, theirs = write_both(tmp_path, texts(20, 4), 8)
    for lib, path in ((ll, ours), (lance, theirs)):
        ds = lib.dataset(path)
        unknown = str(uuid.uuid4())
        with pytest.raises(ValueError, match="No partition metadata files"):
            ds.merge_index_metadata(unknown, index_type="INVERTED")
        os.makedirs(os.path.join(path, "_indices", unknown, "staging"))
        with pytest.raises(ValueError, match="No partition metadata files"):
            ds.merge_index_metadata(unknown, index_type="INVERTED")
        with pytest.raises(ValueError):
            ds.create_scalar_index("text", "INVERTED", index_uuid=unknown, fragment_ids=[7])
        mixed = str(uuid.uuid4())
        ds.create_scalar_index("text", "INVERTED", index_uuid=mixed, fragment_ids=[0])
        ds.create_scalar_index(
            "text", "INVERTED", index_uuid=mixed, fragment_ids=[1], with_position=True
        )
        with pytest.raises(ValueError):
            ds.merge_index_metadata(mixed, index_type="INVERTED")
        assert lib.dataset(path).version == 1


@pytest.mark.parametrize("kind", ["BTREE", "BITMAP"])
def test_fragment_ids_of_other_types(tmp_path: Path, kind: str) -> None:
    ours, theirs = write_both(tmp_path, texts(20, 5), 8)
    message = f"{kind} distributed indexing uses create_index_uncommitted"
    for lib, path in ((ll, ours), (lance, theirs)):
        with pytest.raises(ValueError, match=message):
            lib.dataset(path).create_scalar_index(
                "id", kind, index_uuid=str(uuid.uuid4()), fragment_ids=[0]
            )


def test_merge_of_other_types_refused(tmp_path: Path) -> None:
    ours, _ = write_both(tmp_path, texts(20, 6), 8)
    with pytest.raises(UnsupportedFunctionError, match="merge_index_metadata"):
        ll.dataset(ours).merge_index_metadata(str(uuid.uuid4()), index_type="BTREE")
