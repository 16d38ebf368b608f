"""Every Python code block in the documentation runs, so that the examples stay true.

The pages are README.md and every Markdown file under docs/.  A page's ```python
blocks run in order, in one namespace, in a fresh Python process whose working
directory is a new empty folder: what a reader gets by pasting them one after the
other into a fresh interpreter.  A failing block fails the page's test with the
traceback's lines numbered as in the Markdown file.

A block that cannot run here (a real cloud bucket, a cluster's address) is marked
on the line before its fence, visibly in the page's source::

    <!-- docs: skip (why it cannot run here) -->

The reason is required, and a marker anywhere else is an error.  Blocks fenced
with another language (``text``, ``bash``, plain) are not run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

SKIP = re.compile(r"^<!-- docs: skip \((?P<reason>[^)]+)\) -->$")
MARKER = re.compile(r"<!--\s*docs:")
FENCE = re.compile(r"^(?P<indent> *)(?P<ticks>`{3,})(?P<info>[^`]*)$")

# Run in the child process: the pages arrive as JSON on stdin, each run in a fresh
# namespace and a new working folder (named after its order), each block compiled
# under the page's name with its first line at the block's own line, so tracebacks
# point into the Markdown file.
RUNNER = """
import json, os, sys
for number, (page, blocks) in enumerate(json.load(sys.stdin)):
    os.mkdir(str(number))
    os.chdir(str(number))
    namespace = {"__name__": "__main__"}
    for line, source in blocks:
        exec(compile("\\n" * (line - 1) + source, page, "exec"), namespace)
    os.chdir("..")
"""


@dataclass(frozen=True)
class Block:
    line: int  # the block's first line of code, counted from 1
    source: str
    skip: str | None  # the marker's reason, if the block is not run


def blocks(page: Path) -> list[Block]:
    """The page's ```python blocks, in order."""
    lines = page.read_text().splitlines()
    found: list[Block] = []
    fence: str | None = None  # the fence of the block being read, if any
    info, skip, start = "", None, 0
    for number, line in enumerate(lines, start=1):
        if fence is not None:
            if line.strip() == fence:
                if info == "python":
                    source = "\n".join(lines[start - 1 : number - 1]) + "\n"
                    found.append(Block(start, source, skip))
                fence = None
            continue
        match = FENCE.match(line)
        if match is None:
            continue
        fence, info = match["ticks"], match["info"].strip()
        start = number + 1
        before = lines[number - 2].strip() if number >= 2 else ""
        marker = SKIP.match(before)
        skip = marker["reason"].strip() if marker else None
    return found


def markers(page: Path) -> list[tuple[int, str]]:
    """Every ``docs:`` marker outside code blocks in the page, with its line number."""
    found = []
    fence: str | None = None
    for number, line in enumerate(page.read_text().splitlines(), start=1):
        if fence is not None:
            if line.strip() == fence:
                fence = None
            continue
        match = FENCE.match(line)
        if match is not None:
            fence = match["ticks"]
        elif MARKER.search(line):
            found.append((number, line))
    return found


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _spark_available() -> bool:
    has_java = shutil.which("java") is not None or bool(os.environ.get("JAVA_HOME"))
    return has_java and importlib.util.find_spec("pyspark") is not None


def _uses_spark(page: Path) -> bool:
    return any("lancelet.spark" in b.source for b in blocks(page) if b.skip is None)


# The pages with examples to run, in groups that share a process: the pages that use
# Spark share one (a Spark session takes ~10 s to start), every other page has its own.
RUNNABLE = [page for page in PAGES if any(b.skip is None for b in blocks(page))]
GROUPS = {
    **{_name(page): [page] for page in RUNNABLE if not _uses_spark(page)},
    "spark pages": [page for page in RUNNABLE if _uses_spark(page)],
}


@pytest.mark.local_files("the pages' examples write to their working directory")
@pytest.mark.parametrize("group", list(GROUPS))
def test_examples_run(group: str, tmp_path: Path) -> None:
    if group == "spark pages" and not _spark_available():
        pytest.skip("the Spark examples need pyspark and a Java runtime")
    pages = [
        (str(page), [(b.line, b.source) for b in blocks(page) if b.skip is None])
        for page in GROUPS[group]
    ]
    path = [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps(pages),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, (
        f"an example failed:\n{done.stderr[-6000:]}\n--- output ---\n{done.stdout[-3000:]}"
    )


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_markers_are_well_formed(page: Path) -> None:
    """A marker names its reason and sits right before a ```python fence."""
    lines = page.read_text().splitlines()
    for number, line in markers(page):
        assert SKIP.match(line.strip()), f"{_name(page)}:{number}: malformed marker {line!r}"
        following = lines[number] if number < len(lines) else ""
        assert following.strip() == "```python", (
            f"{_name(page)}:{number}: a skip marker must be the line right before a ```python fence"
        )


def test_the_runner_finds_blocks_and_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n```python\nx = 1\n```\n\n<!-- docs: skip (needs a bucket) -->\n"
        "```python\nraise SystemExit\n```\n\n```text\nnot code\n```\n"
        "````markdown\n```python\ninside another block\n```\n````\n"
    )
    assert blocks(page) == [
        Block(4, "x = 1\n", None),
        Block(9, "raise SystemExit\n", "needs a bucket"),
    ]
