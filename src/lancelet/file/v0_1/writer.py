"""Writing legacy (0.1) data files, byte for byte as pylance 14's legacy writer does
(but the writer named in the embedded schema).

Each :meth:`write_batch` is one batch (pylance's dataset writer makes each group of
``max_rows_per_group`` rows one).  At close, after the pages::

    page table | statistics (pages, page table) | dictionary values |
    embedded schema (u32 length + lance.table.Manifest) |
    metadata (u32 length + lance.file.Metadata) | footer (i64 metadata position, 0, 2, "LANC")

pylance's ``LanceFileWriter`` writes no legacy files; its datasets do, so this
writer is reached only through a dataset's writes (see ``LanceFileWriter.for_dataset``).
"""

from __future__ import annotations

import os
import struct
from collections.abc import MutableMapping

import pyarrow as pa

from lancelet._proto import file_pb2, table_pb2
from lancelet._version import __version__
from lancelet.errors import LanceFileError, LegacyTypeError, UnsupportedVersionError
from lancelet.file.extensions import storage_batch, storage_schema
from lancelet.file.schema import renumbered, to_lance_fields
from lancelet.file.v0_1.container import FOOTER, MAGIC
from lancelet.file.v0_1.dictionaries import FileDictionaries, check_value_type, write_values
from lancelet.file.v0_1.pages import PageTable, Sink, column_tree, write_column
from lancelet.file.v0_1.statistics import StatisticsCollector
from lancelet.file.version import FileVersion
from lancelet.file.writing import FileWriterBase
from lancelet.io import FileIO

_PREFIX = struct.Struct("<I")
# The footer version pylance 14 writes for legacy files.
MAJOR, MINOR = 0, 2


