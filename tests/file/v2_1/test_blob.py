"""Blob pages written by pylance: values read from their positions in the file, or the
descriptions themselves; forged descriptions are refused."""

from __future__ import annotations

import struct
from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import CorruptFileError, UnsupportedEncodingError
from lancelet.file.codecs.packed import decode_packed_rows
from lancelet.file.v2_1.read import blob
from lancelet.file.v2_1.read.page import LevelledPage
from tests.file.v2_1.page_bytes import PageBytes, miniblock_chunks, page_entry, pages
from tests.file.v2_1.test_fullzip_damage import Source

LARGE_BINARY = pa.large_binary()
NAME = r"damaged\.lance: column 0 \(b\) page 0"
VALUES = [b"hello", None, bytes(range(256)) * 400, b"", b"x" * 70, None, b"tail"]


class PackedDescriptions:
    """A stand-in for the reader's mini-block decoder: a page of packed (position, size)
    structs with no levels, decoded whole and sliced."""

    def __init__(self, page: PageBytes, layout: pb.PageLayout, arrow_type: pa.DataType) -> None:
        mini = layout.mini_block_layout
        chunks = miniblock_chunks(mini, page.buffers[0], page.buffers[1])
        fields = decode_packed_rows(
            page.buffers[1],
            [c.buffers[0][0] for c in chunks],
            [c.buffers[0][1] for c in chunks],
            [c.count for c in chunks],
            mini.value_compression.packed_struct.bits_per_value,
            what="descriptions",
        )
        columns = [pa.array(np.ascontiguousarray(f).view("<u8").ravel()) for f in fields]
        self.values = pa.StructArray.from_arrays(columns, fields=list(arrow_type))

    @property
    def num_rows(self) -> int:
        return len(self.values)

    def read(self, start: int, end: int) -> LevelledPage:
        return LevelledPage(None, None, self.values[start:end], (pb.REPDEF_ALL_VALID_ITEM,))

    def take(self, rows: np.ndarray) -> LevelledPage:
        return LevelledPage(None, None, self.values.take(rows), (pb.REPDEF_ALL_VALID_ITEM,))


def _write(
    tmp_path: Path, version: str, values: list[bytes | None] = VALUES
) -> tuple[bytes, PageBytes]:
    field = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    table = pa.table({"b": pa.array(values, pa.large_binary())}, schema=pa.schema([field]))
    path = tmp_path / f"blob{version}.lance"
    with ref.LanceFileWriter(str(path), table.schema, version=version) as writer:
        writer.write_batch(table)
    assert ref.LanceFileReader(str(path)).read_all().to_table().column(0).to_pylist() == values
    data, columns = pages(path)
    (page,) = columns[0]
    assert page.layout.WhichOneof("layout") == "blob_layout"
    return data, page


def _decoder(
    data: bytes, page: PageBytes, arrow_type: pa.DataType = LARGE_BINARY, **kw: bool
) -> blob.BlobPageDecoder:
    # The descriptions come from the (possibly forged) file bytes.
    buffers = [
        data[o : o + n]
        for o, n in zip(page.meta.buffer_offsets, page.meta.buffer_sizes, strict=True)
    ]

    def inner(layout: pb.PageLayout, description: pa.DataType) -> PackedDescriptions:
        assert description == blob.DESCRIPTION_TYPE
        return PackedDescriptions(PageBytes(page.meta, page.layout, buffers), layout, description)

    return blob.decoder(
        Source(data),
        page_entry(page),
        page.layout.blob_layout,
        "column 0 (b)",
        arrow_type,
        inner,
        page_index=0,
        **kw,
    )


def _rows(out: LevelledPage) -> list[object]:
    values = out.values.to_pylist()
    defs = out.defs.tolist() if out.defs is not None else [0] * len(values)
    return [v if d == 0 else None for v, d in zip(values, defs, strict=True)]


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_values_from_their_positions(tmp_path: Path, version: str) -> None:
    data, page = _write(tmp_path, version)
    decoder = _decoder(data, page)
    out = decoder.read(0, decoder.num_rows)
    assert out.values.type == pa.large_binary()
    assert out.layers == (pb.REPDEF_NULLABLE_ITEM,)
    assert _rows(out) == VALUES
    assert _rows(decoder.read(2, 5)) == VALUES[2:5]
    assert _rows(decoder.take(np.array([1, 2, 6], np.int64))) == [VALUES[i] for i in (1, 2, 6)]
    assert _rows(_decoder(data, page, pa.binary()).read(0, 7)) == VALUES


