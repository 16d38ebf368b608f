"""A read lets go of each page's bytes once it has decoded the page's last row
(a scan's memory map then stops counting them as resident), and only then."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lancelet.file import LanceFileReader, LanceFileWriter
from lancelet.io.local import LocalInputFile

ROWS = 200_000

Ranges = list[tuple[int, int]]


@pytest.fixture
def released(monkeypatch: pytest.MonkeyPatch) -> list[Ranges]:
    calls: list[Ranges] = []
    monkeypatch.setattr(LocalInputFile, "release", lambda self, ranges: calls.append(ranges))
    return calls


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> str:
    rng = np.random.default_rng(5)
    table = pa.table(
        {
            "n": pa.array(rng.integers(0, 1 << 40, ROWS)),
            "s": pa.array([f"row {i}" for i in rng.integers(0, 10**6, ROWS)]),
        }
    )
    out = str(Path(tmp_path_factory.mktemp("release")) / "data.lance")
    with LanceFileWriter(out, table.schema, version="2.2", max_page_bytes=64 << 10) as writer:
        writer.write_batch(table)
    return out


def _pages(path: str) -> dict[tuple[int, int], int]:
    """Each page's first buffer (offset, size), mapped to the row after its last."""
    reader = LanceFileReader(path)
    ends: dict[tuple[int, int], int] = {}
    for info in reader.metadata().columns:
        end = 0
        for page in info.pages:
            end += page.num_rows
            ends[(page.buffers[0].position, page.buffers[0].size)] = end
    return ends


def test_a_whole_read_releases_every_page_once(path: str, released: list[Ranges]) -> None:
    pages = _pages(path)
    assert len(pages) > 8  # several pages a column
    LanceFileReader(path).read_all().to_table()
    firsts = [ranges[0] for ranges in released]
    assert sorted(firsts) == sorted(pages)


def test_batches_release_the_pages_they_have_passed(path: str, released: list[Ranges]) -> None:
    pages = _pages(path)
    half = ROWS // 2
    batches = LanceFileReader(path).read_range(0, half, batch_size=7_000).to_batches()
    assert sum(b.num_rows for b in batches) == half
    firsts = [ranges[0] for ranges in released]
    assert len(firsts) == len(set(firsts))
    assert set(firsts) == {page for page, end in pages.items() if end <= half}


def test_takes_release_nothing(path: str, released: list[Ranges]) -> None:
    LanceFileReader(path).take_rows(np.arange(0, ROWS, 97)).to_table()
    assert released == []
