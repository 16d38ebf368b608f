"""Datasets with Arrow map columns (Lance format 2.2), compared with pylance: written by
either library and read by the other, scanned with filters and projections that leave
the map alone, taken from, appended to and deleted from; refused before 2.2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import TypeVersionError

MAP = pa.map_(pa.string(), pa.int32())
NESTED = pa.struct([("tags", MAP), ("deep", pa.list_(pa.map_(pa.int64(), pa.string())))])
LIBRARIES: dict[str, Any] = {"lancelet": ll, "pylance": lance}


def table(start: int = 0, rows: int = 30) -> pa.Table:
    ids = list(range(start, start + rows))
    maps = [
        None if i % 7 == 3 else [(f"k{j}", i * j if j % 3 else None) for j in range(i % 4)]
        for i in ids
    ]
    nested = [
        None
        if i % 5 == 1
        else {"tags": maps[k], "deep": None if i % 6 == 0 else [[(i, str(i))], [], None]}
        for k, i in enumerate(ids)
    ]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "m": pa.array(maps, MAP),
            "s": pa.array(nested, NESTED),
            "name": [f"n{i}" for i in ids],
        }
    )


def write(library: str, data: pa.Table, uri: Path, **options: Any) -> None:
    LIBRARIES[library].write_dataset(
        data, str(uri), data_storage_version="2.2", max_rows_per_file=12, **options
    )


def same(got: pa.Table, want: pa.Table) -> None:
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()


@pytest.mark.parametrize(("writer", "reader"), [("lancelet", "pylance"), ("pylance", "lancelet")])
def test_map_columns_between_the_libraries(tmp_path: Path, writer: str, reader: str) -> None:
    data = table()
    write(writer, data, tmp_path / "ds")
    ds = LIBRARIES[reader].dataset(str(tmp_path / "ds"))
    oracle = lance.dataset(str(tmp_path / "ds"))
    same(ds.to_table(), data)
    same(ds.take([29, 0, 13, 13, 4]), data.take([29, 0, 13, 13, 4]))
    same(
        ds.to_table(filter="id >= 20 AND name != 'n25'"),
        oracle.to_table(filter="id >= 20 AND name != 'n25'"),
    )
    same(
        ds.to_table(columns=["m", "id"], filter="id < 5"),
        oracle.to_table(columns=["m", "id"], filter="id < 5"),
    )
    same(
        ds.to_table(columns=["s"], limit=4, offset=10),
        oracle.to_table(columns=["s"], limit=4, offset=10),
    )
    assert ds.count_rows("id % 2 = 0") == 15
    assert ds.schema == oracle.schema


def test_data_files_record_the_same_fields(tmp_path: Path) -> None:
    write("lancelet", table(), tmp_path / "mine")
    write("pylance", table(), tmp_path / "theirs")

    def records(uri: Path) -> list[tuple[list[int], list[int]]]:
        return [
            (list(f.fields), list(f.column_indices))
            for fragment in lance.dataset(str(uri)).get_fragments()
            for f in fragment.metadata.files
        ]

    assert records(tmp_path / "mine") == records(tmp_path / "theirs")
    assert lance.dataset(str(tmp_path / "mine")).lance_schema == (
        lance.dataset(str(tmp_path / "theirs")).lance_schema
    )


@pytest.mark.parametrize(("first", "second"), [("lancelet", "pylance"), ("pylance", "lancelet")])
def test_appends_and_deletes(tmp_path: Path, first: str, second: str) -> None:
    uri = tmp_path / "ds"
    write(first, table(0), uri)
    write(second, table(30), uri, mode="append")
    LIBRARIES[second].dataset(str(uri)).delete("id % 3 = 0 OR name = 'n31'")
    want = pa.concat_tables([table(0), table(30)])
    want = want.filter([i % 3 != 0 and i != 31 for i in range(60)])
    for library in LIBRARIES.values():
        got = library.dataset(str(uri)).to_table()
        same(got.sort_by("id"), want)


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_maps_before_2_2_are_refused(tmp_path: Path, version: str) -> None:
    with pytest.raises(OSError):
        lance.write_dataset(table(), str(tmp_path / "theirs"), data_storage_version=version)
    with pytest.raises(TypeVersionError, match=rf"column 'm' is a map.*format {version}"):
        ll.write_dataset(table(), tmp_path / "mine", data_storage_version=version)
    with pytest.raises(ValueError):
        lance.dataset(str(tmp_path / "mine"))  # nothing was committed


@pytest.mark.parametrize("renamer", ["lancelet", "pylance"])
def test_renaming_fields_after_and_inside_maps(tmp_path: Path, renamer: str) -> None:
    """Fields of a struct after a map keep their values when renamed (the map's
    entries, key and value are fields of the schema too)."""
    dtype = pa.struct(
        [("m", pa.map_(pa.string(), pa.struct([("q", pa.int8())]))), ("x", pa.int32())]
    )
    data = pa.table({"s": pa.array([{"m": [("a", {"q": 1})], "x": 5}, None], dtype)})
    write("lancelet", data, tmp_path / "ds")
    ds = LIBRARIES[renamer].dataset(str(tmp_path / "ds"))
    ds.alter_columns({"path": "s.x", "name": "y"}, {"path": "s.m.entries.value.q", "name": "r"})
    want = [{"s": {"m": [("a", {"r": 1})], "y": 5}}, {"s": None}]
    for library in LIBRARIES.values():
        got = library.dataset(str(tmp_path / "ds")).to_table()
        assert got.to_pylist() == want
        assert got.schema == lance.dataset(str(tmp_path / "ds")).schema
