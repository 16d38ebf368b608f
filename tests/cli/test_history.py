"""``lancelet history``: checked against pylance's ``versions()`` and transactions."""

from __future__ import annotations

from datetime import timedelta, timezone
from pathlib import Path

import lance
import pyarrow as pa

import lancelet
from tests.cli.conftest import Cli, Writer, rows


def _pylance_operation(ds: lance.LanceDataset, version: int) -> str:
    transaction = ds.read_transaction(version)
    assert transaction is not None
    return type(transaction.operation).__name__


def test_versions_times_rows_and_operations_agree_with_pylance(run: Cli, busy_dataset: str) -> None:
    entries = run.json("history", busy_dataset)
    theirs = lance.dataset(busy_dataset)
    listed = theirs.versions()[::-1]  # newest first, as the command lists them
    assert [e["version"] for e in entries] == [v["version"] for v in listed] == [4, 3, 2, 1]
    for entry, version in zip(entries, listed, strict=True):
        assert entry["timestamp"] == version["timestamp"].astimezone(timezone.utc).isoformat()
        assert entry["rows"] == int(version["metadata"]["total_rows"])
        assert entry["operation"] == _pylance_operation(theirs, version["version"])
    assert [e["operation"] for e in entries] == ["Append", "CreateIndex", "Delete", "Overwrite"]
    assert [(e["rows_added"], e["rows_removed"]) for e in entries] == [
        (40, 0),
        (0, 0),
        (0, 5),
        (100, 0),
    ]
    assert [e["tags"] for e in entries] == [[], [], [], ["first"]]
    assert [e["compared_with"] for e in entries] == [3, 2, 1, None]


def test_limit_keeps_the_newest_and_still_compares_with_the_one_before(
    run: Cli, busy_dataset: str
) -> None:
    entries = run.json("history", busy_dataset, "-n", "2")
    assert [e["version"] for e in entries] == [4, 3]
    assert entries[0]["rows_added"] == 40
    assert entries[1]["compared_with"] == 2
    assert [e["version"] for e in run.json("history", busy_dataset, "--limit", "10")] == [
        4,
        3,
        2,
        1,
    ]


def test_rewrites_count_both_ways_and_net_change_matches(
    run: Cli, tmp_path: Path, writer: Writer
) -> None:
    path = str(tmp_path / "rewrites")
    writer(rows(0, 50), path)
    opened = lancelet.dataset if writer is lancelet.write_dataset else lance.dataset
    opened(path).update({"name": "'changed'"}, where="id < 10")
    writer(rows(100, 7), path, mode="overwrite", commit_message="start again")
    entries = run.json("history", path)
    theirs = lance.dataset(path)
    totals = {v["version"]: int(v["metadata"]["total_rows"]) for v in theirs.versions()}
    for entry in entries:
        before = totals.get(entry["version"] - 1, 0)
        assert entry["rows_added"] - entry["rows_removed"] == totals[entry["version"]] - before
    update, overwrite = entries[1], entries[0]
    assert update["operation"] == _pylance_operation(theirs, 2) == "Update"
    assert (update["rows_added"], update["rows_removed"]) == (10, 10)
    assert overwrite["operation"] == "Overwrite"
    assert (overwrite["rows_added"], overwrite["rows_removed"]) == (7, 50)
    assert (
        overwrite["message"]
        == theirs.read_transaction(3).transaction_properties["__lance_commit_message"]
    )
    assert "start again" in run("history", path).stdout


def test_restore_adds_back_deleted_rows(run: Cli, tmp_path: Path) -> None:
    path = str(tmp_path / "restore")
    ds = lance.write_dataset(rows(0, 20), path)
    ds.delete("id >= 15")
    lance.dataset(path, version=1).restore()
    newest = run.json("history", path)[0]
    assert newest["version"] == lance.dataset(path).version == 3
    assert newest["operation"] == _pylance_operation(lance.dataset(path), 3) == "Restore"
    assert (newest["rows_added"], newest["rows_removed"]) == (5, 0)


def test_versions_cleaned_up_between_are_skipped(run: Cli, tmp_path: Path) -> None:
    path = str(tmp_path / "gaps")
    lance.write_dataset(rows(0, 10), path)
    lance.write_dataset(rows(10, 10), path, mode="append")
    lance.write_dataset(rows(20, 10), path, mode="append")
    lance.dataset(path).tags.create("keep", 1)
    lance.dataset(path).cleanup_old_versions(
        older_than=timedelta(0), error_if_tagged_old_versions=False
    )
    assert [v["version"] for v in lance.dataset(path).versions()] == [1, 3]
    newest, oldest = run.json("history", path)
    assert (newest["version"], newest["compared_with"]) == (3, 1)
    assert (newest["rows_added"], newest["rows_removed"]) == (20, 0)
    assert oldest["tags"] == ["keep"]
    assert "3 (vs 1)" in run("history", path).stdout


def test_the_table(run: Cli, busy_dataset: str) -> None:
    shown = run("history", busy_dataset).stdout
    lines = [line for line in shown.splitlines() if line.startswith("│")]
    assert len(lines) == 4
    assert [cell.strip() for cell in lines[0].split("│")[3:7]] == ["Append", "135", "+40", "-0"]
    assert "first" in lines[3]
    assert "message" not in shown  # no version has a commit message


def test_a_compaction_is_named_rewrite_as_pylance_names_it(run: Cli, tmp_path: Path) -> None:
    path = str(tmp_path / "compacted")
    lance.write_dataset(rows(0, 30), path, max_rows_per_file=10)
    metrics = lance.dataset(path).optimize.compact_files()
    assert metrics.fragments_removed == 3
    newest = run.json("history", path)[0]
    assert newest["version"] == lance.dataset(path).version
    assert newest["operation"] == _pylance_operation(lance.dataset(path), newest["version"])
    assert newest["operation"] == "Rewrite"
    assert (newest["rows_added"], newest["rows_removed"]) == (30, 30)
    assert newest["rows"] == pa.Table.from_batches(lance.dataset(path).to_batches()).num_rows
