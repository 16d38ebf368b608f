"""Progress bars of long operations: drawn on a terminal (or when forced), silent
otherwise, and counting to the numbers the work really had."""

from __future__ import annotations

import io
import os
import re
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import lance.optimize
import numpy as np
import pyarrow as pa
import pytest

import lancelet
from lancelet.dataset.core import terminal_progress
from lancelet.dataset.core.terminal_progress import progress_bar
from lancelet.progress import FragmentWriteProgress

# "<description> <bar> <done>/<total> <unit>", as a finished bar prints.
_BAR = re.compile(r"^(?P<what>\S.*?) [━╸╺ ]+ (?P<done>\d+)/(?P<total>\d+) (?P<unit>[a-z ]+?)\s+\d")


class _Terminal(io.StringIO):
    """A captured stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


Captured = pytest.CaptureFixture[str]


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch, capsys: Captured) -> Captured:
    """Bars forced on, drawn to pytest's capture of stderr (no terminal)."""
    monkeypatch.setenv(terminal_progress.PROGRESS_ENV, "1")
    return capsys


def _bars(text: str) -> list[tuple[str, int, int, str]]:
    """(description, done, total, unit) of each bar printed."""
    found = []
    for line in text.splitlines():
        match = _BAR.match(line)
        if match:
            done, total = int(match["done"]), int(match["total"])
            found.append((match["what"].strip(), done, total, match["unit"].strip()))
    return found


def _only_bar(text: str, description: str) -> tuple[int, int, str]:
    matching = [(d, t, u) for what, d, t, u in _bars(text) if what.startswith(description)]
    assert len(matching) == 1, text
    return matching[0]


def _table(rows: int) -> pa.Table:
    return pa.table({"id": np.arange(rows), "v": np.arange(rows) * 0.5})


def test_write_dataset_counts_every_row(tmp_path: Path, forced: Captured) -> None:
    lancelet.write_dataset(_table(1000), tmp_path / "ds", max_rows_per_file=300)
    assert _only_bar(forced.readouterr().err, "Writing") == (1000, 1000, "rows")


def test_a_stream_of_unknown_length_ends_at_the_rows_it_had(
    tmp_path: Path, forced: Captured
) -> None:
    table = _table(700)
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=100))
    lancelet.write_dataset(reader, tmp_path / "ds")
    assert _only_bar(forced.readouterr().err, "Writing") == (700, 700, "rows")


class _Recorder(FragmentWriteProgress):
    def __init__(self) -> None:
        self.events: list[str] = []

    def begin(self, fragment: Any, **kwargs: Any) -> None:
        self.events.append("begin")

    def complete(self, fragment: Any, **kwargs: Any) -> None:
        self.events.append("complete")


def test_write_fragments_draws_a_bar_and_still_tells_its_progress_argument(
    tmp_path: Path, forced: Captured
) -> None:
    recorder = _Recorder()
    fragments = lancelet.fragment.write_fragments(
        _table(500), tmp_path / "ds", max_rows_per_file=200, progress=recorder
    )
    assert _only_bar(forced.readouterr().err, "Writing fragments") == (500, 500, "rows")
    assert len(fragments) == 3
    assert recorder.events == ["begin", "complete"] * 3


def _small_fragments(uri: Path, count: int, rows: int) -> None:
    for n in range(count):
        mode = "create" if n == 0 else "append"
        lancelet.write_dataset(_table(rows), uri, mode=mode)


def test_compaction_counts_the_tasks_pylance_plans(tmp_path: Path, forced: Captured) -> None:
    uri = tmp_path / "ds"
    _small_fragments(uri, 7, 40)
    options = {"target_rows_per_fragment": 100}
    planned = lance.optimize.Compaction.plan(lance.dataset(uri), options).num_tasks()
    assert planned > 1
    forced.readouterr()
    lancelet.dataset(uri).optimize.compact_files(**options)
    assert _only_bar(forced.readouterr().err, "Compacting") == (planned, planned, "tasks")


