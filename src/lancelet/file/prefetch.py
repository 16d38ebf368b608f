"""The byte ranges a read will touch, announced to the source before decoding.

Decoders read page buffers one at a time, which costs nothing on a memory map but
a round trip each on an object store.  Before a read, the file reader lists the
buffers of every page the read needs and hands them to ``InputFile.prefetch``,
which fetches them together (coalesced, concurrently); the decoders' reads then
find the bytes already there.  Page row counts say which pages a row range or a
row list falls in; a column whose pages count items rather than rows (the items
of a 2.0 list) is announced whole.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from lancelet.file.container import ColumnInfo
from lancelet.file.v2_0.layout import FieldNode
from lancelet.file.v2_1.read import layout as layout21

Ranges = list[tuple[int, int]]


def node_columns(node: FieldNode | layout21.Node) -> list[int]:
    """The file columns a projected field reads (all of a 2.0 field's, a 2.1 field's leaves)."""
    out: list[int] = []
    stack: list[FieldNode | layout21.Node] = [node]
    while stack:
        found = stack.pop()
        if found.column is not None:
            out.append(found.column)
        stack.extend(found.children)
    return out


def _page_starts(info: ColumnInfo) -> np.ndarray:
    lengths = np.fromiter((p.num_rows for p in info.pages), np.int64, len(info.pages))
    starts = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    return starts


def _buffers(info: ColumnInfo, pages: Iterable[int]) -> Ranges:
    out = list(zip(info.buffer_offsets, info.buffer_sizes, strict=False))
    for page_no in pages:
        page = info.pages[page_no]
        out.extend(zip(page.buffer_offsets, page.buffer_sizes, strict=False))
    return out


def range_buffers(info: ColumnInfo, start: int, end: int, num_rows: int) -> Ranges:
    """The buffers of the pages holding rows ``[start, end)``."""
    starts = _page_starts(info)
    if int(starts[-1]) != num_rows:
        return _buffers(info, range(len(info.pages)))
    first = max(int(np.searchsorted(starts, start, side="right")) - 1, 0)
    last = min(int(np.searchsorted(starts, end, side="left")), len(info.pages))
    return _buffers(info, range(first, last))


def row_buffers(info: ColumnInfo, rows: np.ndarray, num_rows: int) -> Ranges:
    """The buffers of the pages holding ``rows``."""
    starts = _page_starts(info)
    if int(starts[-1]) != num_rows:
        return _buffers(info, range(len(info.pages)))
    pages = np.unique(np.searchsorted(starts, rows, side="right") - 1)
    return _buffers(info, (int(p) for p in pages if 0 <= p < len(info.pages)))


def within(ranges: Ranges, size: int) -> Ranges:
    """The ranges inside a file of ``size`` bytes: one that is not is damage, which the
    decoder that reads it reports; prefetching must not fail on it first."""
    return [(o, n) for o, n in ranges if n > 0 and o >= 0 and o + n <= size]
