"""Full-zip pages with forged bytes: every one is a CorruptFileError naming the file, the
column and the page, never a bare exception, a hang or a huge allocation."""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import CorruptFileError, LanceletError
from lancelet.file.v2_1.read import fullzip
from tests.file.v2_1.page_bytes import PageBytes, PageEntry, page_entry, pages, write

NAME = r"damaged\.lance: column 0 \(x\) page 0"


class Source:
    """An in-memory file."""

    def __init__(self, data: bytes, path: str = "damaged.lance") -> None:
        self.data = data
        self.path = path
        self.size = len(data)

    def read(self, offset: int, length: int) -> pa.Buffer:
        assert offset >= 0 and offset + length <= self.size, "read outside the file"
        return pa.py_buffer(self.data[offset : offset + length])


def _page(
    tmp_path: Path, rows: list[object], arrow_type: pa.DataType, **meta: str
) -> tuple[bytes, PageBytes]:
    field = pa.field("x", arrow_type, metadata=meta or None)
    table = pa.table({"x": pa.array(rows, arrow_type)}, schema=pa.schema([field]))
    data, columns = pages(write(tmp_path / "f.lance", table))
    (page,) = columns[0]
    assert page.layout.WhichOneof("layout") == "full_zip_layout"
    return data, page


def _decode(
    data: bytes,
    page: PageBytes,
    arrow_type: pa.DataType,
    entry: PageEntry | None = None,
    layout: pb.FullZipLayout | None = None,
) -> fullzip.FullZipPageDecoder:
    return fullzip.decoder(
        Source(data),
        entry or page_entry(page),
        layout or page.layout.full_zip_layout,
        "column 0 (x)",
        arrow_type,
        page_index=0,
    )


def _patch(data: bytes, at: int, new: bytes) -> bytes:
    return data[:at] + new + data[at + len(new) :]


def _read_all(decoder: fullzip.FullZipPageDecoder) -> None:
    decoder.read(0, decoder.num_rows)


BLOBS = [bytes([i]) * 300 for i in range(6)]


@pytest.fixture
def binary_page(tmp_path: Path) -> tuple[bytes, PageBytes]:
    return _page(tmp_path, [BLOBS[0], None, *BLOBS[1:]], pa.binary())


def _data_at(page: PageBytes) -> int:
    return int(page.meta.buffer_offsets[0])


def _index_at(page: PageBytes) -> int:
    return int(page.meta.buffer_offsets[1])


def test_forged_value_length(binary_page: tuple[bytes, PageBytes]) -> None:
    data, page = binary_page
    # Row 0: control word (1 byte), then its u32 length.
    forged = _patch(data, _data_at(page) + 1, struct.pack("<I", 0xFFFF_FFF0))
    with pytest.raises(CorruptFileError, match=NAME + ".*row 0"):
        _read_all(_decode(forged, page, pa.binary()))
    # A take of other rows does not touch row 0.
    taken = _decode(forged, page, pa.binary()).take(np.array([2, 3], np.int64))
    assert taken.values.to_pylist() == BLOBS[1:3]


def test_forged_control_word(binary_page: tuple[bytes, PageBytes]) -> None:
    data, page = binary_page
    # Row 1 is null: a lone control word with definition 1; 3 exceeds the page's layers.
    at = _data_at(page) + 1 + 4 + 300
    assert data[at] == 1
    with pytest.raises(CorruptFileError, match=NAME):
        _read_all(_decode(_patch(data, at, b"\x03"), page, pa.binary()))
    # Definition 0 makes the row claim a value its bytes do not hold.
    with pytest.raises(CorruptFileError, match=NAME + ".*row 1"):
        _read_all(_decode(_patch(data, at, b"\x00"), page, pa.binary()))


@pytest.mark.parametrize("entry", [1, 3, 7])
def test_forged_repetition_index_entry(binary_page: tuple[bytes, PageBytes], entry: int) -> None:
    data, page = binary_page
    width = len(page.buffers[1]) // 8
    at = _index_at(page) + entry * width
    value = int.from_bytes(data[at : at + width], "little")
    for forged_value in (value + 1, value - 1, 0, (1 << (8 * width)) - 1):
        forged = _patch(data, at, forged_value.to_bytes(width, "little"))
        with pytest.raises(CorruptFileError, match=NAME):
            _read_all(_decode(forged, page, pa.binary()))


