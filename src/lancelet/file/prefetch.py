"""The byte ranges a read will touch, announced to the source before decoding.

Decoders read page buffers one at a time, which costs nothing on a memory map but
a round trip each on an object store.  Before a read, the file reader lists the
buffers of every page the read needs and hands them to ``InputFile.prefetch``,
which fetches them together (coalesced, concurrently); the decoders' reads then
find the bytes already there.  Page row counts say which pages a row range or a
row list falls in; a column whose pages count items rather than rows (the items
of a 2.0 list) is announced whole.

A take of a few rows needs only a few of its pages' bytes: from 2.1 files it is
announced in two rounds (:func:`take_rows`), first what says where the rows lie,
then the rows' bytes, fetched with a small gap.  2.0 pages are decoded from whole
buffers, so a take from them is announced page by page, as a scan is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from lancelet.file.codecs._chunks import sorted_groups
from lancelet.file.container import ColumnInfo
from lancelet.file.v2_0.layout import FieldNode
from lancelet.file.v2_1.read import layout as layout21
from lancelet.file.v2_1.read.fields import LeafColumn
from lancelet.io import InputFile

Ranges = list[tuple[int, int]]

# A take's ranges at most this far apart are fetched as one.  pylance's gap too (its
# object-store block size), so the two move about the same bytes; a sparse take's
# chunks lie tens of KiB apart, so each doubling of the gap roughly halves the
# requests but adds half again the bytes (lineitem SF0.1, 100 rows: 64 KiB, 142
# requests, 15 MB; 128 KiB, 59 requests, 23 MB).
TAKE_GAP = 64 << 10
# A take fetches only what its rows need when that leaves at least this many bytes of
# their pages unfetched; fewer cost less than the round trip that finding the rows
# takes (it reads chunk sizes or repetition indexes first), so a dense take (a
# filter's matches) fetches whole pages in one round, as a scan does.
TAKE_SAVING = 1 << 20


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


def take_rows(source: InputFile, leaves: Sequence[LeafColumn], rows: np.ndarray) -> bool:
    """Announce a take of ``rows`` from 2.1+ leaf columns in two rounds, each fetched
    at once: what tells where the rows lie (chunk sizes, repetition indexes), then
    the rows' own bytes (the chunks or byte ranges that hold them).  False, and
    nothing fetched, when that would save too little (:data:`TAKE_SAVING`)."""
    wanted, _ = sorted_groups(np.sort(rows))
    if sum(leaf.unread_by_take(wanted, TAKE_GAP) for leaf in leaves) < TAKE_SAVING:
        return False
    for stage in (LeafColumn.index_ranges, LeafColumn.data_ranges):
        found = [r for leaf in leaves for r in stage(leaf, wanted)]
        source.prefetch(within(found, source.size), gap=TAKE_GAP)
    return True
