"""``lancelet compact``, ``cleanup``, ``restore`` and ``tag``: what they do checked
through pylance, which reads the versions they commit."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import lance
import pytest

from tests.cli.conftest import Cli, Writer, rows


def _small_fragments(path: str, writer: Writer) -> None:
    writer(rows(0, 60), path, max_rows_per_file=10)
    for start in (60, 70):
        writer(rows(start, 10), path, mode="append")


def test_compact_merges_fragments_pylance_reads_the_result(
    run: Cli, tmp_path: Path, writer: Writer
) -> None:
    path = str(tmp_path / "small")
    _small_fragments(path, writer)
    before = lance.dataset(path)
    expected = before.to_table()
    assert len(before.get_fragments()) == 8
    report = run.json("compact", path, "--target-rows-per-fragment", "40")
    after = lance.dataset(path)
    assert report["version_before"] == before.version
    assert report["version_after"] == after.version > before.version
    assert report["committed"] is True
    assert report["fragments_removed"] == 8
    assert report["fragments_added"] == len(after.get_fragments()) == 2
    assert report["files_removed"] == 8
    assert report["files_added"] == 2
    assert after.to_table().equals(expected)


def test_compact_with_nothing_to_do_commits_nothing(run: Cli, tmp_path: Path) -> None:
    path = str(tmp_path / "one")
    lance.write_dataset(rows(0, 10), path)
    report = run.json("compact", path)
    assert report == {
        "version_before": 1,
        "version_after": 1,
        "committed": False,
        "fragments_removed": 0,
        "fragments_added": 0,
        "files_removed": 0,
        "files_added": 0,
    }
    assert lance.dataset(path).version == 1


def test_compact_materializes_deletions(run: Cli, tmp_path: Path) -> None:
    path = str(tmp_path / "deleted")
    lance.write_dataset(rows(0, 100), path)
    lance.dataset(path).delete("id < 50")
    kept = run.json("compact", path, "--no-materialize-deletions")
    assert kept["committed"] is False
    report = run("compact", path, "--materialize-deletions-threshold", "0.3").stdout
    after = lance.dataset(path)
    assert after.stats.dataset_stats()["num_deleted_rows"] == 0
    assert after.count_rows() == 50
    assert f"│ version after     │ {after.version}    │" in report


def test_cleanup_removes_old_versions(run: Cli, tmp_path: Path, writer: Writer) -> None:
    path = str(tmp_path / "old")
    writer(rows(0, 10), path)
    for start in (10, 20, 30):
        writer(rows(start, 10), path, mode="overwrite")
    stats = run.json("cleanup", path, "--older-than", "0s")
    theirs = lance.dataset(path)
    assert [v["version"] for v in theirs.versions()] == [4]
    assert stats["old_versions"] == 3
    assert stats["data_files_removed"] == 3
    assert len(os.listdir(Path(path) / "data")) == 1
    assert theirs.to_table().equals(rows(30, 10))


def test_cleanup_retains_versions_and_respects_age(run: Cli, tmp_path: Path) -> None:
    path = str(tmp_path / "retain")
    lance.write_dataset(rows(0, 10), path)
    for start in (10, 20, 30):
        lance.write_dataset(rows(start, 10), path, mode="append")
    young = run.json("cleanup", path, "--older-than", "1h")
    assert young["old_versions"] == 0
    assert len(lance.dataset(path).versions()) == 4
    run.json("cleanup", path, "--retain-versions", "2")
    assert [v["version"] for v in lance.dataset(path).versions()] == [3, 4]


def test_cleanup_and_tags(run: Cli, tmp_path: Path) -> None:
    path = str(tmp_path / "tagged")
    lance.write_dataset(rows(0, 10), path)
    lance.write_dataset(rows(10, 10), path, mode="overwrite")
    lance.write_dataset(rows(20, 10), path, mode="overwrite")
    lance.dataset(path).tags.create("keep", 1)
    error = run.fails("cleanup", path, "--older-than", "0s")
    assert "--keep-tagged" in error and "'keep': 1" in error
    assert error.count("\n") == 1
    assert "error_if_tagged_old_versions" not in error
    assert len(lance.dataset(path).versions()) == 3  # nothing removed
    stats = run.json("cleanup", path, "--older-than", "0s", "--keep-tagged")
    assert stats["old_versions"] == 1
    assert [v["version"] for v in lance.dataset(path).versions()] == [1, 3]
    assert lance.dataset(path, version="keep").to_table().equals(rows(0, 10))


@pytest.mark.local_files("ages a file with os.utime")
def test_cleanup_delete_unverified(run: Cli, tmp_path: Path) -> None:
    path = str(tmp_path / "stray")
    lance.write_dataset(rows(0, 10), path)
    stray = Path(path) / "data" / "stray.lance"
    stray.write_bytes(b"not referenced")
    a_day_ago = time.time() - timedelta(days=1).total_seconds()
    os.utime(stray, (a_day_ago, a_day_ago))
    run.json("cleanup", path, "--older-than", "0s")
    assert stray.exists()  # younger than 7 days: maybe a writer's file in flight
    stats = run.json("cleanup", path, "--older-than", "0s", "--delete-unverified")
    assert not stray.exists()
    assert stats["data_files_removed"] == 1
    assert lance.dataset(path).count_rows() == 10


@pytest.mark.parametrize("given", ["7x", "d", "1.5h", "-1d", ""])
def test_cleanup_refuses_a_bad_duration(run: Cli, tmp_path: Path, given: str) -> None:
    path = str(tmp_path / "any")
    lance.write_dataset(rows(0, 10), path)
    error = run.fails("cleanup", path, "--older-than", given)
    assert error == (
        f"Error: --older-than: {given!r} is not a duration (examples: 7d, 12h, 1h30m, 45s, 2w)\n"
    )


@pytest.mark.parametrize("reference", ["1", "start"])
def test_restore_by_number_or_tag(run: Cli, tmp_path: Path, reference: str) -> None:
    path = str(tmp_path / "restore")
    lance.write_dataset(rows(0, 10), path)
    lance.dataset(path).tags.create("start", 1)
    lance.write_dataset(rows(10, 10), path, mode="append")
    report = run.json("restore", path, reference)
    theirs = lance.dataset(path)
    assert report == {"restored_version": 1, "latest_before": 2, "new_version": theirs.version}
    assert theirs.version == 3
    assert type(theirs.read_transaction(3).operation).__name__ == "Restore"
    assert theirs.to_table().equals(rows(0, 10))


def test_restore_errors(run: Cli, tmp_path: Path) -> None:
    path = str(tmp_path / "restore")
    lance.write_dataset(rows(0, 10), path)
    assert "version 7" in run.fails("restore", path, "7")
    assert "'nope'" in run.fails("restore", path, "nope")
    error = run.fails("restore", path, "--", "-3")
    assert error == "Error: VERSION: '-3' is neither a version number (1, 2, ...) nor a tag\n"
    assert lance.dataset(path).version == 1


def test_tags_create_list_update_delete(run: Cli, tmp_path: Path, writer: Writer) -> None:
    path = str(tmp_path / "tags")
    writer(rows(0, 10), path)
    for start in (10, 20):
        writer(rows(start, 10), path, mode="append")
    assert run.json("tag", "list", path) == []
    assert "No tags." in run("tag", "list", path).stdout
    assert "version 3" in run("tag", "create", path, "latest").stdout
    run("tag", "create", path, "first", "1")
    run("tag", "create", path, "again", "first")
    theirs = lance.dataset(path).tags.list()
    assert {name: entry["version"] for name, entry in theirs.items()} == {
        "latest": 3,
        "first": 1,
        "again": 1,
    }
    listed = run.json("tag", "list", path)
    assert [(t["name"], t["version"]) for t in listed] == [
        ("again", 1),
        ("first", 1),
        ("latest", 3),
    ]
    assert listed[1]["created_at"] == theirs["first"]["created_at"].isoformat()
    moved = run("tag", "update", path, "again", "2").stdout
    assert "from version 1 to 2" in moved
    assert run.json("tag", "update", path, "again", "first") == {
        "name": "again",
        "version": 1,
        "previous_version": 2,
    }
    assert run.json("tag", "update", path, "again", "2")["version"] == 2
    assert run.json("tag", "create", path, "scratch") == {"name": "scratch", "version": 3}
    assert lance.dataset(path).tags.get_version("scratch") == 3
    assert run.json("tag", "delete", path, "scratch") == {
        "name": "scratch",
        "deleted": True,
        "version": 3,
    }
    assert lance.dataset(path).tags.get_version("again") == 2
    run("tag", "delete", path, "first")
    assert sorted(lance.dataset(path).tags.list()) == ["again", "latest"]
    table = run("tag", "list", path).stdout
    assert "again" in table and "latest" in table and "first" not in table


def test_tag_errors(run: Cli, tmp_path: Path) -> None:
    path = str(tmp_path / "tags")
    lance.write_dataset(rows(0, 10), path)
    run("tag", "create", path, "one", "1")
    assert "already exists" in run.fails("tag", "create", path, "one")
    assert "version 5" in run.fails("tag", "create", path, "two", "5")
    assert "'nope'" in run.fails("tag", "delete", path, "nope")
    assert "'nope'" in run.fails("tag", "update", path, "nope", "1")
    assert "bad name" in run.fails("tag", "create", path, "bad name")
    assert sorted(lance.dataset(path).tags.list()) == ["one"]
