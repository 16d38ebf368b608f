"""The Lance file container: footer, offset tables, column metadata, global buffers.

The container knows nothing about types; it locates byte ranges.  Layout, from
the end of the file backwards::

    ... data buffers | global buffers | column metadata | CMO table | GBO table | footer

The footer is ``u64 column_meta_start, u64 cmo_table, u64 gbo_table,
u32 num_global_buffers, u32 num_columns, u16 major, u16 minor, b"LANC"``
(little endian).  Both tables are ``(u64 position, u64 size)`` pairs.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message

from lancelet._proto import encodings_v2_0_pb2 as enc_pb
from lancelet._proto import file2_pb2
from lancelet.errors import CorruptFileError, UnsupportedVersionError

MAGIC = b"LANC"
FOOTER = struct.Struct("<QQQIIHH4s")
FOOTER_SIZE = FOOTER.size  # 40
ALIGNMENT = 64

# (major, minor) pairs written in the footer.  2.0 files carry the legacy pair (0, 3).
V2_0_WRITTEN = (0, 3)
V2_0_ACCEPTED = {(0, 3), (2, 0)}
NAMED_VERSIONS = {(0, 1): "0.1", (0, 2): "0.1", (2, 1): "2.1", (2, 2): "2.2"}

ARRAY_ENCODING_URL = "/lance.encodings.ArrayEncoding"
COLUMN_ENCODING_URL = "/lance.encodings.ColumnEncoding"


class RangeSource(Protocol):
    path: str
    size: int

    def read(self, offset: int, length: int) -> pa.Buffer: ...


@dataclass(frozen=True)
class Footer:
    column_meta_start: int
    cmo_table_pos: int
    gbo_table_pos: int
    num_global_buffers: int
    num_columns: int
    major: int
    minor: int

    @property
    def version(self) -> str:
        return "2.0" if (self.major, self.minor) in V2_0_ACCEPTED else f"{self.major}.{self.minor}"


@dataclass(frozen=True)
class Page:
    """One disk page of a column: where its buffers are and how they are encoded."""

    buffer_offsets: tuple[int, ...]
    buffer_sizes: tuple[int, ...]
    num_rows: int
    encoding: enc_pb.ArrayEncoding


@dataclass(frozen=True)
class ColumnInfo:
    pages: tuple[Page, ...]
    buffer_offsets: tuple[int, ...]
    buffer_sizes: tuple[int, ...]

    @property
    def num_rows(self) -> int:
        return sum(p.num_rows for p in self.pages)


def check_range(source: RangeSource, offset: int, length: int, what: str) -> None:
    """Refuse a (offset, length) pair that leaves the file, before anything is read."""
    if offset < 0 or length < 0 or offset + length > source.size:
        raise CorruptFileError(
            f"{source.path}: {what} at offset {offset} with length {length} "
            f"runs past the end of the file ({source.size} bytes)"
        )


def read_footer(source: RangeSource) -> Footer:
    if source.size < FOOTER_SIZE:
        raise CorruptFileError(
            f"{source.path}: file is {source.size} bytes, too short to hold a Lance footer"
        )
    raw = source.read(source.size - FOOTER_SIZE, FOOTER_SIZE).to_pybytes()
    cm_start, cmo, gbo, n_gb, n_col, major, minor, magic = FOOTER.unpack(raw)
    if magic != MAGIC:
        raise CorruptFileError(f"{source.path}: bad magic {magic!r}, not a Lance file")
    if (major, minor) not in V2_0_ACCEPTED:
        name = NAMED_VERSIONS.get((major, minor), f"{major}.{minor}")
        raise UnsupportedVersionError(
            f"{source.path}: Lance file version {name} is not supported (this reader reads 2.0)"
        )
    footer = Footer(cm_start, cmo, gbo, n_gb, n_col, major, minor)
    tail = source.size - FOOTER_SIZE
    if not cm_start <= cmo <= tail or not gbo <= tail:
        raise CorruptFileError(
            f"{source.path}: footer offsets ({cm_start}, {cmo}, {gbo}) point outside the file"
        )
    check_range(source, cmo, 16 * n_col, "column metadata offset table")
    check_range(source, gbo, 16 * n_gb, "global buffer offset table")
    return footer


def _offset_table(source: RangeSource, pos: int, count: int) -> np.ndarray:
    raw = source.read(pos, 16 * count)
    return np.frombuffer(raw, dtype="<u8").reshape(count, 2)


def read_global_buffer(source: RangeSource, footer: Footer, index: int) -> pa.Buffer:
    if not 0 <= index < footer.num_global_buffers:
        raise CorruptFileError(
            f"{source.path}: global buffer {index} requested but the file has "
            f"{footer.num_global_buffers}"
        )
    pos, size = (
        int(v)
        for v in _offset_table(source, footer.gbo_table_pos, footer.num_global_buffers)[index]
    )
    check_range(source, pos, size, f"global buffer {index}")
    return source.read(pos, size)


def parse_message(message: Message, data: bytes | pa.Buffer, what: str, path: str) -> None:
    try:
        message.ParseFromString(data if isinstance(data, bytes) else data.to_pybytes())
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise CorruptFileError(f"{path}: {what} is not a valid protobuf message: {exc}") from exc


def _unpack_any(
    source: RangeSource, encoding: file2_pb2.Encoding, url: str, target: Message, what: str
) -> None:
    kind = encoding.WhichOneof("location")
    if kind == "direct":
        raw = encoding.direct.encoding
    elif kind == "indirect":
        loc = encoding.indirect
        check_range(source, loc.buffer_location, loc.buffer_length, what)
        raw = source.read(loc.buffer_location, loc.buffer_length).to_pybytes()
    else:
        raise CorruptFileError(f"{source.path}: {what} has no encoding")
    wrapper = any_pb2.Any()
    parse_message(wrapper, raw, what, source.path)
    if wrapper.type_url.rsplit("/", 1)[-1] != url.rsplit("/", 1)[-1]:
        raise CorruptFileError(
            f"{source.path}: {what} holds {wrapper.type_url!r}, expected {url!r}"
        )
    parse_message(target, wrapper.value, what, source.path)


def read_columns(source: RangeSource, footer: Footer) -> list[ColumnInfo]:
    """Parse every column's metadata and check that all its buffers lie inside the file."""
    table = _offset_table(source, footer.cmo_table_pos, footer.num_columns)
    columns = []
    for index, (pos, size) in enumerate(table.tolist()):
        what = f"column {index} metadata"
        check_range(source, pos, size, what)
        meta = file2_pb2.ColumnMetadata()
        parse_message(meta, source.read(pos, size), what, source.path)
        columns.append(_column_info(source, meta, index))
    return columns


