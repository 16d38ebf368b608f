"""The events lancelet reports at the points where pylance reports tracing events.

pylance's core emits ``tracing`` events: ``lance::dataset_events`` when a dataset is
loaded, written, committed, compacted, cleaned up or loses columns, and
``lance::file_audit`` when it creates a data, deletion or manifest file.  They are
logged (``LANCE_LOG``) and given to the sinks of :mod:`lancelet.tracing` (a Chrome
trace file, a callback).  lancelet emits the same events, with the same fields, in
the same order, from the same few places: :func:`emit` is called where a dataset is
opened, a write starts, a data or deletion file is finished, a manifest is published
and a commit is done.  When nobody listens (no sink, and no log handler at INFO) an
event costs a test of two flags.

Field values are printed as Rust's ``Debug`` prints them in pylance's log lines and
Chrome traces: strings quoted, numbers and booleans bare, and :class:`Raw` values (an
enum, an ``Option``) as they are.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType

from lancelet import log

DATASET_EVENTS = "lance::dataset_events"
FILE_AUDIT = "lance::file_audit"


class Raw(str):
    """A field value printed without quotes (Rust's ``Debug`` of an enum or Option)."""


Value = str | int | bool | None


@dataclass(frozen=True)
class Event:
    target: str
    fields: tuple[tuple[str, Value], ...]
    time_ns: int
    thread: int
    file: str
    line: int


Sink = Callable[[Event], None]
# Replaced, never changed in place: emitters iterate over the tuple they read.
_sinks: tuple[Sink, ...] = ()
_lock = threading.Lock()


def add_sink(sink: Sink) -> None:
    global _sinks
    with _lock:
        _sinks = (*_sinks, sink)


def remove_sink(sink: Sink) -> None:
    global _sinks
    with _lock:
        _sinks = tuple(s for s in _sinks if s is not sink)


def emit(target: str, **fields: Value) -> None:
    """Report an event (fields in the order given)."""
    sinks = _sinks
    logged = log.LOGGER.isEnabledFor(logging.INFO) and log.LOGGER.hasHandlers()
    if not sinks and not logged:
        return
    caller = _caller()
    event = Event(
        target,
        tuple(fields.items()),
        time.time_ns(),
        threading.get_ident(),
        caller.f_code.co_filename,
        caller.f_lineno,
    )
    if logged:
        _log(event)
    for sink in sinks:
        sink(event)


def _caller() -> FrameType:
    """The frame that reported the event: the first outside this module."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return frame


def _log(event: Event) -> None:
    # Under pylance's name for the event's logger (``lance::events::dataset_events``),
    # through lancelet's logger and its handlers.
    name = "lance::events::" + event.target.removeprefix("lance::")
    record = log.LOGGER.makeRecord(
        name, logging.INFO, event.file, event.line, "%s", (log_text(event),), None
    )
    log.LOGGER.handle(record)


def debug_text(value: Value) -> str:
    """``value`` as pylance's log line and Chrome trace print it."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "None"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def plain_text(value: Value) -> str:
    """``value`` as a captured event's ``args`` give it: unquoted."""
    if isinstance(value, str):
        return str(value)
    return debug_text(value)


def log_text(event: Event) -> str:
    """pylance's log line of the event: its target, then its fields."""
    parts = [f"target={debug_text(event.target)}"]
    parts += [f"{name}={debug_text(value)}" for name, value in event.fields]
    return " ".join(parts) + " "


# --- what the events say of things ---------------------------------------------------


def target_ref(version: int | str | None) -> Raw:
    """The ``target_ref`` of a load: none, a version number or a tag."""
    if version is None:
        return Raw("None")
    if isinstance(version, str):
        return Raw(f"Some(Tag({json.dumps(version, ensure_ascii=False)}))")
    return Raw(f"Some(VersionNumber({version}))")


def object_path(path: str) -> str:
    """A file's path as the object store names it: no scheme, no leading slash."""
    return re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*://", "", path).lstrip("/")


def load_failed(uri: str, version: int | str | None) -> None:
    emit(DATASET_EVENTS, event="loading", uri=uri, target_ref=target_ref(version), status="error")


def loaded(uri: str, version: int | str | None, found: int) -> None:
    emit(
        DATASET_EVENTS,
        event="loading",
        uri=uri,
        target_ref=target_ref(version),
        version=found,
        status="success",
    )


def file_created(kind: str, path: str) -> None:
    emit(FILE_AUDIT, mode="create", type=kind, path=path)


def dataset_event(event: str, uri: str, **fields: Value) -> None:
    emit(DATASET_EVENTS, event=event, uri=uri, **fields)


def committed(uri: str, read_version: int, version: int, detached: bool, operation: str) -> None:
    emit(
        DATASET_EVENTS,
        event="committed",
        uri=uri,
        read_version=read_version,
        committed_version=version,
        detached=detached,
        operation=operation,
    )
