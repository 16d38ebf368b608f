"""Corrupt, truncated, forged and unsupported files raise lancelet errors naming the file."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path

import lance.file as ref
import pyarrow as pa
import pytest

from lancelet._proto import encodings_v2_0_pb2 as enc_pb
from lancelet._proto import file2_pb2, file_pb2
from lancelet.errors import (
    CorruptFileError,
    LanceFileError,
    LanceletError,
    SchemaError,
    UnsupportedTypeError,
    UnsupportedVersionError,
)
from lancelet.file import LanceFileReader, LanceFileWriter
from tests.file import surgery

FOOTER = struct.Struct("<QQQIIHH4s")
TABLE = pa.table(
    {
        "i": pa.array(range(5000), pa.int64()),
        "s": pa.array([f"v{i}" for i in range(5000)]),
        "l": pa.array([[i, i] for i in range(5000)], pa.list_(pa.int32())),
    }
)


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.lance"
    with ref.LanceFileWriter(str(path), TABLE.schema, version="2.0") as writer:
        writer.write_batch(TABLE)
    return path


def edit_page_encoding(
    page: file2_pb2.ColumnMetadata.Page, edit: Callable[[enc_pb.ArrayEncoding], None]
) -> None:
    """Unwrap a page's ``Any``-wrapped encoding, let ``edit`` change it, wrap it again."""
    msg = surgery.unpack_encoding(page)
    edit(msg)
    surgery.pack_encoding(page, msg)


def read_everything(path: Path) -> pa.Table:
    return LanceFileReader(path).read_all().to_table()


def rewrite(
    path: Path,
    columns: Callable[[list[file2_pb2.ColumnMetadata]], None] | None = None,
    footer: Callable[[list[int]], None] | None = None,
) -> Path:
    """Re-emit the file's tail after mutating its column metadata or footer fields."""
    data = path.read_bytes()
    fields = list(FOOTER.unpack(data[-40:]))
    cm_start, cmo, gbo, n_gb, n_col = fields[:5]
    metas = []
    for c in range(n_col):
        pos, size = struct.unpack_from("<QQ", data, cmo + 16 * c)
        meta = file2_pb2.ColumnMetadata()
        meta.ParseFromString(data[pos : pos + size])
        metas.append(meta)
    if columns:
        columns(metas)
    out = bytearray(data[:cm_start])
    table = b""
    for meta in metas:
        raw = meta.SerializeToString()
        table += struct.pack("<QQ", len(out), len(raw))
        out += raw
    new_cmo = len(out)
    out += table
    new_gbo = len(out)
    out += data[gbo : gbo + 16 * n_gb]
    fields[:3] = [cm_start, new_cmo, new_gbo]
    if footer:
        footer(fields)
    out += FOOTER.pack(*fields)
    bad = path.with_name("bad.lance")
    bad.write_bytes(bytes(out))
    return bad


def test_the_fixture_file_is_readable(good: Path) -> None:
    assert read_everything(good).equals(TABLE)


@pytest.mark.parametrize("keep", [0, 10, 39, 1000, -1, -41])
def test_truncated(good: Path, keep: int) -> None:
    data = good.read_bytes()
    bad = good.with_name("cut.lance")
    bad.write_bytes(data[:keep])
    with pytest.raises(CorruptFileError, match="cut.lance"):
        read_everything(bad)


def test_wrong_magic(good: Path) -> None:
    data = bytearray(good.read_bytes())
    data[-4:] = b"PARQ"
    good.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="magic"):
        read_everything(good)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_footer_points_outside_the_file(good: Path, index: int) -> None:
    def forge(fields: list[int]) -> None:
        fields[index] = 2**60

    with pytest.raises(CorruptFileError, match=r"bad\.lance"):
        read_everything(rewrite(good, footer=forge))


def test_too_many_columns_claimed(good: Path) -> None:
    def forge(fields: list[int]) -> None:
        fields[4] = 2**31

    with pytest.raises(CorruptFileError):
        read_everything(rewrite(good, footer=forge))


def test_page_buffer_runs_past_the_file(good: Path) -> None:
    def forge(metas: list[file2_pb2.ColumnMetadata]) -> None:
        metas[0].pages[0].buffer_sizes[0] = 2**40

    with pytest.raises(CorruptFileError, match="past the end"):
        read_everything(rewrite(good, columns=forge))


def test_forged_row_count_does_not_allocate(good: Path) -> None:
    def forge(metas: list[file2_pb2.ColumnMetadata]) -> None:
        metas[0].pages[0].length = 2**50  # a flat int64 page of 2**53 bytes

    with pytest.raises(CorruptFileError):
        read_everything(rewrite(good, columns=forge))


def test_forged_string_page_length(good: Path) -> None:
    def forge(metas: list[file2_pb2.ColumnMetadata]) -> None:
        metas[1].pages[0].length = 2**45

    with pytest.raises(CorruptFileError):
        read_everything(rewrite(good, columns=forge))


