"""Writing Lance 2.1 and 2.2 files: one column per leaf, structure in the levels.

Each leaf column buffers its shredded batches (``data_cache_bytes`` of values,
8 MiB by default) and encodes them as one or more pages when the buffer fills or
the file closes; a page holds whole rows and at most about ``max_page_bytes`` of
values.  Page priority is the row number of the page's first row, as in the
reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from lancelet.file.v2_1.write import page as page_enc
from lancelet.file.v2_1.write import params as field_params
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

    def append(self, batch: LeafBatch) -> None:
        if batch.num_rows == 0:
            return
        self.pending.append(batch)
        self.pending_bytes += batch.values.nbytes + 2 * batch.num_entries

    def flush(self, sink: PageSink, options: page_enc.Options, max_page_bytes: int) -> None:
        if not self.pending:
            return
        batches, self.pending, self.pending_bytes = self.pending, [], 0
        for piece in _pages(batches, max_page_bytes):
            encoded = page_enc.encode(self.path, piece, self.params, options, self.where)
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
            piece_bytes = piece.values.nbytes
            if current and size + piece_bytes > max_page_bytes:
                pages.append(current)
                current, size = [], 0
            current.append(piece)
            size += piece_bytes
    if current:
        pages.append(current)
    return pages


def _split(batch: LeafBatch, max_page_bytes: int) -> list[LeafBatch]:
    pieces = max(1, -(-batch.values.nbytes // max_page_bytes))
    if pieces == 1 or batch.num_rows <= 1:
        return [batch]
    step = -(-batch.num_rows // pieces)
    return [batch.slice_rows(start, min(start + step, batch.num_rows))
            for start in range(0, batch.num_rows, step)]  # fmt: skip


class FileWriter21(FileWriterBase):
    """Writes a Lance file, format version 2.1 or 2.2."""

    page_url = PAGE_LAYOUT_URL

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

    def _write(self, batch: pa.RecordBatch) -> None:
        leaves = shred(self._paths, self._arrow_schema, batch)
        for stream, leaf in zip(self._streams, leaves, strict=True):
            stream.append(leaf)
            if stream.pending_bytes >= self._cache_bytes:
                stream.flush(self._sink, self._options, self._max_page_bytes)

    def _flush(self) -> None:
        for stream in self._streams:
            stream.flush(self._sink, self._options, self._max_page_bytes)
