"""Files written by early 2.0 writers (pylance 0.13): strings as lists of bytes, no padding.

Those writers stored a string or binary field in two columns, list offsets and then
the bytes (a ``list<uint8>``), and wrote the data buffers back to back with no
64-byte padding; pylance still reads them.  The files here are forged from a file
pylance writes today: its ``list<uint8>`` columns are relabelled string and binary in
the schema, and its data buffers are moved together to drop the padding.  The
expected values come from the lists pylance was given, not from lancelet.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from lance.file import LanceFileWriter

from lancelet.errors import CorruptFileError
from lancelet.file import LanceFileReader
from tests.file import surgery

WORDS = [b"foo", b"", b"b\xc3\xa4r", b"bazooka" * 20]
BLOBS = [b"\x00\xff", None, b"", b"\x01" * 300]


def _lists_file(path: Path, words: list[bytes]) -> None:
    u8 = pa.list_(pa.field("item", pa.uint8(), nullable=False))
    table = pa.table(
        {
            "n": pa.array([1, 2, 3, 4], pa.int64()),
            "s": pa.array([list(w) for w in words], u8),
            "b": pa.array([None if b is None else list(b) for b in BLOBS], u8),
        }
    )
    with LanceFileWriter(str(path), table.schema, version="2.0") as writer:
        writer.write_batch(table)


def _relabel(parts: surgery.FileParts) -> None:
    """The two list fields become string and binary, their item fields dropped."""
    fields = parts.descriptor.schema.fields
    keep = []
    for f in fields:
        if f.name == "item":
            continue
        if f.name == "s":
            f.logical_type = "string"
        elif f.name == "b":
            f.logical_type = "binary"
        keep.append(f)
    del fields[:]
    fields.extend(keep)


def _pack_data(parts: surgery.FileParts) -> None:
    """Move every page buffer to the front, back to back, as early writers laid them."""
    old = parts.prefix
    out = bytearray()
    for meta in parts.columns:
        for page in meta.pages:
            for i, (pos, size) in enumerate(
                zip(page.buffer_offsets, page.buffer_sizes, strict=True)
            ):
                page.buffer_offsets[i] = len(out)
                out += old[pos : pos + size]
        assert not meta.buffer_offsets, "the forged file has no column buffers"
    pos, size = parts.globals[0]
    parts.globals[0] = (len(out), size)
    out += old[pos : pos + size]
    parts.prefix = bytes(out)


def _forge(tmp_path: Path, words: list[bytes] = WORDS, packed: bool = False) -> Path:
    source = tmp_path / "lists.lance"
    _lists_file(source, words)
    parts = surgery.parse(source.read_bytes())
    if packed:
        _pack_data(parts)
    _relabel(parts)
    out = tmp_path / "early.lance"
    out.write_bytes(surgery.emit(parts))
    return out


def _expected(words: list[bytes]) -> pa.Table:
    return pa.table(
        {
            "n": pa.array([1, 2, 3, 4], pa.int64()),
            "s": pa.array([w.decode() for w in words], pa.string()),
            "b": pa.array(BLOBS, pa.binary()),
        }
    )


@pytest.mark.parametrize("packed", [False, True])
def test_strings_stored_as_byte_lists_read_as_strings(tmp_path: Path, packed: bool) -> None:
    path = _forge(tmp_path, packed=packed)
    reader = LanceFileReader(str(path))
    assert reader.read_all().to_table().equals(_expected(WORDS))
    assert reader.take_rows([3, 0]).to_table().equals(_expected(WORDS).take([3, 0]))
    assert (
        reader.read_range(1, 2, columns=["b"])
        .to_table()
        .equals(_expected(WORDS).select(["b"]).slice(1, 2))
    )


def test_invalid_utf8_in_a_byte_list_string_is_refused(tmp_path: Path) -> None:
    path = _forge(tmp_path, words=[b"ok", b"\xff\xfe", b"x", b"y"])
    with pytest.raises(CorruptFileError, match="'s'"):
        LanceFileReader(str(path)).read_all().to_table()


def test_a_moved_buffer_in_a_packed_file_is_refused(tmp_path: Path) -> None:
    # Tolerating unpadded buffers must not tolerate a damaged position: moving one
    # buffer of the packed file leaves a gap or an overlap.
    path = _forge(tmp_path, packed=True)
    parts = surgery.parse(path.read_bytes())
    page = parts.page(2)
    page.buffer_offsets[0] += 3
    bad = tmp_path / "moved.lance"
    bad.write_bytes(surgery.emit(parts))
    with pytest.raises(CorruptFileError):
        LanceFileReader(str(bad)).read_all().to_table()


def test_unpadded_buffers_with_gaps_are_refused(tmp_path: Path) -> None:
    # Padding dropped but the buffers not at the start: not how any writer lays out.
    path = _forge(tmp_path, packed=True)
    parts = surgery.parse(path.read_bytes())
    parts.prefix = b"\0" * 5 + parts.prefix
    for meta in parts.columns:
        for page in meta.pages:
            for i in range(len(page.buffer_offsets)):
                page.buffer_offsets[i] += 5
    parts.globals[0] = (parts.globals[0][0] + 5, parts.globals[0][1])
    bad = tmp_path / "shifted.lance"
    bad.write_bytes(surgery.emit(parts))
    with pytest.raises(CorruptFileError, match="aligned"):
        LanceFileReader(str(bad)).read_all().to_table()
