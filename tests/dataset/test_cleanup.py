"""lancelet's cleanup against pylance's, run on identical copies of one dataset."""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

from lancelet.dataset.versions.cleanup import CleanupStats, cleanup_old_versions
from lancelet.dataset.versions.tags import Tags
from lancelet.errors import CorruptDatasetError, DatasetError, TagError
from lancelet.transaction.store import DatasetStore
from tests.dataset.conftest import History
from tests.storage import file_names, list_names, read_file, remove_file, write_file
from tests.versions import STORAGE_VERSION

EIGHT_DAYS_AGO = time.time() - 8 * 86400
INDEX_A = "11111111-1111-1111-1111-111111111111"
INDEX_B = "22222222-2222-2222-2222-222222222222"
# Files no manifest names, as crashed writers leave them: (path, aged past 7 days).
ORPHANS = [
    ("data/orphan.lance", False),
    ("data/old_orphan.lance", True),
    ("data/old_notes.txt", True),
    ("_deletions/0-1-123.arrow", False),
    ("_deletions/0-1-124.bin", True),
    ("_transactions/5-fresh.txn", False),
    ("_transactions/5-old.txn", True),
    (f"_indices/{INDEX_A}/part.idx", False),
    (f"_indices/{INDEX_B}/part.idx", True),
    ("_versions/.tmp_old_commit", True),
    ("_versions/18446744073709551600.manifest-staging", True),
    ("other/old.lance", True),
]


# Fresh orphans that pylance 14 keeps even with delete_unverified=True, for being newer
# than the oldest kept version (a commit in flight could own them); with that promise
# that nobody is writing, lancelet removes them: (path, the counter they count in).
LINGERING = [
    ("_deletions/0-1-123.arrow", "deletion_files_removed"),
    ("_transactions/5-fresh.txn", "transaction_files_removed"),
]


def _files(root: Path) -> set[str]:
    return file_names(root)


# Orphans are aged with os.utime, which an object in the memory store has no way to be.
AGES_FILES = pytest.mark.local_files("ages files with os.utime; store objects cannot be")


def _add_orphans(root: Path, orphans: list[tuple[str, bool]]) -> None:
    for relative, aged in orphans:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"abc")
        if aged:
            os.utime(path, (EIGHT_DAYS_AGO, EIGHT_DAYS_AGO))


def _pair(history: History, tmp_path: Path) -> tuple[Path, Path]:
    ours, theirs = history.copy(tmp_path / "ours"), history.copy(tmp_path / "theirs")
    for root in (ours, theirs):
        _add_orphans(root, ORPHANS)
    return ours, theirs


def _check_readable(uri: Path, history: History) -> list[int]:
    ds = lance.dataset(uri)
    ds.validate()
    versions = [v["version"] for v in ds.versions()]
    for version in versions:
        assert lance.dataset(uri, version=version).to_table().equals(history.tables[version])
    return versions


def _expected(theirs: Path, stats: Any, delete_unverified: bool) -> tuple[set[str], dict[str, int]]:
    """The files and the stats pylance left, less what it lets linger."""
    files = _files(theirs)
    counts = {name: getattr(stats, name) for name in asdict(CleanupStats())}
    for path, counter in LINGERING if delete_unverified else []:
        if path in files:
            files.remove(path)
            counts[counter] += 1
            counts["bytes_removed"] += len(b"abc")
    return files, counts


def _compare(history: History, tmp_path: Path, tag: int | None, **kwargs: Any) -> list[int]:
    """Clean up two identical copies, one with each library; both must leave the
    same files and report the same numbers (but for :data:`LINGERING`).  The versions
    left, for checking."""
    ours, theirs = _pair(history, tmp_path)
    if tag is not None:
        Tags(DatasetStore(ours)).create("keep", tag)
        lance.dataset(theirs).tags.create("keep", tag)
    stats = cleanup_old_versions(DatasetStore(ours), **kwargs)
    expected = lance.dataset(theirs).cleanup_old_versions(**kwargs)
    files, counts = _expected(theirs, expected, kwargs.get("delete_unverified", False))
    assert _files(ours) == files
    assert asdict(stats) == counts
    versions = _check_readable(ours, history)
    assert versions == _check_readable(theirs, history)
    return versions


def _ids(kwargs: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in kwargs.items()) or "defaults"


CASES: list[dict[str, Any]] = [
    {},
    {"older_than": timedelta(0)},
    {"older_than": timedelta(0), "delete_unverified": True},
    {"older_than": timedelta(days=1)},
    {"retain_versions": 3},
    {"retain_versions": 3, "older_than": timedelta(0)},
    {"retain_versions": 4, "older_than": timedelta(days=1)},
    {"retain_versions": 50, "delete_unverified": True},
]


@AGES_FILES
@pytest.mark.parametrize("kwargs", CASES, ids=_ids)
def test_same_result_as_pylance(history: History, tmp_path: Path, kwargs: dict[str, Any]) -> None:
    _compare(history, tmp_path, None, **kwargs)


TAGGED_CASES: list[dict[str, Any]] = [
    {"older_than": timedelta(0)},
    {"older_than": timedelta(0), "delete_unverified": True},
    {"retain_versions": 3, "delete_unverified": True},
    {"retain_versions": 7, "delete_unverified": True},
]


@AGES_FILES
@pytest.mark.parametrize("kwargs", TAGGED_CASES, ids=_ids)
def test_same_result_as_pylance_with_a_tag(
    history: History, tmp_path: Path, kwargs: dict[str, Any]
) -> None:
    versions = _compare(history, tmp_path, 4, error_if_tagged_old_versions=False, **kwargs)
    assert 4 in versions