class LegacyFileWriter(FileWriterBase):
    """One legacy data file.  ``dictionaries`` (field id to values) are the dataset's
    dictionaries: batches' keys are written against them, and a dictionary column
    without one takes its first batch's (and adds it to the mapping)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        schema: pa.Schema | None,
        version: FileVersion,
        data_cache_bytes: int | None,
        max_page_bytes: int | None,
        file_io: FileIO,
        dictionaries: MutableMapping[int, pa.Array] | None = None,
    ) -> None:
        self._dictionaries = FileDictionaries({} if dictionaries is None else dictionaries)
        super().__init__(path, schema, version, data_cache_bytes, max_page_bytes, file_io)

    def start(self, schema: pa.Schema) -> None:
        check_types(schema)
        # A dataset's own file (field ids given): its key was checked by the dataset.
        self._fields = to_lance_fields(schema, check_key=self.field_ids is None)
        if self.field_ids is not None:
            self._fields = renumbered(self._fields, self.field_ids, self.path)
        self.schema = schema
        self._columns = column_tree(self._fields, storage_schema(schema))
        self._pages = PageTable()
        self._batch_offsets = [0]
        self._statistics = StatisticsCollector(self._columns)
        self._out = self._io.open_output(self.path)

    def _write_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        if self.closed:
            raise LanceFileError(f"{self.path}: write_batch after close")
        if self.schema is None:
            self.start(batch.schema)
        assert self.schema is not None and self._out is not None
        self._check_schema(batch.schema)
        try:
            arrays = storage_batch(_one_batch(batch)).columns
            number = len(self._batch_offsets) - 1
            for column, arr in zip(self._columns, arrays, strict=True):
                write_column(self._out, column, arr, number, self._pages, self._dictionaries.keys)
            self._statistics.add(arrays)
            self._batch_offsets.append(self._batch_offsets[-1] + batch.num_rows)
            self._rows += batch.num_rows
        except BaseException:
            self.abort()
            raise

    def _flush(self) -> None:
        """Batches go to the file as they come: nothing is buffered."""

    def add_global_buffer(self, data: bytes) -> int:
        raise UnsupportedVersionError(f"{self.path}: legacy (0.1) files have no global buffers")

    def _finish(self) -> None:
        out = self._out
        assert out is not None and self.schema is not None
        if len(self._batch_offsets) == 1:
            raise LanceFileError(f"{self.path}: a legacy file needs at least one batch")
        table_position = out.position
        out.write(self._pages.encode(min(f.id for f in self._fields)))
        statistics = self._statistics.write(out)
        fields = self._fields_with_dictionaries()
        meta = {k.decode(): v for k, v in (self.schema.metadata or {}).items()}
        meta.update({k: v.encode() for k, v in self._schema_metadata.items()})
        described = table_pb2.Manifest(
            fields=fields,
            schema_metadata=meta,
            version=1,
            writer_version=table_pb2.Manifest.WriterVersion(
                library="lancelet", version=__version__
            ),
            data_format=table_pb2.Manifest.DataStorageFormat(file_format="lance", version="0.1"),
        )
        manifest_position = _write_message(out, described)
        metadata = file_pb2.Metadata(
            manifest_position=manifest_position,
            batch_offsets=self._batch_offsets,
            page_table_position=table_position,
        )
        if statistics is not None:
            metadata.statistics.CopyFrom(statistics)
        metadata_position = _write_message(out, metadata)
        out.write(FOOTER.pack(metadata_position, MAJOR, MINOR, MAGIC))
        self.size_bytes = out.position
        out.commit()

    def _fields_with_dictionaries(self) -> list[file_pb2.Field]:
        """The schema's fields, each dictionary's values written (by field id, as
        pylance writes them) and located in its field."""
        assert self._out is not None
        fields = [file_pb2.Field() for _ in self._fields]
        for copy, f in zip(fields, self._fields, strict=True):
            copy.CopyFrom(f)
        for f in sorted(fields, key=lambda f: f.id):
            if f.encoding != file_pb2.DICTIONARY:
                continue
            values = self._dictionaries.values[f.id]
            f.dictionary.offset = write_values(self._out, values)
            f.dictionary.length = len(values)
        return fields


def _one_batch(batch: pa.RecordBatch | pa.Table) -> pa.RecordBatch:
    if isinstance(batch, pa.RecordBatch):
        return batch
    arrays = [
        pa.concat_arrays(c.chunks) if c.num_chunks else pa.array([], c.type) for c in batch.columns
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)


def _write_message(out: Sink, message: table_pb2.Manifest | file_pb2.Metadata) -> int:
    body = message.SerializeToString()
    position = out.position
    out.write(_PREFIX.pack(len(body)) + body)
    return position


def check_types(schema: pa.Schema) -> None:
    """Refuse what pylance's legacy writer refuses (or writes but cannot read back)."""
    for top in storage_schema(schema):
        _check_type(top.type, top.name)


def _check_type(dtype: pa.DataType, column: str) -> None:
    if pa.types.is_map(dtype):
        raise LegacyTypeError(f"column {column!r}: legacy (0.1) files store no map columns")
    if pa.types.is_struct(dtype):
        if dtype.num_fields == 0:
            raise LegacyTypeError(
                f"column {column!r}: pylance cannot read back empty structs from legacy (0.1) files"
            )
        for i in range(dtype.num_fields):
            _check_type(dtype.field(i).type, column)
    elif pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        _check_type(dtype.value_type, column)
    elif pa.types.is_fixed_size_list(dtype):
        leaf = dtype.value_type
        while pa.types.is_fixed_size_list(leaf):
            leaf = leaf.value_type
        if not (
            pa.types.is_primitive(leaf)
            or pa.types.is_decimal(leaf)
            or pa.types.is_fixed_size_binary(leaf)
        ):
            raise LegacyTypeError(
                f"column {column!r}: legacy (0.1) files store fixed-size lists of "
                f"fixed-width values only, not of {leaf}"
            )
    elif pa.types.is_dictionary(dtype):
        check_value_type(dtype, column)
