"""The README's examples that can run anywhere are run, so that they stay true."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).parent.parent / "README.md"


def _example(heading: str) -> str:
    """The first Python block after ``heading`` in the README."""
    text = README.read_text()
    section = text[text.index(f"\n{heading}\n") :]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None, f"no python example under {heading!r}"
    return found.group(1)


@pytest.mark.local_files("the example writes to a relative local path")
def test_vector_search_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the example writes its dataset to a relative path
    exec(compile(_example("## Vector search"), str(README), "exec"), {})
    assert (tmp_path / "vectors").is_dir()


@pytest.mark.local_files("the example writes to a relative local path")
def test_full_text_search_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(_example("## Full-text search"), str(README), "exec"), {})
    assert (tmp_path / "texts").is_dir()
