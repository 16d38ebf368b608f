"""lancelet.log: LANCE_LOG read as pylance reads it, set_logger, and what lancelet logs."""

from __future__ import annotations

import logging
import os
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
