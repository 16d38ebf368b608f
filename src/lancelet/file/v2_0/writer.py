"""Writing Lance 2.0 files: one column per field, structs and lists included."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as enc_pb
from lancelet.errors import TypeVersionError, UnsupportedOptionError, UnsupportedTypeError
from lancelet.file.codecs.general import BufferCompression, compression_from_metadata
from lancelet.file.schema import map_column
from lancelet.file.v2_0 import list as list_enc
from lancelet.file.v2_0 import packed_struct
from lancelet.file.v2_0.fields import concat_pages
from lancelet.file.v2_0.layout import FieldNode, Kind, build_layout, column_count, is_packed_struct
from lancelet.file.v2_0.leaf import encode_values
from lancelet.file.v2_1.write.blocks import packed_field_problem
from lancelet.file.writing import FileWriterBase, PageSink


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

    def append(self, arr: pa.Array, sink: PageSink) -> None:
        if len(arr) == 0:
            return
        self.pending.append(arr)
        self.pending_bytes += arr.nbytes
        if self.pending_bytes >= self.cache_bytes:
            self.flush(sink)

    def flush(self, sink: PageSink) -> None:
        if not self.pending:
            return
        arr = self.pending[0] if len(self.pending) == 1 else concat_pages(self.pending)
        self.pending, self.pending_bytes = [], 0
        pieces = max(1, -(-arr.nbytes // self.max_page_bytes))
        step = -(-len(arr) // pieces)
        for start in range(0, len(arr), step):
            self._write_page(arr.slice(start, step), sink)

    def _write_page(self, arr: pa.Array, sink: PageSink) -> None:
        buffers: list[pa.Buffer] = []

        def add(buf: pa.Buffer) -> int:
            buffers.append(buf)
            return len(buffers) - 1

        sink.add_page(self.column, len(arr), buffers, encode_values(arr, add, self.compression))

    def empty_page(self, sink: PageSink) -> None:
        # What pylance writes for a leaf that received no values.
        all_null = enc_pb.Nullable(all_nulls=enc_pb.Nullable.AllNull())
        sink.add_page(self.column, 0, [], enc_pb.ArrayEncoding(nullable=all_null))


class _ListStream:
    """Buffers list lengths and validity; the items go to the child's streams."""

    def __init__(self, column: int, cache_bytes: int) -> None:
        self.column = column
        self.cache_rows = max(1, cache_bytes // 8)
        self.lengths: list[np.ndarray] = []
        self.valid: list[np.ndarray] = []
        self.rows = 0

    def append(self, lengths: np.ndarray, valid: np.ndarray, sink: PageSink) -> None:
        if len(lengths) == 0:
            return
        self.lengths.append(lengths)
        self.valid.append(valid)
        self.rows += len(lengths)
        if self.rows >= self.cache_rows:
            self.flush(sink)

    def flush(self, sink: PageSink) -> None:
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

    def empty_page(self, sink: PageSink) -> None:
        buffers: list[pa.Buffer] = []

        def add(buf: pa.Buffer) -> int:
            buffers.append(buf)
            return len(buffers) - 1

        enc, _ = list_enc.encode_page(np.zeros(0, np.int64), np.zeros(0, bool), add)
        sink.add_page(self.column, 0, buffers, enc)


class _StructStream:
    """A struct's header column: pages of the right length and no buffers."""

    def __init__(self, column: int) -> None:
        self.column = column
        self.rows = 0

    def append(self, rows: int) -> None:
        self.rows += rows

    def flush(self, sink: PageSink) -> None:
        if self.rows:
            enc = enc_pb.ArrayEncoding(struct=enc_pb.SimpleStruct())
            sink.add_page(self.column, self.rows, [], enc)
            self.rows = 0

    def empty_page(self, sink: PageSink) -> None:
        sink.add_page(self.column, 0, [], enc_pb.ArrayEncoding(struct=enc_pb.SimpleStruct()))


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


def _refuse_blobs(nodes: list[FieldNode], path: str) -> None:
    """pylance's 2.0 blob encoding (values out of line) is not written by lancelet;
    writing the values inline instead would make a file pylance cannot read."""
    for top in nodes:
        for node in top.walk():
            if b"lance-encoding:blob" in (node.field.metadata or {}):
                raise UnsupportedOptionError(
                    f"{path}: column {node.field.name!r}: blob columns (lance-encoding:blob) "
                    "are not written by lancelet in Lance file format 2.0; use 2.1"
                )


def _check_packed_types(nodes: list[FieldNode], path: str) -> None:
    """Refuse up front the packed structs pylance fails to write (it fails on the first rows)."""
    for top in nodes:
        for node in top.walk():
            if not is_packed_struct(node.field):
                continue
            problem = packed_struct.packed_type_problem(node.field.type)
            if problem is not None and _packs_from_2_2(node.field.type):
                # pylance: ValueError from its file writer, OSError from write_dataset
                raise TypeVersionError(
                    f"{path}: packed struct column {node.field.name!r} cannot be written: "
                    "packed structs with variable-width fields need Lance file format 2.2"
                )
            if problem is not None:
                raise UnsupportedTypeError(
                    f"{path}: packed struct column {node.field.name!r} cannot be written: {problem}"
                )


def _packs_from_2_2(dtype: pa.DataType) -> bool:
    """Whether format 2.2 packs this struct: its fields are fixed-width or strings."""
    fields = [dtype.field(i).type for i in range(dtype.num_fields)]
    return bool(fields) and all(packed_field_problem(t) is None for t in fields)


def _check_packed_nulls(node: FieldNode, arr: pa.Array, path: str) -> None:
    if packed_struct.has_nulls(arr):
        raise UnsupportedTypeError(
            f"{path}: packed struct column {node.field.name!r} contains nulls; Lance file "
            "format 2.0 packs only null-free fixed-width values"
        )


def _shred(
    node: FieldNode, arr: pa.Array, streams: list[_Stream], sink: PageSink, path: str
) -> None:
    """Split one field's array into its columns' streams."""
    stream = streams[node.column]
    if isinstance(stream, _StructStream):
        if arr.null_count:
            raise TypeVersionError(
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


class FileWriter20(FileWriterBase):
    """Writes a Lance file, format version 2.0.

    Data is buffered per column (``data_cache_bytes``, 8 MiB by default) and
    written as a page whenever the buffer fills, so a long column spans many
    pages; no page exceeds ``max_page_bytes`` unless a single value does.
    """

    def _start_columns(self, schema: pa.Schema) -> int:
        found = map_column(schema)
        if found is not None:
            raise TypeVersionError(
                f"{self.path}: column {found!r} is a map, which Lance file format 2.0 "
                "cannot store (maps need format 2.2 or later)"
            )
        self._nodes = build_layout(schema)
        _refuse_blobs(self._nodes, self.path)
        _check_packed_types(self._nodes, self.path)
        self._streams = _make_streams(self._nodes, self._cache_bytes, self._max_page_bytes)
        return column_count(self._nodes)

    def _write(self, batch: pa.RecordBatch) -> None:
        for node, column in zip(self._nodes, batch.columns, strict=True):
            _shred(node, column, self._streams, self._sink, self.path)

    def _flush(self) -> None:
        for stream in self._streams:
            stream.flush(self._sink)
        if self._rows:
            # A column under lists that never got an item still gets a page of no
            # rows, as pylance writes it: pylance's reader needs one below a struct.
            for stream in self._streams:
                if not self._sink.pages[stream.column]:
                    stream.empty_page(self._sink)
