"""A column's rows as the runs its pages store, not expanded.

A sorted key (TPC-H's ``l_orderkey``) is stored run-length encoded: a page of a
million rows holds a quarter of a million runs.  A filter on such a column can be
tested once per run and only the runs it keeps turned into rows, instead of
expanding every value and testing each (see ``dataset/read/run_filter.py``).  Only
mini-block pages of run-length encoded values (or dictionary indices) without nulls
or lists qualify; for any other page the answer is None and the caller reads the rows.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pyarrow as pa

from lancelet.file.v2_1.read.context import guarded
from lancelet.file.v2_1.read.fields import LeafColumn
from lancelet.file.v2_1.read.miniblock import MiniBlockPage
from lancelet.file.v2_1.read.rle_bss import RleMiniBlock
from lancelet.file.v2_1.read.values import I64, Fixed

__all__ = ["leaf_runs"]

Runs = tuple[pa.Array, I64]  # each run's value (the column's type) and its length


def leaf_runs(leaf: LeafColumn, start: int, end: int) -> Runs | None:
    """Rows ``[start, end)`` of a leaf column as runs: their values and lengths, the
    lengths adding up to ``end - start``; None unless every page the rows lie in
    stores them as runs."""
    values: list[pa.Array] = []
    lengths: list[I64] = []
    for page_no, lo, hi in leaf.page_spans(start, end):
        page = leaf.decoder(page_no)
        if not _stores_runs(page):
            return None
        assert isinstance(page, MiniBlockPage)
        found = guarded(page.ref, partial(_page_runs, page, lo, hi))
        values.append(found[0])
        lengths.append(found[1])
    if not values:
        return None
    joined = np.concatenate(lengths)
    if int(joined.sum()) != end - start:
        return None  # rows outside the pages: the caller's read reports them
    return pa.concat_arrays(values), joined


def _stores_runs(page: object) -> bool:
    return (
        isinstance(page, MiniBlockPage)
        and not page.has_rep
        and not page.has_def
        and isinstance(page.value_codec, RleMiniBlock)
    )


def _page_runs(page: MiniBlockPage, lo: int, hi: int) -> Runs:
    """Values ``[lo, hi)`` of the page as runs (a run cut by either end shortened)."""
    codec = page.value_codec
    assert isinstance(codec, RleMiniBlock)
    ids = page.chunks_holding(lo, hi)
    c0 = int(ids[0])
    data, starts = page.chunk_data(ids)
    pieces = page.chunk_pieces(data, starts, page.sizes[ids])
    raw, lengths = codec.runs(pieces.values, page.counts[ids])
    # The chunks' values start at item_starts[c0]: cut the runs to [lo, hi) of the page.
    skip, keep = lo - int(page.item_starts[c0]), hi - lo
    ends = np.cumsum(lengths)
    first = int(np.searchsorted(ends, skip, side="right"))
    last = int(np.searchsorted(ends, skip + keep - 1, side="right"))
    if first == last:
        cut = np.array([keep], dtype=np.int64)
    else:
        cut = lengths[first : last + 1].copy()
        cut[0] = int(ends[first]) - skip
        cut[-1] = skip + keep - int(ends[last - 1])
    picked = np.ascontiguousarray(raw[first : last + 1])
    # The runs' values as the page's rows would hold them (a dictionary's items where
    # the runs are of its indices).
    values = page.values_to_arrow(Fixed(picked.view(np.uint8), codec.bits, len(picked)))
    return values, cut