def _column_info(source: RangeSource, meta: file2_pb2.ColumnMetadata, index: int) -> ColumnInfo:
    pages = []
    for page_no, page in enumerate(meta.pages):
        what = f"column {index} page {page_no}"
        if len(page.buffer_offsets) != len(page.buffer_sizes):
            raise CorruptFileError(
                f"{source.path}: {what} lists mismatched buffer offsets and sizes"
            )
        for off, size in zip(page.buffer_offsets, page.buffer_sizes, strict=True):
            check_range(source, off, size, f"{what} buffer")
        encoding = enc_pb.ArrayEncoding()
        _unpack_any(source, page.encoding, ARRAY_ENCODING_URL, encoding, f"{what} encoding")
        pages.append(
            Page(tuple(page.buffer_offsets), tuple(page.buffer_sizes), page.length, encoding)
        )
    if len(meta.buffer_offsets) != len(meta.buffer_sizes):
        raise CorruptFileError(
            f"{source.path}: column {index} lists mismatched buffer offsets and sizes"
        )
    for off, size in zip(meta.buffer_offsets, meta.buffer_sizes, strict=True):
        check_range(source, off, size, f"column {index} buffer")
    return ColumnInfo(tuple(pages), tuple(meta.buffer_offsets), tuple(meta.buffer_sizes))


def pack_any(message: Message, url: str) -> bytes:
    wrapper = any_pb2.Any(type_url=url, value=message.SerializeToString())
    return wrapper.SerializeToString()


def encode_footer(footer: Footer) -> bytes:
    return FOOTER.pack(
        footer.column_meta_start,
        footer.cmo_table_pos,
        footer.gbo_table_pos,
        footer.num_global_buffers,
        footer.num_columns,
        footer.major,
        footer.minor,
        MAGIC,
    )


def padding(position: int) -> int:
    """Bytes needed to bring ``position`` up to the next 64-byte boundary."""
    return -position % ALIGNMENT
