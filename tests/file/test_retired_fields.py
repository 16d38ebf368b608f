"""Fields older Lance releases wrote: ``Field.storage_class`` in the statistics schema
of a legacy (0.1) file, and the "row_ids" name of a BTREE page file's id column
(Lance before 0.21), both read as the reference reads them."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelet as ll
from lancelet._proto import file_pb2
from lancelet.errors import CorruptFileError
from lancelet.file import LanceFileReader, LanceFileWriter
from tests.storage import list_names, read_file, write_file

_LENGTH = struct.Struct("<I")


def _legacy_file(tmp_path: Path) -> Path:
    uri = tmp_path / "legacy"
    lance.write_dataset(pa.table({"a": [1, 2, 3]}), uri, data_storage_version="legacy")
    (name,) = list_names(uri / "data")
    return uri / "data" / name


def _with_stats_storage_class(path: Path, value: bytes) -> None:
    """Give every field of the file's statistics schema a storage class (field 11)."""
    data = read_file(path)
    meta_pos = struct.unpack("<q", data[-16:-8])[0]
    (length,) = _LENGTH.unpack(data[meta_pos : meta_pos + 4])
    meta = file_pb2.Metadata()
    meta.ParseFromString(data[meta_pos + 4 : meta_pos + 4 + length])
    assert len(meta.statistics.schema) > 0
    for field in meta.statistics.schema:
        field.MergeFromString(b"\x5a" + bytes([len(value)]) + value)
    body = meta.SerializeToString()
    write_file(path, data[:meta_pos] + _LENGTH.pack(len(body)) + body + data[-16:])


@pytest.mark.parametrize("value", [b"default", b"", b"blob"])
def test_a_storage_class_in_the_statistics_schema_is_read(tmp_path: Path, value: bytes) -> None:
    path = _legacy_file(tmp_path)
    _with_stats_storage_class(path, value)
    assert LanceFileReader(str(path)).read_all().to_table() == pa.table({"a": [1, 2, 3]})


def test_an_unknown_storage_class_is_damage(tmp_path: Path) -> None:
    path = _legacy_file(tmp_path)
    _with_stats_storage_class(path, b"fast")
    with pytest.raises(CorruptFileError, match="fields its format does not define"):
        LanceFileReader(str(path))


def test_a_btree_with_legacy_column_names_is_read(tmp_path: Path) -> None:
    table = pa.table({"x": pa.array(range(3000), pa.int64()), "y": [i % 7 for i in range(3000)]})
    ll.write_dataset(table, tmp_path, max_rows_per_file=1000)
    ll.dataset(tmp_path).create_scalar_index("y", "BTREE")
    (uid,) = list_names(tmp_path / "_indices")
    pages = os.path.join(tmp_path, "_indices", uid, "page_data.lance")
    reader = LanceFileReader(pages)
    old = reader.read_all().to_table()
    renamed = old.rename_columns(["values", "row_ids"])
    version = ll.dataset(tmp_path).data_storage_version
    writer = LanceFileWriter(pages, renamed.schema, version=version)
    writer.write_batch(renamed)
    writer.close()
    for sql, expr in [("y = 3", pc.field("y") == 3), ("y > 4", pc.field("y") > 4)]:
        seen: list[ll.ScanStatistics] = []
        got = ll.dataset(tmp_path).scanner(filter=sql, scan_stats_callback=seen.append).to_table()
        assert seen[0].indices_loaded == 1 and seen[0].parts_loaded > 0
        assert sorted(got["x"].to_pylist()) == table.filter(expr)["x"].to_pylist()
