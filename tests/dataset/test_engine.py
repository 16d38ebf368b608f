"""The engine's internal API (dataset/engine.py), used the way Spark's jobs use it:
rows changed through it and committed read back in pylance as computed here, the
keys check that keeps two changes from inserting one key, and what it reports of a
version's files and commits against pylance and the disk."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lancelet.dataset import engine
from lancelet.table.fragment import Fragment
from tests.versions import STORAGE_VERSION

ROWS = 60


def _rows(keys: np.ndarray) -> pa.Table:
    return pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(keys * 10, pa.int64())})


def _dataset(uri: str, *, stable_row_ids: bool = False) -> None:
    """Three fragments of 20 rows, keys 0..59."""
    lance.write_dataset(
        _rows(np.arange(ROWS)),
        uri,
        max_rows_per_file=20,
        data_storage_version=STORAGE_VERSION,
        enable_stable_row_ids=stable_row_ids,
    )


def _addresses(uri: str) -> dict[int, tuple[int, int]]:
    """Key -> (row address, row id), as pylance reads them."""
    table = lance.dataset(uri).to_table(columns=["k"], with_row_address=True, with_row_id=True)
    keys = table.column("k").to_pylist()
    addresses, ids = table.column("_rowaddr").to_pylist(), table.column("_rowid").to_pylist()
    pairs = zip(addresses, ids, strict=True)
    return dict(zip(keys, pairs, strict=True))


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    deleted=st.sets(st.integers(0, ROWS - 1), max_size=25),
    updated=st.sets(st.integers(0, ROWS - 1), max_size=25),
    stable=st.booleans(),
)
def test_a_row_change_committed_through_the_engine_reads_back_in_pylance(
    deleted: set[int], updated: set[int], stable: bool
) -> None:
    updated -= deleted
    with tempfile.TemporaryDirectory() as folder:
        uri = os.path.join(folder, "ds")
        _dataset(uri, stable_row_ids=stable)
        before = _addresses(uri)
        snapshot = engine.open_snapshot(engine.Location(uri))
        moved = sorted(updated)
        new_values = pa.table(
            {"k": pa.array(moved, pa.int64()), "v": pa.array([-k for k in moved], pa.int64())}
        )
        rewritten = engine.write_fragments(
            snapshot,
            pa.RecordBatchReader.from_batches(new_values.schema, new_values.to_batches()),
            snapshot.manifest.schema,
            engine.data_format(None, snapshot.manifest),
        )
        change = engine.apply_row_change(
            snapshot,
            deleted=np.array([before[k][0] for k in sorted(deleted)], np.uint64),
            rewritten=rewritten,
            moved_from=np.array([before[k][0] for k in moved], np.uint64),
        )
        operation = engine.Update(change.removed, change.updated, change.rewritten)
        after = engine.commit(snapshot, operation, snapshot.version)

        assert after.version == snapshot.version + 1
        got = lance.dataset(uri).to_table(with_row_id=True).sort_by("k")
        kept = [k for k in range(ROWS) if k not in deleted]
        assert got.column("k").to_pylist() == kept
        assert got.column("v").to_pylist() == [-k if k in updated else k * 10 for k in kept]
        if stable:
            # Rewritten rows keep the ids they had.
            assert got.column("_rowid").to_pylist() == [before[k][1] for k in kept]


def _fragments(snapshot: engine.Snapshot, keys: list[int]) -> tuple[Fragment, ...]:
    table = _rows(np.array(keys, np.int64))
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    fmt = engine.data_format(None, snapshot.manifest)
    return tuple(engine.write_fragments(snapshot, reader, snapshot.manifest.schema, fmt))


@pytest.mark.parametrize(
    ("mine", "theirs", "on", "found"),
    [
        ([100, 101, 102], [200, 101], ("k",), True),
        ([100, 101, 102], [200, 201], ("k",), False),
        ([100], [100], ("k", "v"), True),
        ([100], [200], (), True),  # without keys any row added meanwhile counts
        ([100], [], (), False),
    ],
)
def test_inserted_keys_are_found_among_rows_another_writer_added(
    tmp_path: Path, mine: list[int], theirs: list[int], on: tuple[str, ...], found: bool
) -> None:
    uri = str(tmp_path / "ds")
    _dataset(uri)
    snapshot = engine.open_snapshot(engine.Location(uri))
    keys = engine.InsertedKeys(snapshot, on, _fragments(snapshot, mine))
    added = _fragments(snapshot, theirs) if theirs else ()
    assert keys.found_in(added, snapshot.manifest.schema) is found


@pytest.mark.local_files("lists the dataset's files on disk")
def test_file_sizes_and_version_records_match_the_disk_and_pylance(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _dataset(uri)
    lance.dataset(uri).delete("k < 5")
    lance.write_dataset(
        _rows(np.arange(ROWS, ROWS + 5)), uri, mode="append", transaction_properties={"a": "b"}
    )
    location = engine.Location(uri)
    assert engine.versions(location) == [v["version"] for v in lance.dataset(uri).versions()]
    assert engine.latest_version(location) == 3
    snapshot = engine.open_snapshot(location)
    on_disk = {
        os.path.join(root, name): os.path.getsize(os.path.join(root, name))
        for sub in ("data", "_deletions")
        for root, _, names in os.walk(os.path.join(uri, sub))
        for name in names
    }
    sizes = engine.file_sizes(snapshot)
    assert {os.path.normpath(p): s for p, s in sizes.items()} == on_disk

    records = [engine.version_record(engine.open_snapshot(snapshot, v)) for v in (1, 2, 3)]
    assert [r.operation for r in records] == ["overwrite", "delete", "append"]
    assert [r.read_version for r in records] == [None, 1, 2]
    assert [r.blind_append for r in records] == [False, False, True]
    assert records[2].properties["a"] == "b"
    stamps = [int(v["timestamp"].timestamp()) for v in lance.dataset(uri).versions()]
    assert [r.timestamp_ns // 10**9 for r in records] == stamps


def test_list_indices_counts_the_fragments_a_deferred_compaction_moved(tmp_path: Path) -> None:
    """After a compaction that defers index remapping, an index covers the new
    fragments through the Fragment Reuse Index: listed as pylance lists it."""
    uri = str(tmp_path / "d")
    _dataset(uri)
    ds = lance.dataset(uri)
    ds.create_scalar_index("k", "BTREE")
    ds.delete("k < 5")
    ds.optimize.compact_files(target_rows_per_fragment=5000, defer_index_remap=True)
    listed = engine.list_indices(engine.open_snapshot(engine.Location(uri)))
    theirs = lance.dataset(uri).list_indices()
    ours = [(i["name"], sorted(i["fragment_ids"])) for i in listed if i["name"] == "k_idx"]
    assert ours == [(i["name"], sorted(i["fragment_ids"])) for i in theirs if i["name"] == "k_idx"]
