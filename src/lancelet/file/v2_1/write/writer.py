"""Writing Lance 2.1 and 2.2 files: one column per leaf, structure in the levels.

Each leaf column buffers its shredded batches (``data_cache_bytes`` of values,
8 MiB by default) and encodes them as one or more pages when the buffer fills or
the file closes; a page holds whole rows and at most about ``max_page_bytes`` of
values.  Page priority is the row number of the page's first row, as in the
reference.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import cache

import pyarrow as pa

from lancelet.errors import SchemaError, UnsupportedFeatureError
from lancelet.file import parallel
from lancelet.file.blob_v2 import DESCRIPTOR_TYPE, is_descriptor_field
from lancelet.file.extensions import has_extension
from lancelet.file.v2_1.write import blob
from lancelet.file.v2_1.write import page as page_enc
from lancelet.file.v2_1.write import params as field_params
from lancelet.file.v2_1.write.blob_v2 import inline_descriptors
from lancelet.file.v2_1.write.shred import LeafBatch, LeafPath, leaf_paths, shred
from lancelet.file.writing import FileWriterBase, PageSink

PAGE_LAYOUT_URL = "/lance.encodings21.PageLayout"


def _options(minor: int) -> page_enc.Options:
    newer = minor >= 2
    return page_enc.Options(
        large_chunks=newer,
        constant_pages=newer,
        dictionary_64=newer,
        dictionary_general=newer,
        level_rle=newer,
    )


@dataclass
class _LeafStream:
    column: int
    path: LeafPath
    params: field_params.FieldParams
    where: str
    pending: list[LeafBatch] = field(default_factory=list)
    pending_bytes: int = 0
    next_row: int = 0
    # Blob columns write their values at once (where ``sink`` says) and keep only
    # the values' descriptions for their pages.
    blob_sink: PageSink | None = None

    def append(self, batch: LeafBatch) -> None:
        if batch.num_rows == 0:
            return
        if self.blob_sink is not None:
            batch = blob.describe(batch, self.blob_sink)
        self.pending.append(batch)
        self.pending_bytes += batch.values_nbytes + 2 * batch.num_entries

    def take_pending(self) -> list[LeafBatch]:
        batches, self.pending, self.pending_bytes = self.pending, [], 0
        return batches

    def encode(
        self, batches: list[LeafBatch], options: page_enc.Options, max_page_bytes: int
    ) -> list[page_enc.EncodedPage]:
        if self.blob_sink is not None:
            return [blob.encode(self.path, piece, options, self.where)
                    for piece in _pages(batches, max_page_bytes)]  # fmt: skip
        return [
            page_enc.encode(self.path, piece, self.params, options, self.where)
            for piece in _pages(batches, max_page_bytes)
        ]

    def add(self, sink: PageSink, pages: list[page_enc.EncodedPage]) -> None:
        for encoded in pages:
            sink.add_page(self.column, encoded.num_rows, encoded.buffers, encoded.layout,
                          self.next_row)  # fmt: skip
            self.next_row += encoded.num_rows


def _pages(batches: list[LeafBatch], max_page_bytes: int) -> list[list[LeafBatch]]:
    """Group the buffered batches into pages of at most about ``max_page_bytes``;
    a batch larger than that is cut into row ranges."""
    pages: list[list[LeafBatch]] = []
    current: list[LeafBatch] = []
    size = 0
    for batch in batches:
        for piece in _split(batch, max_page_bytes):
            piece_bytes = piece.values_nbytes
            if current and size + piece_bytes > max_page_bytes:
                pages.append(current)
                current, size = [], 0
            current.append(piece)
            size += piece_bytes
    if current:
        pages.append(current)
    return pages


def _split(batch: LeafBatch, max_page_bytes: int) -> list[LeafBatch]:
    pieces = max(1, -(-batch.values_nbytes // max_page_bytes))
    if pieces == 1 or batch.num_rows <= 1:
        return [batch]
    step = -(-batch.num_rows // pieces)
    return [batch.slice_rows(start, min(start + step, batch.num_rows))
            for start in range(0, batch.num_rows, step)]  # fmt: skip


class FileWriter21(FileWriterBase):
    """Writes a Lance file, format version 2.1 or 2.2."""

    page_url = PAGE_LAYOUT_URL
    _descriptors: tuple[pa.Schema, list[int]] | None = None

    def _start_columns(self, schema: pa.Schema) -> int:
        for top in schema:
            field_params.check_field_tree(top, self.path, top.name, self.version.footer[1])
        self._arrow_schema = schema
        self._paths = leaf_paths(schema)
        self._streams = []
        for column, path in enumerate(self._paths):
            where = f"{self.path}: column {path.name!r}"
            params = field_params.parse(path.metadata, where, self.version.footer[1])
            self._streams.append(_LeafStream(column, path, params, where))
        self._options = _options(self.version.footer[1])
        return len(self._paths)

    def start(self, schema: pa.Schema) -> None:
        super().start(schema)
        for stream in self._streams:
            leaf = stream.path.field
            if field_params.BLOB in (leaf.metadata or {}) and not is_descriptor_field(leaf):
                stream.blob_sink = self._sink
        self._encoder = _Encoder(self._sink, self._options, self._max_page_bytes)

    def _stored_type(self, index: int, field: pa.Field) -> pa.DataType:
        binary = pa.types.is_large_binary(field.type) or pa.types.is_binary(field.type)
        if binary and index in self._descriptor_columns():
            return DESCRIPTOR_TYPE
        return field.type

    def _descriptor_columns(self) -> list[int]:
        # Asked per batch; the file's schema does not change once started.
        assert self.schema is not None
        if self._descriptors is None or self._descriptors[0] is not self.schema:
            found = [i for i, f in enumerate(self.schema) if is_descriptor_field(f)]
            self._descriptors = (self.schema, found)
        return self._descriptors[1]

    def _write(self, batch: pa.RecordBatch) -> None:
        for i in self._descriptor_columns():
            column = batch.column(i)
            if column.type == DESCRIPTOR_TYPE:
                # A descriptor points into the file it was read from (or its sidecars).
                raise UnsupportedFeatureError(
                    f"{self.path}: column {batch.schema.field(i).name!r} holds blob v2 "
                    "descriptors; lancelet writes blob columns from their values only"
                )
            described = inline_descriptors(column, self._sink)
            batch = batch.set_column(i, self._arrow_schema.field(i), described)
        leaves = shred(self._paths, self._arrow_schema, batch)
        for stream, leaf in zip(self._streams, leaves, strict=True):
            stream.append(leaf)
            if stream.pending_bytes >= self._cache_bytes:
                self._encoder.submit(stream)

    def _write_columns(
        self,
        columns: Sequence[Callable[[], pa.Array]],
        num_rows: int,
        batch_rows: int,
        costs: Sequence[int] | None,
    ) -> None:
        """Each column made and encoded as one job: one column's making (a compaction's
        decoding, mostly Python) runs while another's encoding (mostly compiled
        kernels, without the GIL) does, where making every column before encoding
        any leaves one of the two waiting.  The pages are those the batches would
        give."""
        assert self.schema is not None
        if (
            self._descriptor_columns()
            or any(stream.blob_sink is not None for stream in self._streams)
            or any(has_extension(f.type) for f in self.schema)
        ):
            super()._write_columns(columns, num_rows, batch_rows, costs)
            return
        spans = self._streams_by_column()

        def job(index: int) -> list[list[page_enc.EncodedPage]]:
            return self._encode_column(index, columns[index], num_rows, batch_rows, spans[index])

        encoded = parallel.map_columns(job, range(len(columns)), costs)
        # Added in column order, as the batches' pages would be at close.
        for streams, pages in zip(spans, encoded, strict=True):
            for stream, stream_pages in zip(streams, pages, strict=True):
                stream.add(self._sink, stream_pages)
        self._rows = num_rows

    def _streams_by_column(self) -> list[list[_LeafStream]]:
        """The leaf streams of each top-level column."""
        spans, at = [], 0
        for top in self._arrow_schema:
            count = len(leaf_paths(pa.schema([top])))
            spans.append(self._streams[at : at + count])
            at += count
        return spans

    def _encode_column(
        self,
        index: int,
        make: Callable[[], pa.Array],
        num_rows: int,
        batch_rows: int,
        streams: list[_LeafStream],
    ) -> list[list[page_enc.EncodedPage]]:
        """Column ``index`` made and encoded: each of its leaves' pages."""
        array = make()
        one = pa.schema([self._arrow_schema.field(index)])
        expected = one.field(0).type
        if not isinstance(array, pa.Array) or len(array) != num_rows or array.type != expected:
            raise SchemaError(
                f"{self.path}: column {one.names[0]!r} was made as {len(array)} values of "
                f"{array.type}, not {num_rows} of {expected}"
            )
        paths = [stream.path for stream in streams]
        whole = shred(paths, one, pa.record_batch([array], schema=one))
        pieces: Iterable[list[LeafBatch]] = [whole]
        if any(
            leaf.values_nbytes + 2 * leaf.num_entries >= self._cache_bytes
            or pa.types.is_dictionary(leaf.values.type)
            or leaf.gathered_nulls
            for leaf in whole
        ):
            # Pages are cut when a leaf's buffer fills: fed as the batches would be.  So
            # are dictionary values, whose every batch counts (and carries) the whole
            # dictionary, and values gathered around hidden items, whose bytes under
            # nulls depend on the batch (see LeafBatch.gathered_nulls).
            pieces = (
                shred(paths, one, pa.record_batch([array.slice(start, batch_rows)], schema=one))
                for start in range(0, num_rows, batch_rows)
            )
        pages: list[list[page_enc.EncodedPage]] = [[] for _ in streams]
        for leaves in pieces:
            for stream, leaf, found in zip(streams, leaves, pages, strict=True):
                stream.append(leaf)
                if stream.pending_bytes >= self._cache_bytes:
                    found += self._encode_pending(stream)
        for stream, found in zip(streams, pages, strict=True):
            if stream.pending:
                found += self._encode_pending(stream)
        return pages

    def _encode_pending(self, stream: _LeafStream) -> list[page_enc.EncodedPage]:
        return stream.encode(stream.take_pending(), self._options, self._max_page_bytes)

    def _flush(self) -> None:
        self._encoder.submit_all([stream for stream in self._streams if stream.pending])
        self._encoder.settle()

    def _settle(self) -> None:
        self._encoder.settle()

    def abort(self) -> None:
        encoder = getattr(self, "_encoder", None)
        if encoder is not None:
            encoder.cancel()
        super().abort()


