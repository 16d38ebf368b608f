"""A compaction leaves no reference cycles behind: the dataset's store (with the
readers its session caches) and the batches the writer shreds are freed as soon as
they are dropped, not at the next full garbage collection, which in a process
holding many objects costs more than the compaction itself."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from tests.versions import STORAGE_VERSION


@pytest.fixture
def no_collection() -> Iterator[None]:
    """Automatic collections off, so that only cycles made in the test are found."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _cyclic_garbage() -> list[str]:
    """The type names of what only a collection would free."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.collect()
    names = [type(o).__qualname__ for o in gc.garbage]
    gc.set_debug(0)
    gc.garbage.clear()
    return names


def test_compaction_frees_its_store_readers_and_batches(
    tmp_path: Path, no_collection: None
) -> None:
    ids = np.arange(4000)
    table = pa.table({"id": ids, "mode": pa.array(np.array(["AIR", "MAIL"])[ids % 2])})
    uri = str(tmp_path / "ds")
    lance.write_dataset(table, uri, max_rows_per_file=500, data_storage_version=STORAGE_VERSION)
    ds = ll.dataset(uri)
    ds.delete("id % 7 = 0")
    ds.optimize.compact_files(target_rows_per_fragment=1_000_000)
    del ds
    left = set(_cyclic_garbage())
    for kept in ("DatasetStore", "Session", "LanceFileReader", "LeafColumn", "LeafBatch"):
        assert kept not in left
    got = lance.dataset(uri).to_table()
    assert got.equals(table.filter(pa.array(ids % 7 != 0)))


def _indexed_dataset(uri: str) -> pa.Table:
    ids = np.arange(4000)
    table = pa.table({"id": ids, "mode": pa.array(np.array(["AIR", "MAIL"])[ids % 2])})
    lance.write_dataset(table, uri, max_rows_per_file=500, data_storage_version=STORAGE_VERSION)
    ds = ll.dataset(uri)
    ds.create_scalar_index("id", "BTREE")
    ds.delete("id % 7 = 0")
    ds.optimize.compact_files(target_rows_per_fragment=1_000_000, defer_index_remap=True)
    return table


def test_an_indexed_lookup_through_a_reuse_index_leaves_nothing_to_collect(
    tmp_path: Path, no_collection: None
) -> None:
    """Opening the dataset, planning with its index (kept by the store, which the
    index parts once pointed back to), remapping through the reuse index and reading
    the rows: everything goes when dropped, down to the closures that walk schemas."""
    uri = str(tmp_path / "ds")
    table = _indexed_dataset(uri)
    ll.dataset(uri).to_table(filter="id = 1234")  # first calls: imports, kernels
    gc.collect()
    got = ll.dataset(uri).to_table(filter="id = 1234", use_scalar_index=True)
    assert _cyclic_garbage() == []
    assert got.equals(table.filter(pa.array(table["id"].to_numpy() == 1234)))


@pytest.mark.skipif(STORAGE_VERSION == "2.0", reason="2.0 files are compacted through the scanner")
def test_the_store_keeps_no_reader_of_the_files_a_compaction_replaced(tmp_path: Path) -> None:
    """A hundred readers, with their pages and file mappings, would live as long as
    the dataset object, for files no later version reads.  (Files read through the
    scanner, as 2.0 files are, share its readers with the store.)"""
    table = pa.table({"id": np.arange(2000)})
    uri = str(tmp_path / "ds")
    lance.write_dataset(table, uri, max_rows_per_file=100, data_storage_version=STORAGE_VERSION)
    ds = ll.dataset(uri)
    old = {f.path for fragment in ds.get_fragments() for f in fragment.metadata.files}
    ds.optimize.compact_files(target_rows_per_fragment=1_000_000)
    kept = {Path(path).name for path, _ in ds._store.cache("data_files")}
    assert not kept & old
    assert len(ds.get_fragments()) == 1
    assert ds.to_table().equals(table)


def test_an_index_found_through_a_shared_session_outlives_the_dataset_that_found_it(
    tmp_path: Path,
) -> None:
    """The planned index parts point back to their dataset's store only weakly (see
    the lookup test above); kept in a session that another dataset opens with, they
    would outlive that store, and the second dataset's lookup would find it gone."""
    uri = str(tmp_path / "ds")
    table = _indexed_dataset(uri)
    session = ll.Session()
    expected = table.filter(pa.array(table["id"].to_numpy() == 1234))
    for _ in range(2):
        ds = ll.dataset(uri, session=session)
        assert ds.to_table(filter="id = 1234", use_scalar_index=True).equals(expected)
        del ds
        gc.collect()
