"""Forged counts in 2.1 / 2.2 files never make the reader allocate more than the file
justifies: each is a ``CorruptFileError`` naming the file, the column and the page,
raised quickly by a reader whose address space is capped (:mod:`tests.file.v2_1.bounded`).

Every case starts from the checked-in 2.2 fuzz fixture (every layout pylance writes)
and sets one count to a size no file of this size could hold: a mini-block page's
item count (which makes the last chunk's count), run lengths and run-length headers,
a constant page's level counts under every level compression, dictionary item counts,
full-zip item counts, value lengths and index entries, compressed buffers' declared
sizes, fixed-size list dimensions.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from google.protobuf import any_pb2

from lancelet._proto import encodings_v2_1_pb2 as pb
from tests.file import surgery
from tests.file.v2_1.bounded import Case, Result, read_bounded
from tests.file.v2_1.page_bytes import miniblock_chunks
from tests.fuzz import structural_fixture as fx

HUGE = 2**40
# Leaf columns of the fixture, in file order.
LEAF = {
    "i": 0,
    "n": 1,
    "fs": 3,
    "d": 4,
    "r": 5,
    "nr": 6,
    "f": 7,
    "v": 9,
    "l": 10,
    "big": 13,
    "vec": 15,
    "cn": 19,
}
SECONDS = 5.0
RSS_GROWTH_KIB = 256 << 10


@dataclass
class Forge:
    """A fixture file being forged: its parts, and the bytes of its data region."""

    parts: surgery.FileParts
    data: bytearray

    def layout(self, column: str, page: int = 0) -> pb.PageLayout:
        wrapper = any_pb2.Any()
        wrapper.ParseFromString(self.parts.page(LEAF[column], page).encoding.direct.encoding)
        msg = pb.PageLayout()
        msg.ParseFromString(wrapper.value)
        return msg

    def set_layout(self, column: str, msg: pb.PageLayout, page: int = 0) -> None:
        wrapper = any_pb2.Any()
        wrapper.Pack(msg, type_url_prefix="/")
        self.parts.page(LEAF[column], page).encoding.direct.encoding = wrapper.SerializeToString()

    def buffer(self, column: str, index: int, page: int = 0) -> tuple[int, int]:
        meta = self.parts.page(LEAF[column], page)
        return int(meta.buffer_offsets[index]), int(meta.buffer_sizes[index])

    def chunk_buffer(self, column: str, chunk: int, index: int) -> int:
        """Where buffer ``index`` of mini-block chunk ``chunk`` (page 0) starts."""
        mini = self.layout(column).mini_block_layout
        meta_at, meta_size = self.buffer(column, 0)
        chunks_at, chunks_size = self.buffer(column, 1)
        found = miniblock_chunks(
            mini,
            bytes(self.data[meta_at : meta_at + meta_size]),
            bytes(self.data[chunks_at : chunks_at + chunks_size]),
        )
        return chunks_at + found[chunk].buffers[index][0]


Edit = Callable[[Forge], None]


def _mini(column: str, **values: int) -> Edit:
    def edit(f: Forge) -> None:
        msg = f.layout(column)
        for key, value in values.items():
            setattr(msg.mini_block_layout, key, value)
        f.set_layout(column, msg)

    return edit


def _constant_levels(which: str, encoding: pb.CompressiveEncoding, count: int, size: int) -> Edit:
    """Column ``cn`` (a constant page with raw definition levels): its ``which``
    levels compressed by ``encoding``, ``count`` of them in a buffer of ``size``."""

    def edit(f: Forge) -> None:
        msg = f.layout("cn")
        layout = msg.constant_layout
        getattr(layout, f"{which}_compression").CopyFrom(encoding)
        setattr(layout, f"num_{which}_values", count)
        f.set_layout("cn", msg)
        page = f.parts.page(LEAF["cn"])
        if which == "def":
            page.buffer_sizes[1] = size
        else:  # the (empty) repetition buffer takes the definition levels' first bytes
            page.buffer_sizes[0] = size
            page.buffer_offsets[1] += 64  # buffers start 64-byte aligned
            page.buffer_sizes[1] -= 64

    return edit


def _out_of_line(bits: int) -> pb.CompressiveEncoding:
    enc = pb.CompressiveEncoding()
    enc.out_of_line_bitpacking.uncompressed_bits_per_value = 16
    enc.out_of_line_bitpacking.values.flat.bits_per_value = bits
    return enc


def _inline() -> pb.CompressiveEncoding:
    enc = pb.CompressiveEncoding()
    enc.inline_bitpacking.uncompressed_bits_per_value = 16
    return enc


def _flat(bits: int) -> pb.CompressiveEncoding:
    enc = pb.CompressiveEncoding()
    enc.flat.bits_per_value = bits
    return enc


def _rle() -> pb.CompressiveEncoding:
    enc = pb.CompressiveEncoding()
    enc.rle.values.flat.bits_per_value = 16
    enc.rle.run_lengths.flat.bits_per_value = 8
    return enc


def _rle_widened(f: Forge) -> None:
    msg = f.layout("r")
    msg.mini_block_layout.value_compression.rle.run_lengths.flat.bits_per_value = 32
    f.set_layout("r", msg)


def _rle_level_header(f: Forge) -> None:
    at = f.chunk_buffer("nr", 0, 0)  # the definition levels: u64 size of the run values
    struct.pack_into("<Q", f.data, at, HUGE)


def _rle_level_run(f: Forge) -> None:
    at = f.chunk_buffer("nr", 0, 0)
    (values_size,) = struct.unpack_from("<Q", f.data, at)
    f.data[at + 8 + values_size] = 255  # the first run length


def _dictionary_of_constants(f: Forge) -> None:
    msg = f.layout("d")
    mini = msg.mini_block_layout
    mini.dictionary.general.values.Clear()
    mini.dictionary.general.values.constant.value = b"abcd"
    mini.num_dictionary_items = HUGE
    f.set_layout("d", msg)
    at, _ = f.buffer("d", 2)
    f.data[at : at + 5] = bytes(5)  # lz4: no bytes
    f.parts.page(LEAF["d"]).buffer_sizes[2] = 5


def _fullzip_counts(f: Forge) -> None:
    msg = f.layout("big")
    msg.full_zip_layout.num_items = 2**32 - 1  # u32 fields
    msg.full_zip_layout.num_visible_items = 2**32 - 1
    f.set_layout("big", msg)


def _fullzip_value_length(f: Forge) -> None:
    at, _ = f.buffer("big", 0)
    struct.pack_into("<I", f.data, at + 1, 2**31)  # row 0: control word, then its length


def _zstd_size(f: Forge) -> None:
    struct.pack_into("<Q", f.data, f.chunk_buffer("f", 0, 0), HUGE)


def _lz4_size(f: Forge) -> None:
    at, _ = f.buffer("d", 2)
    struct.pack_into("<I", f.data, at, 2**31 - 1)


def _fsl_dimension(items: int, depth: int) -> Edit:
    def edit(f: Forge) -> None:
        msg = f.layout("v")
        value = msg.mini_block_layout.value_compression
        flat = pb.CompressiveEncoding()
        flat.CopyFrom(value.fixed_size_list.values)
        node = value
        for level in range(depth):
            node.fixed_size_list.items_per_value = items
            node.fixed_size_list.has_validity = level == 0
            node = node.fixed_size_list.values
        node.CopyFrom(flat)
        f.set_layout("v", msg)

    return edit


def _fullzip_fsl(f: Forge) -> None:
    msg = f.layout("vec")
    layout = msg.full_zip_layout
    layout.value_compression.fixed_size_list.items_per_value = 2**20
    layout.bits_per_value = 8 * ((2**20 + 7) // 8 + 2**20)
    f.set_layout("vec", msg)


def _rep_index_entry(f: Forge) -> None:
    at, _ = f.buffer("l", 2)
    struct.pack_into("<Q", f.data, at, HUGE)


def _chunk_levels(f: Forge) -> None:
    at = f.chunk_buffer("l", 0, 0) - 8  # the chunk's header: u16 level count first
    struct.pack_into("<H", f.data, at, 0xFFFF)


def _page_length(f: Forge) -> None:
    f.parts.page(LEAF["i"]).length = HUGE


CASES: dict[str, tuple[str, Edit]] = {
    "last chunk count (no lists)": ("i", _mini("i", num_items=HUGE)),
    "last chunk count (lists)": ("l", _mini("l", num_items=HUGE)),
    "last chunk count (dictionary)": ("d", _mini("d", num_items=HUGE)),
    "run lengths widened": ("r", _rle_widened),
    "run-length level header": ("nr", _rle_level_header),
    "run-length level run": ("nr", _rle_level_run),
    "constant definition count (out of line, 0 bits)": (
        "cn",
        _constant_levels("def", _out_of_line(0), HUGE + 1, 2),
    ),
    "constant definition count (inline)": ("cn", _constant_levels("def", _inline(), HUGE, 2200)),
    "constant definition count (flat)": ("cn", _constant_levels("def", _flat(16), HUGE, 2200)),
    "constant definition count (run lengths)": ("cn", _constant_levels("def", _rle(), HUGE, 2200)),
    "constant repetition count (out of line, 0 bits)": (
        "cn",
        _constant_levels("rep", _out_of_line(0), HUGE + 1, 2),
    ),
    "constant repetition count (flat)": ("cn", _constant_levels("rep", _flat(16), HUGE, 2)),
    "dictionary items": ("d", _mini("d", num_dictionary_items=HUGE)),
    "dictionary of constants": ("d", _dictionary_of_constants),
    "full-zip item counts": ("big", _fullzip_counts),
    "full-zip value length": ("big", _fullzip_value_length),
    "zstd size prefix": ("f", _zstd_size),
    "lz4 size prefix": ("d", _lz4_size),
    "fixed-size list dimension": ("v", _fsl_dimension(2**20, 1)),
    "nested fixed-size list dimensions": ("v", _fsl_dimension(2**20, 4)),
    "full-zip fixed-size list dimension": ("vec", _fullzip_fsl),
    "repetition index entry": ("l", _rep_index_entry),
    "chunk level count": ("l", _chunk_levels),
    "page length": ("i", _page_length),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Result]]:
    source = (fx.folder("2.2") / fx.DATA).read_bytes()
    folder = tmp_path_factory.mktemp("forged")
    cases = []
    for number, (name, (column, edit)) in enumerate(CASES.items()):
        parts = surgery.parse(source)
        forge = Forge(parts, bytearray(parts.prefix))
        edit(forge)
        parts.prefix = bytes(forge.data)
        path = folder / f"case{number}.lance"
        path.write_bytes(surgery.emit(parts))
        cases.append(Case(name, path, [column]))
    found = read_bounded(cases)
    return {c.name: (c.path, found[c.name]) for c in cases}


@pytest.mark.parametrize("name", list(CASES))
def test_forged_count_is_refused_within_bounds(
    results: dict[str, tuple[Path, Result]], name: str
) -> None:
    path, result = results[name]
    column = CASES[name][0]
    assert result.kind == "CorruptFileError", (result.kind, result.message)
    assert str(path) in result.message, result.message
    if name != "page length":  # refused before any page is read
        assert f"column '{column}" in result.message, result.message
        assert "page 0" in result.message, result.message
    assert result.seconds < SECONDS, result
    assert result.rss_growth_kib < RSS_GROWTH_KIB, result
    if name == "nested fixed-size list dimensions":  # not refused by an overflowed product
        assert "fixed-size list" in result.message, result.message
