"""Manifest file bytes.

A manifest file is a sequence of length-prefixed protobuf messages followed by a
16-byte footer::

    [u32 len][IndexSection]?        (its offset is ``Manifest.index_section``)
    [u32 len][Manifest]
    u64 manifest_offset | u16 major | u16 minor | b"LANC"

All integers are little-endian.  The manifest offset points at the manifest's
length prefix.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace

from google.protobuf.message import DecodeError, Message

from lancelet._proto import table_pb2
from lancelet.errors import CorruptDatasetError, UnsupportedFeatureError
from lancelet.file.schema import parse_logical_type
from lancelet.file.v0_1.dictionaries import read_values, write_dictionaries
from lancelet.file.v0_1.pages import BytesSink
from lancelet.table import features
from lancelet.table.fragment_check import decode_fragments
from lancelet.table.index import IndexMetadata, check_indices
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema
from lancelet.table.validate import check_manifest, check_wire, tolerated_unknowns_only

MAGIC = b"LANC"
_FOOTER = struct.Struct("<QHH4s")
# The manifest container version pylance writes.
MAJOR, MINOR = 0, 2


def _length_prefixed(message: Message) -> bytes:
    body = message.SerializeToString()
    return struct.pack("<I", len(body)) + body


def check_encodable(manifest: Manifest, where: str) -> None:
    """Refuse a legacy (0.1) manifest whose dictionary columns' values are not known:
    pylance keeps them inside the manifest file, at offsets its schema records, so a
    manifest without them would have readers decode other bytes."""
    if manifest.data_storage_version != "0.1":
        return
    schema = manifest.schema
    names = [
        f.name
        for f in schema.fields
        if f.logical_type.startswith("dict:") and f.id not in schema.dictionaries
    ]
    if names:
        raise UnsupportedFeatureError(
            f"{where}: cannot commit to a legacy (0.1) dataset with dictionary columns {names} "
            "whose values are not known: the manifest keeps them"
        )


def encode_manifest(manifest: Manifest, where: str = "manifest") -> bytes:
    check_encodable(manifest, where)
    # Serialized protobuf fields may come in any order and concatenate into one message,
    # so the fragments, which successive versions mostly share, are appended as bytes
    # each Fragment encodes once, rather than copied into a new message every commit.
    pb = manifest.to_proto(with_fragments=False)
    sink = BytesSink()
    if manifest.data_storage_version == "0.1":
        # pylance keeps a legacy dataset's dictionary values first in the file.
        write_dictionaries(sink, pb.fields, manifest.schema.dictionaries, where)
    out = sink.data
    if manifest.indices:
        pb.index_section = len(out)
        section = table_pb2.IndexSection(indices=[i.to_proto() for i in manifest.indices])
        out += _length_prefixed(section)
    offset = len(out)
    body = b"".join([pb.SerializeToString(), *(f.manifest_field for f in manifest.fragments)])
    out += struct.pack("<I", len(body)) + body
    out += _FOOTER.pack(offset, MAJOR, MINOR, MAGIC)
    return bytes(out)


def _message_at(data: bytes, offset: int, message: Message, what: str, path: str) -> int:
    """Parse the length-prefixed message at ``offset``; its length."""
    if offset + 4 > len(data):
        raise CorruptDatasetError(f"{path}: {what} offset {offset} is past the end of the file")
    (length,) = struct.unpack_from("<I", data, offset)
    end = offset + 4 + length
    if end > len(data) - _FOOTER.size:
        raise CorruptDatasetError(f"{path}: {what} of {length} bytes runs past the footer")
    try:
        message.ParseFromString(data[offset + 4 : end])
    except DecodeError as exc:
        raise CorruptDatasetError(f"{path}: {what} does not parse: {exc}") from exc
    return int(length)


def _manifest_offset(data: bytes, path: str) -> int:
    if len(data) < _FOOTER.size:
        raise CorruptDatasetError(f"{path}: {len(data)} bytes is too short for a manifest")
    offset, _major, _minor, magic = _FOOTER.unpack_from(data, len(data) - _FOOTER.size)
    if magic != MAGIC:
        raise CorruptDatasetError(f"{path}: not a manifest (magic {magic!r}, expected {MAGIC!r})")
    return int(offset)


@dataclass(frozen=True)
class ManifestSummary:
    """What a commit needs of a version another writer committed: its number, the
    transaction file naming what it did, and the writer features it requires."""

    version: int
    transaction_file: str
    writer_feature_flags: int


def decode_summary(data: bytes, path: str) -> ManifestSummary:
    """A manifest's :class:`ManifestSummary`, without decoding or checking its
    fragments, schema and indices (a tenth of the work on a large manifest)."""
    pb = table_pb2.Manifest()
    _message_at(data, _manifest_offset(data, path), pb, "manifest", path)
    return ManifestSummary(pb.version, pb.transaction_file, pb.writer_feature_flags)


def decode_manifest(data: bytes, path: str) -> Manifest:
    offset = _manifest_offset(data, path)
    pb = table_pb2.Manifest()
    size = _message_at(data, offset, pb, "manifest", path)
    section = _index_section(data, pb, path)
    # A feature lancelet does not implement explains what would otherwise look like
    # damage (data files of another format, say), so it is named first.
    features.check_readable(pb.reader_feature_flags, path)
    check_wire(pb, size, path)
    checked = decode_fragments(pb, path)
    indices = tuple(IndexMetadata.from_proto(i, path) for i in section.indices)
    try:
        manifest = Manifest.from_proto(pb, indices, tuple(c.fragment for c in checked))
    except (KeyError, ValueError) as exc:
        raise CorruptDatasetError(f"{path}: manifest content is invalid: {exc}") from exc
    check_manifest(manifest, checked, path)
    check_manifest_indices(manifest, path)
    if manifest.data_storage_version == "0.1":
        manifest = replace(manifest, schema=_with_dictionaries(manifest, data, offset, path))
    return manifest


def _with_dictionaries(manifest: Manifest, data: bytes, end: int, path: str) -> LanceSchema:
    """A legacy manifest's schema with its dictionary values, which lie in the file
    before the manifest message (see :func:`encode_manifest`)."""
    schema = manifest.schema
    values = {}
    for f in schema.fields:
        if not f.logical_type.startswith("dict:"):
            continue
        if f.dictionary is None:
            continue  # values unknown: commits are refused (check_encodable)
        where = (f.dictionary.offset, f.dictionary.length)
        try:
            dtype = parse_logical_type(f.logical_type, f.name)
            values[f.id] = read_values(data, where, dtype.value_type, end)
        except ValueError as exc:
            raise CorruptDatasetError(
                f"{path}: the dictionary values of column {f.name!r}: {exc}"
            ) from exc
    return schema.with_dictionaries(values) if values else schema


def check_manifest_indices(manifest: Manifest, path: str) -> None:
    field_ids = frozenset(f.id for f in manifest.schema.fields)
    check_indices(manifest.indices, field_ids, manifest.version, manifest.max_fragment_id, path)


def _index_section(data: bytes, pb: table_pb2.Manifest, path: str) -> table_pb2.IndexSection:
    """The index section, if the manifest points at one, checked for damage its
    protobuf decoding hides (see :func:`.validate.check_wire`)."""
    section = table_pb2.IndexSection()
    if not pb.HasField("index_section"):
        return section
    size = _message_at(data, pb.index_section, section, "index section", path)
    if size != section.ByteSize():
        raise CorruptDatasetError(
            f"{path}: the index section's {size} bytes decode to a message of "
            f"{section.ByteSize()} bytes: a field occurs more than once"
        )
    for index in section.indices:
        where = f"index {index.name!r}"
        tolerated_unknowns_only(index, path, where)
        tolerated_unknowns_only(index.uuid, path, where)
        for file in index.files:
            tolerated_unknowns_only(file, path, where)
    return section
