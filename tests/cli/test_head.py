"""``lancelet head``: rows checked against pylance's scan of the same dataset."""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from pathlib import Path

import lance
import pyarrow as pa

from tests.cli.conftest import Cli, Writer


def test_first_ten_rows_by_default(run: Cli, busy_dataset: str) -> None:
    shown = run.json("head", busy_dataset)
    assert shown == lance.dataset(busy_dataset).to_table(limit=10).to_pylist()
    assert [row["id"] for row in shown] == list(range(5, 15))


def test_filter_columns_limit_and_version(run: Cli, busy_dataset: str) -> None:
    shown = run.json(
        "head", busy_dataset, "-n", "4", "--filter", "id >= 98", "--columns", "score, id"
    )
    theirs = lance.dataset(busy_dataset).to_table(
        columns=["score", "id"], filter="id >= 98", limit=4
    )
    assert shown == theirs.to_pylist()
    assert [list(row) for row in shown] == [["score", "id"]] * 4
    old = run.json("head", busy_dataset, "-v", "1", "-n", "3", "-c", "id")
    assert (
        old == lance.dataset(busy_dataset, version=1).to_table(columns=["id"], limit=3).to_pylist()
    )
    assert old == [{"id": 0}, {"id": 1}, {"id": 2}]
    assert run.json("head", busy_dataset, "-n", "0") == []
    assert run.json("head", busy_dataset, "-f", "id > 1000") == []


def test_values_of_every_kind_as_json(run: Cli, tmp_path: Path, writer: Writer) -> None:
    moment = dt.datetime(2026, 1, 2, 3, 4, 5, 678000)
    table = pa.table(
        {
            "blob": pa.array([b"\x00\xffab", None], pa.binary()),
            "when": pa.array([moment, None], pa.timestamp("us")),
            "day": pa.array([dt.date(2026, 1, 2), None], pa.date32()),
            "price": pa.array([Decimal("12.50"), None], pa.decimal128(10, 2)),
            "tags": pa.array([["a", "b"], []], pa.list_(pa.string())),
            "point": pa.array(
                [{"x": 1, "y": 2}, None], pa.struct({"x": pa.int32(), "y": pa.int32()})
            ),
            "flag": pa.array([True, None]),
        }
    )
    path = str(tmp_path / "kinds")
    writer(table, path)
    shown = run.json("head", path)
    first = lance.dataset(path).to_table().to_pylist()[0]
    assert shown[0] == {
        "blob": base64.b64encode(first["blob"]).decode(),
        "when": first["when"].isoformat(),
        "day": first["day"].isoformat(),
        "price": str(first["price"]),
        "tags": first["tags"],
        "point": first["point"],
        "flag": first["flag"],
    }
    assert shown[0]["when"] == "2026-01-02T03:04:05.678000"
    assert shown[1] == {
        "blob": None,
        "when": None,
        "day": None,
        "price": None,
        "tags": [],
        "point": None,
        "flag": None,
    }


def test_the_table(run: Cli, busy_dataset: str) -> None:
    shown = run("head", busy_dataset, "-n", "2", "-c", "id,name,score").stdout
    lines = [line for line in shown.splitlines() if line.startswith("│")]
    cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines]
    theirs = lance.dataset(busy_dataset).to_table(limit=2).to_pylist()
    assert cells == [[str(r["id"]), r["name"], str(r["score"])] for r in theirs]
    header = next(line for line in shown.splitlines() if line.startswith("┃"))
    assert [cell.strip() for cell in header.split("┃")[1:-1]] == ["id", "name", "score"]


def test_long_values_are_cut_in_the_table_only(run: Cli, tmp_path: Path) -> None:
    path = str(tmp_path / "long")
    text = "x" * 500
    lance.write_dataset(pa.table({"text": [text]}), path)
    assert run.json("head", path) == [{"text": text}]
    shown = run("head", path).stdout
    assert "…" in shown
    assert text not in shown


def test_bad_columns_and_filters_fail_in_one_line(run: Cli, busy_dataset: str) -> None:
    error = run.fails("head", busy_dataset, "--columns", "id,nope")
    assert "nope" in error and error.count("\n") == 1
    error = run.fails("head", busy_dataset, "--filter", "id >")
    assert "id >" in error and error.count("\n") == 1
    error = run.fails("head", busy_dataset, "--columns", "id,,name")
    assert error == "Error: --columns: 'id,,name' has an empty column name (expected a,b,...)\n"
    usage = run.fails("head", busy_dataset, "-n", "-1", status=2)
    assert "-1" in usage
