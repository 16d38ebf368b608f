"""Damaged index files give an error or the right rows, never a crash or other rows.

A BTREE and a BITMAP index of a float column (nulls, NaN, signed zeros, three
fragments) are mutated (seeded byte flips, truncations, deletions) and searched in a
child process (:mod:`tests.fuzz.harness`, :mod:`tests.index.fuzz_checks`).

Payload (a different answer is acceptable, an exception or crash never is):

* the data pages of ``page_data.lance``: values and row addresses, stored once (a
  value changed within its neighbours' order, or another address, is undetectable);
* the pages of the lookup's ``min`` / ``max`` columns: a reader that reads only the
  pages a query needs cannot tell a page summary that excludes a page's own values
  from a real one without reading the page;
* the data pages of ``bitmap_page_lookup.lance``: the keys and the Roaring bitmaps'
  offsets are stored once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lancelet.file import LanceFileReader
from lancelet.index import write_bitmap, write_btree
from tests.fuzz.harness import Campaign, Mutant, assert_acceptable, byte_flips, truncations
from tests.storage import local

ROWS = 9_000


def _data() -> tuple[pa.Array, np.ndarray]:
    rng = np.random.default_rng(11)
    values = (rng.integers(0, 1200, ROWS) / 1.0).astype(np.float64)
    values[rng.random(ROWS) < 0.05] = np.nan
    values[rng.random(ROWS) < 0.05] = -0.0
    nulls = rng.random(ROWS) < 0.04
    fragments = np.repeat(np.arange(3, dtype=np.uint64), ROWS // 3)
    offsets = np.tile(np.arange(ROWS // 3, dtype=np.uint64), 3)
    return pa.array(values, pa.float64(), mask=nulls), (fragments << np.uint64(32)) | offsets


def _data_ranges(path: Path, columns: tuple[int, ...] | None = None) -> list[range]:
    """Byte ranges of the page buffers of ``columns`` (all: the whole data region)."""
    meta = LanceFileReader(str(path)).metadata()
    if columns is None:
        return [range(0, meta.num_data_bytes)]
    return [
        range(b.position, b.position + b.size)
        for c in columns
        for page in meta.columns[c].pages
        for b in page.buffers
    ]


def _campaign(root: Path, check: str, files: dict[str, list[range]], seed: int) -> Campaign:
    mutants: list[Mutant] = []
    for i, (name, payload) in enumerate(files.items()):
        mutants += byte_flips(root, name, 60, seed + i, payload=payload)
        mutants += truncations(root, name, 8, seed + i)
        mutants.append(Mutant(name, "delete", label=f"{name} deleted"))
    return Campaign(root, check, mutants, budget_s=15)


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_damaged_btree(tmp_path: Path, version: str) -> None:
    values, addresses = _data()
    write_btree([(values, addresses)], local(tmp_path), pa.float64(), version)
    files = {
        "page_data.lance": _data_ranges(tmp_path / "page_data.lance"),
        "page_lookup.lance": _data_ranges(tmp_path / "page_lookup.lance", (0, 1)),
    }
    campaign = _campaign(tmp_path, "tests.index.fuzz_checks:search_btree", files, seed=5)
    assert_acceptable(campaign.run(), minimum=40)


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_damaged_bitmap(tmp_path: Path, version: str) -> None:
    values, addresses = _data()
    write_bitmap([(values, addresses)], local(tmp_path), pa.float64(), version)
    name = "bitmap_page_lookup.lance"
    files = {name: _data_ranges(tmp_path / name)}
    campaign = _campaign(tmp_path, "tests.index.fuzz_checks:search_bitmap", files, seed=9)
    assert_acceptable(campaign.run(), minimum=40)
