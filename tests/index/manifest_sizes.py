"""pylance 14 records each index file's size in the manifest (IndexMetadata field 10,
repeated ``{1: path, 2: size}``; lancelet's protos predate it) and reads the files by
those sizes.  Tests that swap an index's files rewrite the latest manifest with the
new sizes, as a commit of lancelet-written index files has to."""

from __future__ import annotations

import struct
import uuid
from pathlib import Path

from lancelet._proto import table_pb2

_FILES_FIELD = 10


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _file_entry(path: str, size: int) -> bytes:
    name = path.encode()
    return _field(
        _FILES_FIELD,
        _varint(1 << 3 | 2) + _varint(len(name)) + name + _varint(2 << 3) + _varint(size),
    )


def _latest(dataset: Path) -> Path:
    manifests = list((dataset / "_versions").glob("*.manifest"))
    # pylance 14 names manifests u64::MAX - version: the smallest name is the latest.
    return (
        min(manifests, key=lambda p: int(p.stem))
        if all(int(p.stem) > 1 << 62 for p in manifests)
        else max(manifests, key=lambda p: int(p.stem))
    )


def record_index_file_sizes(dataset: Path) -> None:
    path = _latest(dataset)
    data = path.read_bytes()
    (offset,) = struct.unpack_from("<Q", data, len(data) - 16)
    manifest = table_pb2.Manifest()
    (length,) = struct.unpack_from("<I", data, offset)
    manifest.ParseFromString(data[offset + 4 : offset + 4 + length])
    start = manifest.index_section
    (length,) = struct.unpack_from("<I", data, start)
    section = table_pb2.IndexSection()
    section.ParseFromString(data[start + 4 : start + 4 + length])
    bodies = []
    for index in section.indices:
        index.DiscardUnknownFields()
        folder = dataset / "_indices" / str(_uuid(index.uuid.uuid))
        entries = b"".join(_file_entry(f.name, f.stat().st_size) for f in sorted(folder.iterdir()))
        bodies.append(_field(1, index.SerializeToString() + entries))
    section_bytes = b"".join(bodies)
    # Everything before the manifest stays where it is (an inline transaction follows
    # the old section, at an offset the manifest records); the new section and the
    # manifest pointing at it come after.
    manifest.index_section = offset
    body = manifest.SerializeToString()
    new_offset = offset + 4 + len(section_bytes)
    out = data[:offset] + struct.pack("<I", len(section_bytes)) + section_bytes
    out += struct.pack("<I", len(body)) + body + struct.pack("<Q", new_offset) + data[-8:]
    path.write_bytes(out)


def _uuid(raw: bytes) -> str:
    return str(uuid.UUID(bytes=raw))