def test_removes_only_unused_files(history: History, tmp_path: Path) -> None:
    uri = history.copy(tmp_path / "ds")
    before = _files(uri)
    stats = cleanup_old_versions(DatasetStore(uri), timedelta(0))
    removed = before - _files(uri)
    assert _check_readable(uri, history) == [10]
    assert stats.old_versions == 9 and stats.bytes_removed > 0
    assert "_versions/latest_version_hint.json" not in removed
    assert not any(name.startswith("_indices/") for name in _files(uri))
    # v10 is the restored v2 plus an append: the files of v1 and v2 survive.
    latest = DatasetStore(uri).read_manifest(10)
    assert {f"data/{f.path}" for frag in latest.fragments for f in frag.files} <= _files(uri)
    assert list_names(uri / "_indices") == []


def test_tagged_old_version_stops_cleanup(history: History, tmp_path: Path) -> None:
    uri = history.copy(tmp_path / "ds")
    Tags(DatasetStore(uri)).create("keep", 4)
    before = _files(uri)
    with pytest.raises(TagError, match=r"1 tagged version\(s\).*'keep': 4"):
        cleanup_old_versions(DatasetStore(uri), timedelta(0))
    assert _files(uri) == before
    # Versions the cleanup would not remove anyway do not count.
    cleanup_old_versions(DatasetStore(uri), retain_versions=7)
    assert _check_readable(uri, history) == [4, 5, 6, 7, 8, 9, 10]
    assert lance.dataset(uri, version="keep").to_table().equals(history.tables[4])


def test_pylance_tags_protect_versions(history: History, tmp_path: Path) -> None:
    uri = history.copy(tmp_path / "ds")
    lance.dataset(uri).tags.create("six", 6)
    cleanup_old_versions(DatasetStore(uri), retain_versions=2, error_if_tagged_old_versions=False)
    assert _check_readable(uri, history) == [6, 9, 10]


@AGES_FILES
def test_unverified_files_go_after_seven_days(history: History, tmp_path: Path) -> None:
    uri = history.copy(tmp_path / "ds")
    temp_name = ".x.lance.0123456789abcdef0123456789abcdef.tmp"
    _add_orphans(
        uri,
        [
            ("data/fresh.lance", False),
            ("data/aged.lance", True),
            (f"data/{temp_name}", False),
            (f"data/.y{temp_name}", True),
            (f"_versions/.v{temp_name}", True),
        ],
    )
    stats = cleanup_old_versions(DatasetStore(uri))  # 14 days: no version is that old
    assert stats.old_versions == 0
    left = _files(uri)
    assert {"data/fresh.lance", f"data/{temp_name}"} <= left
    assert not {"data/aged.lance", f"data/.y{temp_name}", f"_versions/.v{temp_name}"} & left
    assert stats.data_files_removed == 2
    stats = cleanup_old_versions(DatasetStore(uri), delete_unverified=True)
    assert not {"data/fresh.lance", f"data/{temp_name}"} & _files(uri)
    assert stats.data_files_removed == 2
    assert _check_readable(uri, history) == list(range(1, 11))


def test_latest_is_kept_however_old(tmp_path: Path) -> None:
    uri = tmp_path / "one"
    table = pa.table({"x": [1, 2]})
    lance.write_dataset(table, uri, data_storage_version=STORAGE_VERSION)
    before = _files(uri)
    stats = cleanup_old_versions(DatasetStore(uri), timedelta(0), delete_unverified=True)
    assert stats == CleanupStats()
    assert _files(uri) == before


def test_unreadable_manifest_stops_everything(history: History, tmp_path: Path) -> None:
    uri = history.copy(tmp_path / "ds")
    victim = uri / "_versions" / f"{2**64 - 1 - 3:020d}.manifest"
    write_file(victim, read_file(victim)[:-30] + b"\0" * 30)
    before = _files(uri)
    with pytest.raises(CorruptDatasetError, match=victim.name):
        cleanup_old_versions(DatasetStore(uri), timedelta(0), delete_unverified=True)
    assert _files(uri) == before


@pytest.mark.local_files("makes os.remove fail for one file")
def test_failed_manifest_delete_keeps_its_files(
    history: History, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = history.copy(tmp_path / "ds")
    stuck = f"{2**64 - 1 - 8:020d}.manifest"
    real_remove = os.remove

    def remove(path: str | os.PathLike[str]) -> None:
        if os.fspath(path).endswith(stuck):
            raise PermissionError(f"cannot remove {path}")
        real_remove(path)

    monkeypatch.setattr(os, "remove", remove)
    stats = cleanup_old_versions(DatasetStore(uri), timedelta(0))
    monkeypatch.undo()
    assert stats.failed_deletes == 1 and stats.old_versions == 8
    assert _check_readable(uri, history) == [8, 10]


def test_manifest_removed_meanwhile_is_skipped(
    history: History, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = history.copy(tmp_path / "ds")
    store = DatasetStore(uri)
    listed = store.list_versions()
    remove_file(uri / "_versions" / listed[2].name)  # as a concurrent cleanup would
    monkeypatch.setattr(store, "list_versions", lambda: listed)
    stats = cleanup_old_versions(store, timedelta(0))
    assert stats.old_versions == 8
    monkeypatch.undo()
    assert _check_readable(uri, history) == [10]


def test_bad_arguments_and_branches(history: History, tmp_path: Path) -> None:
    uri = history.copy(tmp_path / "ds")
    with pytest.raises(ValueError, match="greater than 0"):
        cleanup_old_versions(DatasetStore(uri), retain_versions=0)
    lance.dataset(uri).create_branch("side", 9)
    with pytest.raises(DatasetError, match="branches"):
        cleanup_old_versions(DatasetStore(uri), timedelta(0))
