"""Compaction reads small fragments together (``compaction/small_files``): a group
that makes one file column by column, otherwise in runs.  The rows it writes are
the live rows in order, as pylance reads them back, whether a group is read by
column, in runs, through the scanner, or in several of these ways."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.dataset.compaction import rewrite, small_files
from tests.versions import STORAGE_VERSION


def _table(start: int, rows: int) -> pa.Table:
    ids = np.arange(start, start + rows)
    modes = np.array(["MAIL", "SHIP", "AIR", "RAIL", "TRUCK"])
    return pa.table(
        {
            "id": pa.array(ids),
            "mode": pa.array(modes[ids % 5]),
            "note": pa.array([None if i % 11 == 0 else f"note {i} " * int(1 + i % 4) for i in ids]),
            "price": pa.array(ids * 0.5),
        }
    )


def _write(uri: str, fragments: int, rows: int) -> pa.Table:
    table = pa.concat_tables([_table(i * rows, rows) for i in range(fragments)])
    lance.write_dataset(table, uri, max_rows_per_file=rows, data_storage_version=STORAGE_VERSION)
    return table


def _by_column(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of fragments of each group read column by column."""
    groups: list[int] = []
    real = small_files.live_columns

    def spy(store: Any, manifest: Any, fragments: Any, schema: Any) -> Any:
        found = real(store, manifest, fragments, schema)
        if found is not None:
            groups.append(len(fragments))
        return found

    monkeypatch.setattr(small_files, "live_columns", spy)
    return groups


def _runs_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of fragments of each run read together, as compaction reads them."""
    runs: list[int] = []
    real = small_files.take_from_files

    def spy(readers: Any, rows: Any) -> pa.Table | None:
        found = real(readers, rows)
        if found is not None:
            runs.append(len(readers))
        return found

    monkeypatch.setattr(small_files, "take_from_files", spy)
    return runs


def _compacted(uri: str) -> pa.Table:
    ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=1_000_000)
    theirs = lance.dataset(uri)
    assert len(theirs.get_fragments()) == 1
    return theirs.to_table()


@pytest.mark.parametrize("by_column", [True, False])
def test_small_fragments_with_deletions_compact_to_their_live_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_column: bool
) -> None:
    if not by_column:
        monkeypatch.setattr(small_files, "COLUMN_ROWS", 0)
    groups, runs = _by_column(monkeypatch), _runs_read(monkeypatch)
    uri = str(tmp_path / "ds")
    table = _write(uri, 40, 500)
    lance.dataset(uri).delete("id % 13 = 0 OR (id >= 1000 AND id < 1500)")
    ids = table["id"].to_numpy()
    keep = (ids % 13 != 0) & ~((ids >= 1000) & (ids < 1500))
    assert _compacted(uri).equals(table.filter(pa.array(keep)).combine_chunks())
    # The fragment of ids 1000..1499 is gone; 2.0 files are read through the scanner.
    together = [] if STORAGE_VERSION == "2.0" else [39]
    assert (groups, runs) == ((together, []) if by_column else ([], together))


@pytest.mark.skipif(STORAGE_VERSION == "2.0", reason="2.0 files are not read by column")
def test_a_group_read_by_column_makes_the_file_its_runs_make(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same data file, byte for byte, as the group's rows in batches give."""
    groups = _by_column(monkeypatch)
    made = []
    for by_column in (True, False):
        monkeypatch.setattr(small_files, "COLUMN_ROWS", 4 * small_files.RUN_ROWS * by_column)
        uri = str(tmp_path / f"ds-{by_column}")
        _write(uri, 12, 700)
        lance.dataset(uri).delete("id % 6 = 2")
        ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=1_000_000)
        (fragment,) = lance.dataset(uri).get_fragments()
        (file,) = fragment.data_files()
        made.append((Path(uri) / "data" / file.path).read_bytes())
    assert groups == [12]
    assert made[0] == made[1]