def test_index_not_ending_at_the_data_size(binary_page: tuple[bytes, PageBytes]) -> None:
    data, page = binary_page
    entry = page_entry(page)
    shorter = replace(entry, buffer_sizes=(entry.buffer_sizes[0] + 64, entry.buffer_sizes[1]))
    with pytest.raises(CorruptFileError, match=NAME + ".*ends at"):
        _read_all(_decode(data, page, pa.binary(), shorter))


def test_index_of_impossible_width(binary_page: tuple[bytes, PageBytes]) -> None:
    data, page = binary_page
    entry = page_entry(page)
    odd = replace(entry, buffer_sizes=(entry.buffer_sizes[0], entry.buffer_sizes[1] - 1))
    with pytest.raises(CorruptFileError, match=NAME + ".*repetition index of"):
        _decode(data, page, pa.binary(), odd)


def test_buffers_past_the_file(binary_page: tuple[bytes, PageBytes]) -> None:
    data, page = binary_page
    entry = page_entry(page)
    far = replace(entry, buffer_offsets=(len(data) - 8, entry.buffer_offsets[1]))
    with pytest.raises(CorruptFileError, match=NAME + ".*runs past the end of the file"):
        _decode(data, page, pa.binary(), far)
    missing = replace(
        entry, buffer_offsets=entry.buffer_offsets[:1], buffer_sizes=entry.buffer_sizes[:1]
    )
    with pytest.raises(CorruptFileError, match=NAME + ".*1 buffers, expected 2"):
        _decode(data, page, pa.binary(), missing)


def test_item_counts_must_match_the_layout(binary_page: tuple[bytes, PageBytes]) -> None:
    data, page = binary_page
    layout = pb.FullZipLayout()
    layout.CopyFrom(page.layout.full_zip_layout)
    layout.num_items += 1
    with pytest.raises(CorruptFileError, match=NAME + ".*its layout says"):
        _read_all(_decode(data, page, pa.binary(), layout=layout))


def test_layout_and_type_must_agree(tmp_path: Path) -> None:
    vectors = [[float(i)] * 128 for i in range(4)]
    data, page = _page(tmp_path, vectors, pa.list_(pa.float32(), 128))
    with pytest.raises(CorruptFileError, match=NAME + ".*list of 128 items is stored for"):
        _decode(data, page, pa.list_(pa.float32(), 64))
    with pytest.raises(CorruptFileError, match=NAME + ".*32-bit values are stored for"):
        _decode(data, page, pa.list_(pa.float64(), 128))
    layout = pb.FullZipLayout()
    layout.CopyFrom(page.layout.full_zip_layout)
    layout.bits_per_value = 64
    with pytest.raises(CorruptFileError, match=NAME + ".*do not match their encoding"):
        _decode(data, page, pa.list_(pa.float32(), 128), layout=layout)
    entry = page_entry(page)
    short = replace(entry, buffer_sizes=(entry.buffer_sizes[0] - 512,))
    with pytest.raises(CorruptFileError, match=NAME + ".*does not hold 4 rows of 512"):
        _decode(data, page, pa.list_(pa.float32(), 128), short)


def test_forged_lengths_in_long_lists(tmp_path: Path) -> None:
    """Damage deep inside a row walked by pointer doubling is found too."""
    rows: list[object] = [
        [bytes([i % 250]) * 256 + bytes([j % 250]) for j in range(120)] for i in range(3)
    ]
    data, page = _page(tmp_path, rows, pa.list_(pa.binary()))
    start = _data_at(page)
    item = 1 + 4 + 257
    at = start + 100 * item + 1  # the length of row 0's item 100
    assert struct.unpack_from("<I", data, at)[0] == 257
    for forged_length in (258, 256, 1 << 31):
        forged = _patch(data, at, struct.pack("<I", forged_length))
        with pytest.raises(CorruptFileError, match=NAME):
            _read_all(_decode(forged, page, pa.binary()))
    # An extra row start inside a row (repetition level of a new row on item 50).
    forged = _patch(data, start + 50 * item, bytes([data[start]]))
    with pytest.raises(CorruptFileError, match=NAME + ".*do not start rows"):
        _read_all(_decode(forged, page, pa.binary()))


