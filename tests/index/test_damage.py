"""Damaged or missing index files are a CorruptIndexError naming the file, never rows."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lancelet.errors import ArgumentError, CorruptIndexError, UnsupportedIndexError
from lancelet.expr import Equals, IsIn, Range
from lancelet.file import LanceFileReader, LanceFileWriter
from lancelet.index import BitmapIndex, BTreeIndex, write_bitmap, write_btree
from lancelet.index.remapping import AddressMapping
from tests.storage import local

ROWS = 10_000


@pytest.fixture
def btree(tmp_path: Path) -> Path:
    values = pa.array(np.arange(ROWS) // 3, pa.int64())
    write_btree(
        [(values, np.arange(ROWS, dtype=np.uint64))], local(tmp_path / "bt"), pa.int64(), "2.2"
    )
    return tmp_path / "bt"


@pytest.fixture
def bitmap(tmp_path: Path) -> Path:
    values = pa.array(np.arange(ROWS) % 7, pa.int64())
    write_bitmap(
        [(values, np.arange(ROWS, dtype=np.uint64))], local(tmp_path / "bm"), pa.int64(), "2.2"
    )
    return tmp_path / "bm"


def _rewrite(path: Path, change: object) -> None:
    reader = LanceFileReader(str(path))
    table = reader.read_all().to_table()
    table = change(table)  # type: ignore[operator]
    meta = {k.decode(): v.decode() for k, v in (reader.schema.metadata or {}).items()}
    meta.update({k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()})
    path.unlink()
    writer = LanceFileWriter(str(path), table.schema.remove_metadata(), version="2.2")
    for key, value in meta.items():
        writer.add_schema_metadata(key, value)
    writer.write_batch(table)
    writer.close()


def _set(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), table.schema.field(name), values)


@pytest.mark.parametrize("name", ["page_lookup.lance", "page_data.lance"])
def test_btree_missing_file(btree: Path, name: str) -> None:
    (btree / name).unlink()
    with pytest.raises(CorruptIndexError, match=name):
        BTreeIndex.open(local(btree))


def test_btree_page_idx_outside_the_data(btree: Path) -> None:
    _rewrite(
        btree / "page_lookup.lance", lambda t: _set(t, "page_idx", pa.array([0, 1, 7], pa.uint32()))
    )
    with pytest.raises(CorruptIndexError, match="page_lookup.lance"):
        BTreeIndex.open(local(btree))


def test_btree_min_max_out_of_order(btree: Path) -> None:
    swap = lambda t: _set(t, "min", pa.array([0, 3000, 1365], pa.int64()))  # noqa: E731
    _rewrite(btree / "page_lookup.lance", swap)
    with pytest.raises(CorruptIndexError, match="page_lookup.lance"):
        BTreeIndex.open(local(btree))


def test_btree_page_that_contradicts_its_summary(btree: Path) -> None:
    # Page 1 says it starts at 1400; its data starts at 1365.
    _rewrite(
        btree / "page_lookup.lance", lambda t: _set(t, "min", pa.array([0, 1400, 2730], pa.int64()))
    )
    index = BTreeIndex.open(local(btree))
    with pytest.raises(CorruptIndexError, match="page_data.lance"):
        index.search(
            Range("c", pa.scalar(1370, pa.int64()), True, pa.scalar(1500, pa.int64()), True)
        )


def test_btree_page_past_its_maximum(btree: Path) -> None:
    # Page 1 says it ends at 2700; its last key is 2730.
    _rewrite(
        btree / "page_lookup.lance",
        lambda t: _set(t, "max", pa.array([1365, 2700, 3333], pa.int64())),
    )
    index = BTreeIndex.open(local(btree))
    with pytest.raises(CorruptIndexError, match="page 1 does not match"):
        index.search(Range("c", pa.scalar(2690, pa.int64()), True, None, True))


def test_btree_pages_listed_out_of_order(btree: Path) -> None:
    """The lookup lists pages by page_idx, in any order."""
    _rewrite(btree / "page_lookup.lance", lambda t: t.take([2, 0, 1]))
    found = BTreeIndex.open(local(btree)).search(Equals("c", pa.scalar(1666, pa.int64())))
    assert found is not None
    assert found.addresses.tolist() == [4998, 4999, 5000]


def test_btree_unsorted_page(btree: Path) -> None:
    values = np.arange(ROWS) // 3
    values[5000], values[5001] = values[5001] + 1, values[5000]
    _rewrite(btree / "page_data.lance", lambda t: _set(t, "values", pa.array(values, pa.int64())))
    with pytest.raises(CorruptIndexError, match="page 1"):
        BTreeIndex.open(local(btree)).search(Equals("c", pa.scalar(1666, pa.int64())))


def _remap(index_dir: Path, out: Path) -> None:
    """A remap that moves every row (fragment 0 to fragment 1)."""
    old = np.arange(ROWS, dtype=np.uint64)
    mapping = AddressMapping(old, old | np.uint64(1 << 32))
    BTreeIndex.open(local(index_dir)).remap(mapping, local(out), "2.2")


def test_btree_remap_of_an_unsorted_page(btree: Path, tmp_path: Path) -> None:
    """A remap reads the pages in groups: a page out of order in one is still the
    page named."""
    values = np.arange(ROWS) // 3
    values[5000], values[5001] = values[5001] + 1, values[5000]
    _rewrite(btree / "page_data.lance", lambda t: _set(t, "values", pa.array(values, pa.int64())))
    with pytest.raises(CorruptIndexError, match="page 1 does not match"):
        _remap(btree, tmp_path / "new")


def test_btree_remap_of_a_page_that_contradicts_its_summary(btree: Path, tmp_path: Path) -> None:
    _rewrite(
        btree / "page_lookup.lance", lambda t: _set(t, "min", pa.array([0, 1400, 2730], pa.int64()))
    )
    with pytest.raises(CorruptIndexError, match="page 1 does not match"):
        _remap(btree, tmp_path / "new")


def test_btree_remap_of_a_sound_index(btree: Path, tmp_path: Path) -> None:
    _remap(btree, tmp_path / "new")
    found = BTreeIndex.open(local(tmp_path / "new")).search(
        Equals("c", pa.scalar(1666, pa.int64()))
    )
    assert found is not None
    assert found.addresses.tolist() == [(1 << 32) | r for r in (4998, 4999, 5000)]


def test_btree_range_partitioned_refused(btree: Path) -> None:
    _rewrite(
        btree / "page_lookup.lance",
        lambda t: t.replace_schema_metadata({"batch_size": "4096", "range_partitioned": "true"}),
    )
    with pytest.raises(UnsupportedIndexError, match="range-partitioned"):
        BTreeIndex.open(local(btree))


def test_btree_literal_of_another_type(btree: Path) -> None:
    with pytest.raises(ArgumentError, match="int32"):
        BTreeIndex.open(local(btree)).search(Equals("c", pa.scalar(3, pa.int32())))


def test_bitmap_that_does_not_deserialize(bitmap: Path) -> None:
    def damage(t: pa.Table) -> pa.Table:
        blobs = t.column("bitmaps").to_pylist()
        blobs[2] = blobs[2][:12] + b"\xff" * (len(blobs[2]) - 12)
        return _set(t, "bitmaps", pa.array(blobs, pa.binary()))

    _rewrite(bitmap / "bitmap_page_lookup.lance", damage)
    index = BitmapIndex.open(local(bitmap))
    assert index.search(Equals("c", pa.scalar(1, pa.int64()))) is not None
    with pytest.raises(CorruptIndexError, match="bitmap_page_lookup.lance row 2"):
        index.search(IsIn("c", pa.array([1, 2], pa.int64())))


def test_bitmap_stats_disagree_with_rows(bitmap: Path) -> None:
    _rewrite(
        bitmap / "bitmap_page_lookup.lance",
        lambda t: t.replace_schema_metadata({"lance:index_stats": '{"num_bitmaps":6}'}),
    )
    with pytest.raises(CorruptIndexError, match="num_bitmaps|6 bitmaps"):
        BitmapIndex.open(local(bitmap))


def test_bitmap_missing_file(bitmap: Path) -> None:
    shutil.rmtree(bitmap)
    with pytest.raises(CorruptIndexError, match="bitmap_page_lookup.lance"):
        BitmapIndex.open(local(bitmap))
