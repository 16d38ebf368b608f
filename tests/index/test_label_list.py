"""LABEL_LIST: pylance's indices read by lancelet, lancelet's files read by pylance."""

from __future__ import annotations

import os
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet
from lancelet.errors import CorruptIndexError
from lancelet.expr import Equals, HasAll, HasAny
from lancelet.file import LanceFileReader
from lancelet.index._files import IndexDetails
from lancelet.index.label_list import LabelListIndex, label_list_details, write_label_list
from tests.index._pylance import Built, same_rows, swap_index
from tests.storage import local

QUERIES = [["red"], ["red", "blue"], ["lime", "nope"], ["nope"], ["green", "cyan", "blue"]]


def _expected(built: Built, values: list[str], every: bool) -> np.ndarray:
    lists = built.live["tags"].to_pylist()
    rows = built.live["_rowaddr"].to_numpy()
    test = all if every else any
    keep = [t is not None and test(v in t for v in values) for t in lists]
    return np.sort(rows[np.array(keep, dtype=bool)])


def _sql(values: list[str], every: bool) -> str:
    name = "array_has_all" if every else "array_has_any"
    return f"{name}(tags, [{', '.join(repr(v) for v in values)}])"


def test_pylance_label_list_answers_exactly(built: Built) -> None:
    index = LabelListIndex.open(local(built.index_dir("tags")))
    for values in QUERIES:
        for every, kind in ((False, HasAny), (True, HasAll)):
            result = index.search(kind("tags", pa.array(values)))
            assert result is not None and result.exact
            assert np.array_equal(result.addresses, _expected(built, values, every)), values
    ds = lance.dataset(built.path)
    assert index.statistics() == ds.stats.index_stats("tags_idx")["indices"][0]
    null_lists = [t is None for t in built.live["tags"].to_pylist()]
    expected_nulls = np.sort(built.live["_rowaddr"].to_numpy()[np.array(null_lists)])
    nulls = index.null_list_addresses()
    assert nulls is not None and np.array_equal(nulls, expected_nulls)


def test_details_match_pylance(built: Built) -> None:
    meta = next(m for m in lancelet.dataset(built.path)._manifest.indices if m.name == "tags_idx")
    details = label_list_details()
    assert (meta.index_details.type_url, meta.index_details.value) == (details.type_url, b"")
    assert meta.index_version == details.index_version


def test_writer_matches_pylance_file(built: Built, tmp_path: Path) -> None:
    theirs = LanceFileReader(os.path.join(built.index_dir("tags"), "bitmap_page_lookup.lance"))
    value_type = built.live.schema.field("tags").type
    write_label_list(built.batches("tags"), local(tmp_path), value_type, built.version)
    mine = LanceFileReader(tmp_path / "bitmap_page_lookup.lance")
    assert theirs.read_all().to_table().equals(mine.read_all().to_table())
    assert theirs.schema.equals(mine.schema, check_metadata=True)
    assert theirs.read_global_buffer(1) == mine.read_global_buffer(1)
    m1, m2 = theirs.metadata(), mine.metadata()
    assert (m1.major_version, m1.minor_version) == (m2.major_version, m2.minor_version)


def test_pylance_reads_lancelet_label_list(built: Built, tmp_path: Path) -> None:
    value_type = built.live.schema.field("tags").type

    def write(directory: str) -> IndexDetails:
        return write_label_list(built.batches("tags"), local(directory), value_type, built.version)

    path = swap_index(built, "tags", write, tmp_path)
    for values in QUERIES:
        for every in (False, True):
            same_rows(path, _sql(values, every))


def test_unanswerable_queries_give_none(built: Built) -> None:
    index = LabelListIndex.open(local(built.index_dir("tags")))
    assert index.search(HasAny("tags", pa.array([], pa.string()))) is None
    assert index.search(HasAll("tags", pa.array(["red", None]))) is None
    assert index.search(Equals("tags", pa.scalar("red"))) is None


def test_missing_and_damaged_files_are_errors(built: Built, tmp_path: Path) -> None:
    with pytest.raises(CorruptIndexError, match="bitmap_page_lookup.lance"):
        LabelListIndex.open(local(tmp_path))
    source = Path(built.index_dir("tags")) / "bitmap_page_lookup.lance"
    (tmp_path / "bitmap_page_lookup.lance").write_bytes(source.read_bytes()[:-40])
    with pytest.raises(CorruptIndexError, match="bitmap_page_lookup.lance"):
        LabelListIndex.open(local(tmp_path))
