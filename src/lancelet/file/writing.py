"""What every version's file writer shares: buffers laid out 64-byte aligned, page
and column metadata, global buffers (the schema in buffer 0), the offset tables
and the footer.  A version's writer only turns batches into pages."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
from google.protobuf import empty_pb2
from google.protobuf.message import Message

from lancelet._proto import encodings_v2_0_pb2 as enc_pb
from lancelet._proto import file2_pb2, file_pb2
from lancelet.errors import LanceFileError, SchemaError
from lancelet.file import container, parallel
from lancelet.file.extensions import has_extension, storage_batch, storage_schema
from lancelet.file.schema import renumbered, stored_type, to_lance_fields
from lancelet.file.version import FileVersion
from lancelet.io import FileIO, OutputFile

DEFAULT_DATA_CACHE_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_PAGE_BYTES = 32 * 1024 * 1024
_PAD = b"H"  # the byte pylance pads buffers with (72), so files can match byte for byte
PAD_BYTE = _PAD[0]


class PageSink:
    """Appends 64-byte aligned buffers to the output and records page metadata."""

    def __init__(self, out: OutputFile, num_columns: int, page_url: str) -> None:
        self.out = out
        self.page_url = page_url
        self.pages: list[list[file2_pb2.ColumnMetadata.Page]] = [[] for _ in range(num_columns)]

    def aligned_position(self) -> int:
        """Where the next buffer will start."""
        return self.out.position + container.padding(self.out.position)

    def write_buffer(self, data: pa.Buffer | bytes) -> tuple[int, int]:
        pad = container.padding(self.out.position)
        if pad:
            self.out.write(_PAD * pad)
        position = self.out.position
        self.out.write(data)
        return position, len(memoryview(data))

    def add_page(
        self,
        column: int,
        num_rows: int,
        buffers: list[pa.Buffer | bytes],
        encoding: Message,
        priority: int = 0,
    ) -> None:
        located = [self.write_buffer(b) for b in buffers]
        self.pages[column].append(
            file2_pb2.ColumnMetadata.Page(
                buffer_offsets=[p for p, _ in located],
                buffer_sizes=[s for _, s in located],
                length=num_rows,
                encoding=direct(encoding, self.page_url),
                priority=priority,
            )
        )


def direct(message: Message, url: str) -> file2_pb2.Encoding:
    packed = container.pack_any(message, url)
    return file2_pb2.Encoding(direct=file2_pb2.DirectEncoding(encoding=packed))


class FileWriterBase:
    """A file under construction: it appears under ``path`` only when :meth:`close`
    succeeds.  Subclasses turn batches into pages (``_start_columns``, ``_write``,
    ``_flush``)."""

    version: FileVersion
    page_url = container.ARRAY_ENCODING_URL

    def __init__(
        self,
        path: str | os.PathLike[str],
        schema: pa.Schema | None,
        version: FileVersion,
        data_cache_bytes: int | None,
        max_page_bytes: int | None,
        file_io: FileIO,
    ) -> None:
        self.path = os.fspath(path)
        self._io = file_io
        self.version = version
        self._cache_bytes = data_cache_bytes or DEFAULT_DATA_CACHE_BYTES
        self._max_page_bytes = max_page_bytes or DEFAULT_MAX_PAGE_BYTES
        self._schema_metadata: dict[str, str] = {}
        self._global_buffers: list[bytes] = []
        self._out: OutputFile | None = None
        self._rows = 0
        self.closed = False
        self._lock = threading.RLock()
        self.size_bytes: int | None = None
        self.schema: pa.Schema | None = None
        # The last batch schema found to match the file's, and whether it holds
        # extension columns: a compaction writes hundreds of batches of one schema.
        self._matched: pa.Schema | None = None
        self._extensions = True
        # The ids the file's schema records; None: positions (0, 1, ... in pre-order).
        self.field_ids: tuple[int, ...] | None = None
        if schema is not None:
            self.start(schema)

    # -- what a version provides ---------------------------------------------------------

    def _start_columns(self, schema: pa.Schema) -> int:
        """Prepare the column streams; returns the number of columns."""
        raise NotImplementedError

    def _write(self, batch: pa.RecordBatch) -> None:
        raise NotImplementedError

    def _flush(self) -> None:
        raise NotImplementedError

    # -- shared ------------------------------------------------------------------------------

    def start(self, schema: pa.Schema) -> None:
        # Rejects unsupported types up front.  A dataset's own file (field ids given)
        # holds columns whose key the dataset checked when it got them.
        self._fields = to_lance_fields(schema, check_key=self.field_ids is None)
        if self.field_ids is not None:
            self._fields = renumbered(self._fields, self.field_ids, self.path)
        self.schema = schema
        num_columns = self._start_columns(storage_schema(schema))
        self._out = self._io.open_output(self.path)
        self._sink = PageSink(self._out, num_columns, self.page_url)

    def write_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        # Threads may share a writer (as with pylance's): each batch goes in whole,
        # or one thread's rows would interleave with another's column by column.
        with self._lock:
            self._write_batch(batch)

    def _write_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        if self.closed:
            raise LanceFileError(f"{self.path}: write_batch after close")
        if self.schema is None:
            self.start(batch.schema)
        assert self.schema is not None
        if self._matched is None or not batch.schema.equals(self._matched):
            self._check_schema(batch.schema)
            self._matched = batch.schema
            self._extensions = any(has_extension(f.type) for f in batch.schema)
        try:
            for rb in batch.to_batches() if isinstance(batch, pa.Table) else [batch]:
                self._write(storage_batch(rb) if self._extensions else rb)
                self._rows += rb.num_rows
        except BaseException:
            self.abort()
            raise

    def write_columns(
        self,
        columns: Sequence[Callable[[], pa.Array]],
        num_rows: int,
        batch_rows: int,
        costs: Sequence[int] | None = None,
    ) -> None:
        """Write ``num_rows`` rows given column by column, as :meth:`write_batch` of
        batches of ``batch_rows`` rows would: ``columns[i]()`` makes the whole of the
        schema's column ``i``, on a worker thread.  The writer must
        be started and hold no rows yet.  ``costs`` (any unit) start the costliest
        columns first."""
        with self._lock:
            if self.closed or self.schema is None or self._rows:
                raise LanceFileError(
                    f"{self.path}: write_columns needs a started writer holding no rows"
                )
            if len(columns) != len(self.schema):
                raise SchemaError(
                    f"{self.path}: {len(columns)} columns given for a schema of {len(self.schema)}"
                )
            if num_rows <= 0 or batch_rows <= 0:
                raise ValueError("write_columns needs some rows and a positive batch size")
            try:
                self._write_columns(columns, num_rows, batch_rows, costs)
            except BaseException:
                self.abort()
                raise

    def _write_columns(
        self,
        columns: Sequence[Callable[[], pa.Array]],
        num_rows: int,
        batch_rows: int,
        costs: Sequence[int] | None,
    ) -> None:
        """Every column made (on the pool), then written as batches."""
        assert self.schema is not None
        arrays = parallel.map_columns(lambda make: make(), list(columns), costs)
        table = pa.Table.from_arrays(arrays, schema=self.schema)
        if table.num_rows != num_rows:
            raise SchemaError(f"{self.path}: columns of {table.num_rows} rows, not {num_rows}")
        for batch in table.to_batches(max_chunksize=batch_rows):
            self._write_batch(batch)

    def _check_schema(self, got: pa.Schema) -> None:
        assert self.schema is not None
        expected = [(f.name, stored_type(f.type)) for f in self.schema]
        actual = [(f.name, stored_type(self._stored_type(i, f))) for i, f in enumerate(got)]
        if expected != actual:
            self.abort()
            raise SchemaError(
                f"{self.path}: batch schema does not match the file's schema; "
                f"expected {self.schema.remove_metadata()}, got {got.remove_metadata()}"
            )

    def _settle(self) -> None:
        """Wait until pages handed to workers are in the file (a hook for writers that
        encode in the background)."""

    def tell(self) -> int:
        """Bytes of pages in the file so far; data still buffered is not counted."""
        if self._out is None:
            return 0
        self._settle()
        return self._out.position

    def _stored_type(self, index: int, field: pa.Field) -> pa.DataType:
        """The type the batch's column ``index`` is stored as (a version may convert
        some)."""
        return field.type

    def add_schema_metadata(self, key: str, value: str) -> None:
        self._schema_metadata[key] = value

    def add_global_buffer(self, data: bytes) -> int:
        """Store extra bytes in the file; returns their global buffer index (from 1)."""
        self._global_buffers.append(bytes(data))
        return len(self._global_buffers)

    def close(self) -> int | None:
        """Finish the file and publish it; returns the number of rows written."""
        with self._lock:
            return self._close()

    def _close(self) -> int | None:
        if self.closed:
            return None
        if self._out is None:
            self.closed = True
            raise SchemaError(
                f"{self.path}: no schema was given and no batch was written; "
                "Schema is unknown and file cannot be created"
            )
        try:
            self._flush()
            self._finish()
        except BaseException:
            self.abort()
            raise
        self.closed = True
        return self._rows

    def _finish(self) -> None:
        assert self._out is not None and self.schema is not None
        schema_meta = {k.decode(): v for k, v in (self.schema.metadata or {}).items()}
        schema_meta.update({k: v.encode() for k, v in self._schema_metadata.items()})
        descriptor = file_pb2.FileDescriptor(
            schema=file_pb2.Schema(fields=self._fields, metadata=schema_meta), length=self._rows
        )
        globals_ = [descriptor.SerializeToString(), *self._global_buffers]
        global_locs = [self._sink.write_buffer(g) for g in globals_]
        column_enc = direct(
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
        major, minor = self.version.footer
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
