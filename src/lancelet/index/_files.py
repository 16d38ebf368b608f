"""Reading and writing the Lance files an index keeps in its directory, with every
failure reported as a :class:`CorruptIndexError` naming the file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from lancelet import io
from lancelet.errors import CorruptIndexError, LanceFileError
from lancelet.file import LanceFileReader, LanceFileWriter


@dataclass(frozen=True)
class IndexDetails:
    """What the manifest's IndexMetadata records for an index: ``index_details`` (a
    protobuf Any: ``type_url`` and ``value``) and ``index_version``."""

    type_url: str
    value: bytes
    index_version: int


def varint_field(number: int, value: int) -> bytes:
    """One protobuf varint field (wire type 0)."""
    out = bytearray()
    for item in ((number << 3), value):
        while True:
            byte = item & 0x7F
            item >>= 7
            if item:
                out.append(byte | 0x80)
            else:
                out.append(byte)
                break
    return bytes(out)


@dataclass(frozen=True)
class IndexFile:
    path: str
    table: pa.Table
    metadata: dict[str, str]
    reader: LanceFileReader

    def global_buffer(self, key: str) -> bytes | None:
        """The global buffer whose index the schema metadata ``key`` names, if any."""
        raw = self.metadata.get(key)
        if raw is None:
            return None
        if not raw.isdigit() or int(raw) < 1:
            raise CorruptIndexError(f"{self.path}: metadata {key}={raw!r} is no buffer index")
        try:
            return self.reader.read_global_buffer(int(raw))
        except LanceFileError as exc:
            raise CorruptIndexError(f"{self.path}: {exc}") from exc


def read_index_file(
    directory: io.Place, name: str, columns: Sequence[str] | None = None
) -> IndexFile:
    place = directory.join(name)
    path = place.path
    if not place.file_io.exists(path):
        raise CorruptIndexError(f"{path}: index file is missing")
    try:
        reader = LanceFileReader(path, file_io=place.file_io)
        table = reader.read_all(columns=list(columns) if columns else None).to_table()
        raw = reader.schema.metadata or {}
    except LanceFileError as exc:
        raise CorruptIndexError(f"{path}: index file does not read: {exc}") from exc
    except (pa.ArrowException, ValueError, OverflowError) as exc:
        raise CorruptIndexError(f"{path}: index file does not read: {exc}") from exc
    try:
        metadata = {k.decode(): v.decode() for k, v in raw.items()}
    except UnicodeDecodeError as exc:
        raise CorruptIndexError(f"{path}: schema metadata is not UTF-8") from exc
    return IndexFile(path, table, metadata, reader)


def expect_columns(file: IndexFile, expected: Mapping[str, pa.DataType | None]) -> None:
    """The file's columns must be exactly ``expected`` (a None type: any type)."""
    schema = file.table.schema
    if list(schema.names) != list(expected):
        raise CorruptIndexError(
            f"{file.path}: columns are {schema.names}, expected {list(expected)}"
        )
    for name, kind in expected.items():
        if kind is not None and not schema.field(name).type.equals(kind):
            raise CorruptIndexError(
                f"{file.path}: column {name!r} is {schema.field(name).type}, expected {kind}"
            )


def write_index_file(
    directory: io.Place,
    name: str,
    table: pa.Table,
    metadata: Mapping[str, str],
    buffers: Mapping[str, bytes],
    version: str,
) -> str:
    """Write ``table`` with schema ``metadata``; each of ``buffers`` becomes a global
    buffer whose index is stored under its key, as the reference records them."""
    place = directory.join(name)
    path = place.path
    writer = LanceFileWriter(path, table.schema, version=version, file_io=place.file_io)
    try:
        for key, data in buffers.items():
            writer.add_schema_metadata(key, str(writer.add_global_buffer(data)))
        for key, value in metadata.items():
            writer.add_schema_metadata(key, value)
        if table.num_rows:
            writer.write_batch(table)
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return path
