"""A compaction in one process remaps its indices while it rewrites the data
(``compaction/early_remap``), for the fragments it expects to write.  Whether that
expectation holds or not (files cut by ``max_bytes_per_file``, fragment ids taken
by another writer meanwhile), the indices answer as pyarrow does on the source
rows, read by pylance and by lancelet, and no segment written early is left behind.
"""

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
from lancelet.dataset.compaction import commit
from tests.storage import list_names
from tests.versions import STORAGE_VERSION

ROWS = 300
FRAGMENTS = 6


def _source(rows: int, wide: bool) -> pa.Table:
    ids = np.arange(rows * FRAGMENTS)
    modes = np.array(["MAIL", "SHIP", "AIR", "RAIL", "TRUCK"])
    table = pa.table({"id": ids, "mode": modes[ids % 5], "note": [f"n{i}" * 40 for i in ids]})
    if wide:  # 8 KiB a row: pages flush early, so max_bytes_per_file cuts files
        values = pa.array(np.arange(len(ids) * 1024, dtype=np.float64))
        table = table.append_column("v", pa.FixedSizeListArray.from_arrays(values, 1024))
    return table


def _prepared(uri: str, rows: int = ROWS, wide: bool = False) -> pa.Table:
    """The dataset with its indices; returns its live rows."""
    table = _source(rows, wide)
    lance.write_dataset(table, uri, max_rows_per_file=rows, data_storage_version=STORAGE_VERSION)
    lance.dataset(uri).delete("id % 7 = 3")
    ds = ll.dataset(uri)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("mode", "BITMAP")
    return table.filter(pa.array(table["id"].to_numpy() % 7 != 3))


def _check(uri: str, live: pa.Table) -> None:
    """Both indices cover every live row and answer as pyarrow on the source rows."""
    wheres = {
        "id = 100": pc.equal(live["id"], 100),
        "id < 40": pc.less(live["id"], 40),
        "mode = 'AIR'": pc.equal(live["mode"], "AIR"),
    }
    for library in (lance, ll):
        ds: Any = library.dataset(uri)
        counts = {d.name: d.num_rows_indexed for d in ds.describe_indices()}
        assert counts.get("id_idx") == live.num_rows
        assert counts.get("mode_idx") == live.num_rows
        for where, mask in wheres.items():
            found = ds.to_table(columns=["id"], filter=where, use_scalar_index=True)
            assert sorted(found["id"].to_pylist()) == live.filter(mask)["id"].to_pylist()


def _segments_on_disk(uri: str) -> set[str]:
    return set(list_names(os.path.join(uri, "_indices")))


def _segments_named(uri: str) -> set[str]:
    """Every segment some version of the dataset lists."""
    ds = lance.dataset(uri)
    named: set[str] = set()
    for version in ds.versions():
        named |= {i["uuid"] for i in lance.dataset(uri, version=version["version"]).list_indices()}
    return named


def _calls(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each early remap was taken at commit (True) or done again (False)."""
    taken: list[bool] = []
    original = commit.EarlyRemap.take

    def take(self: commit.EarlyRemap, groups: Any) -> Any:
        result = original(self, groups)
        taken.append(result is not None)
        return result

    monkeypatch.setattr(commit.EarlyRemap, "take", take)
    return taken


def test_expected_fragments_take_the_early_remap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = str(tmp_path / "ds")
    live = _prepared(uri)
    taken = _calls(monkeypatch)
    ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=700)
    assert taken == [True]
    assert len(lance.dataset(uri).get_fragments()) == max(1, live.num_rows // 700)
    _check(uri, live)
    assert _segments_on_disk(uri) == _segments_named(uri)


def test_files_cut_by_bytes_remap_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uri = str(tmp_path / "ds")
    live = _prepared(uri, rows=256, wide=True)
    taken = _calls(monkeypatch)
    ll.dataset(uri).optimize.compact_files(
        target_rows_per_fragment=100_000, max_bytes_per_file=1000, batch_size=16
    )
    assert taken == [False]
    assert len(lance.dataset(uri).get_fragments()) > 1
    _check(uri, live)
    assert _segments_on_disk(uri) == _segments_named(uri)


def test_ids_taken_meanwhile_remap_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another writer appends a fragment while the data is rewritten: the new
    fragments are numbered after it, not as expected."""
    uri = str(tmp_path / "ds")
    live = _prepared(uri)
    taken = _calls(monkeypatch)
    rewrite = commit.rewrite_fragments
    # Rows no filter below selects: the answers stay those of the indexed rows.
    extra = pa.table({"id": np.arange(10**6, 10**6 + 50), "mode": ["NONE"] * 50,
                      "note": ["x"] * 50})  # fmt: skip

    def rewrite_then_append(*args: Any, **kwargs: Any) -> Any:
        written = rewrite(*args, **kwargs)
        ll.write_dataset(extra, uri, mode="append")
        return written

    monkeypatch.setattr(commit, "rewrite_fragments", rewrite_then_append)
    ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=100_000)
    assert taken == [False]
    assert lance.dataset(uri).count_rows() == live.num_rows + extra.num_rows
    _check(uri, live)
    assert _segments_on_disk(uri) == _segments_named(uri)
