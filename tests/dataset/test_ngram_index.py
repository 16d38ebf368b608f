"""NGRAM indices: lancelet writes pylance's file byte for byte, pylance answers
``contains`` filters from it, and text lancelet cannot tokenize as pylance does is
refused.  The ``contains`` filter itself is checked against pylance and pyarrow."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelet as ll
from lancelet.errors import FilterError, UnsupportedTypeError
from lancelet.file import LanceFileReader
from lancelet.index import ngram
from tests.storage import list_names
from tests.versions import STORAGE_VERSION

WORDS = [
    "Apple pie",
    None,
    "apples",
    "xYz-12 ab",
    "x",
    "hello-world 123",
    "",
    "AAAA",
    "banana bread",
    None,
    "zz9",
    "0123456789",
    "PINEapple_Juice",
]


def _table(string_type: pa.DataType | None = None) -> pa.Table:
    string_type = string_type or pa.string()
    return pa.table({"s": pa.array(WORDS * 3, string_type), "i": range(3 * len(WORDS))})


def _build(lib: Any, path: Path, table: pa.Table, stable: bool) -> None:
    lib.write_dataset(
        table,
        path,
        max_rows_per_file=10,
        enable_stable_row_ids=stable,
        data_storage_version=STORAGE_VERSION,
    )
    lib.dataset(path).delete("i = 2 OR i = 17")
    lib.dataset(path).create_scalar_index("s", index_type="NGRAM")


def _postings(path: Path) -> pa.Table:
    (uid,) = list_names(os.path.join(path, "_indices"))
    reader = LanceFileReader(os.path.join(path, "_indices", uid, "ngram_postings.lance"))
    table: pa.Table = reader.read_all().to_table()
    return table


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("string_type", [pa.string(), pa.large_string()])
def test_index_file_is_pylances(tmp_path: Path, stable: bool, string_type: pa.DataType) -> None:
    table = _table(string_type)
    _build(ll, tmp_path / "mine", table, stable)
    _build(lance, tmp_path / "theirs", table, stable)
    mine, theirs = _postings(tmp_path / "mine"), _postings(tmp_path / "theirs")
    assert mine.schema.equals(theirs.schema, check_metadata=True)
    assert mine.equals(theirs)
    ours, pylances = ll.dataset(tmp_path / "mine"), lance.dataset(tmp_path / "theirs")
    assert (
        ours.stats.index_stats("s_idx")["indices"] == pylances.stats.index_stats("s_idx")["indices"]
    )
    assert [i["type"] for i in ours.list_indices()] == ["NGram"]


FILTERS = ["contains(s, 'apple')", "contains(s, 'APP')", "contains(s, '12 a')", "contains(s, 'zz')"]


@pytest.mark.parametrize("sql", FILTERS)
def test_pylance_answers_from_lancelets_index(tmp_path: Path, sql: str) -> None:
    table = _table()
    ll.write_dataset(table, tmp_path, max_rows_per_file=10, data_storage_version=STORAGE_VERSION)
    ll.dataset(tmp_path).create_scalar_index("s", "NGRAM")
    needle = sql.split("'")[1]
    want = table.filter(pc.match_substring(table["s"], needle))["i"].to_pylist()
    assert sorted(lance.dataset(tmp_path).to_table(filter=sql)["i"].to_pylist()) == want
    assert sorted(ll.dataset(tmp_path).to_table(filter=sql)["i"].to_pylist()) == want


def test_new_rows_get_a_delta_segment(tmp_path: Path) -> None:
    ll.write_dataset(_table(), tmp_path, data_storage_version=STORAGE_VERSION)
    ds = ll.dataset(tmp_path)
    ds.create_scalar_index("s", "NGRAM")
    ds.insert(pa.table({"s": ["grapefruit", None], "i": [100, 101]}))
    ds.optimize.optimize_indices(num_indices_to_merge=0)
    assert len(ll.dataset(tmp_path).list_indices()) == 2
    py = lance.dataset(tmp_path)
    assert py.to_table(filter="contains(s, 'efru')")["i"].to_pylist() == [100]
    assert py.to_table(filter="s IS NULL").num_rows == 7


def test_non_ascii_text_is_refused(tmp_path: Path) -> None:
    ll.write_dataset(pa.table({"s": ["plain", "Ünïcode"]}), tmp_path)
    ds = ll.dataset(tmp_path)
    with pytest.raises(UnsupportedTypeError, match="ASCII"):
        ds.create_scalar_index("s", "NGRAM")
    assert ll.dataset(tmp_path).list_indices() == []
    assert list_names(os.path.join(tmp_path, "_indices")) == []


def test_non_string_column_is_refused(tmp_path: Path) -> None:
    ll.write_dataset(pa.table({"n": [1, 2]}), tmp_path)
    with pytest.raises(UnsupportedTypeError):
        ll.dataset(tmp_path).create_scalar_index("n", "NGRAM")


CONTAINS = [
    "contains(s, 'apple')",
    "contains(s, '')",
    "NOT contains(s, 'apple')",
    "contains(s, NULL)",
    "contains(s, 'App')",
    "contains(s, 'apple') IS NULL",
]


@pytest.mark.parametrize("sql", CONTAINS)
def test_contains_filter_matches_pylance(tmp_path: Path, sql: str) -> None:
    table = pa.table({"s": ["Apple", "apple pie", None, "", "xapplex", "APPLE"], "i": range(6)})
    ll.write_dataset(table, tmp_path / "a", data_storage_version=STORAGE_VERSION)
    lance.write_dataset(table, tmp_path / "b", data_storage_version=STORAGE_VERSION)
    mine = ll.dataset(tmp_path / "a").to_table(filter=sql)
    assert mine == lance.dataset(tmp_path / "b").to_table(filter=sql)


@pytest.mark.parametrize("sql", ["contains(s, s)", "contains(i, '1')", "contains(s, 1)"])
def test_contains_forms_lancelet_lacks_are_refused(tmp_path: Path, sql: str) -> None:
    ll.write_dataset(pa.table({"s": ["a"], "i": [1]}), tmp_path)
    with pytest.raises(FilterError):
        ll.dataset(tmp_path).to_table(filter=sql)


def _random_words(seed: int, n: int, alphabet: str) -> list[str | None]:
    rng = np.random.default_rng(seed)
    letters = np.array(list(alphabet))
    out: list[str | None] = []
    for i in range(n):
        out.append(None if i % 23 == 0 else "".join(rng.choice(letters, rng.integers(0, 10))))
    return out


NEEDLES = ["abc", "ABC", "b1c", "a b", "zz", "0a1", "cab", "aaa", "Ünï", "ünïc", "c-a", "bca1"]


@pytest.mark.parametrize("builder", ["lancelet", "pylance"])
@pytest.mark.parametrize("stable", [False, True])
def test_contains_is_narrowed_by_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, builder: str, stable: bool
) -> None:
    # pylance also indexes text lancelet refuses to (non-ASCII, which it folds)
    alphabet = "abcABC01 -" if builder == "lancelet" else "abcABC01 -Üüïß"
    table = pa.table({"s": _random_words(5, 4000, alphabet), "i": range(4000)})
    lib: Any = ll if builder == "lancelet" else lance
    lib.write_dataset(
        table,
        tmp_path,
        max_rows_per_file=1500,
        enable_stable_row_ids=stable,
        data_storage_version=STORAGE_VERSION,
    )
    lib.dataset(tmp_path).delete("i % 9 = 4")
    lib.dataset(tmp_path).create_scalar_index("s", "NGRAM")
    live = table.filter(pa.array(np.arange(4000) % 9 != 4))
    answered: list[bool] = []
    search = ngram.NGramIndex.search

    def spy(index: ngram.NGramIndex, query: Any) -> Any:
        found = search(index, query)
        answered.append(found is not None)
        return found

    monkeypatch.setattr(ngram.NGramIndex, "search", spy)
    ds = ll.dataset(tmp_path)
    for needle in NEEDLES:
        sql = f"contains(s, '{needle}')"
        seen: list[ll.ScanStatistics] = []
        got = ds.scanner(filter=sql, scan_stats_callback=seen.append).to_table()
        want = live.filter(pc.match_substring(live["s"], needle))["i"].to_pylist()
        assert sorted(got["i"].to_pylist()) == want, needle
        assert sorted(lance.dataset(tmp_path).to_table(filter=sql)["i"].to_pylist()) == want
        assert seen[0].index_comparisons == 1
        # looked up when the needle has a trigram of ASCII letters and digits
        assert answered[-1] == (needle not in ("zz", "a b", "c-a", "Ünï", "ünïc")), needle
