"""The legacy container: footer, metadata, the embedded schema and the page table.

Every position and length is checked against the file (and against the order in
which the one writer lays sections out) before anything is read, so a damaged
footer or table is a :class:`CorruptFileError`, never a read past the end or an
allocation the file's size does not justify.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from google.protobuf.message import Message

from lancelet._proto import file_pb2, table_pb2
from lancelet.errors import CorruptFileError, UnsupportedEncodingError
from lancelet.file import retired
from lancelet.file.container import RangeSource, check_range, parse_message, strict_message

MAGIC = b"LANC"
FOOTER = struct.Struct("<qHH4s")  # metadata position, major, minor, magic
_PREFIX = struct.Struct("<I")  # the length in front of each protobuf message


def footer_pair(source: RangeSource) -> tuple[int, int] | None:
    """The (major, minor) pair of a Lance footer; None when the magic is missing."""
    if source.size < 8:
        return None
    major, minor, magic = struct.unpack("<HH4s", source.read(source.size - 8, 8).to_pybytes())
    return (major, minor) if magic == MAGIC else None


@dataclass(frozen=True)
class Layout:
    """What the container says about a legacy file."""

    major: int
    minor: int
    batch_offsets: np.ndarray  # int64, first row of each batch and the total
    fields: tuple[file_pb2.Field, ...]  # the embedded schema, pre-order
    schema_metadata: dict[str, bytes]
    first_field_id: int  # the field id of the page table's first row
    pages: np.ndarray  # int64 (field ids, batches, 2): position and length
    data_end: int  # the page table's position: every data page lies before it
    manifest_position: int  # dictionaries lie before it

    @property
    def num_batches(self) -> int:
        return len(self.batch_offsets) - 1

    @property
    def num_rows(self) -> int:
        return int(self.batch_offsets[-1])


def _message(
    source: RangeSource, pos: int, end: int, message: Message, what: str, *, strict: bool
) -> int:
    """Parse the length-prefixed ``message`` at ``pos``, which must end by ``end``;
    where it ends."""
    if pos < 0 or pos + _PREFIX.size > end:
        raise CorruptFileError(f"{source.path}: {what} position {pos} is outside 0..{end}")
    length = int(_PREFIX.unpack(source.read(pos, _PREFIX.size).to_pybytes())[0])
    stop = pos + _PREFIX.size + length
    if stop > end:
        raise CorruptFileError(
            f"{source.path}: {what} at {pos} claims {length} bytes, past byte {end}"
        )
    data = source.read(pos + _PREFIX.size, length)
    parse_message(message, data, what, source.path, strict=strict)
    return stop


def read_layout(source: RangeSource) -> Layout:
    path = source.path
    if source.size < FOOTER.size:
        raise CorruptFileError(f"{path}: {source.size} bytes is too short for a Lance footer")
    tail = source.size - FOOTER.size
    meta_pos, major, minor, _ = FOOTER.unpack(source.read(tail, FOOTER.size).to_pybytes())
    meta = file_pb2.Metadata()
    _message(source, meta_pos, tail, meta, "file metadata", strict=False)
    for stats_field in meta.statistics.schema:
        retired.drop_storage_class(stats_field)
    strict_message(meta, "file metadata", path)
    offsets = _batch_offsets(path, meta)
    if meta.manifest_position == 0:
        raise UnsupportedEncodingError(
            f"{path}: the legacy file does not describe its schema (no manifest in the file)"
        )
    manifest = table_pb2.Manifest()
    # The table manifest grows fields between releases; only the schema is used here.
    _message(source, meta.manifest_position, meta_pos, manifest, "embedded schema", strict=False)
    fields = tuple(manifest.fields)
    first, last = _field_id_span(path, fields)
    num_batches = len(offsets) - 1
    table_pos = meta.page_table_position
    table_len = 16 * (last - first + 1) * num_batches
    check_range(source, table_pos, table_len, "page table")
    if table_pos + table_len > meta.manifest_position:
        raise CorruptFileError(
            f"{path}: the page table (bytes {table_pos}..{table_pos + table_len}) runs into "
            f"the embedded schema at {meta.manifest_position}"
        )
    raw = np.frombuffer(source.read(table_pos, table_len), dtype="<i8")
    pages = raw.reshape(last - first + 1, num_batches, 2).astype(np.int64)
    # The writer records page lengths as 32-bit counts; positions lie in the file.
    bad = (pages < 0) | (pages[:, :, 1:] >= 2**31) | (pages[:, :, :1] > source.size)
    if np.any(bad):
        field_row, batch = (int(v) for v in np.argwhere(bad)[0][:2])
        names = {f.id: f.name for f in fields}
        name = names.get(first + field_row, f"field id {first + field_row}")
        raise CorruptFileError(
            f"{path}: the page table gives column {name!r} page {batch} position "
            f"{pages[field_row, batch, 0]} and length {pages[field_row, batch, 1]}"
        )
    return Layout(
        major=major,
        minor=minor,
        batch_offsets=offsets,
        fields=fields,
        schema_metadata=dict(manifest.schema_metadata),
        first_field_id=first,
        pages=pages,
        data_end=table_pos,
        manifest_position=meta.manifest_position,
    )


def _batch_offsets(path: str, meta: file_pb2.Metadata) -> np.ndarray:
    offsets = np.asarray(meta.batch_offsets, dtype=np.int64)
    if len(offsets) == 0:
        raise CorruptFileError(f"{path}: the file metadata lists no batches")
    if offsets[0] != 0 or np.any(np.diff(offsets) < 0):
        raise CorruptFileError(
            f"{path}: the batch offsets {offsets[:8].tolist()}... do not rise from 0"
        )
    return offsets


def _field_id_span(path: str, fields: tuple[file_pb2.Field, ...]) -> tuple[int, int]:
    """The smallest and largest field id of the schema (the page table's extent)."""
    if not fields:
        raise CorruptFileError(f"{path}: the embedded schema has no fields")
    ids = np.fromiter((f.id for f in fields), dtype=np.int64, count=len(fields))
    if ids.min() < 0 or len(np.unique(ids)) != len(ids):
        raise CorruptFileError(f"{path}: the embedded schema's field ids are not distinct")
    return int(ids.min()), int(ids.max())


def file_view(source: RangeSource) -> np.ndarray:
    """The whole file as a read-only byte array (a view of the memory map, no copy)."""
    whole: pa.Buffer = source.read(0, source.size)
    return np.frombuffer(whole, dtype=np.uint8)
