"""``scan_stats_callback`` and ``prewarm_index``: each run of a scan reports what it
read once, and a prewarmed BTREE reads no index pages, as in pylance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import ArgumentError, IndexNotFoundError
from tests.storage import MEMORY
from tests.versions import STORAGE_VERSION


def _table(n: int = 20_000) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({"id": np.arange(n), "f": rng.random(n), "s": [f"t{i % 97}" for i in range(n)]})


@pytest.fixture
def path(tmp_path: Path) -> Path:
    ll.write_dataset(
        _table(), tmp_path, max_rows_per_file=5000, data_storage_version=STORAGE_VERSION
    )
    return tmp_path


class Calls:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    def __call__(self, stats: Any) -> None:
        self.seen.append(stats)


def test_each_run_reports_once_with_whole_numbers(path: Path) -> None:
    calls = Calls()
    scanner = ll.dataset(path).scanner(scan_stats_callback=calls)
    assert calls.seen == []
    assert scanner.to_table().num_rows == 20_000
    (stats,) = calls.seen
    assert isinstance(stats, ll.ScanStatistics)
    assert stats.iops > 0 and stats.requests >= stats.iops and stats.bytes_read > 0
    assert stats.indices_loaded == stats.parts_loaded == 0
    assert all(isinstance(v, int) for v in stats.all_counts.values())
    assert stats.all_counts["bytes_read"] == stats.bytes_read
    assert ll.dataset(path).count_rows("id > 5", scan_stats_callback=calls) == 19_994
    assert len(calls.seen) == 2


def test_a_narrower_scan_reads_fewer_bytes(path: Path) -> None:
    calls = Calls()
    ll.dataset(path).scanner(columns=["id"], scan_stats_callback=calls).to_table()
    ll.dataset(path).scanner(scan_stats_callback=calls).to_table()
    narrow, wide = calls.seen
    # An object store fetches small files whole, so there both read every byte.
    assert narrow.bytes_read <= wide.bytes_read
    assert MEMORY or narrow.bytes_read < wide.bytes_read


def test_batches_report_when_exhausted_or_closed(path: Path) -> None:
    calls = Calls()
    batches = ll.dataset(path).to_batches(batch_size=1000, scan_stats_callback=calls)
    next(batches)
    assert calls.seen == []
    batches.close()
    assert len(calls.seen) == 1
    rows = sum(b.num_rows for b in ll.dataset(path).to_batches(scan_stats_callback=calls))
    assert rows == 20_000 and len(calls.seen) == 2


def _index_work(lib: Any, path: Path, prewarm: bool) -> Any:
    ds = lib.dataset(path)
    if prewarm:
        ds.prewarm_index("id_idx")
    calls = Calls()
    assert ds.scanner(filter="id > 10", scan_stats_callback=calls).to_table().num_rows == 19_989
    return calls.seen[-1]


@pytest.mark.parametrize("lib", [ll, lance], ids=["lancelet", "pylance"])
def test_prewarmed_btree_reads_no_pages(path: Path, lib: Any) -> None:
    ll.dataset(path).create_scalar_index("id", "BTREE")
    cold = _index_work(lib, path, prewarm=False)
    warm = _index_work(lib, path, prewarm=True)
    assert cold.parts_loaded > 0
    assert warm.parts_loaded == 0
    if lib is ll:
        assert cold.indices_loaded == 1 and warm.indices_loaded == 0
        assert warm.index_cache_hits > 0 and warm.index_comparisons == 1


def test_prewarm_refuses_what_pylance_refuses(path: Path) -> None:
    ds = ll.dataset(path)
    ds.create_scalar_index("id", "BTREE")
    with pytest.raises(IndexNotFoundError):
        ds.prewarm_index("nope")
    with pytest.raises(ArgumentError):
        ds.prewarm_index("id_idx", with_position=True)
    with pytest.raises(IndexNotFoundError):
        ds.prewarm_index("id_idx", index_segments=["00000000-0000-0000-0000-000000000000"])
    (segment,) = ds.list_indices()
    ds.prewarm_index("id_idx", index_segments=[segment["uuid"]])
    py = lance.dataset(path)
    with pytest.raises(RuntimeError):
        py.prewarm_index("nope")
    with pytest.raises(ValueError):
        py.prewarm_index("id_idx", with_position=True)


def test_callback_must_be_callable(path: Path) -> None:
    with pytest.raises(TypeError):
        ll.dataset(path).scanner(scan_stats_callback=3)
