"""The fuzz worker: ``python -m tests.fuzz.worker SPEC.json`` (see :mod:`.harness`).

It prints one JSON line per event and flushes each, so the parent knows which mutant
was running if the process dies.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import shutil
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from lancelet.errors import LanceletError

Check = Callable[[Path], pa.Table]


def _emit(**message: Any) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _load(name: str) -> Check:
    module, _, function = name.partition(":")
    check: Check = getattr(importlib.import_module(module), function)
    return check


def _same(got: pa.Table, want: pa.Table) -> bool:
    if got.num_columns != want.num_columns or got.num_rows != want.num_rows:
        return False
    for ours, theirs in zip(got.columns, want.columns, strict=True):
        if ours.type != theirs.type or not ours.equals(theirs):
            return False
    return True


def _classify(check: Check, root: Path, want: pa.Table) -> tuple[str, str]:
    try:
        got = check(root)
    except LanceletError as exc:
        return "error", f"{type(exc).__name__}: {exc}"[:500]
    except BaseException as exc:  # the point is to see everything else
        return "foreign", "".join(traceback.format_exception(exc))[-1500:]
    if _same(got, want):
        return "same", ""
    try:
        got.validate(full=True)
    except pa.ArrowException as exc:
        return "invalid", f"{exc}"[:500]
    return "different", f"{got.num_rows} rows"


def _apply(root: Path, mutant: dict[str, Any]) -> bytes | None:
    """Change the file; return its original bytes (None: it did not exist)."""
    path = root / mutant["file"]
    original = path.read_bytes() if path.exists() else None
    kind = mutant["kind"]
    if kind == "delete":
        path.unlink(missing_ok=True)
        return original
    data = bytearray(original or b"")
    offset = mutant["offset"]
    if kind == "xor":
        data[offset] ^= mutant["value"]
    elif kind == "set":
        data[offset] = mutant["value"]
    elif kind == "truncate":
        del data[offset:]
    elif kind == "replace":
        data = bytearray(bytes.fromhex(mutant["blob"]))
    else:
        raise ValueError(f"unknown mutant kind {kind!r}")
    _write(path, bytes(data))
    return original


def _restore(root: Path, mutant: dict[str, Any], original: bytes | None) -> None:
    path = root / mutant["file"]
    if original is None:
        path.unlink(missing_ok=True)
    else:
        _write(path, original)


def _write(path: Path, data: bytes) -> None:
    # A new file renamed into place: a memory map a reader still holds keeps the old
    # bytes instead of seeing the file change (or shrink) under it.
    tmp = path.with_name(path.name + ".fuzz-tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    limit = int(spec["memory_limit"])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # Each worker mutates its own copy: one that dies mid-mutant leaves the pristine
    # fixture intact for the next.
    root = Path(spec["scratch"]) / "fixture"  # the harness removes it
    shutil.copytree(spec["root"], root)
    check = _load(spec["check"])
    try:
        want = check(root)
    except BaseException as exc:
        _emit(event="pristine-failed", detail=repr(exc))
        return 1
    deadline = time.monotonic() + float(spec["deadline_s"])
    for mutant in spec["mutants"]:
        if time.monotonic() > deadline:
            break
        _emit(event="start")
        original = _apply(root, mutant)
        try:
            kind, detail = _classify(check, root, want)
        finally:
            _restore(root, mutant, original)
        _emit(event="done", kind=kind, detail=detail)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main(sys.argv[1]))
