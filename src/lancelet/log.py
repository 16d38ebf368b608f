"""lancelet's Python logger, configured the way pylance configures its own.

``LANCE_LOG`` names the level, in the Rust ``env_logger`` syntax pylance accepts:
comma-separated directives, of which those of the form ``target=level`` are meant
for particular Rust crates and say nothing about the Python side.  The first bare
level wins; none at all (or an empty variable) means INFO.  Rust's ``trace`` has no
Python counterpart and becomes DEBUG.

lancelet logs through :data:`LOGGER` (commits and their retries at DEBUG).  Like
pylance it adds no handler of its own until :func:`set_logger` is called.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import warnings
from pathlib import Path

from lancelet.errors import ArgumentError

ENV_NAME_PYLANCE_LOGGING_LEVEL = "LANCE_LOG"
# With LANCE_LOG set, pylance's core logs to stderr, or to this file, with timestamps
# of this precision (s, ms, us, ns); lancelet does the same.
ENV_NAME_LOG_FILE = "LANCE_LOG_FILE"
ENV_NAME_TS_PRECISION = "LANCE_LOG_TS_PRECISION"
_FRACTION_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}

LOGGER_NAME = "lancelet"
DEFAULT_FORMAT = (
    "%(asctime)s %(name)s [%(levelname)s] %(filename)s:%(lineno)d %(funcName)s : %(message)s"
)

_DEFAULT_LEVEL = "INFO"


def get_python_log_level(rust_log_level: str) -> str:
    """The Python level name for a Rust one (only ``trace`` differs)."""
    return "DEBUG" if rust_log_level.upper() == "TRACE" else rust_log_level


def get_log_level() -> str:
    """The level ``LANCE_LOG`` asks for, as an upper-case level name."""
    spec = os.environ.get(ENV_NAME_PYLANCE_LOGGING_LEVEL, "").upper()
    bare = [d for d in spec.split(",") if d and "=" not in d]
    return get_python_log_level(bare[0]) if bare else _DEFAULT_LEVEL


def _initial_level() -> str:
    level = get_log_level()
    if isinstance(logging.getLevelName(level), int):
        return level
    # Raising here would make ``import lancelet`` itself fail on a typo.
    warnings.warn(
        f"{ENV_NAME_PYLANCE_LOGGING_LEVEL}={os.environ.get(ENV_NAME_PYLANCE_LOGGING_LEVEL)!r} "
        f"names no Python log level; lancelet logs at {_DEFAULT_LEVEL}",
        stacklevel=2,
    )
    return _DEFAULT_LEVEL


class CoreLogFormatter(logging.Formatter):
    """pylance's core log line: ``[2024-01-02T03:04:05.678Z INFO  target] message``."""

    def __init__(self, digits: int = 0) -> None:
        super().__init__()
        self.digits = digits

    def format(self, record: logging.LogRecord) -> str:
        seconds = int(record.created)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        if self.digits:
            # A float time: digits past the microsecond are as good as it is.
            nanos = round((record.created - seconds) * 1e9)
            stamp += "." + f"{min(nanos, 999_999_999):09d}"[: self.digits]
        return f"[{stamp}Z {record.levelname:<5} {record.name}] {record.getMessage()}"


def _precision_digits() -> int:
    name = os.environ.get(ENV_NAME_TS_PRECISION, "s").strip().lower() or "s"
    if name not in _FRACTION_DIGITS:
        warnings.warn(
            f"{ENV_NAME_TS_PRECISION}={name!r} is none of s, ms, us, ns; lancelet uses s",
            stacklevel=3,
        )
        return 0
    return _FRACTION_DIGITS[name]


def _env_handler() -> logging.Handler | None:
    """The handler ``LANCE_LOG`` asks for: none when it is unset."""
    if not os.environ.get(ENV_NAME_PYLANCE_LOGGING_LEVEL):
        return None
    target = os.environ.get(ENV_NAME_LOG_FILE)
    handler: logging.Handler
    if target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(target)
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(CoreLogFormatter(_precision_digits()))
    return handler


LOGGER = logging.getLogger(LOGGER_NAME)
LOGGER.setLevel(_initial_level())
_ENV_HANDLER = _env_handler()
if _ENV_HANDLER is not None:
    LOGGER.addHandler(_ENV_HANDLER)


def set_logger(
    file_path: str | None = "lancelet.log",
    name: str = LOGGER_NAME,
    level: int = logging.INFO,
    format_string: str | None = None,
    log_handler: logging.Handler | None = None,
) -> None:
    """Send the log to ``log_handler``, or else to a file at ``file_path``.

    The logger named ``name`` becomes :data:`LOGGER` (the one lancelet logs to) at
    ``level``; the handler gets the same level and ``format_string`` (pylance's
    format when None).  The defaults name lancelet's logger and file where pylance's
    name ``"pylance"`` and ``pylance.log``, so that a plain ``set_logger()`` captures
    what lancelet logs.
    """
    global LOGGER
    if log_handler is None:
        if file_path is None:
            raise ArgumentError("set_logger needs a file_path or a log_handler")
        log_handler = logging.FileHandler(file_path)
    log_handler.setLevel(level)
    log_handler.setFormatter(logging.Formatter(format_string or DEFAULT_FORMAT))
    LOGGER = logging.getLogger(name)
    LOGGER.setLevel(level)
    LOGGER.addHandler(log_handler)
