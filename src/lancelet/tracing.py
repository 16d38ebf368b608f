"""pylance's ``lance.tracing``: lancelet's events (:mod:`lancelet.events`) in a Chrome
trace file, or given to a callback.

``trace_to_chrome()`` writes every event to a JSON file that ``chrome://tracing`` and
Perfetto open, finished when the process exits (pylance's also holds the spans of its
Rust functions, which lancelet does not have).  ``capture_trace_events(callback)``
hands each event, as a :class:`TraceEvent`, to ``callback`` on a dedicated thread, in
the order the events happened; the events still queued are delivered at exit.  Each
event's ``args`` hold its fields as text, its ``timestamp`` (UTC, to the second) and
the ``client_version`` (lancelet's version).
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import threading
import time
import traceback
from collections.abc import Callable
from datetime import datetime, timezone
from typing import IO, Any

from lancelet import events
from lancelet._version import __version__
from lancelet.errors import LanceletError

__all__ = ["TraceEvent", "capture_trace_events", "shutdown_tracing", "trace_to_chrome"]


class TracingError(LanceletError, RuntimeError):
    """A second callback for trace events (pylance: a panic, "Callback already set")."""


class TraceEvent:
    """One event: its ``target`` (``lance::dataset_events``, ``lance::file_audit``) and
    its ``args``."""

    def __init__(self, target: str, args: dict[str, str]) -> None:
        self.target = target
        self.args = args

    def __repr__(self) -> str:
        return f"TraceEvent(target={self.target}, args={json.dumps(self.args)})"


def _trace_event(event: events.Event) -> TraceEvent:
    args = {name: events.plain_text(value) for name, value in event.fields}
    stamp = datetime.fromtimestamp(event.time_ns // 1_000_000_000, tz=timezone.utc)
    args["timestamp"] = stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    args["client_version"] = __version__
    return TraceEvent(event.target, args)


# --- Chrome traces ------------------------------------------------------------------


class _ChromeTrace:
    """A Chrome trace file: a JSON array of instant events, one per line."""

    def __init__(self, path: str) -> None:
        self._file: IO[str] | None = open(path, "w", encoding="utf-8")  # noqa: SIM115
        self._file.write("[\n")
        self._file.flush()
        self._lock = threading.Lock()
        self._started_ns = time.perf_counter_ns()
        self._threads: dict[int, int] = {}
        self._first = True

    def write(self, event: events.Event) -> None:
        with self._lock:
            if self._file is None:
                return
            self._line(self._thread_name(event.thread))
            self._line(self._instant(event))

    def _thread_name(self, thread: int) -> dict[str, Any] | None:
        if thread in self._threads:
            return None
        number = self._threads[thread] = len(self._threads)
        return {"ph": "M", "pid": 1, "name": "thread_name", "tid": number,
                "args": {"name": str(number)}}  # fmt: skip

    def _instant(self, event: events.Event) -> dict[str, Any]:
        where = f"{event.file}:{event.line}"
        return {
            "ph": "i",
            "pid": 1,
            "ts": (time.perf_counter_ns() - self._started_ns) / 1000,
            "name": f"event {where}",
            "cat": event.target,
            "tid": self._threads[event.thread],
            "s": "t",
            ".file": event.file,
            ".line": event.line,
            "args": {name: events.debug_text(value) for name, value in event.fields},
        }

    def _line(self, record: dict[str, Any] | None) -> None:
        if record is None or self._file is None:
            return
        self._file.write(("" if self._first else ",\n") + json.dumps(record))
        self._first = False
        self._file.flush()

    def finish(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.write("\n]")
                self._file.close()
                self._file = None


_chrome: _ChromeTrace | None = None


def trace_to_chrome(*, file: str | None = None) -> None:
    """Begin writing lancelet's events to a Chrome trace file, by default
    ``./trace-{unix epoch in micros}.json``; the file is finished when the process
    exits (or when another call starts another file)."""
    global _chrome
    path = os.fspath(file) if file is not None else f"./trace-{time.time_ns() // 1000}.json"
    trace = _ChromeTrace(path)
    if _chrome is not None:
        events.remove_sink(_chrome.write)
        _chrome.finish()
    _chrome = trace
    events.add_sink(trace.write)
    atexit.register(trace.finish)


# --- callbacks --------------------------------------------------------------------------


class _Delivery:
    """The queue of events for a callback, and the thread that calls it."""

    _DONE = object()

    def __init__(self, callback: Callable[[TraceEvent], None]) -> None:
        self._callback = callback
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="lance-trace-events", daemon=True)
        self._thread.start()

    def put(self, event: events.Event) -> None:
        self._queue.put(event)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is self._DONE:
                return
            assert isinstance(item, events.Event)
            try:
                self._callback(_trace_event(item))
            except Exception:
                # A failing callback is reported and the next event delivered, as a
                # callback is for reporting: it must not stop the reports.
                traceback.print_exc()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._queue.put(self._DONE)
        self._thread.join(timeout_s)


_delivery: _Delivery | None = None


def capture_trace_events(callback: Callable[[TraceEvent], None]) -> None:
    """Call ``callback`` with each event, on a dedicated thread (so it may be called
    a little after the event: for reporting, not synchronization).  Once per process."""
    global _delivery
    if not callable(callback):
        raise TypeError(f"capture_trace_events: callback must be callable, not {callback!r}")
    if _delivery is not None:
        raise TracingError("capture_trace_events: Callback already set")
    _delivery = _Delivery(callback)
    events.add_sink(_delivery.put)
    atexit.register(shutdown_tracing)


def shutdown_tracing() -> None:
    """Deliver the events still queued, then stop calling the callback."""
    global _delivery
    delivery = _delivery
    if delivery is None:
        return
    events.remove_sink(delivery.put)
    delivery.stop()
