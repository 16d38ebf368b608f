"""Running the ``lancelet`` command in-process, and datasets for it to look at.

Every check compares what the command prints with pylance's own answer (``import
lance``) or with a count made independently (files on disk, pyarrow), never with
lancelet's API.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

import lancelet
from lancelet.cli.main import cli


@dataclass(frozen=True)
class Cli:
    """The command, run in this process (wide enough that tables do not wrap)."""

    runner: CliRunner

    def __call__(self, *args: str, ok: bool = True) -> Result:
        result = self.runner.invoke(cli, list(args), catch_exceptions=False, prog_name="lancelet")
        if ok:
            assert result.exit_code == 0, (args, result.output)
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "--json").stdout)

    def fails(self, *args: str, status: int = 1) -> str:
        """The one-line error of a command that must fail with ``status``."""
        result = self(*args, ok=False)
        assert result.exit_code == status, (args, result.output)
        assert result.stdout == "", result.stdout
        return result.stderr


@pytest.fixture
def run() -> Cli:
    return Cli(CliRunner(env={"COLUMNS": "250", "LANCELET_STORAGE_OPTIONS": None}))


def rows(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"row {i}" for i in ids], pa.string()),
            "score": pa.array([i / 4 for i in ids], pa.float64()),
        }
    )


# Who writes the test datasets: pylance or lancelet, through the same calls.
Writer = Callable[..., Any]
WRITERS: dict[str, Writer] = {
    "pylance": lance.write_dataset,
    "lancelet": lancelet.write_dataset,
}


@pytest.fixture(params=sorted(WRITERS))
def writer(request: pytest.FixtureRequest) -> Writer:
    return WRITERS[str(request.param)]


@pytest.fixture
def busy_dataset(tmp_path: Path, writer: Writer) -> str:
    """Four versions: a write of 4 fragments, a delete, a BTREE index, an append
    of a fragment the index does not cover, a tag on version 1."""
    path = str(tmp_path / "busy")
    writer(rows(0, 100), path, max_rows_per_file=30)
    opened = lancelet.dataset if writer is lancelet.write_dataset else lance.dataset
    opened(path).delete("id < 5")
    opened(path).create_scalar_index("id", "BTREE")
    writer(rows(100, 40), path, mode="append")
    opened(path).tags.create("first", 1)
    return path
