"""Structs without fields, written as the reference writes them.

In format 2.1+ an empty struct owns a column of its own with one constant page per
write and no levels, so it can hold neither nulls nor sit inside a list; pylance
refuses those cases too.  Each accepted table is written by both libraries and the
files compared byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

from lancelet.errors import UnsupportedTypeError
from lancelet.file import LanceFileReader, LanceFileWriter

VERSIONS = ["2.0", "2.1", "2.2"]
NESTED = pa.struct([pa.field("e", pa.struct([])), pa.field("v", pa.int64())])
SCHEMA = pa.schema(
    [pa.field("id", pa.int32()), pa.field("empties", pa.struct([])), pa.field("x", NESTED)]
)
TABLE = pa.table(
    {
        "id": [0, 1, 2],
        "empties": [{}] * 3,
        "x": [{"e": {}, "v": 1}, {"e": {}, "v": 2}, {"e": {}, "v": 3}],
    },
    schema=SCHEMA,
)


def _write_both(tmp_path: Path, table: pa.Table, version: str) -> tuple[Path, Path]:
    ours, theirs = tmp_path / "ours.lance", tmp_path / "theirs.lance"
    with LanceFileWriter(str(ours), table.schema, version=version) as writer:
        writer.write_batch(table)
    with lance.file.LanceFileWriter(str(theirs), table.schema, version=version) as writer:
        writer.write_batch(table)
    return ours, theirs


@pytest.mark.parametrize("version", VERSIONS)
def test_empty_structs_are_written_as_pylance_writes_them(tmp_path: Path, version: str) -> None:
    ours, theirs = _write_both(tmp_path, TABLE, version)
    assert ours.read_bytes() == theirs.read_bytes()
    back = LanceFileReader(str(ours)).read_all().to_table()
    assert back.equals(TABLE)
    assert LanceFileReader(str(ours)).take_rows([2, 0]).to_table().equals(TABLE.take([2, 0]))


@pytest.mark.parametrize("version", VERSIONS)
def test_pylance_reads_a_top_level_empty_struct(tmp_path: Path, version: str) -> None:
    table = TABLE.select(["id", "empties"])
    ours, _ = _write_both(tmp_path, table, version)
    assert lance.file.LanceFileReader(str(ours)).read_all().to_table().equals(table)


@pytest.mark.parametrize(
    ("name", "data", "dtype"),
    [
        ("null", [{}, None, {}], pa.struct([])),
        ("null parent", [{"e": {}}, None], pa.struct([pa.field("e", pa.struct([]))])),
        ("in a list", [[{}], []], pa.list_(pa.struct([]))),
    ],
)
def test_what_pylance_refuses_lancelet_refuses(
    tmp_path: Path, name: str, data: list[object], dtype: pa.DataType
) -> None:
    table = pa.table({"c": pa.array(data, dtype)})
    theirs = lance.file.LanceFileWriter(str(tmp_path / "p.lance"), version="2.1")
    with pytest.raises(Exception), theirs:  # noqa: B017 - pylance's class varies by case
        theirs.write_batch(table)
    ours = LanceFileWriter(str(tmp_path / "l.lance"), version="2.1")
    with pytest.raises(UnsupportedTypeError, match="'c"), ours:
        ours.write_batch(table)
