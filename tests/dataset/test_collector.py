"""The garbage collector paused while a compaction runs: paused inside, running again
after (also after a failure, and only once the last of several threads' pauses
ends), left off where the application had turned it off."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.dataset.compaction import commit
from lancelet.dataset.core.collector import collector_paused, pauses_collector


@pytest.fixture(autouse=True)
def collector_running() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if not was:
            gc.disable()


def test_paused_inside_running_after_even_after_a_failure() -> None:
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()

    @pauses_collector
    def fails() -> None:
        assert not gc.isenabled()
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        fails()
    assert gc.isenabled()


def test_a_collector_the_application_turned_off_stays_off() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_it_runs_again_only_when_the_last_pause_ends() -> None:
    entered, leave = threading.Event(), threading.Event()

    def other() -> None:
        with collector_paused():
            entered.set()
            leave.wait(timeout=30)

    thread = threading.Thread(target=other)
    with collector_paused():
        thread.start()
        assert entered.wait(timeout=30)
    assert not gc.isenabled()  # the other thread's pause still runs
    leave.set()
    thread.join(timeout=30)
    assert gc.isenabled()


def test_a_compaction_runs_paused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    rewrite = commit.rewrite_fragments

    def watched(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return rewrite(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(commit, "rewrite_fragments", watched)
    table = pa.table({"id": np.arange(100)})
    uri = str(tmp_path / "ds")
    ll.write_dataset(table, uri, max_rows_per_file=10)
    ll.dataset(uri).optimize.compact_files()
    assert seen and not any(seen)
    assert gc.isenabled()
    assert ll.dataset(uri).to_table().equals(table)
