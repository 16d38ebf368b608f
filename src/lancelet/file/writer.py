"""Writing Lance 2.0 files."""

from __future__ import annotations

import os
from types import TracebackType

import numpy as np
import pyarrow as pa
from google.protobuf import empty_pb2

from lancelet._proto import encodings_v2_0_pb2 as enc_pb
from lancelet._proto import file2_pb2, file_pb2
from lancelet.errors import LanceFileError, SchemaError, UnsupportedTypeError
from lancelet.file import container
from lancelet.file.codecs.general import BufferCompression, compression_from_metadata
from lancelet.file.schema import to_lance_fields
from lancelet.file.v2_0 import list as list_enc
from lancelet.file.v2_0 import packed_struct
from lancelet.file.v2_0.fields import concat_pages
from lancelet.file.v2_0.layout import FieldNode, Kind, build_layout, column_count, is_packed_struct
from lancelet.file.v2_0.leaf import encode_values
from lancelet.file.version import VERSIONS
from lancelet.io import LocalOutputFile, open_output

DEFAULT_DATA_CACHE_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_PAGE_BYTES = 32 * 1024 * 1024
SUPPORTED_VERSIONS = ("2.0", "stable")


class _PageSink:
    """Appends 64-byte aligned buffers to the output and records page metadata."""

    def __init__(self, out: LocalOutputFile, num_columns: int) -> None:
        self.out = out
        self.pages: list[list[file2_pb2.ColumnMetadata.Page]] = [[] for _ in range(num_columns)]

    def write_buffer(self, data: pa.Buffer | bytes) -> tuple[int, int]:
        pad = container.padding(self.out.position)
        if pad:
            self.out.write(b"\0" * pad)
        position = self.out.position
        self.out.write(data)
        return position, len(memoryview(data))

    def add_page(
        self, column: int, num_rows: int, buffers: list[pa.Buffer], enc: enc_pb.ArrayEncoding
    ) -> None:
        located = [self.write_buffer(b) for b in buffers]
        self.pages[column].append(
            file2_pb2.ColumnMetadata.Page(
                buffer_offsets=[p for p, _ in located],
                buffer_sizes=[s for _, s in located],
                length=num_rows,
                encoding=_direct(enc, container.ARRAY_ENCODING_URL),
                priority=0,
            )
        )


def _direct(message: enc_pb.ArrayEncoding | enc_pb.ColumnEncoding, url: str) -> file2_pb2.Encoding:
    packed = container.pack_any(message, url)
    return file2_pb2.Encoding(direct=file2_pb2.DirectEncoding(encoding=packed))