def test_forged_list_item_count(good: Path) -> None:
    def shrink(msg: enc_pb.ArrayEncoding) -> None:
        msg.list.num_items = 3
        msg.list.null_offset_adjustment = 4

    def forge(metas: list[file2_pb2.ColumnMetadata]) -> None:
        edit_page_encoding(metas[2].pages[0], shrink)

    with pytest.raises(CorruptFileError):
        read_everything(rewrite(good, columns=forge))


def test_column_metadata_is_not_protobuf(good: Path) -> None:
    data = bytearray(good.read_bytes())
    cmo = FOOTER.unpack(bytes(data[-40:]))[1]
    pos, size = struct.unpack_from("<QQ", data, cmo)
    data[pos : pos + size] = b"\xff" * size
    good.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="column 0 metadata"):
        read_everything(good)


def test_file_descriptor_is_not_protobuf(good: Path) -> None:
    data = bytearray(good.read_bytes())
    gbo = FOOTER.unpack(bytes(data[-40:]))[2]
    pos, size = struct.unpack_from("<QQ", data, gbo)
    data[pos : pos + size] = b"\x0a\xff\xff\xff\xff\x0f" + b"\x00" * (size - 6)
    good.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="descriptor"):
        read_everything(good)


def test_descriptor_row_count_disagrees(good: Path) -> None:
    data = bytearray(good.read_bytes())
    gbo = FOOTER.unpack(bytes(data[-40:]))[2]
    pos, size = struct.unpack_from("<QQ", data, gbo)
    desc = file_pb2.FileDescriptor()
    desc.ParseFromString(bytes(data[pos : pos + size]))
    desc.length = 4999  # one fewer than the columns hold, same varint width
    raw = desc.SerializeToString()
    assert len(raw) == size  # same varint width: the rest of the file stays put
    data[pos : pos + size] = raw
    good.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="rows"):
        read_everything(good)


@pytest.mark.parametrize("minor", [3, 9])
def test_newer_versions_are_refused(good: Path, minor: int) -> None:
    def forge(fields: list[int]) -> None:
        fields[5], fields[6] = 2, minor

    with pytest.raises(UnsupportedVersionError, match=rf"2\.{minor}"):
        LanceFileReader(rewrite(good, footer=forge))


def test_a_2_0_file_claiming_the_legacy_version_is_corrupt(good: Path) -> None:
    def forge(fields: list[int]) -> None:
        fields[5], fields[6] = 0, 2

    with pytest.raises(CorruptFileError, match="bad.lance: file metadata position"):
        LanceFileReader(rewrite(good, footer=forge))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(LanceFileError, match="nope.lance"):
        LanceFileReader(tmp_path / "nope.lance")


def test_errors_share_one_base() -> None:
    for cls in (CorruptFileError, UnsupportedVersionError, SchemaError, UnsupportedTypeError):
        assert issubclass(cls, LanceletError)


def test_schema_mismatch_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "out.lance"
    writer = LanceFileWriter(path, TABLE.schema, version="2.0")
    writer.write_batch(TABLE)
    other = pa.table({"i": pa.array([1.5]), "s": ["x"], "l": pa.array([[1]], pa.list_(pa.int32()))})
    with pytest.raises(SchemaError, match="out.lance"):
        writer.write_batch(other)
    assert os.listdir(tmp_path) == []
    with pytest.raises(LanceFileError):
        writer.write_batch(TABLE)


def test_struct_level_nulls_are_refused(tmp_path: Path) -> None:
    arr = pa.array([{"x": 1}, None], pa.struct([("x", pa.int32())]))
    path = tmp_path / "out.lance"
    with (
        pytest.raises(UnsupportedTypeError, match="'st'.*struct level"),
        LanceFileWriter(path, version="2.0") as w,
    ):
        w.write_batch(pa.table({"st": arr}))
    assert os.listdir(tmp_path) == []


def test_exception_inside_with_block_discards_the_file(tmp_path: Path) -> None:
    path = tmp_path / "out.lance"
    with pytest.raises(RuntimeError), LanceFileWriter(path, TABLE.schema, version="2.0") as writer:
        writer.write_batch(TABLE)
        raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []


def test_unsupported_write_version(tmp_path: Path) -> None:
    for name in ("2.3", "next"):
        with pytest.raises(LanceFileError, match="not supported for writing"):
            LanceFileWriter(tmp_path / "x.lance", TABLE.schema, version=name)
    for name in ("0.1", "legacy"):  # written for datasets only, as by pylance
        with pytest.raises(NotImplementedError, match="does not write legacy"):
            LanceFileWriter(tmp_path / "x.lance", TABLE.schema, version=name)
    with pytest.raises(LanceFileError, match="unknown Lance file format version"):
        LanceFileWriter(tmp_path / "x.lance", TABLE.schema, version="3.7")
    assert os.listdir(tmp_path) == []


def test_no_schema_no_data(tmp_path: Path) -> None:
    with pytest.raises(SchemaError):
        LanceFileWriter(tmp_path / "x.lance").close()
    assert os.listdir(tmp_path) == []