@pytest.mark.skipif(STORAGE_VERSION == "2.0", reason="2.0 files are not read by column")
def test_a_column_the_scanner_must_read_sends_the_group_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A column that refuses to be read by column (a non-nullable one holding nulls)
    leaves no file behind: the group is read again in runs, whose reader decides."""
    calls = []

    def refuse(field: pa.Field, take: Any) -> pa.Array:
        calls.append(field.name)
        raise small_files.NeedsScan(field.name)

    monkeypatch.setattr(small_files, "_checked", refuse)
    runs = _runs_read(monkeypatch)
    uri = str(tmp_path / "ds")
    table = _write(uri, 10, 300)
    lance.dataset(uri).delete("id % 4 = 1")
    keep = table["id"].to_numpy() % 4 != 1
    assert _compacted(uri).equals(table.filter(pa.array(keep)).combine_chunks())
    assert calls and runs == [10]
    files = sorted(p.name for p in (Path(uri) / "data").iterdir())
    assert len(files) == 11  # the ten compacted and the new one, none half written


@pytest.mark.skipif(STORAGE_VERSION == "2.0", reason="2.0 files are not read by column")
def test_a_failure_while_reading_by_column_leaves_the_dataset_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(field: pa.Field, take: Any) -> pa.Array:
        raise OSError(f"cannot read {field.name}")

    monkeypatch.setattr(small_files, "_checked", broken)
    uri = str(tmp_path / "ds")
    table = _write(uri, 10, 300)
    before = sorted(p.name for p in (Path(uri) / "data").iterdir())
    with pytest.raises(OSError, match="cannot read"):
        ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=1_000_000)
    assert sorted(p.name for p in (Path(uri) / "data").iterdir()) == before
    theirs = lance.dataset(uri)
    assert theirs.version == 1 and theirs.to_table().equals(table)


def test_runs_are_cut_and_fragments_of_two_files_go_through_the_scanner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _runs_read(monkeypatch)
    monkeypatch.setattr(small_files, "RUN_ROWS", 1200)  # runs of three 400-row fragments
    uri = str(tmp_path / "ds")
    first = _write(uri, 6, 500)
    lance.dataset(uri).add_columns({"double": "id * 2"})  # now two data files each
    later = _table(3000, 2000).append_column("double", pa.array(np.arange(3000, 5000) * 2))
    for start in range(0, 2000, 400):
        part = later.slice(start, 400)
        lance.write_dataset(part, uri, mode="append", data_storage_version=STORAGE_VERSION)
    lance.dataset(uri).delete("id % 7 = 3")
    first = first.append_column("double", pa.array(np.arange(3000) * 2))
    table = pa.concat_tables([first, later])
    keep = table["id"].to_numpy() % 7 != 3
    assert _compacted(uri).equals(table.filter(pa.array(keep)).combine_chunks())
    # The six fragments of two files are scanned; the five others are cut 3 + 2.
    assert runs == ([] if STORAGE_VERSION == "2.0" else [3, 2])


@pytest.mark.skipif(
    STORAGE_VERSION == "2.0",
    reason="2.0 files are not read in runs; lancelet's 2.0 writer flushes these 8 KiB rows "
    "in other pages than pylance's, so max_bytes_per_file cuts them elsewhere",
)
def test_files_are_cut_where_pylance_cuts_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer cuts a file after the batch that fills it: runs read together
    give the scanner's batches (each fragment's live rows cut to the batch size)."""
    runs = _runs_read(monkeypatch)
    values = pa.array(np.arange(16 * 256 * 1024))  # 8 KiB a row: pages flush early
    table = pa.table(
        {"id": np.arange(16 * 256), "v": pa.FixedSizeListArray.from_arrays(values, 1024)}
    )
    shapes = []
    for lib in (ll, lance):
        uri = str(tmp_path / lib.__name__)
        lance.write_dataset(table, uri, max_rows_per_file=256, data_storage_version=STORAGE_VERSION)
        lance.dataset(uri).delete("id % 5 = 1")
        lib.dataset(uri).optimize.compact_files(
            target_rows_per_fragment=100_000, max_bytes_per_file=1000, batch_size=100
        )
        shapes.append([f.count_rows() for f in lance.dataset(uri).get_fragments()])
    assert shapes[0] == shapes[1]
    assert len(shapes[0]) > 1
    assert runs == ([] if STORAGE_VERSION == "2.0" else [16])


@pytest.mark.skipif(STORAGE_VERSION == "2.0", reason="2.0 files are not read in runs")
def test_a_run_reaches_the_writer_in_batches_across_fragments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a file size limit, a run's live rows are written in batches of the
    batch size, whichever fragments they come from (a batch per fragment costs the
    writer more than its rows); the rows are still the live rows in order."""
    sizes: list[int] = []
    real = rewrite.write_fragment_files

    def spy(store: Any, reader: pa.RecordBatchReader, *args: Any, **kwargs: Any) -> Any:
        def batches() -> Any:
            for batch in reader:
                sizes.append(batch.num_rows)
                yield batch

        counted = pa.RecordBatchReader.from_batches(reader.schema, batches())
        return real(store, counted, *args, **kwargs)

    monkeypatch.setattr(rewrite, "write_fragment_files", spy)
    monkeypatch.setattr(small_files, "COLUMN_ROWS", 0)  # read in runs
    runs = _runs_read(monkeypatch)
    uri = str(tmp_path / "ds")
    table = _write(uri, 20, 300)
    lance.dataset(uri).delete("id % 9 = 4")
    keep = table["id"].to_numpy() % 9 != 4
    ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=1_000_000, batch_size=1000)
    assert lance.dataset(uri).to_table().equals(table.filter(pa.array(keep)).combine_chunks())
    assert runs == [20]
    live = int(keep.sum())
    assert sizes == [1000] * (live // 1000) + [live % 1000]