class _LeafStream:
    """Buffers one leaf column's arrays and cuts them into pages."""

    def __init__(
        self,
        column: int,
        cache_bytes: int,
        max_page_bytes: int,
        compression: BufferCompression | None = None,
    ) -> None:
        self.column = column
        self.cache_bytes = cache_bytes
        self.max_page_bytes = max_page_bytes
        self.compression = compression
        self.pending: list[pa.Array] = []
        self.pending_bytes = 0

    def append(self, arr: pa.Array, sink: _PageSink) -> None:
        if len(arr) == 0:
            return
        self.pending.append(arr)
        self.pending_bytes += arr.nbytes
        if self.pending_bytes >= self.cache_bytes:
            self.flush(sink)

    def flush(self, sink: _PageSink) -> None:
        if not self.pending:
            return
        arr = self.pending[0] if len(self.pending) == 1 else concat_pages(self.pending)
        self.pending, self.pending_bytes = [], 0
        pieces = max(1, -(-arr.nbytes // self.max_page_bytes))
        step = -(-len(arr) // pieces)
        for start in range(0, len(arr), step):
            self._write_page(arr.slice(start, step), sink)

    def _write_page(self, arr: pa.Array, sink: _PageSink) -> None:
        buffers: list[pa.Buffer] = []

        def add(buf: pa.Buffer) -> int:
            buffers.append(buf)
            return len(buffers) - 1

        sink.add_page(self.column, len(arr), buffers, encode_values(arr, add, self.compression))


class _ListStream:
    """Buffers list lengths and validity; the items go to the child's streams."""

    def __init__(self, column: int, cache_bytes: int) -> None:
        self.column = column
        self.cache_rows = max(1, cache_bytes // 8)
        self.lengths: list[np.ndarray] = []
        self.valid: list[np.ndarray] = []
        self.rows = 0

    def append(self, lengths: np.ndarray, valid: np.ndarray, sink: _PageSink) -> None:
        if len(lengths) == 0:
            return
        self.lengths.append(lengths)
        self.valid.append(valid)
        self.rows += len(lengths)
        if self.rows >= self.cache_rows:
            self.flush(sink)

    def flush(self, sink: _PageSink) -> None:
        if not self.rows:
            return
        lengths, valid = np.concatenate(self.lengths), np.concatenate(self.valid)
        self.lengths, self.valid, self.rows = [], [], 0
        buffers: list[pa.Buffer] = []

        def add(buf: pa.Buffer) -> int:
            buffers.append(buf)
            return len(buffers) - 1

        enc, _ = list_enc.encode_page(lengths, valid, add)
        sink.add_page(self.column, len(lengths), buffers, enc)


class _StructStream:
    """A struct's header column: pages of the right length and no buffers."""

    def __init__(self, column: int) -> None:
        self.column = column
        self.rows = 0

    def append(self, rows: int) -> None:
        self.rows += rows

    def flush(self, sink: _PageSink) -> None:
        if self.rows:
            enc = enc_pb.ArrayEncoding(struct=enc_pb.SimpleStruct())
            sink.add_page(self.column, self.rows, [], enc)
            self.rows = 0


_Stream = _LeafStream | _ListStream | _StructStream


def _make_streams(nodes: list[FieldNode], cache_bytes: int, max_page_bytes: int) -> list[_Stream]:
    streams: list[_Stream] = []
    for top in nodes:
        for node in top.walk():
            if node.kind is Kind.STRUCT:
                streams.append(_StructStream(node.column))
            elif node.kind is Kind.LIST:
                streams.append(_ListStream(node.column, cache_bytes))
            else:
                compression = compression_from_metadata(node.field.metadata)
                streams.append(_LeafStream(node.column, cache_bytes, max_page_bytes, compression))
    return streams


def _check_packed_types(nodes: list[FieldNode], path: str) -> None:
    """Refuse up front the packed structs pylance fails to write (it fails on the first rows)."""
    for top in nodes:
        for node in top.walk():
            if not is_packed_struct(node.field):
                continue
            problem = packed_struct.packed_type_problem(node.field.type)
            if problem is not None:
                raise UnsupportedTypeError(
                    f"{path}: packed struct column {node.field.name!r} cannot be written: {problem}"
                )


def _check_packed_nulls(node: FieldNode, arr: pa.Array, path: str) -> None:
    if packed_struct.has_nulls(arr):
        raise UnsupportedTypeError(
            f"{path}: packed struct column {node.field.name!r} contains nulls; Lance file "
            "format 2.0 packs only null-free fixed-width values"
        )


def _shred(
    node: FieldNode, arr: pa.Array, streams: list[_Stream], sink: _PageSink, path: str
) -> None:
    """Split one field's array into its columns' streams."""
    stream = streams[node.column]
    if isinstance(stream, _StructStream):
        if arr.null_count:
            raise UnsupportedTypeError(
                f"{path}: struct column {node.field.name!r} has null rows; Lance file "
                "format 2.0 cannot store nulls at the struct level (only inside its fields)"
            )
        stream.append(len(arr))
        for child, child_arr in zip(node.children, arr.flatten(), strict=True):
            _shred(child, child_arr, streams, sink, path)
    elif isinstance(stream, _ListStream):
        offsets = np.asarray(arr.offsets.to_numpy(), dtype=np.int64)
        valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        stream.append(np.diff(offsets), valid, sink)
        values = arr.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
        _shred(node.children[0], values, streams, sink, path)
    else:
        if node.kind is Kind.LEAF and pa.types.is_struct(arr.type):
            _check_packed_nulls(node, arr, path)
        stream.append(arr, sink)


class LanceFileWriter:
    """Writes a Lance file, format version 2.0.

    Data is buffered per column (``data_cache_bytes``, 8 MiB by default) and
    written as a page whenever the buffer fills, so a long column spans many
    pages; no page exceeds ``max_page_bytes`` unless a single value does.  The
    file appears under ``path`` only when :meth:`close` succeeds.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        schema: pa.Schema | None = None,
        *,
        data_cache_bytes: int | None = None,
        version: str | None = None,
        max_page_bytes: int | None = None,
    ) -> None:
        self.path = os.fspath(path)
        if version not in (None, *SUPPORTED_VERSIONS):
            raise LanceFileError(
                f"{self.path}: cannot write Lance file version {version!r}; lancelet writes 2.0"
            )
        self._cache_bytes = data_cache_bytes or DEFAULT_DATA_CACHE_BYTES
        self._max_page_bytes = max_page_bytes or DEFAULT_MAX_PAGE_BYTES
        self._schema_metadata: dict[str, str] = {}
        self._global_buffers: list[bytes] = []
        self._out: LocalOutputFile | None = None
        self._rows = 0
        self.closed = False
        self.size_bytes: int | None = None
        self.schema: pa.Schema | None = None
        if schema is not None:
            self._start(schema)

    def _start(self, schema: pa.Schema) -> None:
        self._fields = to_lance_fields(schema)  # rejects unsupported types up front
        self.schema = schema
        self._nodes = build_layout(schema)
        _check_packed_types(self._nodes, self.path)
        self._out = open_output(self.path)
        self._sink = _PageSink(self._out, column_count(self._nodes))
        self._streams = _make_streams(self._nodes, self._cache_bytes, self._max_page_bytes)

    def write_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        if self.closed:
            raise LanceFileError(f"{self.path}: write_batch after close")
        if self.schema is None:
            self._start(batch.schema)
        assert self.schema is not None
        self._check_schema(batch.schema)
        try:
            for rb in batch.to_batches() if isinstance(batch, pa.Table) else [batch]:
                for node, column in zip(self._nodes, rb.columns, strict=True):
                    _shred(node, column, self._streams, self._sink, self.path)
                self._rows += rb.num_rows
        except BaseException:
            self.abort()
            raise

    def _check_schema(self, got: pa.Schema) -> None:
        assert self.schema is not None
        expected = [(f.name, f.type) for f in self.schema]
        actual = [(f.name, f.type) for f in got]
        if expected != actual:
            self.abort()
            raise SchemaError(
                f"{self.path}: batch schema does not match the file's schema; "
                f"expected {self.schema.remove_metadata()}, got {got.remove_metadata()}"
            )

    def add_schema_metadata(self, key: str, value: str) -> None:
        self._schema_metadata[key] = value

    def add_global_buffer(self, data: bytes) -> int:
        """Store extra bytes in the file; returns their global buffer index (from 1)."""
        self._global_buffers.append(bytes(data))
        return len(self._global_buffers)

    def close(self) -> int | None:
        """Finish the file and publish it; returns the number of rows written."""
        if self.closed:
            return None
        if self._out is None:
            self.closed = True
            raise SchemaError(f"{self.path}: no schema was given and no batch was written")
        try:
            self._finish()
        except BaseException:
            self.abort()
            raise
        self.closed = True
        return self._rows

    def _finish(self) -> None:
        assert self._out is not None and self.schema is not None
        for stream in self._streams:
            stream.flush(self._sink)
        schema_meta = {k.decode(): v for k, v in (self.schema.metadata or {}).items()}
        schema_meta.update({k: v.encode() for k, v in self._schema_metadata.items()})
        descriptor = file_pb2.FileDescriptor(
            schema=file_pb2.Schema(fields=self._fields, metadata=schema_meta), length=self._rows
        )
        globals_ = [descriptor.SerializeToString(), *self._global_buffers]
        global_locs = [self._sink.write_buffer(g) for g in globals_]
        column_enc = _direct(
            enc_pb.ColumnEncoding(values=empty_pb2.Empty()), container.COLUMN_ENCODING_URL
        )
        metas = [
            file2_pb2.ColumnMetadata(encoding=column_enc, pages=pages).SerializeToString()
            for pages in self._sink.pages
        ]
        out = self._out
        column_meta_start = out.position
        meta_locs = []
        for meta in metas:
            meta_locs.append((out.position, len(meta)))
            out.write(meta)
        cmo_pos = out.position
        out.write(np.asarray(meta_locs, dtype="<u8").reshape(-1).tobytes())
        gbo_pos = out.position
        out.write(np.asarray(global_locs, dtype="<u8").reshape(-1).tobytes())
        major, minor = VERSIONS["2.0"].footer
        footer = container.Footer(
            column_meta_start, cmo_pos, gbo_pos, len(global_locs), len(metas), major, minor
        )
        out.write(container.encode_footer(footer))
        self.size_bytes = out.position
        out.commit()

    def abort(self) -> None:
        """Discard the file being written."""
        self.closed = True
        if self._out is not None:
            self._out.abort()

    def __enter__(self) -> LanceFileWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
