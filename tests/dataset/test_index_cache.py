"""The index cache against pylance: ``index_cache_size_bytes`` bounds it (0 keeps
nothing), ``_ds.index_cache_hit_rate()`` and ``index_cache_entry_count()`` count
lookups as pylance's do (0.0 before any, rising with repeated queries, shared by the
datasets of one session), the deprecated ``index_cache_size`` warns in pylance's words
and counts 20 MiB per entry; and the cache itself is a byte-bounded LRU (checked
against a model)."""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lancelet as ll
from lancelet.transaction.index_cache import IndexCache, estimated_bytes

DIMENSION = 16
LIBS = [pytest.param(ll, id="lancelet"), pytest.param(lance, id="pylance")]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("cache") / "ds"
    vectors = np.random.default_rng(0).standard_normal((1024, DIMENSION), np.float32)
    table = pa.table(
        {"vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMENSION)}
    )
    dataset = lance.write_dataset(table, root)
    dataset.create_index("vector", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=2)
    return str(root)


def _query(dataset: Any, times: int = 1, seed: int = 1) -> None:
    q = np.random.default_rng(seed).standard_normal(DIMENSION)
    for _ in range(times):
        dataset.to_table(nearest={"column": "vector", "q": q, "nprobes": 4})


@pytest.mark.parametrize("lib", LIBS)
def test_a_cache_of_zero_bytes_never_hits(lib: Any, indexed: str) -> None:
    dataset = lib.dataset(indexed, index_cache_size_bytes=0)
    assert dataset._ds.index_cache_hit_rate() == 0.0
    _query(dataset, 3)
    assert dataset._ds.index_cache_hit_rate() == 0.0
    assert dataset._ds.index_cache_entry_count() == 0
    assert dataset.session().index_cache_size_bytes() == 0


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("size", [None, 20 * 1024 * 1024])
def test_repeated_queries_hit(lib: Any, indexed: str, size: int | None) -> None:
    dataset = lib.dataset(indexed, index_cache_size_bytes=size)
    assert dataset._ds.index_cache_hit_rate() == 0.0
    _query(dataset)
    first = dataset._ds.index_cache_hit_rate()
    assert first < 1.0  # the index was read: a miss
    _query(dataset, 40)
    assert dataset._ds.index_cache_hit_rate() > max(first, 0.95)
    assert dataset._ds.index_cache_entry_count() > 0
    assert dataset.session().index_cache_size_bytes() > 0


@pytest.mark.parametrize("lib", LIBS)
def test_datasets_of_one_session_share_the_cache(lib: Any, indexed: str) -> None:
    first = lib.dataset(indexed)
    _query(first)
    second = lib.dataset(indexed, session=first.session())
    before = second._ds.index_cache_hit_rate()
    _query(second)
    assert second._ds.index_cache_hit_rate() > before
    assert first._ds.index_cache_hit_rate() == second._ds.index_cache_hit_rate()
    alone = lib.dataset(indexed)
    assert alone._ds.index_cache_hit_rate() == 0.0


def test_a_cache_smaller_than_the_index_keeps_nothing(indexed: str) -> None:
    dataset = ll.dataset(indexed, index_cache_size_bytes=1000)
    _query(dataset, 3)
    assert dataset._ds.index_cache_hit_rate() == 0.0
    assert dataset._ds.index_cache_entry_count() == 0


def _warnings_of(lib: Any, uri: str, **kwargs: Any) -> tuple[Any, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = lib.dataset(uri, **kwargs)
    return dataset, caught


def _constructed(lib: Any, uri: str, **kwargs: Any) -> tuple[Any, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = lib.LanceDataset(uri, **kwargs)
    return dataset, caught


@pytest.mark.local_files("pylance opens the dataset's local files")
@pytest.mark.parametrize("entries", [0, 1, 256])
def test_index_cache_size_is_deprecated_as_in_pylance(indexed: str, entries: int) -> None:
    theirs, their_warnings = _warnings_of(lance, indexed, index_cache_size=entries)
    ours, our_warnings = _warnings_of(ll, indexed, index_cache_size=entries)
    assert [w.category for w in our_warnings] == [w.category for w in their_warnings]
    assert [str(w.message) for w in our_warnings] == [str(w.message) for w in their_warnings]
    for lib in (lance, ll):  # the warning names the caller of LanceDataset(...)
        _, caught = _constructed(lib, indexed, index_cache_size=entries)
        assert [w.filename for w in caught] == [__file__]
    _query(theirs, 3)
    _query(ours, 3)
    # 0 entries: no cache; else 20 MiB each, room for this index
    assert (ours._ds.index_cache_hit_rate() == 0.0) == (theirs._ds.index_cache_hit_rate() == 0.0)


@pytest.mark.parametrize("lib", LIBS)
def test_the_size_in_bytes_wins_over_entries(lib: Any, indexed: str) -> None:
    off, _ = _warnings_of(lib, indexed, index_cache_size=100, index_cache_size_bytes=0)
    _query(off, 3)
    assert off._ds.index_cache_hit_rate() == 0.0
    on, _ = _warnings_of(lib, indexed, index_cache_size=0, index_cache_size_bytes=1 << 30)
    _query(on, 3)
    assert on._ds.index_cache_hit_rate() > 0.0


@pytest.mark.parametrize("keyword", ["index_cache_size_bytes", "index_cache_size"])
@pytest.mark.parametrize(("value", "error"), [(-1, OverflowError), (1.5, TypeError)])
def test_bad_sizes_raise_as_in_pylance(
    indexed: str, keyword: str, value: Any, error: type[Exception]
) -> None:
    for lib in (lance, ll):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(error):
                lib.dataset(indexed, **{keyword: value})


class _Sized:
    def __init__(self, size: int) -> None:
        self.buffer = np.zeros(size, np.uint8)


@settings(max_examples=60, deadline=None)
@given(
    capacity=st.integers(0, 4000),
    steps=st.lists(st.tuples(st.booleans(), st.integers(0, 5), st.integers(0, 2000)), max_size=40),
)
def test_the_cache_is_a_byte_bounded_lru(capacity: int, steps: list[tuple[bool, int, int]]) -> None:
    cache = IndexCache(capacity)
    model: OrderedDict[int, int] = OrderedDict()  # key -> size, least recent first
    hits = misses = 0
    for store, key, size in steps:
        if store:
            value = _Sized(size)
            cache.store("t", key, value)
            model.pop(key, None)
            cost = estimated_bytes(value)
            if cost <= capacity:
                model[key] = cost
                while sum(model.values()) > capacity:
                    model.popitem(last=False)
        else:
            found = cache.lookup("t", key) is not None
            assert found == (key in model)
            if found:
                model.move_to_end(key)
            hits, misses = hits + found, misses + (not found)
        assert cache.entry_count() == len(model)
        assert cache.size_bytes == sum(model.values()) <= max(capacity, 0)
    lookups = hits + misses
    assert cache.hit_rate() == (hits / lookups if lookups else 0.0)


def test_an_entry_costs_its_buffers() -> None:
    assert estimated_bytes(_Sized(10_000)) >= 10_000
    assert estimated_bytes(pa.array(np.zeros(1000, np.int64))) == 8000


@pytest.mark.parametrize(("value", "error"), [(-1, OverflowError), (1.5, TypeError)])
def test_bad_session_sizes_raise_as_in_pylance(value: Any, error: type[Exception]) -> None:
    for session in (lance.Session, ll.Session):
        with pytest.raises(error):
            session(index_cache_size_bytes=value)


def test_an_opened_btree_is_sized_by_its_arrays(tmp_path: Any) -> None:
    """An opened BTREE counts its lookup table (min, max, null count, page index per
    page of 4,096 values) and its keys, not the pages it has not read."""
    uri = str(tmp_path / "btree")
    rows = 2_000_000  # enough pages that their arrays outweigh the file's metadata
    lance.write_dataset(pa.table({"k": np.arange(rows, dtype=np.int64)}), uri)
    lance.dataset(uri).create_scalar_index("k", "BTREE")
    dataset = ll.dataset(uri)
    assert dataset.to_table(filter="k = 5").num_rows == 1
    pages = -(-rows // 4096)
    size = dataset.session().index_cache_size_bytes()
    assert pages * (8 + 8 + 4 + 4 + 8 + 8) <= size < 64 * 1024 + pages * 64
