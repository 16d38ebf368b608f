"""lancelet.log: LANCE_LOG read as pylance reads it, set_logger, and what lancelet logs."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import lance.log as pylance_log
import pyarrow as pa
import pytest

import lancelet
from lancelet import log
from lancelet.errors import ArgumentError


@pytest.fixture(autouse=True)
def _restore_logger() -> Iterator[None]:
    before = log.LOGGER
    level = before.level
    yield
    for logger in {before, log.LOGGER}:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
            handler.close()
    log.LOGGER = before
    before.setLevel(level)


@pytest.mark.parametrize(
    "spec",
    [
        "DEBUG",
        "info",
        "warn",
        "trace",
        "",
        "error,DEBUG",
        "lance_core=debug,warning",
        "debug,lance_core=warning",
        "lance_core=debug",
    ],
)
def test_level_from_lance_log_as_pylance_reads_it(spec: str) -> None:
    with mock.patch.dict(os.environ, {"LANCE_LOG": spec}):
        assert log.get_log_level() == pylance_log.get_log_level()


def test_level_when_lance_log_is_unset() -> None:
    env = {k: v for k, v in os.environ.items() if k != "LANCE_LOG"}
    with mock.patch.dict(os.environ, env, clear=True):
        assert log.get_log_level() == pylance_log.get_log_level() == "INFO"


def test_an_unknown_level_warns_and_falls_back_to_info() -> None:
    with (
        mock.patch.dict(os.environ, {"LANCE_LOG": "chatty"}),
        pytest.warns(UserWarning, match="chatty"),
    ):
        assert log._initial_level() == "INFO"


def test_empty_directives_are_skipped() -> None:
    # pylance returns "" here (and cannot set that level); the first level given is INFO.
    with mock.patch.dict(os.environ, {"LANCE_LOG": ",,info"}):
        assert log.get_log_level() == "INFO"


@pytest.mark.local_files("the log file is a local file, written by the logging module")
def test_set_logger_to_a_file(tmp_path: Path) -> None:
    target = tmp_path / "out.log"
    log.set_logger(file_path=str(target), level=logging.DEBUG, format_string="%(message)s")
    assert log.LOGGER.level == logging.DEBUG
    (handler,) = log.LOGGER.handlers
    assert isinstance(handler, logging.FileHandler)
    assert handler.baseFilename == str(target)
    log.LOGGER.debug("hello %s", "there")
    handler.flush()
    assert target.read_text() == "hello there\n"


def test_set_logger_with_a_handler_and_another_name() -> None:
    handler = logging.NullHandler()
    log.set_logger(name="lancelet-test", log_handler=handler, level=logging.WARNING)
    assert log.LOGGER is logging.getLogger("lancelet-test")
    assert log.LOGGER.handlers == [handler]
    assert handler.level == logging.WARNING
    assert handler.formatter is not None and handler.formatter._fmt == log.DEFAULT_FORMAT


def test_set_logger_needs_somewhere_to_write() -> None:
    with pytest.raises(ArgumentError):
        log.set_logger(file_path=None)


def test_commits_are_logged_at_debug(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger=log.LOGGER_NAME):
        ds = lancelet.write_dataset(pa.table({"x": [1, 2, 3]}), tmp_path / "ds")
        ds.delete("x = 2")
    commits = [r.getMessage() for r in caplog.records if "committed version" in r.getMessage()]
    assert len(commits) == 2
    assert "committed version 1 (overwrite, read version 0)" in commits[0]
    assert "committed version 2 (delete, read version 1)" in commits[1]


# -- LANCE_LOG in a new process: where the lines go and how they look --------------

_WRITE = (
    "import {lib} as lance, pyarrow as pa; "
    "lance.write_dataset(pa.table({{'x': range(10)}}), 'memory://log-test')"
)
_FRACTIONS = {"ns": r"\.\d{9}", "us": r"\.\d{6}", "ms": r"\.\d{3}", "s": ""}


def _run_writer(lib: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # Only the variables given: a log setting of the test run must not leak in.
    base = {"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-c", _WRITE.format(lib=lib)],
        env={**base, **env},
        capture_output=True,
        text=True,
        check=True,
    )


@pytest.mark.parametrize("precision", list(_FRACTIONS))
def test_lance_log_lines_look_like_pylance_core_lines(precision: str) -> None:
    stamp = re.compile(rf"^\[\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d{_FRACTIONS[precision]}Z ")
    env = {"LANCE_LOG": "debug", "LANCE_LOG_TS_PRECISION": precision}
    for lib in ("lance", "lancelet"):
        lines = _run_writer(lib, env).stderr.splitlines()
        assert lines and all(stamp.match(line) for line in lines), (lib, lines[:3])
        assert any(" DEBUG " in line for line in lines), lib


@pytest.mark.local_files("the log file is written by another process")
def test_lance_log_file_takes_the_lines_and_gets_its_directory(tmp_path: Path) -> None:
    for lib in ("lance", "lancelet"):
        target = tmp_path / lib / "nested" / "core.log"
        done = _run_writer(lib, {"LANCE_LOG": "info", "LANCE_LOG_FILE": str(target)})
        assert target.read_text().strip(), lib
        assert " INFO " not in done.stderr, lib


def test_without_lance_log_nothing_is_printed() -> None:
    for lib in ("lance", "lancelet"):
        assert _run_writer(lib, {}).stderr == "", lib