def test_descriptions_as_pylance_datasets_return_them(tmp_path: Path) -> None:
    data, page = _write(tmp_path, "2.1")
    out = _decoder(data, page, blob.DESCRIPTION_TYPE, descriptions=True).read(0, len(VALUES))
    rows = _rows(out)
    assert rows[1] is None and rows[5] is None
    assert rows[3] == {"position": 0, "size": 0}
    for row, value in zip(rows, VALUES, strict=True):
        if value:
            assert isinstance(row, dict)
            assert data[row["position"] : row["position"] + row["size"]] == value


def _forge(data: bytes, page: PageBytes, row: int, position: int, size: int) -> bytes:
    """Rewrite one description in the page's chunk (packed rows of two u64)."""
    mini = page.layout.blob_layout.inner_layout.mini_block_layout
    (chunk,) = miniblock_chunks(mini, page.buffers[0], page.buffers[1])
    at = int(page.meta.buffer_offsets[1]) + chunk.buffers[0][0] + 16 * row
    return data[:at] + struct.pack("<QQ", position, size) + data[at + 16 :]


def test_blob_past_the_end_of_the_file(tmp_path: Path) -> None:
    data, page = _write(tmp_path, "2.2")
    for position, size in [(len(data) - 3, 4), (2**63, 1), (5, 2**64 - 1)]:
        forged = _forge(data, page, 0, position, size)
        with pytest.raises(CorruptFileError, match=NAME + ".*runs past the end of the file"):
            _decoder(forged, page).read(0, 7)
    # Rows that do not name the forged blob still read.
    forged = _forge(data, page, 0, len(data), 10)
    assert _rows(_decoder(forged, page).read(2, 7)) == VALUES[2:7]


def test_overlapping_blobs_are_refused(tmp_path: Path) -> None:
    """Each blob has bytes of its own, so a read never asks for more than the file."""
    data, page = _write(tmp_path, "2.2")
    forged = _forge(data, page, 4, 0, 100_000)
    with pytest.raises(CorruptFileError, match=NAME + ".*overlapping"):
        _decoder(forged, page).read(0, 7)


def test_impossible_null_levels(tmp_path: Path) -> None:
    data, page = _write(tmp_path, "2.2")
    for position in (2 << 16, (1 << 16) + 1, 7):
        forged = _forge(data, page, 1, position, 0)
        with pytest.raises(CorruptFileError, match=NAME + ".*levels"):
            _decoder(forged, page).read(0, 7)


def test_not_nullable_page_has_no_nulls(tmp_path: Path) -> None:
    data, page = _write(tmp_path, "2.2", [b"a" * 10, b"b" * 20])
    assert list(page.layout.blob_layout.layers) == [pb.REPDEF_ALL_VALID_ITEM]
    assert _rows(_decoder(data, page).read(0, 2)) == [b"a" * 10, b"b" * 20]
    forged = _forge(data, page, 0, 1 << 16, 0)
    with pytest.raises(CorruptFileError, match=NAME + ".*levels"):
        _decoder(forged, page).read(0, 2)


def test_blobs_in_lists_and_wrong_types_are_refused(tmp_path: Path) -> None:
    data, page = _write(tmp_path, "2.2")
    listed = pb.PageLayout()
    listed.CopyFrom(page.layout)
    listed.blob_layout.layers.append(pb.REPDEF_NULLABLE_LIST)
    odd = PageBytes(page.meta, listed, page.buffers)
    with pytest.raises(UnsupportedEncodingError, match=NAME + ".*inside lists"):
        _decoder(data, odd)
    with pytest.raises(CorruptFileError, match=NAME + ".*int64"):
        _decoder(data, page, pa.int64())
