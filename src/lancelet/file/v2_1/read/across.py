"""Rows of one leaf column of several files, taken together.

A compaction reads the live rows of a hundred small files written alike.  Their
mini-block pages that decode alike (the same
:attr:`~.miniblock.MiniBlockPage.batch_key`) are decoded in one batch, whichever
file they are in (:func:`.page_batches.take_pages`), so the hundred files cost
little more than one.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from lancelet.file.v2_0.fields import concat_pages
from lancelet.file.v2_1.read import page_batches
from lancelet.file.v2_1.read.fields import BATCH_ERRORS, LeafColumn
from lancelet.file.v2_1.read.layout import Kind
from lancelet.file.v2_1.read.miniblock import MiniBlockPage
from lancelet.file.v2_1.read.values import I64

__all__ = ["take_across"]


def take_across(leaves: Sequence[LeafColumn], rows: Sequence[I64]) -> pa.Array:
    """Rows ``rows[i]`` (sorted, unique, not all empty) of ``leaves[i]``, one
    top-level leaf column of each of several files, back to back.  Mini-block pages
    that decode alike (the same :attr:`~.miniblock.MiniBlockPage.batch_key`) are
    decoded in one batch, whichever file they are in: a compaction's hundred small
    files cost little more than one.  A batch that fails is read again page by
    page, whose errors name the damaged page."""
    if any(leaf.lineage != (Kind.LEAF,) for leaf in leaves):
        raise ValueError("take_across reads top-level leaf columns only")
    parts: list[pa.Array] = []
    pending: list[tuple[LeafColumn, int, I64]] = []
    pending_key: bytes | None = None  # the batch key of the last page pending
    for leaf, wanted in zip(leaves, rows, strict=True):
        for page_no, local in _by_page(leaf, wanted).items():
            decoder = leaf.decoder(page_no)
            key = decoder.batch_key if isinstance(decoder, MiniBlockPage) else None
            if pending and (key is None or key != pending_key):
                parts.extend(_take_run(pending))
                pending = []
            pending.append((leaf, page_no, local))
            pending_key = key
    parts.extend(_take_run(pending))
    if not parts:
        raise ValueError("take_across needs some rows")
    return parts[0] if len(parts) == 1 else concat_pages(parts)


def _by_page(leaf: LeafColumn, rows: I64) -> dict[int, I64]:
    if len(leaf.info.pages) == 1 and len(rows):  # a small file's column: no search
        return {0: rows}
    return leaf.by_page(rows) if len(rows) else {}


def _take_run(run: list[tuple[LeafColumn, int, I64]]) -> list[pa.Array]:
    """The rows of a run of pages (of one or several files) that decode alike."""
    if len(run) > 1:
        pages = [leaf.decoder(page_no) for leaf, page_no, _ in run]
        try:
            batch = page_batches.take_pages(
                [p for p in pages if isinstance(p, MiniBlockPage)], [r for _, _, r in run]
            )
            leaf, page_no, _ = run[0]
            return [leaf.rows_of(batch, sum(len(r) for _, _, r in run), page_no).values]
        except BATCH_ERRORS:
            pass  # read again page by page below, to name the page at fault
    return [_take_page(leaf, page_no, local) for leaf, page_no, local in run]


def _take_page(leaf: LeafColumn, page_no: int, local: I64) -> pa.Array:
    decoder = leaf.decoder(page_no)
    count = decoder.num_rows
    if 2 * len(local) <= count:
        return leaf.rows_of(decoder.take(local), len(local), page_no).values
    # Most of the page: decoding it whole and dropping the few rows not wanted costs
    # less than picking the others chunk by chunk.
    whole = leaf.rows_of(decoder.read(0, count), count, page_no).values
    return whole if len(local) == count else whole.take(pa.array(local))
