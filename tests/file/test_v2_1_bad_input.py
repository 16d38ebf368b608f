"""Damaged 2.1 / 2.2 files: every forged size, count, width, index entry or level is
a lancelet error naming the file, the column and the page; never a bare exception, a
wrong answer or an allocation the file does not justify."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from google.protobuf import any_pb2

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import CorruptFileError, LanceletError
from lancelet.file import LanceFileReader
from tests.file import surgery
from tests.file import v2_1_fixtures as fixtures

COLUMNS = {name: index for index, name in enumerate(fixtures.SCHEMA.names)}
# The struct has two leaves: st.x (column 7) and st.y (column 8); later leaves shift.
LEAF = {"i": 0, "n": 1, "f": 2, "b": 3, "s": 4, "d": 5, "l": 6, "x": 7, "y": 8, "c": 9, "z": 10}


def layout(parts: surgery.FileParts, column: int) -> pb.PageLayout:
    wrapper = any_pb2.Any()
    wrapper.ParseFromString(parts.page(column).encoding.direct.encoding)
    msg = pb.PageLayout()
    msg.ParseFromString(wrapper.value)
    return msg


def set_layout(parts: surgery.FileParts, column: int, msg: pb.PageLayout) -> None:
    wrapper = any_pb2.Any()
    wrapper.Pack(msg, type_url_prefix="/")
    parts.page(column).encoding.direct.encoding = wrapper.SerializeToString()


def forge(
    tmp_path: Path, version: str, edit: Callable[[surgery.FileParts, bytearray], None]
) -> Path:
    parts = surgery.parse(fixtures.path(version).read_bytes())
    data = bytearray(parts.prefix)
    edit(parts, data)
    parts.prefix = bytes(data)
    out = tmp_path / "forged.lance"
    out.write_bytes(surgery.emit(parts))
    return out


def buffer_at(parts: surgery.FileParts, column: int, index: int) -> tuple[int, int]:
    page = parts.page(column)
    return int(page.buffer_offsets[index]), int(page.buffer_sizes[index])


def assert_refused(path: Path, column: str, leaf: int) -> str:
    """Reading ``column`` every way fails with a lancelet error naming file, column, page."""
    reader = LanceFileReader(path)
    label = reader.schema.names[COLUMNS[column]] if column in COLUMNS else column
    for read in (
        lambda: reader.read_all(columns=[label]).to_table(),
        lambda: reader.take_rows([0, 150], columns=[label]).to_table(),
    ):
        with pytest.raises(CorruptFileError) as info:
            read()
        message = str(info.value)
        assert str(path) in message and "page 0" in message, message
        assert f"column '{column}" in message or f".{column}'" in message, message
    return message


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_chunk_sizes_that_do_not_fill_the_buffer(tmp_path: Path, version: str) -> None:
    word = 2 if version == "2.1" else 4

    def edit(parts: surgery.FileParts, data: bytearray) -> None:
        pos, _ = buffer_at(parts, LEAF["i"], 0)
        data[pos + word - 1] ^= 0x08  # a high bit of chunk 0's size

    message = assert_refused(forge(tmp_path, version, edit), "i", LEAF["i"])
    assert "chunk" in message


def test_chunk_count_cut_short(tmp_path: Path) -> None:
    def edit(parts: surgery.FileParts, data: bytearray) -> None:
        page = parts.page(LEAF["s"])
        page.buffer_sizes[0] = page.buffer_sizes[0] - 4  # one chunk word fewer

    assert_refused(forge(tmp_path, "2.2", edit), "s", LEAF["s"])


def test_value_count_of_a_chunk(tmp_path: Path) -> None:
    def edit(parts: surgery.FileParts, data: bytearray) -> None:
        pos, size = buffer_at(parts, LEAF["s"], 0)
        if size >= 8:
            data[pos] = (data[pos] & 0xF0) | 0x0F  # 32768 values in chunk 0
        else:
            msg = layout(parts, LEAF["s"])
            msg.mini_block_layout.num_items += 1
            set_layout(parts, LEAF["s"], msg)

    assert_refused(forge(tmp_path, "2.2", edit), "s", LEAF["s"])


def test_chunk_header_buffer_size(tmp_path: Path) -> None:
    def edit(parts: surgery.FileParts, data: bytearray) -> None:
        pos, _ = buffer_at(parts, LEAF["s"], 1)
        data[pos + 2] ^= 0x40  # chunk 0's value buffer size (u32 after the level count)

    assert_refused(forge(tmp_path, "2.2", edit), "s", LEAF["s"])


def test_inline_bit_width(tmp_path: Path) -> None:
    def edit(parts: surgery.FileParts, data: bytearray) -> None:
        pos, _ = buffer_at(parts, LEAF["d"], 1)
        header = 8  # u16 levels, u32 size, padding to 8
        struct.pack_into("<I", data, pos + header, 40)  # 40 bits of a 32-bit value

    message = assert_refused(forge(tmp_path, "2.2", edit), "d", LEAF["d"])
    assert "bit" in message


def test_repetition_index_entry(tmp_path: Path) -> None:
    def edit(parts: surgery.FileParts, data: bytearray) -> None:
        pos, _ = buffer_at(parts, LEAF["l"], len(parts.page(LEAF["l"]).buffer_sizes) - 1)
        struct.pack_into("<Q", data, pos, 7)  # chunk 0 "finishes" 7 rows

    message = assert_refused(forge(tmp_path, "2.2", edit), "l", LEAF["l"])
    assert "rows" in message or "repetition" in message


def test_dictionary_size(tmp_path: Path) -> None:
    def edit(parts: surgery.FileParts, data: bytearray) -> None:
        msg = layout(parts, LEAF["d"])
        msg.mini_block_layout.num_dictionary_items = 10**12
        set_layout(parts, LEAF["d"], msg)

    assert_refused(forge(tmp_path, "2.2", edit), "d", LEAF["d"])


def test_dictionary_index_past_the_dictionary(tmp_path: Path) -> None:
    def edit(parts: surgery.FileParts, data: bytearray) -> None:
        msg = layout(parts, LEAF["d"])
        msg.mini_block_layout.num_dictionary_items = 2
        set_layout(parts, LEAF["d"], msg)

    assert_refused(forge(tmp_path, "2.2", edit), "d", LEAF["d"])


def test_variable_offsets(tmp_path: Path) -> None:
    def edit(parts: surgery.FileParts, data: bytearray) -> None:
        pos, _ = buffer_at(parts, LEAF["s"], 1)
        struct.pack_into("<I", data, pos + 8 + 4 * 3, 60000)  # offset 3 of chunk 0

    assert_refused(forge(tmp_path, "2.2", edit), "s", LEAF["s"])


def test_levels_above_the_layers(tmp_path: Path) -> None:
    def edit(parts: surgery.FileParts, data: bytearray) -> None:
        msg = layout(parts, LEAF["n"])
        del msg.mini_block_layout.layers[:]
        msg.mini_block_layout.layers.append(pb.REPDEF_ALL_VALID_ITEM)
        set_layout(parts, LEAF["n"], msg)

    message = assert_refused(forge(tmp_path, "2.2", edit), "n", LEAF["n"])
    assert "level" in message


def test_layers_that_do_not_match_the_schema(tmp_path: Path) -> None:
    def edit(parts: surgery.FileParts, data: bytearray) -> None:
        msg = layout(parts, LEAF["l"])
        del msg.mini_block_layout.layers[:]
        msg.mini_block_layout.layers.append(pb.REPDEF_NULLABLE_ITEM)
        msg.mini_block_layout.layers.append(pb.REPDEF_NULLABLE_ITEM)
        set_layout(parts, LEAF["l"], msg)

    assert_refused(forge(tmp_path, "2.2", edit), "l", LEAF["l"])


def test_constant_inline_value_of_the_wrong_width(tmp_path: Path) -> None:
    def edit(parts: surgery.FileParts, data: bytearray) -> None:
        msg = layout(parts, LEAF["c"])
        msg.constant_layout.inline_value = b"\x01\x02\x03"
        set_layout(parts, LEAF["c"], msg)

    with pytest.raises(CorruptFileError, match=r"column 'c' page 0.*inline"):
        LanceFileReader(forge(tmp_path, "2.2", edit)).read_all(columns=["c"]).to_table()


def test_unknown_page_layout_field_is_corrupt(tmp_path: Path) -> None:
    def edit(parts: surgery.FileParts, data: bytearray) -> None:
        wrapper = any_pb2.Any()
        wrapper.ParseFromString(parts.page(LEAF["i"]).encoding.direct.encoding)
        wrapper.value = wrapper.value + b"\xf8\x01\x01"  # field 31, varint 1
        parts.page(LEAF["i"]).encoding.direct.encoding = wrapper.SerializeToString()

    # A column's layouts are parsed when it is first read: the others read as before.
    reader = LanceFileReader(forge(tmp_path, "2.2", edit))
    with pytest.raises(CorruptFileError, match="forged.lance: column 'i' page 0 layout"):
        reader.read_all(columns=["i"]).to_table()
    assert reader.read_all(columns=["n"]).to_table().num_rows == reader.num_rows()
    with pytest.raises(CorruptFileError, match="column 'i' page 0 layout"):
        reader.read_all().to_table()
    # A copy shares the parsed metadata (the same bytes) and is named in its own error.
    copy = tmp_path / "copy.lance"
    copy.write_bytes((tmp_path / "forged.lance").read_bytes())
    with pytest.raises(CorruptFileError, match="copy.lance: column 'i' page 0 layout"):
        LanceFileReader(copy).read_all(columns=["i"]).to_table()


def test_every_single_byte_of_chunk_metadata(tmp_path: Path) -> None:
    """Each byte of every column's chunk metadata flipped in turn: a lancelet error or
    the right values, never anything else."""
    source = fixtures.path("2.2")
    parts = surgery.parse(source.read_bytes())
    want = LanceFileReader(source).read_all().to_table()
    for column in range(len(parts.columns)):
        page = parts.page(column)
        if not page.buffer_sizes:
            continue
        pos, size = buffer_at(parts, column, 0)
        for offset in range(pos, pos + size):
            data = bytearray(source.read_bytes())
            data[offset] ^= 0x5A
            path = tmp_path / "flipped.lance"
            path.write_bytes(bytes(data))
            try:
                got = LanceFileReader(path).read_all().to_table()
            except LanceletError:
                continue
            assert got.equals(want), (column, offset)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("shift", [1, 4, -4])
def test_variable_first_offset(tmp_path: Path, version: str, shift: int) -> None:
    """A chunk's first offset is where its bytes start, right after its offsets: one
    that points elsewhere would shift the first value's bytes."""

    def edit(parts: surgery.FileParts, data: bytearray) -> None:
        pos, _ = buffer_at(parts, LEAF["s"], 1)
        header = 6 if version == "2.2" else 4  # u16 levels, a u32 (2.2) or u16 size
        at = pos + header + (-header % 8)
        (first,) = struct.unpack_from("<I", data, at)
        struct.pack_into("<I", data, at, first + shift)

    assert_refused(forge(tmp_path, version, edit), "s", LEAF["s"])


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_a_page_buffer_over_another_columns_is_named(tmp_path: Path, version: str) -> None:
    """Two columns' buffers at one place: the error names both, by column and page."""

    def edit(parts: surgery.FileParts, data: bytearray) -> None:
        offset, _ = buffer_at(parts, LEAF["i"], 0)
        parts.page(LEAF["s"]).buffer_offsets[0] = offset

    with pytest.raises(CorruptFileError, match=r"column 'i' page 0 buffer .*overlaps column "):
        LanceFileReader(forge(tmp_path, version, edit))
