"""INVERTED indices lancelet builds: pylance answers full-text queries on them exactly
as on its own index over the same data, and their files hold what pylance's hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.query import PhraseQuery

import lancelet
from lancelet.errors import ArgumentError, UnsupportedOptionError
from lancelet.file import LanceFileReader
from lancelet.index.fts.reader import InvertedIndex
from tests.index.fts import _corpus
from tests.storage import local

pytestmark = pytest.mark.local_files("pylance reads the indices lancelet writes on local disk")

_TEXT = (
    "The quick brown fox jumps over the lazy dog while running dogs bark loudly at "
    "cats and the cat sleeps. Hello world, hello again! Walking walked walks; it is "
    "what it was. Jumping foxes are quicker than sleeping dogs"
)


def sentences(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(_TEXT.split(" "), int(rng.integers(0, 14)))) for _ in range(n)]


def twins(
    root: Path,
    docs: list[str],
    per_file: int | None = None,
    storage_version: str | None = None,
    **params: Any,
) -> tuple[lance.LanceDataset, lance.LanceDataset]:
    """The same rows twice: indexed by pylance, and by lancelet."""
    table = pa.table({"text": pa.array(docs, pa.string())})
    extra: dict[str, Any] = {"max_rows_per_file": per_file} if per_file else {}
    if storage_version:
        extra["data_storage_version"] = storage_version
    theirs = lance.write_dataset(table, str(root / "pylance"), **extra)
    theirs.create_scalar_index("text", "INVERTED", name="text_idx", **params)
    lance.write_dataset(table, str(root / "lancelet"), **extra)
    lancelet.dataset(str(root / "lancelet")).create_scalar_index(
        "text", "INVERTED", name="text_idx", **params
    )
    return lance.dataset(str(root / "pylance")), lance.dataset(str(root / "lancelet"))


def assert_same_answers(
    theirs: lance.LanceDataset, ours: lance.LanceDataset, queries: list[Any]
) -> None:
    for query in queries:
        want = theirs.to_table(full_text_query=query, with_row_id=True).sort_by("_rowid")
        got = ours.to_table(full_text_query=query, with_row_id=True).sort_by("_rowid")
        assert got.column("_rowid").equals(want.column("_rowid")), query
        np.testing.assert_allclose(
            got.column("_score").to_numpy(), want.column("_score").to_numpy(), rtol=0, atol=1e-6
        )
        # Top-k searches prune by the stored block max scores: the same best scores.
        top = [
            np.sort(ds.to_table(full_text_query=query, limit=7).column("_score").to_numpy())
            for ds in (theirs, ours)
        ]
        np.testing.assert_allclose(top[1], top[0], rtol=0, atol=1e-6)


QUERIES = ["dog", "the lazy dogs", "hello world", "walking", "cats sleep", "absent", "jump fox"]


def test_default_parameters(tmp_path: Path) -> None:
    theirs, ours = twins(tmp_path, sentences(3000, 1), per_file=1000)
    assert_same_answers(theirs, ours, QUERIES)
    assert ours.list_indices()[0]["type"] == "Inverted"
    assert (
        ours.stats.index_stats("text_idx")["indices"]
        == theirs.stats.index_stats("text_idx")["indices"]
    )
    # lancelet describes its index as pylance describes its own (sizes aside).
    (mine,) = lancelet.dataset(ours.uri).describe_indices()
    (want,) = theirs.describe_indices()
    for attribute in ("name", "type_url", "index_type", "num_rows_indexed", "fields", "details"):
        assert getattr(mine, attribute) == getattr(want, attribute), attribute
    assert lancelet.dataset(ours.uri).list_indices()[0]["type"] == "Inverted"
    stats = lancelet.dataset(ours.uri).stats.index_stats("text_idx")
    want_stats = theirs.stats.index_stats("text_idx")
    for key in ("index_type", "indices", "num_indexed_rows", "num_unindexed_rows"):
        assert stats[key] == want_stats[key], key


@pytest.mark.parametrize("storage_version", ["2.0", "2.2"])
def test_positions_and_phrases(tmp_path: Path, storage_version: str) -> None:
    theirs, ours = twins(tmp_path, sentences(2000, 2), None, storage_version, with_position=True)
    phrases = [PhraseQuery(p, "text") for p in ("lazy dog", "hello world", "quick brown fox")]
    assert_same_answers(theirs, ours, QUERIES + phrases)


def test_filters_off(tmp_path: Path) -> None:
    params = {
        "stem": False,
        "remove_stop_words": False,
        "ascii_folding": False,
        "lower_case": False,
    }
    theirs, ours = twins(tmp_path, sentences(1000, 3), **params)
    assert_same_answers(theirs, ours, ["The", "the dogs", "walking", "Hello"])


def test_deleted_rows(tmp_path: Path) -> None:
    theirs, ours = twins(tmp_path, sentences(1500, 4), per_file=500)
    for ds in (theirs, ours):
        ds.delete("text LIKE '%dog%' AND text LIKE '%cat%'")
    assert_same_answers(lance.dataset(theirs.uri), lance.dataset(ours.uri), QUERIES)


def read(path: str) -> pa.Table:
    return LanceFileReader(path).read_all().to_table()


def test_files_equal_pylance_files(tmp_path: Path) -> None:
    """Everything but the block max scores is byte for byte pylance's; those are safe
    upper bounds within a few ulps."""
    docs = _corpus.words(6000, seed=9)
    theirs, ours = twins(tmp_path, docs, with_position=True, **_corpus.PLAIN)
    want_dir, got_dir = _corpus.index_dir(theirs), _corpus.index_dir(ours)
    for name in ("part_0_docs.lance", "part_0_tokens.lance"):
        assert read(f"{got_dir}/{name}").equals(read(f"{want_dir}/{name}"))
    want, got = read(f"{want_dir}/part_0_invert.lance"), read(f"{got_dir}/part_0_invert.lance")
    for column in ("_length", "_impacts", "_compressed_position", "_position_block_offset"):
        assert got.column(column).equals(want.column(column)), column
    want_blocks = want.column("_posting").combine_chunks().flatten().to_pylist()
    got_blocks = got.column("_posting").combine_chunks().flatten().to_pylist()
    assert [b[4:] for b in got_blocks] == [b[4:] for b in want_blocks]
    want_scores = np.array([np.frombuffer(b[:4], "<f4")[0] for b in want_blocks])
    got_scores = np.array([np.frombuffer(b[:4], "<f4")[0] for b in got_blocks])
    ulps = got_scores.view(np.int32).astype(np.int64) - want_scores.view(np.int32)
    assert ulps.min() >= 1 and ulps.max() <= 7  # 4 ulps up from within ±3 of pylance
    maxima = got.column("_max_score").to_numpy()
    index = InvertedIndex.open(local(got_dir))
    part = index.partitions[0]
    for token_id in range(0, part.vocabulary_size(), 7):
        assert maxima[token_id] == part.block_max_scores(token_id).max()
    assert (
        read(f"{got_dir}/metadata.lance").schema.metadata
        == read(f"{want_dir}/metadata.lance").schema.metadata
    )


def test_no_tokens_writes_metadata_only(tmp_path: Path) -> None:
    theirs, ours = twins(tmp_path, ["the of", "", "and"])
    assert sorted(p.name for p in Path(_corpus.index_dir(ours)).iterdir()) == ["metadata.lance"]
    assert_same_answers(theirs, ours, ["the", "dog"])


def test_refusals(tmp_path: Path) -> None:
    lance.write_dataset(pa.table({"text": ["a b"], "n": [1]}), str(tmp_path / "d"))
    ds = lancelet.dataset(str(tmp_path / "d"))
    with pytest.raises(UnsupportedOptionError, match="tokenizer_kind"):
        ds.create_scalar_index("text", "INVERTED", tokenizer_kind="x")
    with pytest.raises(ArgumentError, match="block_size"):
        ds.create_scalar_index("text", "INVERTED", block_size=256)
    for version in (1, "v3"):
        with pytest.raises(ArgumentError, match="format_version"):
            ds.create_scalar_index("text", "INVERTED", format_version=version)
    ds.create_scalar_index("text", "INVERTED", format_version="v2")
    assert ds.list_indices()[0]["type"] == "Inverted"
    with pytest.raises(ArgumentError, match="with_position"):
        ds.create_scalar_index("text", "INVERTED", with_position="yes")
    with pytest.raises(lancelet.errors.UnsupportedTypeError):
        ds.create_scalar_index("n", "INVERTED")


def append(ds: lance.LanceDataset, docs: list[str]) -> lance.LanceDataset:
    return lance.write_dataset(
        pa.table({"text": pa.array(docs, pa.string())}), ds.uri, mode="append"
    )


def optimize_both(theirs: lance.LanceDataset, ours: lance.LanceDataset, **kwargs: Any) -> None:
    lance.dataset(theirs.uri).optimize.optimize_indices(**kwargs)
    lancelet.dataset(ours.uri).optimize.optimize_indices(**kwargs)
    want = lance.dataset(theirs.uri).stats.index_stats("text_idx")
    got = lancelet.dataset(ours.uri).stats.index_stats("text_idx")
    for key in ("indices", "num_indices", "num_indexed_rows", "num_indexed_rows_per_delta"):
        assert got[key] == want[key], key


def test_optimize_indices_adds_a_partition(tmp_path: Path) -> None:
    theirs, ours = twins(tmp_path, sentences(800, 5), with_position=True)
    for ds in (theirs, ours):
        append(ds, sentences(300, 6))
        lance.dataset(ds.uri).delete("text LIKE '%hello%'")
    optimize_both(theirs, ours)
    index = InvertedIndex.open(local(_corpus.index_dir(lance.dataset(ours.uri))))
    assert len(index.partitions) == 2  # the first build's, then the appended rows'
    assert np.all(index.partitions[1].row_ids >> np.uint64(32) == 1)
    phrases = [PhraseQuery("lazy dog", "text")]
    assert_same_answers(lance.dataset(theirs.uri), lance.dataset(ours.uri), QUERIES + phrases)
    # Extended again: the two old partitions become one, the new rows another.
    for ds in (theirs, ours):
        append(ds, sentences(150, 15))
    optimize_both(theirs, ours)
    index = InvertedIndex.open(local(_corpus.index_dir(lance.dataset(ours.uri))))
    assert len(index.partitions) == 2
    assert_same_answers(lance.dataset(theirs.uri), lance.dataset(ours.uri), QUERIES + phrases)
    # A delta segment of its own (num_indices_to_merge=0), then a second extension.
    for ds in (theirs, ours):
        append(ds, sentences(200, 7))
    optimize_both(theirs, ours, num_indices_to_merge=0)
    assert_same_answers(lance.dataset(theirs.uri), lance.dataset(ours.uri), QUERIES)
    for ds in (theirs, ours):
        append(ds, sentences(100, 8))
    optimize_both(theirs, ours)
    assert_same_answers(lance.dataset(theirs.uri), lance.dataset(ours.uri), QUERIES + phrases)


def test_compaction_remaps_documents(tmp_path: Path) -> None:
    # Small fragments with deletions are rewritten; the large one stays.
    theirs, ours = twins(tmp_path, sentences(600, 9), per_file=100, with_position=True)
    for ds in (theirs, ours):
        append(ds, sentences(900, 10))
        lance.dataset(ds.uri).delete("text LIKE '%hello%' OR text = ''")
    lance.dataset(theirs.uri).optimize.compact_files(target_rows_per_fragment=400)
    lancelet.dataset(ours.uri).optimize.compact_files(target_rows_per_fragment=400)
    theirs, ours = lance.dataset(theirs.uri), lance.dataset(ours.uri)
    # The same documents and tokens, in the same order (block max scores aside).
    want = InvertedIndex.open(local(_corpus.index_dir(theirs))).partitions[0]
    got = InvertedIndex.open(local(_corpus.index_dir(ours))).partitions[0]
    np.testing.assert_array_equal(got.row_ids, want.row_ids)
    assert int(got.row_ids.max() >> np.uint64(32)) >= 7  # moved into new fragments
    np.testing.assert_array_equal(got.num_tokens, want.num_tokens)
    assert got.tokens() == want.tokens()
    for _, token_id in want.tokens():
        for mine, theirs_ in zip(got.postings(token_id), want.postings(token_id), strict=True):
            np.testing.assert_array_equal(mine, theirs_)
    phrases = [PhraseQuery("lazy dog", "text")]
    assert_same_answers(theirs, ours, [*QUERIES, "hello", *phrases])


def test_lists_of_strings_and_large_strings(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    rows: list[list[str | None] | None] = []
    for i, text in enumerate(sentences(600, 12)):
        parts = text.split(" ")
        cut = int(rng.integers(0, len(parts) + 1))
        rows.append(None if i % 37 == 0 else [" ".join(parts[:cut]), None, " ".join(parts[cut:])])
    for dtype, name in ((pa.list_(pa.string()), "lists"), (pa.large_string(), "large")):
        values = rows if name == "lists" else [" ".join(filter(None, r or [])) for r in rows]
        table = pa.table({"text": pa.array(values, dtype)})
        theirs = lance.write_dataset(table, str(tmp_path / f"{name}_pylance"))
        theirs.create_scalar_index("text", "INVERTED", with_position=True)
        ours = lance.write_dataset(table, str(tmp_path / f"{name}_lancelet"))
        lancelet.dataset(ours.uri).create_scalar_index("text", "INVERTED", with_position=True)
        phrases = [PhraseQuery(p, "text") for p in ("lazy dog", "hello world", "the cat")]
        assert_same_answers(theirs, lance.dataset(ours.uri), QUERIES + phrases)


def test_stable_row_ids(tmp_path: Path) -> None:
    table = pa.table({"text": pa.array(sentences(900, 13), pa.string())})
    built = []
    for name in ("pylance", "lancelet"):
        ds = lance.write_dataset(
            table, str(tmp_path / name), max_rows_per_file=300, enable_stable_row_ids=True
        )
        ds.delete("text LIKE '%cat%'")
        ds.optimize.compact_files(target_rows_per_fragment=1000)  # rows move, ids stay
        built.append(lance.dataset(ds.uri))
    theirs, ours = built
    theirs.create_scalar_index("text", "INVERTED", name="text_idx")
    lancelet.dataset(ours.uri).create_scalar_index("text", "INVERTED", name="text_idx")
    ours = lance.dataset(ours.uri)
    got = InvertedIndex.open(local(_corpus.index_dir(ours))).partitions[0].row_ids
    want = InvertedIndex.open(local(_corpus.index_dir(theirs))).partitions[0].row_ids
    np.testing.assert_array_equal(got, want)  # stable row ids, not addresses
    assert_same_answers(theirs, ours, QUERIES)


def test_deferred_compaction_leaves_the_index(tmp_path: Path) -> None:
    theirs, ours = twins(tmp_path, sentences(600, 14), per_file=100)
    for ds in (theirs, ours):
        lance.dataset(ds.uri).delete("text LIKE '%hello%'")
    lance.dataset(theirs.uri).optimize.compact_files(
        target_rows_per_fragment=400, defer_index_remap=True
    )
    lancelet.dataset(ours.uri).optimize.compact_files(
        target_rows_per_fragment=400, defer_index_remap=True
    )
    theirs, ours = lance.dataset(theirs.uri), lance.dataset(ours.uri)
    manifest = lancelet.dataset(ours.uri)._manifest
    (segment,) = [i for i in manifest.indices if i.name == "text_idx"]
    assert sorted(segment.fragment_bitmap) == list(range(6))  # still the old fragments
    assert_same_answers(theirs, ours, QUERIES)


@pytest.mark.parametrize(
    "params",
    [
        {"custom_stop_words": ["dog", "cat"], "max_token_length": None},
        {"base_tokenizer": "whitespace", "with_position": True, "max_token_length": 6},
    ],
)
def test_recorded_parameters(tmp_path: Path, params: dict[str, Any]) -> None:
    theirs, ours = twins(tmp_path, sentences(300, 16), **params)
    assert_same_answers(theirs, ours, QUERIES)
    want_stats = theirs.stats.index_stats("text_idx")["indices"]
    assert lancelet.dataset(ours.uri).stats.index_stats("text_idx")["indices"] == want_stats
    assert ours.stats.index_stats("text_idx")["indices"] == want_stats
    (mine,), (want,) = lancelet.dataset(ours.uri).describe_indices(), theirs.describe_indices()
    assert mine.details == want.details
    manifests = [lancelet.dataset(ds.uri)._manifest.indices[0] for ds in (ours, theirs)]
    assert manifests[0].index_details == manifests[1].index_details