def test_forged_compressed_value_size(tmp_path: Path) -> None:
    rows: list[object] = ["word " * 8000, "more " * 9000]
    data, page = _page(tmp_path, rows, pa.string())
    assert page.layout.full_zip_layout.value_compression.HasField("general")
    # Row 0: control word? none (no nulls), u32 length, then the 8-byte zstd size prefix.
    words = page.layout.full_zip_layout.bits_def + page.layout.full_zip_layout.bits_rep
    at = _data_at(page) + (1 if words else 0) + 4
    forged = _patch(data, at, struct.pack("<Q", 1 << 40))
    with pytest.raises(CorruptFileError, match=NAME + ".*value 0"):
        _read_all(_decode(forged, page, pa.string()))


def test_forged_fsst_codes(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    words = ["alpha", "beta", "gamma", "delta"]
    rows: list[object] = [" ".join(rng.choice(words, 70)) for _ in range(200)]
    data, page = _page(tmp_path, rows, pa.string())
    fsst = page.layout.full_zip_layout.value_compression.fsst
    layout = pb.FullZipLayout()
    layout.CopyFrom(page.layout.full_zip_layout)
    table = bytearray(fsst.symbol_table)
    table[4:8] = b"XXXX"  # break the magic
    layout.value_compression.fsst.symbol_table = bytes(table)
    with pytest.raises(CorruptFileError, match=NAME + ".*FSST"):
        _decode(data, page, pa.string(), layout=layout)


def test_damage_never_escapes_as_another_exception(binary_page: tuple[bytes, PageBytes]) -> None:
    """Every single-byte change in the page's buffers is read or refused cleanly."""
    data, page = binary_page
    rng = np.random.default_rng(0)
    regions = [(_data_at(page), len(page.buffers[0])), (_index_at(page), len(page.buffers[1]))]
    for start, size in regions:
        for at in rng.choice(size, min(size, 120), replace=False):
            for flip in (0x01, 0x80, 0xFF):
                forged = _patch(data, start + int(at), bytes([data[start + int(at)] ^ flip]))
                _outcome(lambda d=forged: _read_all(_decode(d, page, pa.binary())))


def _outcome(read: Callable[[], None]) -> None:
    with contextlib.suppress(LanceletError):
        read()


FULLZIP = {"lance-encoding:structural-encoding": "fullzip"}


def test_boolean_bytes_other_than_zero_or_one(tmp_path: Path) -> None:
    data, page = _page(tmp_path, [True, False, None, True], pa.bool_(), **FULLZIP)
    assert _decode(data, page, pa.bool_()).read(0, 4).values.to_pylist()[:2] == [True, False]
    # Rows are a control word and a byte each.
    forged = _patch(data, _data_at(page) + 1, b"\x02")
    with pytest.raises(CorruptFileError, match=NAME + ".*boolean value is stored as 2"):
        _read_all(_decode(forged, page, pa.bool_()))


def test_decimal_beyond_its_precision(tmp_path: Path) -> None:
    from decimal import Decimal

    arrow_type = pa.decimal128(4, 2)
    data, page = _page(tmp_path, [Decimal("1.25"), None, Decimal("-3.50")], arrow_type, **FULLZIP)
    forged = _patch(data, _data_at(page) + 1, struct.pack("<q", 10**6))
    with pytest.raises(CorruptFileError, match=NAME + ".*does not fit"):
        _read_all(_decode(forged, page, arrow_type))
    # The null row's placeholder is not a value: any bytes there are fine.
    forged = _patch(data, _data_at(page) + 17 + 1, struct.pack("<q", 10**6))
    assert _decode(forged, page, arrow_type).read(0, 3).values[0].as_py() == Decimal("1.25")
