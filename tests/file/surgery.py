"""Take a Lance 2.0 file apart into protobuf messages and put it back together.

Tests forge files from a good one: change a page's encoding, a column's metadata,
the schema in the file descriptor, or the footer, and re-emit the file with every
offset table consistent, so the reader sees exactly the one hostile value.  The data
region (page buffers and the original global buffers) is kept byte for byte; a
changed descriptor is appended after it as the new global buffer 0 (an unchanged one
stays where it was, so no byte of the data region is left unclaimed).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from google.protobuf import any_pb2

from lancelet._proto import encodings_v2_0_pb2 as enc_pb
from lancelet._proto import file2_pb2, file_pb2

FOOTER = struct.Struct("<QQQIIHH4s")
ALIGN = 64


@dataclass
class FileParts:
    """A file's data region, column metadata, global buffer locations and footer."""

    prefix: bytes
    columns: list[file2_pb2.ColumnMetadata]
    globals: list[tuple[int, int]]
    descriptor: file_pb2.FileDescriptor
    version: tuple[int, int]
    footer_edits: dict[int, int] = field(default_factory=dict)

    def page(self, column: int, page: int = 0) -> file2_pb2.ColumnMetadata.Page:
        return self.columns[column].pages[page]

    def encoding(self, column: int, page: int = 0) -> enc_pb.ArrayEncoding:
        return unpack_encoding(self.page(column, page))

    def set_encoding(self, column: int, page: int, encoding: enc_pb.ArrayEncoding) -> None:
        pack_encoding(self.page(column, page), encoding)

    def field(self, name: str) -> file_pb2.Field:
        """The descriptor's schema field named ``name`` (the first, in pre-order)."""
        return next(f for f in self.descriptor.schema.fields if f.name == name)


def parse(data: bytes) -> FileParts:
    cm_start, cmo, gbo, n_gb, n_col, major, minor, _magic = FOOTER.unpack(data[-FOOTER.size :])
    columns = []
    for c in range(n_col):
        pos, size = struct.unpack_from("<QQ", data, cmo + 16 * c)
        meta = file2_pb2.ColumnMetadata()
        meta.ParseFromString(data[pos : pos + size])
        columns.append(meta)
    globals_ = [struct.unpack_from("<QQ", data, gbo + 16 * g) for g in range(n_gb)]
    descriptor = file_pb2.FileDescriptor()
    pos, size = globals_[0]
    descriptor.ParseFromString(data[pos : pos + size])
    return FileParts(data[:cm_start], columns, list(globals_), descriptor, (major, minor))


def emit(parts: FileParts) -> bytes:
    """The file again, the descriptor appended anew if it was changed."""
    out = bytearray(parts.prefix)
    globals_ = list(parts.globals)
    pos, size = parts.globals[0]
    if parts.descriptor.SerializeToString() != parts.prefix[pos : pos + size]:
        out += b"\0" * (-len(out) % ALIGN)
        raw = parts.descriptor.SerializeToString()
        globals_[0] = (len(out), len(raw))
        out += raw
    cm_start = len(out)
    table = b""
    for meta in parts.columns:
        raw = meta.SerializeToString()
        table += struct.pack("<QQ", len(out), len(raw))
        out += raw
    cmo = len(out)
    out += table
    gbo = len(out)
    for pos, size in globals_:
        out += struct.pack("<QQ", pos, size)
    fields: list[object] = [cm_start, cmo, gbo, len(globals_), len(parts.columns)]
    fields += [*parts.version, b"LANC"]
    for index, value in parts.footer_edits.items():
        fields[index] = value
    out += FOOTER.pack(*fields)
    return bytes(out)


def unpack_encoding(page: file2_pb2.ColumnMetadata.Page) -> enc_pb.ArrayEncoding:
    wrapper = any_pb2.Any()
    wrapper.ParseFromString(page.encoding.direct.encoding)
    msg = enc_pb.ArrayEncoding()
    msg.ParseFromString(wrapper.value)
    return msg


def pack_encoding(page: file2_pb2.ColumnMetadata.Page, encoding: enc_pb.ArrayEncoding) -> None:
    wrapper = any_pb2.Any()
    wrapper.Pack(encoding, type_url_prefix="/")
    page.encoding.direct.encoding = wrapper.SerializeToString()
