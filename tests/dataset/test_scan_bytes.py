"""The bytes an indexed scan reads (``ScanStatistics.bytes_read``): the chunks holding
the rows the index leaves, not whole pages, and no index files, as in pylance.

Each library builds the same index on its own copy of one dataset and runs the same
lookup; lancelet must read about what pylance reads.  A memory-map read counts what
it returns, so local files show what decoding touched; an object store fetches in
larger blocks (skipped in the memory run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import lance.indices
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
import lancelet.indices
from lancelet.file import LanceFileReader, LanceFileWriter
from tests.storage import MEMORY, copy_tree

pytestmark = pytest.mark.skipif(MEMORY, reason="object stores fetch whole blocks")

ROWS = 64 * 1024


def _bytes_read(ds: Any, where: str) -> int:
    seen: list[Any] = []
    ds.scanner(filter=where, scan_stats_callback=seen.append).to_table()
    (stats,) = seen
    return int(stats.bytes_read)


def _indexed_copies(tmp_path: Path, version: str, index: dict[str, Any]) -> tuple[Any, Any]:
    """The same dataset with the same index, one copy indexed and opened by each."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    lance.write_dataset(pa.table({"x": np.arange(ROWS)}), ours, data_storage_version=version)
    copy_tree(str(ours), str(theirs))
    opened = []
    for lib, uri in ((ll, ours), (lance, theirs)):
        ds = lib.dataset(uri)
        if "rows_per_zone" in index:
            config = lib.indices.IndexConfig(index_type="zonemap", parameters=index)
            ds.create_scalar_index("x", config)
        else:
            ds.create_scalar_index("x", index["kind"])
        opened.append(lib.dataset(uri))
    return opened[0], opened[1]


INDICES = [{"rows_per_zone": 64}, {"rows_per_zone": 16 * 1024}, {"kind": "BTREE"}]


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("index", INDICES, ids=["zones-of-64", "zones-of-16k", "btree"])
@pytest.mark.parametrize("where", ["x = 7", "x = 40000", "x >= 100 AND x < 300"])
def test_an_indexed_lookup_reads_what_pylance_reads(
    tmp_path: Path, version: str, index: dict[str, Any], where: str
) -> None:
    ours, theirs = _indexed_copies(tmp_path, version, index)
    assert ours.to_table(filter=where).equals(theirs.to_table(filter=where))
    # Twice: the first run of each also reads the data file's metadata.
    _bytes_read(ours, where), _bytes_read(theirs, where)
    got, want = _bytes_read(ours, where), _bytes_read(theirs, where)
    assert want / 2 <= got <= want * 1.5 + 1024, (got, want)


def test_smaller_zones_read_less(tmp_path: Path) -> None:
    """pylance's own test_zonemap_zone_size, on lancelet with the data read once."""
    uri = tmp_path / "ds"
    ll.write_dataset(pa.table({"x": np.arange(ROWS)}), uri)
    ds = ll.dataset(uri)
    read = []
    for zone in (64, 16 * 1024):
        config = ll.indices.IndexConfig(index_type="zonemap", parameters={"rows_per_zone": zone})
        ds.create_scalar_index("x", config)
        read.append(_bytes_read(ll.dataset(uri), "x = 7"))
    assert read[0] * 4 < read[1]


def test_a_take_reads_the_chunks_holding_its_rows(tmp_path: Path) -> None:
    """A few rows of a page of a megabyte: a few kilobytes read."""
    path = str(tmp_path / "f.lance")
    values = np.random.default_rng(3).integers(0, 2**62, size=131_072)
    with LanceFileWriter(path, version="2.1") as writer:
        writer.write_batch(pa.table({"v": values}))
    reader = LanceFileReader(path)
    size = Path(path).stat().st_size
    for rows in ([5], [5, 70_000], list(range(1000, 1100))):
        before = ll.bytes_read_counter()
        got = reader.take_rows(rows).to_table().column("v").to_numpy()
        assert got.tolist() == values[rows].tolist()
        assert ll.bytes_read_counter() - before < size / 20, rows
    before = ll.bytes_read_counter()
    assert (
        reader.read_range(2000, 100).to_table().column("v").to_pylist()
        == values[2000:2100].tolist()
    )
    assert ll.bytes_read_counter() - before < size / 20
