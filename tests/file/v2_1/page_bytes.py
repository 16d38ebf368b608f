"""Take pylance-written 2.1/2.2 files apart into pages, page layouts and mini-block chunks.

Independent of lancelet's readers (only the container's footer layout and the protobuf
classes are shared), so codec tests can feed page bytes straight from pylance to the
decoders under test.  Mini-block chunks are split as the specification describes:

* chunk metadata: one little-endian word per chunk (u16, or u32 when the layout sets
  ``has_large_chunk``), ``(8-byte words - 1) << 4 | log2(values)``; the last chunk's
  count is ``num_items`` minus the others;
* chunk: ``u16 num_levels``, a u16 size for the rep and the def buffer when present,
  a size per value buffer (u16, or u32 with ``has_large_chunk``), padding to 8, then
  every buffer followed by padding to 8.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import lance.file as ref
import pyarrow as pa
from google.protobuf import any_pb2

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet._proto import file2_pb2
from lancelet.file.container import FOOTER, FOOTER_SIZE


@dataclass
class PageBytes:
    """One page: its metadata entry, its layout and its buffers' bytes."""

    meta: file2_pb2.ColumnMetadata.Page
    layout: pb.PageLayout
    buffers: list[bytes]


@dataclass
class Chunk:
    """One mini-block chunk: where it starts in the chunk buffer, its value count,
    level count and buffers (rep, def when present, then the value buffers), each as
    ``(offset in the chunk buffer, size)``."""

    start: int
    count: int
    num_levels: int
    buffers: list[tuple[int, int]]


def write(path: Path, table: pa.Table, version: str = "2.2") -> Path:
    with ref.LanceFileWriter(str(path), table.schema, version=version) as writer:
        writer.write_batch(table)
    return path


def pages(path: Path) -> tuple[bytes, list[list[PageBytes]]]:
    """The file's bytes and, per column, its pages."""
    data = Path(path).read_bytes()
    _, cmo, _, _, n_col, _, _, _ = FOOTER.unpack(data[-FOOTER_SIZE:])
    columns = []
    for c in range(n_col):
        pos, size = struct.unpack_from("<QQ", data, cmo + 16 * c)
        meta = file2_pb2.ColumnMetadata()
        meta.ParseFromString(data[pos : pos + size])
        column = []
        for page in meta.pages:
            wrapper = any_pb2.Any()
            wrapper.ParseFromString(page.encoding.direct.encoding)
            layout = pb.PageLayout()
            layout.ParseFromString(wrapper.value)
            buffers = [
                data[o : o + s] for o, s in zip(page.buffer_offsets, page.buffer_sizes, strict=True)
            ]
            column.append(PageBytes(page, layout, buffers))
        columns.append(column)
    return data, columns


def miniblock_chunks(layout: pb.MiniBlockLayout, meta: bytes, chunks: bytes) -> list[Chunk]:
    """Split a mini-block page's chunk buffer following its chunk metadata."""
    word = "<I" if layout.has_large_chunk else "<H"
    size_fmt = "I" if layout.has_large_chunk else "H"
    words = [w for (w,) in struct.iter_unpack(word, meta)]
    levels = int(layout.HasField("rep_compression")) + int(layout.HasField("def_compression"))
    out = []
    pos = seen = 0
    for i, w in enumerate(words):
        size = ((w >> 4) + 1) * 8
        count = (1 << (w & 15)) if i < len(words) - 1 else layout.num_items - seen
        seen += count
        (num_levels,) = struct.unpack_from("<H", chunks, pos)
        fmt = "<" + "H" * levels + size_fmt * layout.num_buffers
        sizes = struct.unpack_from(fmt, chunks, pos + 2)
        at = pos + 2 + struct.calcsize(fmt)
        at += -at % 8
        buffers = []
        for s in sizes:
            buffers.append((at, s))
            at += s + (-(at + s) % 8)
        assert at == pos + size, "chunk buffers do not fill the chunk"
        out.append(Chunk(pos, count, num_levels, buffers))
        pos += size
    assert pos == len(chunks)
    return out


@dataclass(frozen=True)
class PageEntry:
    """A page's buffers and row count, as the column metadata lists them."""

    buffer_offsets: tuple[int, ...]
    buffer_sizes: tuple[int, ...]
    num_rows: int


def page_entry(page: PageBytes) -> PageEntry:
    return PageEntry(
        tuple(page.meta.buffer_offsets), tuple(page.meta.buffer_sizes), int(page.meta.length)
    )


_LIST_LAYERS = {
    pb.REPDEF_ALL_VALID_LIST,
    pb.REPDEF_NULLABLE_LIST,
    pb.REPDEF_EMPTYABLE_LIST,
    pb.REPDEF_NULL_AND_EMPTY_LIST,
}


@dataclass
class Expected:
    """Levels and visible values of rows, as the specification defines them."""

    rep: list[int]
    defs: list[int]
    values: list[object]  # one per visible item; None where the item is null


def expected_levels(rows: list[object], layers: list[int], steps: list[object]) -> Expected:
    """Compute the levels of ``rows`` by walking the Python values (one loop per item,
    on purpose: an independent reading of the specification).

    ``steps`` lead from a row to its leaf, outermost first: ``"list"`` or a struct field
    name.  ``layers`` are the page's layers, innermost (the leaf) first, one per step
    plus the leaf.  Definition codes count up from the innermost layer: a nullable item
    or list takes one code for null, an emptyable list one for empty (null first).
    """
    assert len(layers) == len(steps) + 1
    null_code: dict[int, int] = {}
    empty_code: dict[int, int] = {}
    code = 1
    for index, layer in enumerate(layers):
        if layer in (
            pb.REPDEF_NULLABLE_ITEM,
            pb.REPDEF_NULLABLE_LIST,
            pb.REPDEF_NULL_AND_EMPTY_LIST,
        ):
            null_code[index] = code
            code += 1
        if layer in (pb.REPDEF_EMPTYABLE_LIST, pb.REPDEF_NULL_AND_EMPTY_LIST):
            empty_code[index] = code
            code += 1
    lists = [i for i, layer in enumerate(layers) if layer in _LIST_LAYERS]
    max_rep = len(lists)
    visible_limit = (
        sum(int(i in null_code) + int(i in empty_code) for i in range(lists[0])) if lists else None
    )
    out = Expected([], [], [])

    def emit(rep: int, definition: int, value: object) -> None:
        out.rep.append(rep)
        out.defs.append(definition)
        if visible_limit is None or definition <= visible_limit:
            out.values.append(value)

    def walk(value: object, depth: int, rep: int) -> None:
        layer = len(steps) - depth
        if value is None:
            emit(rep, null_code[layer], None)
        elif depth == len(steps):
            emit(rep, 0, value)
        elif steps[depth] == "list":
            assert isinstance(value, list)
            if not value:
                emit(rep, empty_code[layer], None)
            below = sum(1 for i in lists if i < layer)
            for j, item in enumerate(value):
                walk(item, depth + 1, rep if j == 0 else below)
        else:
            assert isinstance(value, dict)
            walk(value[steps[depth]], depth + 1, rep)

    for row in rows:
        walk(row, 0, max_rep)
    return out