def test_a_scalar_index_build_counts_the_live_rows(tmp_path: Path, forced: Captured) -> None:
    uri = tmp_path / "ds"
    table = _table(900)
    lance.write_dataset(table, uri, max_rows_per_file=250)
    lance.dataset(uri).delete("id % 7 = 0")
    live = lance.dataset(uri).count_rows()
    assert live == len([i for i in range(900) if i % 7])
    lancelet.dataset(uri).create_scalar_index("id", "BTREE")
    assert _only_bar(forced.readouterr().err, "Indexing id") == (live, live, "rows")


def test_a_vector_index_build_goes_through_its_steps(tmp_path: Path, forced: Captured) -> None:
    rng = np.random.default_rng(3)
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(300 * 8, np.float32)), 8)
    uri = tmp_path / "ds"
    lancelet.write_dataset(pa.table({"vec": vectors}), uri)
    lancelet.dataset(uri).create_index("vec", "IVF_FLAT", num_partitions=2)
    assert _only_bar(forced.readouterr().err, "Indexing vec") == (2, 2, "steps")


def _files(root: Path) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


@pytest.mark.local_files("counts the files on disk")
def test_cleanup_counts_the_files_it_deleted(tmp_path: Path, forced: Captured) -> None:
    uri = tmp_path / "ds"
    _small_fragments(uri, 3, 10)
    lancelet.write_dataset(_table(5), uri, mode="overwrite")
    before = _files(uri)
    lancelet.dataset(uri).cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    deleted = len(before - _files(uri))
    assert deleted > 3
    assert _only_bar(forced.readouterr().err, "Cleaning up") == (deleted, deleted, "files deleted")


def test_no_terminal_no_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(terminal_progress.PROGRESS_ENV, raising=False)
    uri = tmp_path / "ds"
    _small_fragments(uri, 3, 10)
    dataset = lancelet.dataset(uri)
    dataset.optimize.compact_files()
    dataset.create_scalar_index("id", "BTREE")
    lancelet.fragment.write_fragments(_table(10), uri)
    stats = dataset.cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    assert stats.old_versions > 0  # the cleanup had files to delete, silently
    captured = capfd.readouterr()
    assert captured.err == ""
    assert captured.out == ""


def test_a_terminal_gets_bars_unless_silenced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(terminal_progress.PROGRESS_ENV, raising=False)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress_bar("Work", total=4, unit="items") as bar:
        for _ in bar.tracked(range(4)):
            pass
    assert "4/4" in terminal.getvalue()
    assert "\x1b[" in terminal.getvalue()  # drawn in place, as on a terminal

    monkeypatch.setenv(terminal_progress.PROGRESS_ENV, "0")
    silenced = _Terminal()
    monkeypatch.setattr(sys, "stderr", silenced)
    with progress_bar("Work", total=4) as bar:
        bar.advance(4)
    assert silenced.getvalue() == ""


def test_bars_opened_inside_another_share_its_display(forced: Captured) -> None:
    with progress_bar("Outer", total=2, unit="parts") as outer:
        for _ in range(2):
            with progress_bar("Inner", unit="rows") as inner:
                inner.advance(3)
            outer.advance()
    assert _bars(forced.readouterr().err) == [
        ("Outer", 2, 2, "parts"),
        ("Inner", 3, 3, "rows"),
        ("Inner", 3, 3, "rows"),
    ]


def test_a_failed_operation_leaves_the_display_closed(forced: Captured) -> None:
    with pytest.raises(RuntimeError), progress_bar("Failing", total=5) as bar:
        bar.advance(2)
        raise RuntimeError("boom")
    with progress_bar("Next", total=1, unit="items") as bar:
        bar.advance()
    assert ("Next", 1, 1, "items") in _bars(forced.readouterr().err)
