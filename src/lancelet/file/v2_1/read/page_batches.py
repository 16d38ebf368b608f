"""Rows of several mini-block pages of one column taken in one batch.

A compaction takes the live rows of a hundred small files whose pages of a column
decode alike (the same :attr:`~.miniblock.MiniBlockPage.batch_key`): their chunks
are decoded together, and so are their dictionaries when those are encoded alike,
so that the hundred pages cost about one page's calls.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lancelet.errors import CorruptFileError
from lancelet.file.codecs.fsst import fsst_decompress, fsst_decompress_pages
from lancelet.file.v2_0.fields import concat_pages
from lancelet.file.v2_1.read.arrow import dictionaries_array, to_arrow
from lancelet.file.v2_1.read.miniblock import MiniBlockPage
from lancelet.file.v2_1.read.page import LevelledPage
from lancelet.file.v2_1.read.values import (
    I64,
    U8,
    Fixed,
    Slices,
    Values,
    Var,
    concat_values,
    take_values,
)
from lancelet.file.v2_1.read.variable_width import FsstMiniBlock

__all__ = ["take_pages"]


def take_pages(pages: Sequence[MiniBlockPage], rows: Sequence[I64]) -> LevelledPage:
    """Rows of several pages of one column that share a :attr:`~MiniBlockPage.batch_key`
    (no lists), their chunks decoded in one batch: ``rows[i]`` are page ``i``'s,
    page-relative (sorted, unique, in range).  Only the chunks holding them are read.
    Errors name no page: callers retry page by page to find it."""
    first = pages[0]
    datas, starts, sizes, counts, picks = [], [], [], [], []
    # Per page, what its picks and chunk starts are shifted by, added in one go below
    # (two numpy calls per page cost more than the rest of a small page's share).
    pick_shifts, start_shifts = [], []
    done = 0  # values of the chunks taken so far
    placed = 0
    for page, wanted in zip(pages, rows, strict=True):
        if _every_chunk_wanted(page, wanted):
            # Most rows of the page (a compaction's live rows): every chunk, read as
            # one range, without working out which chunks hold them.
            data, at = _all_chunks(page)
            sizes.append(page.sizes)
            counts.append(page.counts)
            picks.append(wanted)
            pick_shifts.append(done)
            done += page.num_rows
        else:
            counter = np.array([done], np.int64)
            ids, local = page.flat_positions(wanted, counter)
            done = int(counter[0])
            data, at = page.chunk_data(ids)
            sizes.append(page.sizes[ids])
            counts.append(page.counts[ids])
            picks.append(local)
            pick_shifts.append(0)
        datas.append(data)
        starts.append(at)
        start_shifts.append(placed)
        placed += len(data)
    local = _shifted(picks, pick_shifts)
    base = datas[0] if len(datas) == 1 else np.concatenate(datas)
    fsst = first.value_codec if isinstance(first.value_codec, FsstMiniBlock) else None
    raw = first.decode_raw(
        base,
        _shifted(starts, start_shifts),
        np.concatenate(sizes),
        np.concatenate(counts),
        local,
        None if fsst is None else fsst.inner,
    )
    defs = None if raw.defs is None else raw.defs[local]
    values = raw.values if fsst is None else _expand(pages, rows, raw.values)
    if first.dict_buffer is None:
        return first.levelled_page(None, defs, to_arrow(values, first.dtype))
    if (
        isinstance(values, Fixed)
        and not pa.types.is_dictionary(first.dtype)
        and all(
            16 * len(r) > int(p.layout.num_dictionary_items)
            for p, r in zip(pages, rows, strict=True)
        )
    ):
        # Most of each dictionary wanted (a scan's take), not a few items each
        # (which a page decodes alone, see _few_from_dictionary).
        items, held = _dictionaries(pages)
        joined = dictionaries_array(items, held, [len(r) for r in rows], values)
        return first.levelled_page(None, defs, joined)
    parts, at_value = [], 0
    for page, wanted in zip(pages, rows, strict=True):
        part = take_values(values, np.arange(at_value, at_value + len(wanted)))
        parts.append(page.values_to_arrow(part, few=True))
        at_value += len(wanted)
    return first.levelled_page(None, defs, concat_pages(parts))


def _shifted(parts: list[I64], shifts: list[int]) -> I64:
    """``parts`` back to back, each shifted by its own amount."""
    lengths = [len(p) for p in parts]
    total = sum(lengths)
    if total < _LONG_PARTS * len(parts):
        # Short parts (chunk starts): two numpy calls in all, not one a part.
        joined = np.concatenate(parts).astype(np.int64, copy=False)
        return joined + np.repeat(np.asarray(shifts, dtype=np.int64), lengths)
    # Long parts (a page's picked rows): one add a part into the result, 10x faster
    # than repeating each shift over its part (a second array as long) and adding.
    out = np.empty(total, dtype=np.int64)
    at = 0
    for part, shift, length in zip(parts, shifts, lengths, strict=True):
        np.add(part.astype(np.int64, copy=False), shift, out=out[at : at + length])
        at += length
    return out


# Parts at least this long on average are shifted one by one (see _shifted).
_LONG_PARTS = 64


def _every_chunk_wanted(page: MiniBlockPage, rows: I64) -> bool:
    """Whether each chunk of ``page`` (no lists) holds one of ``rows`` (sorted, unique,
    in range)."""
    n = len(page.item_starts)
    if n == 0 or not len(rows):
        return False
    if n == 1 or page.num_rows - len(rows) < page.fewest_values:
        # Fewer rows left out than the smallest chunk holds (a compaction's live rows
        # of a page): none of them is left without a wanted row.
        return True
    # Chunk c's rows are rows[firsts[c]:firsts[c + 1]], the last chunk's run to the end.
    firsts = rows.searchsorted(page.item_starts)
    return bool(firsts[-1] < len(rows)) and bool((firsts[1:] > firsts[:-1]).all())


def _all_chunks(page: MiniBlockPage) -> tuple[U8, I64]:
    """``page.chunk_data`` of every chunk: the chunk buffer, read as one range."""
    return page.chunk_buffer.whole(), page.offsets


def _dictionaries(pages: Sequence[MiniBlockPage]) -> tuple[pa.Array, I64]:
    """The pages' dictionary items back to back, and how many each page has.  Pages
    whose dictionaries are encoded alike (a compaction's files written alike) have
    them decoded in one batch; otherwise, or once a page has decoded its own, each
    page's is its own."""
    key = pages[0].plan.dictionary_key
    if len(pages) > 1 and all(
        p.plan.dictionary_key == key and not p.dictionary_decoded for p in pages
    ):
        counts = np.array([p.dictionary_items() for p in pages], dtype=np.int64)
        buffers = [b for b in (p.dict_buffer for p in pages) if b is not None]
        sizes = np.array([len(b) for b in buffers], dtype=np.int64)
        blocks = Slices(np.concatenate(buffers), np.cumsum(sizes) - sizes, sizes)
        values = pages[0].plan.dictionary_codec.decode_blocks(blocks, counts)
        if values.count != int(counts.sum()):
            raise CorruptFileError("the dictionaries decode to other counts than they hold")
        return to_arrow(values, pages[0].item_type), counts
    found = [p.dictionary for p in pages]
    return pa.concat_arrays(found), np.array([len(d) for d in found], dtype=np.int64)


def _expand(pages: Sequence[MiniBlockPage], rows: Sequence[I64], compressed: Values) -> Var:
    """FSST values of several pages, decoded but not expanded, back to back (``rows[i]``
    of them page ``i``'s): each page's expanded with its own symbol table."""
    if not isinstance(compressed, Var):
        raise CorruptFileError("FSST values do not decode to variable-width values")
    codecs = [page.value_codec for page in pages]
    tables = [c.table for c in codecs if isinstance(c, FsstMiniBlock)]
    if len(tables) != len(codecs):
        raise CorruptFileError("a page of FSST values batched with others")
    counts = [len(wanted) for wanted in rows]
    together = fsst_decompress_pages(tables, compressed.data, compressed.offsets, counts)
    if together is not None:
        return Var(*together)
    parts: list[Values] = []
    at = 0
    for table, count in zip(tables, counts, strict=True):
        offsets = compressed.offsets[at : at + count + 1]
        parts.append(Var(*fsst_decompress(table, compressed.data, offsets)))
        at += count
    joined = concat_values(parts)
    assert isinstance(joined, Var)
    return joined
