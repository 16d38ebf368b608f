"""Progress bars on the terminal for long operations (writes, compaction, index
builds, cleanup, the CLI's long commands).

The engine opens a bar with :func:`progress_bar` and calls ``advance(n)`` as work
gets done; everything about the terminal stays here.  Bars are drawn on stderr with
``rich`` only when stderr is a terminal, so scripts, pipes, logs and notebooks see
nothing; ``LANCELET_PROGRESS=0`` silences them everywhere and ``LANCELET_PROGRESS=1``
shows them everywhere (on a stream that is no terminal, each bar is printed once, in
its final state, when the outermost operation ends).

Bars opened while another is open (a compaction's writes, the CLI around an engine
call) are drawn as extra lines of the same display, since two live displays on one
terminal would overwrite each other.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa

if TYPE_CHECKING:
    # rich is imported when a bar is first drawn: most processes never draw one, and
    # importing it costs tens of milliseconds at every ``import lancelet``.
    from rich.progress import Progress, TaskID

T = TypeVar("T")

# "0": never draw bars, "1": always; unset or anything else: only on a terminal.
PROGRESS_ENV = "LANCELET_PROGRESS"


def bars_enabled() -> bool:
    """Whether bars are drawn now: as ``LANCELET_PROGRESS`` says, else when stderr is
    a terminal."""
    setting = os.environ.get(PROGRESS_ENV, "").strip()
    if setting in ("0", "1"):
        return setting == "1"
    return _stderr_is_terminal()


def _stderr_is_terminal() -> bool:
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


class ProgressBar:
    """One operation's bar; this base draws nothing (the bar when bars are off)."""

    def advance(self, n: int = 1) -> None:
        """``n`` more units of work are done."""

    def tracked(self, items: Iterable[T], size: Callable[[T], int] | None = None) -> Iterable[T]:
        """``items``, advancing the bar by ``size(item)`` (default 1) as each is
        consumed; ``items`` itself when nothing is drawn, so silence costs nothing."""
        return items

    def tracked_batches(self, reader: pa.RecordBatchReader) -> pa.RecordBatchReader:
        """``reader``, advancing the bar by each batch's rows as it is read."""
        return reader


class _DrawnBar(ProgressBar):
    """A task of the shared display."""

    def __init__(self, display: Progress, task: TaskID) -> None:
        self._display = display
        self._task = task
        self._completed = 0

    def advance(self, n: int = 1) -> None:
        self._completed += n
        self._display.advance(self._task, n)

    def tracked(self, items: Iterable[T], size: Callable[[T], int] | None = None) -> Iterator[T]:
        for item in items:
            yield item
            self.advance(1 if size is None else size(item))

    def tracked_batches(self, reader: pa.RecordBatchReader) -> pa.RecordBatchReader:
        batches = self.tracked(reader, lambda batch: int(batch.num_rows))
        return pa.RecordBatchReader.from_batches(reader.schema, batches)

    def finish(self) -> None:
        """A bar whose total was not known ends full, at what it counted."""
        task = self._display.tasks[self._display.task_ids.index(self._task)]
        if task.total is None or task.total < self._completed:
            self._display.update(self._task, total=self._completed)


class _Display:
    """The one live display of this process, and how many bars use it."""

    lock = threading.Lock()
    progress: Progress | None = None
    users = 0

    @classmethod
    def open_task(cls, description: str, total: int | None, unit: str) -> _DrawnBar:
        with cls.lock:
            if cls.progress is None:
                cls.progress = _new_progress()
                cls.progress.start()
            cls.users += 1
            task = cls.progress.add_task(description, total=total, unit=unit)
            return _DrawnBar(cls.progress, task)

    @classmethod
    def close_task(cls) -> None:
        with cls.lock:
            cls.users -= 1
            if cls.users == 0 and cls.progress is not None:
                cls.progress.stop()
                cls.progress = None


def _new_progress() -> Progress:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    # Whether to draw in place is decided by the stream alone: rich would otherwise
    # also take FORCE_COLOR or TTY_COMPATIBLE from the environment as a terminal.
    console = Console(file=sys.stderr, force_terminal=_stderr_is_terminal())
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[unit]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


@contextmanager
def progress_bar(
    description: str, *, total: int | None = None, unit: str = ""
) -> Iterator[ProgressBar]:
    """A bar for one operation (``total`` units of ``unit``, None when unknown):
    drawn while the block runs if bars are on, a silent stand-in otherwise."""
    if not bars_enabled():
        yield ProgressBar()
        return
    bar = _Display.open_task(description, total, unit)
    try:
        yield bar
        bar.finish()
    finally:
        _Display.close_task()