_INLINE_BYTES = 256 * 1024


@cache
def _pool() -> ThreadPoolExecutor:
    # One pool for every writer: a pool of its own cost each file its threads' start
    # (a compaction writes a data file and the remapped indices' files one by one).
    # Encoding jobs never wait on one another, so writers may share it.
    return ThreadPoolExecutor(parallel.WORKERS, thread_name_prefix="lancelet-encode")


# A forked child has the parent's pool object but none of its threads: it makes its own.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool.cache_clear)


class _Encoder:
    """Encodes pages on worker threads (numpy and the compiled kernels release the
    GIL) while the caller shreds the next batch.  Pages reach the file in the order
    they were submitted, whichever thread finishes first, so a file's bytes depend
    only on its data; at most ``2 * workers`` encodings are in flight."""

    def __init__(self, sink: PageSink, options: page_enc.Options, max_page_bytes: int) -> None:
        self._sink = sink
        self._options = options
        self._max_page_bytes = max_page_bytes
        self._queue: deque[tuple[_LeafStream, Future[list[page_enc.EncodedPage]]]] = deque()

    def submit(self, stream: _LeafStream) -> None:
        small = stream.pending_bytes < _INLINE_BYTES
        if parallel.WORKERS < 2 or (small and not self._queue):
            # Encoded here: handing a small page over costs more than encoding it (a
            # small append's whole write), and with nothing queued the page order holds.
            batches = stream.take_pending()
            stream.add(self._sink, stream.encode(batches, self._options, self._max_page_bytes))
            return
        self._queue.append((stream, self._start(stream)))
        while self._queue and (len(self._queue) > 2 * parallel.WORKERS or self._queue[0][1].done()):
            self._add_first()

    def submit_all(self, streams: list[_LeafStream]) -> None:
        """Submit every stream's pending batches: the biggest start first (a long text
        column started last would encode alone at the end, the other threads idle),
        their pages still reach the file in the order of ``streams``."""
        if parallel.WORKERS < 2 or sum(s.pending_bytes for s in streams) < _INLINE_BYTES:
            for stream in streams:
                self.submit(stream)
            return
        jobs: dict[int, Future[list[page_enc.EncodedPage]]] = {}
        for i in sorted(range(len(streams)), key=lambda i: -streams[i].pending_bytes):
            jobs[i] = self._start(streams[i])
        self._queue.extend((stream, jobs[i]) for i, stream in enumerate(streams))

    def _start(self, stream: _LeafStream) -> Future[list[page_enc.EncodedPage]]:
        """The encoding of ``stream``'s pending batches, begun on the pool."""
        batches = stream.take_pending()
        return _pool().submit(stream.encode, batches, self._options, self._max_page_bytes)

    def settle(self) -> None:
        """Add every page submitted so far to the file."""
        while self._queue:
            self._add_first()

    def cancel(self) -> None:
        """Drop the pages not added yet: those not started are cancelled, and the
        ones running are waited for (they hold the writer's batches)."""
        jobs = [job for _, job in self._queue]
        self._queue.clear()
        for job in jobs:
            job.cancel()
        wait(jobs)

    def _add_first(self) -> None:
        stream, job = self._queue.popleft()
        stream.add(self._sink, job.result())
