"""The commit loop against pylance's: retries, strict overwrites, and winners whose
transaction files do not describe what their manifests did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from lance.commit import CommitConflictError as PylanceConflict

import lancelet as ll
from lancelet.errors import CommitConflictError, VersionNotFoundError
from tests.dataset.util import snapshot

TABLE = pa.table({"x": list(range(10))})


def _twins(tmp_path: Path) -> dict[str, tuple[Any, str]]:
    """A dataset of two versions per library, each with the library's own fragments
    written for a later commit."""
    out: dict[str, tuple[Any, str]] = {}
    for lib in (ll, lance):
        uri = str(tmp_path / lib.__name__)
        lib.write_dataset(TABLE, uri, data_storage_version="2.0")
        lib.write_dataset(TABLE, uri, mode="append")
        out[lib.__name__] = (lib, uri)
    return out


def _operation(lib: Any, uri: str, kind: str) -> Any:
    fragments = lib.fragment.write_fragments(TABLE, uri)
    if kind == "append":
        return lib.LanceOperation.Append(fragments)
    if kind == "overwrite":
        return lib.LanceOperation.Overwrite(TABLE.schema, fragments)
    assert kind == "restore"
    return lib.LanceOperation.Restore(1)


def _outcome(lib: Any, uri: str, kind: str, **kwargs: Any) -> tuple[str, int]:
    """("ok", rows of the new version) or ("conflict", rows of the unchanged latest)."""
    operation = _operation(lib, uri, kind)
    try:
        ds = lib.LanceDataset.commit(uri, operation, **kwargs)
    except (CommitConflictError, PylanceConflict):
        return "conflict", lib.dataset(uri).count_rows()
    return "ok", ds.count_rows()


@pytest.mark.parametrize(
    ("kind", "read_version", "max_retries"),
    [
        ("append", 1, 0),
        ("restore", 1, 0),
        ("overwrite", 1, 0),
        ("overwrite", 2, 0),
        ("overwrite", 1, 1),
        ("overwrite", 1, 3),
    ],
)
def test_commit_with_few_retries_as_pylance(
    tmp_path: Path, kind: str, read_version: int, max_retries: int
) -> None:
    """pylance makes one attempt, rebased onto the latest version, unless no retry is
    allowed for an overwrite: that one is strict, committed on its read version or not
    at all."""
    outcomes = {
        name: _outcome(lib, uri, kind, read_version=read_version, max_retries=max_retries)
        for name, (lib, uri) in _twins(tmp_path).items()
    }
    assert outcomes["lancelet"] == outcomes["lance"]


def test_strict_overwrite_leaves_the_dataset_unchanged(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(TABLE, uri)
    ll.write_dataset(TABLE, uri, mode="append")
    operation = _operation(ll, uri, "overwrite")
    before = snapshot(uri)
    with pytest.raises(CommitConflictError, match="version 1.*version 2"):
        ll.LanceDataset.commit(uri, operation, read_version=1, max_retries=0)
    assert snapshot(uri) == before
    assert ll.dataset(uri).version == 2


def test_read_version_from_the_future_is_refused(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(TABLE, uri)
    operation = _operation(ll, uri, "append")
    with pytest.raises(VersionNotFoundError, match="read version 7"):
        ll.LanceDataset.commit(uri, operation, read_version=7)
    assert ll.dataset(uri).version == 1
