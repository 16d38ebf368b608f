"""Small reads decode on the calling thread, large ones on the pool; files share what
follows from their schema.  Every path gives the table pyarrow holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from lancelet.file import reader as reader_module
from lancelet.file.reader import LanceFileReader
from lancelet.file.writer import LanceFileWriter


def _table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    modes = np.array(["MAIL", "SHIP", "AIR", "RAIL", "TRUCK"])
    return pa.table(
        {
            "key": pa.array(rng.integers(0, 1 << 40, rows)),
            "small": pa.array(rng.integers(0, 7, rows), pa.int32()),
            "mode": pa.array(modes[rng.integers(0, len(modes), rows)]),
            "text": pa.array([f"row {i} of {seed} " * int(i % 5) for i in range(rows)]),
            "maybe": pa.array(
                [None if i % 3 == 0 else float(i) / 7 for i in range(rows)], pa.float64()
            ),
            "tags": pa.array([[j for j in range(i % 4)] for i in range(rows)]),
        }
    )


def _write(path: Path, table: pa.Table, version: str) -> str:
    with LanceFileWriter(str(path), table.schema, version=version) as writer:
        writer.write_batch(table)
    return str(path)


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("inline_cells", [0, 1 << 40])
def test_small_and_pooled_reads_give_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, inline_cells: int
) -> None:
    # 0: every read on the pool; 2**40: every read on the caller.
    monkeypatch.setattr(reader_module, "_INLINE_CELLS", inline_cells)
    table = _table(3000, 1)
    path = _write(tmp_path / "data.lance", table, version)
    reader = LanceFileReader(path)
    assert reader.read_all().to_table().equals(table)
    assert reader.read_range(17, 2000).to_table().equals(table.slice(17, 2000))
    some = reader.read_range(5, 40, columns=["text", "mode"]).to_table()
    assert some.equals(table.select(["text", "mode"]).slice(5, 40))


def test_reads_on_either_side_of_the_threshold_agree(tmp_path: Path) -> None:
    table = _table(20_000, 2)
    path = _write(tmp_path / "data.lance", table, "2.1")
    reader = LanceFileReader(path)
    cells_per_row = reader_module._INLINE_CELLS // table.num_columns
    for rows in (cells_per_row - 1, cells_per_row + 1, 20_000 - 3):
        assert reader.read_range(3, rows).to_table().equals(table.slice(3, rows))


def _schema_pairs() -> list[tuple[pa.Table, pa.Table]]:
    ints = pa.table({"a": pa.array([1, 2, 3]), "b": pa.array(["x", "y", "z"])})
    return [
        # Same names, other types.
        (ints, pa.table({"a": pa.array([1.5, 2.5, 3.5]), "b": pa.array(["x", "y", "z"])})),
        # Same types, other names.
        (ints, pa.table({"b": pa.array([1, 2, 3]), "a": pa.array(["x", "y", "z"])})),
        # Same fields, other schema metadata.
        (ints, ints.replace_schema_metadata({"k": "v"})),
        # Same names, other nesting (other leaves, so other columns).
        (
            pa.table({"a": pa.array([{"x": 1, "y": "p"}, None, {"x": 3, "y": None}])}),
            pa.table({"a": pa.array([[1, 2], None, []])}),
        ),
        # Same names and types, other field metadata.
        (
            ints,
            pa.table(
                {"a": pa.array([1, 2, 3]), "b": pa.array(["x", "y", "z"])},
                schema=pa.schema(
                    [pa.field("a", pa.int64(), metadata={"m": "1"}), ("b", pa.string())]
                ),
            ),
        ),
    ]


@pytest.mark.parametrize("pair", range(len(_schema_pairs())))
def test_files_of_other_schemas_keep_their_own(tmp_path: Path, pair: int) -> None:
    first, second = _schema_pairs()[pair]
    readers: list[Any] = []
    for i, table in enumerate((first, second, first)):
        path = _write(tmp_path / f"{i}.lance", table, "2.1")
        reader = LanceFileReader(path)
        assert reader.schema.equals(table.schema, check_metadata=True)
        assert reader.read_all().to_table().equals(table)
        readers.append(reader)
    assert readers[0].schema_key == readers[2].schema_key
    assert readers[0].schema_key != readers[1].schema_key


def test_a_2_0_and_a_2_1_file_of_one_schema_do_not_share(tmp_path: Path) -> None:
    table = _table(100, 3)
    old = LanceFileReader(_write(tmp_path / "old.lance", table, "2.0"))
    new = LanceFileReader(_write(tmp_path / "new.lance", table, "2.1"))
    assert old.schema_key != new.schema_key
    assert old.read_all().to_table().equals(table)
    assert new.read_all().to_table().equals(table)
