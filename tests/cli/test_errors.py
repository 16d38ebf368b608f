"""Errors: one line on stderr, exit status 1 (2 for a malformed command line, as
click reports it), and nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import lance
import pytest

import lancelet
from tests.cli.conftest import Cli, rows

# Each command that opens a dataset, with the arguments it needs besides the path.
COMMANDS = [
    ["info"],
    ["info", "--version", "3"],
    ["head", "-v", "some-tag"],
    ["history"],
    ["head"],
    ["compact"],
    ["cleanup"],
    ["restore", "PATH", "1"],
    ["tag", "list"],
    ["tag", "create", "PATH", "name"],
    ["tag", "delete", "PATH", "name"],
]


def _with_path(command: list[str], path: str) -> list[str]:
    if "PATH" in command:
        return [path if word == "PATH" else word for word in command]
    return [*command, path]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_missing_dataset(run: Cli, tmp_path: Path, command: list[str]) -> None:
    missing = str(tmp_path / "no-such-dataset")
    error = run.fails(*_with_path(command, missing))
    assert error == (
        f"Error: DatasetNotFoundError: {missing}: no Lance dataset here: "
        "dataset not found (no manifest)\n"
    )
    assert os.listdir(tmp_path) == []  # nothing was created there


def test_a_file_that_is_no_dataset(run: Cli, tmp_path: Path) -> None:
    not_a_dataset = tmp_path / "notes.txt"
    not_a_dataset.write_text("hello")
    error = run.fails("info", str(not_a_dataset))
    assert str(not_a_dataset) in error and error.count("\n") == 1


def test_a_missing_version_or_tag(run: Cli, tmp_path: Path) -> None:
    path = str(tmp_path / "ds")
    lance.write_dataset(rows(0, 5), path)
    assert run.fails("info", path, "--version", "9") == (
        f"Error: VersionNotFoundError: {path}: version 9 does not exist\n"
    )
    assert run.fails("head", path, "-v", "gone") == (
        f"Error: TagNotFoundError: {path}: tag 'gone' does not exist\n"
    )


def test_malformed_storage_options(
    run: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "ds")
    lance.write_dataset(rows(0, 5), path)
    usage = run.fails("info", path, "-S", "no-equals-sign", status=2)
    assert "expected KEY=VALUE, got 'no-equals-sign'" in usage
    env_runner = Cli(run.runner.__class__(env={"LANCELET_STORAGE_OPTIONS": "{not json"}))
    usage = env_runner.fails("info", path, status=2)
    assert "LANCELET_STORAGE_OPTIONS is not JSON" in usage


def test_usage_errors_keep_clicks_status(run: Cli, tmp_path: Path) -> None:
    assert "Missing argument 'PATH'" in run.fails("info", status=2)
    assert "No such option" in run.fails("history", str(tmp_path), "--bogus", status=2)
    assert "0 is not in the range x>=1" in run.fails("history", str(tmp_path), "-n", "0", status=2)


def test_the_installed_command_prints_one_line_and_exits_1(tmp_path: Path) -> None:
    """A real process: no traceback, the error alone on stderr, exit status 1."""
    source = str(Path(lancelet.__file__).resolve().parents[1])
    environment = {**os.environ, "PYTHONPATH": source}
    missing = str(tmp_path / "nothing")
    done = subprocess.run(
        [sys.executable, "-m", "lancelet.cli", "info", missing],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"Error: DatasetNotFoundError: {missing}: no Lance dataset here: "
        "dataset not found (no manifest)"
    ]
    assert "Traceback" not in done.stderr
