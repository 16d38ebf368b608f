"""Blob columns written by lancelet in Lance 2.1/2.2 files read back (by pylance and
by lancelet) as the values written, and pylance's blob files read in lancelet."""

from __future__ import annotations

from pathlib import Path

import lance.file
import pyarrow as pa
import pytest

from lancelet.errors import UnsupportedEncodingError, UnsupportedOptionError, UnsupportedTypeError
from lancelet.file import LanceFileReader, LanceFileWriter

BLOB = {"lance-encoding:blob": "true"}


def _table() -> pa.Table:
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("b", pa.large_binary(), metadata=BLOB),
            pa.field("s", pa.struct([pa.field("b", pa.large_binary(), metadata=BLOB)])),
            pa.field("nn", pa.large_binary(), nullable=False, metadata=BLOB),
        ]
    )
    return pa.table(
        {
            "id": range(6),
            "b": [b"foo", b"x" * 100_000, None, b"", b"y" * 70, None],
            "s": [{"b": b"a"}, None, {"b": None}, {"b": b""}, {"b": b"z" * 65}, {"b": b"q"}],
            "nn": [b"1", b"22", b"", b"4444", b"5", b"66"],
        },
        schema=schema,
    )


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_lancelet_blob_file_reads_in_pylance(tmp_path: Path, version: str) -> None:
    table = _table()
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path, table.schema, version=version) as writer:
        writer.write_batch(table.slice(0, 2))
        writer.write_batch(table.slice(2))
    assert lance.file.LanceFileReader(path).read_all().to_table().equals(table)
    assert LanceFileReader(path).read_all().to_table().equals(table)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_one_blob_page_and_values_outside_it(tmp_path: Path, version: str) -> None:
    # Values stay out of the column's pages: many large values still make one page
    # of descriptions, which pylance reads back.
    schema = pa.schema([pa.field("val", pa.large_binary(), metadata=BLOB)])
    value = b"0" * (1 << 20)
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path, schema, version=version) as writer:
        for _ in range(12):
            writer.write_batch(pa.table({"val": pa.array([value], pa.large_binary())}))
    reader = lance.file.LanceFileReader(path)
    assert len(reader.metadata().columns[0].pages) == 1
    assert reader.read_all().to_table().column("val").to_pylist() == [value] * 12


def test_pylance_blob_file_reads_in_lancelet(tmp_path: Path) -> None:
    table = _table()
    path = str(tmp_path / "p.lance")
    with lance.file.LanceFileWriter(path, table.schema, version="2.1") as writer:
        writer.write_batch(table)
    assert LanceFileReader(path).read_all().to_table().equals(table)


def test_blobs_that_cannot_be_written_are_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "f.lance")
    binary = pa.schema([pa.field("b", pa.binary(), metadata=BLOB)])
    with pytest.raises(UnsupportedTypeError, match="needs a large_binary field"):
        LanceFileWriter(path, binary, version="2.1")
    in_list = pa.schema([pa.field("l", pa.list_(pa.field("b", pa.large_binary(), metadata=BLOB)))])
    with pytest.raises(UnsupportedOptionError, match="inside lists"):
        LanceFileWriter(path, in_list, version="2.1")
    plain = pa.schema([pa.field("b", pa.large_binary(), metadata=BLOB)])
    with pytest.raises(UnsupportedOptionError, match="format 2.0"):
        LanceFileWriter(path, plain, version="2.0")


def test_pylance_2_0_blob_file_is_refused_not_called_corrupt(tmp_path: Path) -> None:
    table = pa.table(
        {"b": pa.array([b"foo", None], pa.large_binary())},
        schema=pa.schema([pa.field("b", pa.large_binary(), metadata=BLOB)]),
    )
    path = str(tmp_path / "p.lance")
    with lance.file.LanceFileWriter(path, table.schema, version="2.0") as writer:
        writer.write_batch(table)
    with pytest.raises(UnsupportedEncodingError, match="2.0 blob column"):
        LanceFileReader(path).read_all().to_table()


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_blob_under_a_null_struct_reads_as_null(tmp_path: Path, version: str) -> None:
    # The struct is null where its child still holds bytes: those are not a value.
    child = pa.array([b"abc", b"hidden", b"xyz"], pa.large_binary())
    struct = pa.StructArray.from_arrays(
        [child], fields=[pa.field("b", pa.large_binary(), metadata=BLOB)],
        mask=pa.array([False, True, False]),
    )  # fmt: skip
    table = pa.table({"s": struct})
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path, table.schema, version=version) as writer:
        writer.write_batch(table)
    want = [{"b": b"abc"}, None, {"b": b"xyz"}]
    assert lance.file.LanceFileReader(path).read_all().to_table().column("s").to_pylist() == want
    assert LanceFileReader(path).read_all().to_table().column("s").to_pylist() == want
