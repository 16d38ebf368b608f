"""``lancelet changes``: the change feed of a dataset pylance wrote, checked against
the changes made (and pylance's reading of the versions)."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa

from tests.cli.conftest import Cli


def _dataset(tmp_path: Path) -> str:
    """v1: ids 0..4; v2: append 5, 6; v3: price of id 1 doubled; v4: id 3 deleted."""
    path = str(tmp_path / "items")
    table = pa.table({"id": list(range(5)), "price": [10, 11, 12, 13, 14]})
    lance.write_dataset(table, path, enable_stable_row_ids=True)
    lance.write_dataset(pa.table({"id": [5, 6], "price": [15, 16]}), path, mode="append")
    ds = lance.dataset(path)
    ds.update({"price": "price * 2"}, where="id = 1")
    ds.delete("id = 3")
    return path


def _row(id: int, price: int, change: str, version: int) -> dict[str, object]:
    return {"id": id, "price": price, "_change_type": change, "_commit_version": version}


def test_the_feed_as_json(run: Cli, tmp_path: Path) -> None:
    path = _dataset(tmp_path)
    assert run.json("changes", path, "--from", "2") == [
        _row(5, 15, "insert", 2),
        _row(6, 16, "insert", 2),
        _row(1, 11, "update_preimage", 3),
        _row(1, 22, "update_postimage", 3),
        _row(3, 13, "delete", 4),
    ]
    assert run.json("changes", path, "--from", "3", "--to", "3", "-c", "price") == [
        {"price": 11, "_change_type": "update_preimage", "_commit_version": 3},
        {"price": 22, "_change_type": "update_postimage", "_commit_version": 3},
    ]
    deletes = run.json("changes", path, "--from", "1", "-f", "_change_type = 'delete'")
    assert deletes == [_row(3, 13, "delete", 4)]
    # Version 1's inserts are pylance's rows of version 1.
    first = run.json("changes", path, "--from", "1", "--to", "1", "-c", "id,price")
    assert [{"id": r["id"], "price": r["price"]} for r in first] == (
        lance.dataset(path, version=1).to_table().to_pylist()
    )


def test_the_table_is_cut_at_num_rows(run: Cli, tmp_path: Path) -> None:
    path = _dataset(tmp_path)
    shown = run("changes", path, "--from", "1", "-n", "3").stdout
    assert "insert" in shown and "more change rows follow" in shown
    assert "delete" not in shown
    whole = run("changes", path, "--from", "4").stdout
    assert "delete" in whole and "more change rows" not in whole
    assert len(run.json("changes", path, "--from", "1", "-n", "6")) == 6


def test_a_dataset_without_stable_row_ids_is_refused(run: Cli, tmp_path: Path) -> None:
    path = str(tmp_path / "plain")
    lance.write_dataset(pa.table({"id": [1]}), path)
    lance.write_dataset(pa.table({"id": [2]}), path, mode="append")
    error = run.fails("changes", path, "--from", "2")
    assert "ChangeFeedError" in error and "enable_stable_row_ids=True" in error
