"""Arguments the commands parse themselves, and values made presentable: times in
UTC, byte counts for humans, and Arrow row values as JSON or table cells."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
import re
import uuid
from collections.abc import Mapping
from typing import Any

import click

# A duration: one or more number-unit pairs, "7d", "1h30m", "90s".
_DURATION_PART = re.compile(r"(\d+)([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
# Longer text in a table cell is cut (JSON output keeps it whole).
_CELL_CHARS = 60
_BYTE_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


class BadArgument(click.ClickException):
    """An argument the command cannot use: one line on stderr, exit status 1."""


def parse_duration(text: str, option: str) -> dt.timedelta:
    """``7d``, ``12h``, ``1h30m``, ``45s``, ``2w`` as a timedelta."""
    compact = text.strip().lower()
    parts = _DURATION_PART.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        raise BadArgument(
            f"{option}: {text!r} is not a duration (examples: 7d, 12h, 1h30m, 45s, 2w)"
        )
    return dt.timedelta(seconds=sum(int(n) * _UNIT_SECONDS[u] for n, u in parts))


def parse_columns(text: str | None, option: str = "--columns") -> list[str] | None:
    """``a,b`` as ``["a", "b"]``; None when not given."""
    if text is None:
        return None
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise BadArgument(f"{option}: {text!r} has an empty column name (expected a,b,...)")
    return names


def version_reference(text: str, argument: str = "VERSION") -> int | str:
    """A version number (digits) or a tag name."""
    if text.isdigit():
        return int(text)
    if not text or text.lstrip("-").isdigit():
        raise BadArgument(f"{argument}: {text!r} is neither a version number (1, 2, ...) nor a tag")
    return text


def utc(moment: dt.datetime) -> dt.datetime:
    """``moment`` in UTC; a naive one is local time (as pylance's ``versions()`` gives)."""
    return moment.astimezone(dt.timezone.utc)


def utc_text(moment: dt.datetime) -> str:
    """For a table: ``2026-12-05 00:12:52 UTC``."""
    return utc(moment).strftime("%Y-%m-%d %H:%M:%S UTC")


def byte_text(count: int | None) -> str:
    """``5610`` as ``5.5 KiB``; None (unknown) as ``?``."""
    if count is None:
        return "?"
    if count < 1024:
        return f"{count} B"
    size = float(count)
    for unit in _BYTE_UNITS:
        size /= 1024
        if size < 1024 or unit == _BYTE_UNITS[-1]:
            break
    return f"{size:.1f} {unit}"


def json_value(value: Any) -> Any:
    """An Arrow row value (from ``to_pylist``) as JSON: binary as base64, times in ISO
    8601, decimals as strings (exact), maps as ``[key, value]`` pairs; NaN and the
    infinities stay as Python's ``json`` writes them."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, tuple) and len(value) == 2:  # a map entry
        return [json_value(value[0]), json_value(value[1])]
    if isinstance(value, (list, tuple)):
        return [json_value(item) for item in value]
    return str(value)


def cell_text(value: Any) -> str:
    """A row value for a table cell: short, one line."""
    if value is None:
        return "null"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        text = "0x" + bytes(value).hex()
    elif isinstance(value, (dt.datetime, dt.date, dt.time)):
        text = value.isoformat()
    else:
        text = str(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= _CELL_CHARS else text[: _CELL_CHARS - 1] + "…"
