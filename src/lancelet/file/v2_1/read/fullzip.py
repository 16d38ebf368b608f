"""Full-zip pages (``FullZipLayout``, files 2.1 and later): wide values zipped with
their levels.

Buffer 0 holds every *item* (a value, or a null or empty list that has none) one after
another: a control word, then for a visible item its value.  The control word packs
the repetition level above the definition level (``rep << bits_def | def``) into 0, 1, 2
or 4 little-endian bytes (none when both widths are 0).  A fixed-width value is
``bits_per_value / 8`` bytes and follows every *visible* item, null ones included (as a
placeholder); a variable-width value is a 4 or 8-byte length (``bits_per_offset``) and
that many bytes, and follows only *valid* items (definition level 0).  An item is
visible unless it marks a null or empty list: with list layers, those are the items
whose definition level exceeds the levels of the layers below the first list.

Buffer 1, the repetition index, is present for variable-width values and whenever
there are lists: ``num_rows + 1`` little-endian integers of 1, 2, 4 or 8 bytes (the
width is the buffer size over the entry count), entry ``r`` being where row ``r``
starts in buffer 0 and the last one the size of buffer 0.  Without it a row is one
item of ``control word + value`` bytes, so rows are found by multiplication.

Reads touch only the bytes of the rows asked for: the repetition index entries around
them, then those rows' part of buffer 0.  A row of one item is parsed with whole-array
operations; rows of many items (lists) are walked one item per row per step, and rows
still unfinished after a few steps are finished by pointer doubling over their bytes,
so no Python loop runs once per item.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import ArgumentError, CorruptFileError, UnsupportedEncodingError
from lancelet.file.container import RangeSource, check_range
from lancelet.file.v2_1.read.fullzip_values import (
    FixedValues,
    VariableValues,
    check_values,
    fixed_values,
    select_ranges,
    variable_values,
)
from lancelet.file.v2_1.read.page import LevelledPage
from lancelet.file.v2_1.read.page_buffer import read_whole

__all__ = ["FullZipPageDecoder", "PageInfo", "decoder"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Spans = list[tuple[int, int]]  # (start, end) byte ranges, or (offset, length) in the file

# Rows still unfinished after this many one-item steps are walked by pointer doubling.
_STEP_ROUNDS: Final = 32
# Bytes of unfinished rows handled by one doubling pass (bounds its index arrays).
_DOUBLING_BATCH: Final = 1 << 20
# Neighbouring byte ranges closer than this are fetched with one read.
_MERGE_GAP: Final = 4096
_INDEX_WIDTHS: Final = (1, 2, 4, 8)

_LISTS: frozenset[int] = frozenset(
    {
        pb.REPDEF_ALL_VALID_LIST,
        pb.REPDEF_NULLABLE_LIST,
        pb.REPDEF_EMPTYABLE_LIST,
        pb.REPDEF_NULL_AND_EMPTY_LIST,
    }
)
_DEF_LEVELS: dict[int, int] = {
    pb.REPDEF_ALL_VALID_ITEM: 0,
    pb.REPDEF_ALL_VALID_LIST: 0,
    pb.REPDEF_NULLABLE_ITEM: 1,
    pb.REPDEF_NULLABLE_LIST: 1,
    pb.REPDEF_EMPTYABLE_LIST: 1,
    pb.REPDEF_NULL_AND_EMPTY_LIST: 2,
}


class PageInfo(Protocol):
    """What the decoder needs of a page's entry in the column metadata."""

    @property
    def buffer_offsets(self) -> tuple[int, ...]: ...

    @property
    def buffer_sizes(self) -> tuple[int, ...]: ...

    @property
    def num_rows(self) -> int: ...


@dataclass(frozen=True)
class Levels:
    """What a page's layers say about its levels."""

    layers: tuple[int, ...]
    max_rep: int
    max_def: int
    # Items whose definition level exceeds this have no value (None: all have one).
    max_visible: int | None

    @classmethod
    def of(cls, layers: tuple[int, ...], what: str) -> Levels:
        unknown = [layer for layer in layers if layer not in _DEF_LEVELS]
        if not layers or unknown:
            raise CorruptFileError(f"{what}: the page has unknown or no repetition layers")
        lists = [i for i, layer in enumerate(layers) if layer in _LISTS]
        defs = [_DEF_LEVELS[layer] for layer in layers]
        visible = sum(defs[: lists[0]]) if lists else None
        return cls(layers, len(lists), sum(defs), visible)


def decoder(
    source: RangeSource,
    page: PageInfo,
    layout: pb.FullZipLayout,
    column_label: str,
    arrow_type: pa.DataType,
    *,
    page_index: int | None = None,
) -> FullZipPageDecoder:
    """A decoder for one full-zip page of the leaf column ``column_label``.

    ``arrow_type`` is the leaf's type (for a packed struct, the struct; for a
    fixed-size list of primitives, the list).  Errors name ``source.path``, the
    column and ``page_index`` when given.
    """
    where = column_label if page_index is None else f"{column_label} page {page_index}"
    what = f"{source.path}: {where}"
    return FullZipPageDecoder(source, _Zip.of(source, page, layout, arrow_type, what))


@dataclass(frozen=True)
class _Zip:
    """A full-zip page's layout, checked once."""

    what: str
    arrow_type: pa.DataType
    levels: Levels
    bits_rep: int
    bits_def: int
    word: int  # control word bytes
    fixed: FixedValues | None
    variable: VariableValues | None
    length_bytes: int  # variable-width value length prefix
    num_rows: int
    num_items: int
    num_visible: int
    data_pos: int
    data_size: int
    index_pos: int
    index_width: int  # 0: no repetition index

    @classmethod
    def of(
        cls,
        source: RangeSource,
        page: PageInfo,
        layout: pb.FullZipLayout,
        arrow_type: pa.DataType,
        what: str,
    ) -> _Zip:
        levels = Levels.of(tuple(layout.layers), what)
        fixed, variable, length_bytes = _values(layout, arrow_type, what)
        buffers = list(zip(page.buffer_offsets, page.buffer_sizes, strict=True))
        for index, (offset, size) in enumerate(buffers):
            check_range(source, offset, size, f"{what} buffer {index}")
        has_index = variable is not None or levels.max_rep > 0
        if len(buffers) != 1 + int(has_index):
            raise CorruptFileError(
                f"{what}: full-zip page has {len(buffers)} buffers, expected {1 + int(has_index)}"
            )
        zipped = cls(
            what=what,
            arrow_type=arrow_type,
            levels=levels,
            bits_rep=int(layout.bits_rep),
            bits_def=int(layout.bits_def),
            word=_word_bytes(layout, levels, what),
            fixed=fixed,
            variable=variable,
            length_bytes=length_bytes,
            num_rows=int(page.num_rows),
            num_items=int(layout.num_items),
            num_visible=int(layout.num_visible_items),
            data_pos=buffers[0][0],
            data_size=buffers[0][1],
            index_pos=0,
            index_width=0,
        )
        return zipped._with_index(buffers[1] if has_index else None)

    def _with_index(self, index: tuple[int, int] | None) -> _Zip:
        if index is None:
            assert self.fixed is not None
            stride = self.word + self.fixed.width
            if self.data_size != self.num_rows * stride:
                raise CorruptFileError(
                    f"{self.what}: full-zip data of {self.data_size} bytes does not hold "
                    f"{self.num_rows} rows of {stride} bytes"
                )
            return self
        pos, size = index
        width, rest = divmod(size, self.num_rows + 1)
        if rest or width not in _INDEX_WIDTHS:
            raise CorruptFileError(
                f"{self.what}: repetition index of {size} bytes does not hold "
                f"{self.num_rows + 1} entries of 1, 2, 4 or 8 bytes"
            )
        return replace(self, index_pos=pos, index_width=width)

    @property
    def stride(self) -> int:
        """Bytes per row when rows are found by multiplication."""
        assert self.fixed is not None
        return self.word + self.fixed.width


def _word_bytes(layout: pb.FullZipLayout, levels: Levels, what: str) -> int:
    bits_rep, bits_def = int(layout.bits_rep), int(layout.bits_def)
    if (bits_rep > 0) != (levels.max_rep > 0) or bits_rep > 16 or bits_def > 16:
        raise CorruptFileError(
            f"{what}: control words of {bits_rep} repetition and {bits_def} definition bits "
            f"do not fit the page's {levels.max_rep} list layers"
        )
    if bits_rep and levels.max_rep >= 1 << bits_rep:
        raise CorruptFileError(f"{what}: {bits_rep} repetition bits cannot hold {levels.max_rep}")
    total = bits_rep + bits_def
    return 0 if total == 0 else 1 if total <= 8 else 2 if total <= 16 else 4


def _values(
    layout: pb.FullZipLayout, arrow_type: pa.DataType, what: str
) -> tuple[FixedValues | None, VariableValues | None, int]:
    if not layout.HasField("value_compression"):
        raise CorruptFileError(f"{what}: full-zip page has no value compression")
    details = layout.WhichOneof("details")
    if details == "bits_per_value":
        fixed = fixed_values(layout.value_compression, int(layout.bits_per_value), arrow_type, what)
        return fixed, None, 0
    if details == "bits_per_offset" and layout.bits_per_offset in (32, 64):
        variable = variable_values(layout.value_compression, arrow_type, what)
        return None, variable, int(layout.bits_per_offset) // 8
    if details is None:
        raise CorruptFileError(f"{what}: full-zip page gives neither value nor offset width")
    raise UnsupportedEncodingError(f"{what}: {layout.bits_per_offset}-bit value lengths")


# ---------------------------------------------------------------------------
# parsing zipped bytes
# ---------------------------------------------------------------------------


def _read_le(buf: npt.NDArray[np.uint8], at: IntArray, width: int) -> IntArray:
    """Little-endian unsigned integers of ``width`` bytes at ``at``; 8-byte values of
    2**63 and more come out negative.  Positions too close to the end of ``buf`` read
    from an earlier place instead (callers refuse the items they belong to)."""
    if width == 0 or buf.size < width:
        return np.zeros(at.size, dtype=np.int64)
    at = np.minimum(at, buf.size - width)
    # One gather per byte beats gathering a (positions, width) block of bytes.
    value = buf[at].astype(np.uint64)
    for k in range(1, width):
        value |= buf[at + k].astype(np.uint64) << np.uint64(8 * k)
    out: IntArray = value.view(np.int64)
    return out


@dataclass
class _Sizes:
    """Items parsed at some positions: control words, sizes, and which parse cleanly."""

    word: IntArray
    size: IntArray
    ok: BoolArray


def _item_sizes(zipped: _Zip, buf: npt.NDArray[np.uint8], at: IntArray, end: IntArray) -> _Sizes:
    """Parse one item at each position ``at`` of a row ending at ``end``.

    Positions need not hold items (pointer doubling tries every byte), so nothing is
    raised here: ``ok`` is False wherever the item would not fit its row or holds
    levels its page cannot have.
    """
    word = _read_le(buf, at, zipped.word)
    defs = word & ((1 << zipped.bits_def) - 1)
    ok = (at + zipped.word <= end) & (defs <= zipped.levels.max_def)
    ok &= word >> zipped.bits_def <= zipped.levels.max_rep
    if zipped.fixed is not None:
        visible = _visible(zipped, defs)
        size = zipped.word + np.where(visible, zipped.fixed.width, 0)
        return _Sizes(word, size, ok & (at + size <= end))
    valid = defs == 0
    start = at + zipped.word
    has_room = start + zipped.length_bytes <= end
    length = _read_le(buf, start, zipped.length_bytes)
    fits = has_room & (length >= 0) & (length <= end - start - zipped.length_bytes)
    size = zipped.word + np.where(valid, zipped.length_bytes + np.where(fits, length, 0), 0)
    return _Sizes(word, size, ok & (fits | ~valid))


def _visible(zipped: _Zip, defs: IntArray) -> BoolArray:
    if zipped.levels.max_visible is None:
        return np.ones(defs.size, dtype=bool)
    visible: BoolArray = defs <= zipped.levels.max_visible
    return visible


def _single_items(
    zipped: _Zip, buf: npt.NDArray[np.uint8], starts: IntArray, ends: IntArray, rows: IntArray
) -> tuple[IntArray, IntArray]:
    """Rows of exactly one item each (pages without lists)."""
    sizes = _item_sizes(zipped, buf, starts, ends)
    bad = ~sizes.ok | (starts + sizes.size != ends)
    if bad.any():
        row = int(np.argmax(bad))
        raise CorruptFileError(
            f"{zipped.what}: row {int(rows[row])}'s item does not fill its "
            f"{int(ends[row] - starts[row])} "
            "bytes (a damaged control word, value length or repetition index entry)"
        )
    return starts, sizes.word


def _walk_items(
    zipped: _Zip, buf: npt.NDArray[np.uint8], starts: IntArray, ends: IntArray, rows: IntArray
) -> tuple[IntArray, IntArray]:
    """Every item of rows holding any number of items: positions and control words,
    in byte order."""
    positions, words = [], []
    pos = starts.copy()
    active = np.flatnonzero(pos < ends)
    for _ in range(_STEP_ROUNDS):
        if not active.size:
            break
        sizes = _item_sizes(zipped, buf, pos[active], ends[active])
        if not sizes.ok.all():
            _overrun(zipped, int(rows[active[np.argmin(sizes.ok)]]))
        positions.append(pos[active])
        words.append(sizes.word)
        pos[active] += sizes.size
        active = active[pos[active] < ends[active]]
    if active.size:
        more_pos, more_words = _double_walk(zipped, buf, pos[active], ends[active])
        positions.append(more_pos)
        words.append(more_words)
    all_pos = np.concatenate(positions) if positions else np.zeros(0, np.int64)
    all_words = np.concatenate(words) if words else np.zeros(0, np.int64)
    order = np.argsort(all_pos, kind="stable")
    return all_pos[order], all_words[order]


def _overrun(zipped: _Zip, row: int) -> None:
    raise CorruptFileError(
        f"{zipped.what}: an item of row {row} runs past the end of its row (a damaged "
        "control word, value length or repetition index entry)"
    )


def _double_walk(
    zipped: _Zip, buf: npt.NDArray[np.uint8], starts: IntArray, ends: IntArray
) -> tuple[IntArray, IntArray]:
    """Finish long rows by pointer doubling, a window of at most ``_DOUBLING_BATCH``
    bytes at a time: whole rows while they fit, else the next part of one row."""
    seg_starts = starts.copy()
    spans = ends - starts
    cum = np.cumsum(spans)
    out_pos, out_words = [], []
    i = 0
    while i < seg_starts.size:
        span = int(ends[i] - seg_starts[i])
        if span > _DOUBLING_BATCH:
            cut = np.array([seg_starts[i] + _DOUBLING_BATCH])
            pos, words, resume = _double_batch(
                zipped, buf, seg_starts[i : i + 1], cut, ends[i : i + 1]
            )
            seg_starts[i] = resume
            i += int(resume == ends[i])
        else:
            j = int(np.searchsorted(cum, cum[i] + _DOUBLING_BATCH - span, side="right"))
            j = max(j, i + 1)
            pos, words, _ = _double_batch(zipped, buf, seg_starts[i:j], ends[i:j], ends[i:j])
            i = j
        out_pos.append(pos)
        out_words.append(words)
    return np.concatenate(out_pos), np.concatenate(out_words)


def _double_batch(
    zipped: _Zip, buf: npt.NDArray[np.uint8], starts: IntArray, cuts: IntArray, ends: IntArray
) -> tuple[IntArray, IntArray, int]:
    """Items of the byte ranges ``[starts[k], cuts[k])``, each the part of a row ending
    at ``ends[k]`` that starts with an item.

    Every byte that parses as an item (its control word holds possible levels and its
    value fits the row: in practice few besides the real items) gets the position of
    the item that would follow it; repeated squaring of that map marks every item
    reachable from the range starts.  Returns their positions and control words, and
    where the last range's walk continues (its row's end when the range was the whole
    rest of the row).
    """
    spans = cuts - starts
    total = int(spans.sum())
    first = np.cumsum(spans) - spans  # each range's first byte, in batch coordinates
    at = np.repeat(starts - first, spans) + np.arange(total, dtype=np.int64)
    end = np.repeat(ends, spans)
    word = _read_le(buf, at, zipped.word)
    maybe = (at + zipped.word <= end) & (
        word & ((1 << zipped.bits_def) - 1) <= zipped.levels.max_def
    )
    maybe &= word >> zipped.bits_def <= zipped.levels.max_rep
    maybe[first] = True  # range starts are items: a bad one must lead to `broken`
    cand = np.flatnonzero(maybe)
    sizes = _item_sizes(zipped, buf, at[cand], end[cand])
    keep = sizes.ok | np.isin(cand, first)
    node_at, node_size, node_ok = at[cand][keep], sizes.size[keep], sizes.ok[keep]
    node_end, node_cut = end[cand][keep], np.repeat(cuts, spans)[cand][keep]
    node_word = sizes.word[keep]
    count = node_at.size
    done, broken, leave = count, count + 1, count + 2  # the sinks
    after = node_at + node_size
    following = np.minimum(np.searchsorted(node_at, after), count - 1)
    jump = np.where(node_at[following] == after, following, broken)
    inside = after < np.minimum(node_cut, node_end)
    jump = np.where(inside, jump, np.where(after == node_end, done, leave))
    jump = np.append(np.where(node_ok, jump, broken), [done, broken, leave])
    reached = np.zeros(count + 3, dtype=bool)
    reached[np.searchsorted(node_at, at[first])] = True
    while True:
        hops = np.zeros(count + 3, dtype=bool)
        hops[jump[reached]] = True
        if not bool((hops & ~reached).any()):
            break
        reached |= hops
        jump = jump[jump]
    if reached[broken]:
        raise CorruptFileError(
            f"{zipped.what}: an item runs past the end of its row (a damaged control "
            "word, value length or repetition index entry)"
        )
    items = np.flatnonzero(reached[:count])
    return node_at[items], node_word[items], int(after[items[-1]])


# ---------------------------------------------------------------------------
# the decoder
# ---------------------------------------------------------------------------


class FullZipPageDecoder:
    """Reads rows of one full-zip page (see :class:`~lancelet.file.v2_1.read.page.PageDecoder`)."""

    def __init__(self, source: RangeSource, zipped: _Zip) -> None:
        self._source = source
        self._zip = zipped

    @property
    def num_rows(self) -> int:
        return self._zip.num_rows

    def read(self, start: int, end: int) -> LevelledPage:
        if not 0 <= start <= end <= self.num_rows:
            raise ArgumentError(
                f"{self._zip.what}: rows {start}..{end} are outside the page's {self.num_rows}"
            )
        page = self._rows(np.array([start], np.int64), np.array([end], np.int64))
        return page

    def take(self, rows: npt.NDArray[np.int64]) -> LevelledPage:
        return self._rows(*self._runs(rows))

    def _runs(self, rows: npt.NDArray[np.int64]) -> tuple[IntArray, IntArray]:
        """The runs of consecutive ``rows`` (checked), as ``[firsts[i], ends[i])``."""
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size and (
            int(rows[0]) < 0 or int(rows[-1]) >= self.num_rows or bool(np.any(np.diff(rows) <= 0))
        ):
            raise ArgumentError(
                f"{self._zip.what}: rows to take must be ascending, distinct and below "
                f"{self.num_rows}"
            )
        cuts = np.flatnonzero(np.diff(rows) != 1) + 1
        firsts = rows[np.concatenate([[0], cuts])] if rows.size else rows
        lasts = rows[np.concatenate([cuts - 1, [rows.size - 1]])] + 1 if rows.size else rows
        return firsts, lasts

    def index_ranges(self, rows: npt.NDArray[np.int64]) -> Spans:
        """Where in the file lie the repetition index entries a take of ``rows``
        reads first (none without an index): a take from an object store fetches
        these, then :meth:`data_ranges`, then decodes."""
        firsts, ends = self._runs(rows)
        if not self._zip.index_width or not firsts.size:
            return []
        return _file_ranges(self._zip.index_pos, self._index_spans(firsts, ends))

    def data_ranges(self, rows: npt.NDArray[np.int64]) -> Spans:
        """Where in the file lie the bytes of ``rows`` (this reads their repetition
        index entries)."""
        firsts, ends = self._runs(rows)
        if not firsts.size:
            return []
        row_starts, row_ends = self._row_bytes(firsts, ends, _expand(firsts, ends))
        return _file_ranges(self._zip.data_pos, _row_spans(row_starts, row_ends)[0])

    def _rows(self, firsts: IntArray, ends: IntArray) -> LevelledPage:
        """Rows of the ranges ``[firsts[i], ends[i])``, in order."""
        keep = ends > firsts
        firsts, ends = firsts[keep], ends[keep]
        rows = _expand(firsts, ends)
        row_starts, row_ends = self._row_bytes(firsts, ends, rows)
        buf, starts, stops = self._fetch(row_starts, row_ends)
        whole = firsts.size == 1 and firsts[0] == 0 and ends[0] == self.num_rows
        return self._decode(buf, starts, stops, rows, whole)

    def _row_bytes(
        self, firsts: IntArray, ends: IntArray, rows: IntArray
    ) -> tuple[IntArray, IntArray]:
        """Where each requested row starts and ends in buffer 0."""
        z = self._zip
        if not z.index_width:
            return rows * z.stride, (rows + 1) * z.stride
        entries = self._index_entries(firsts, ends)
        row_of_range = np.repeat(np.arange(firsts.size), ends - firsts)
        local = rows - np.repeat(firsts, ends - firsts)
        offset = np.cumsum(ends - firsts + 1) - (ends - firsts + 1)
        at = offset[row_of_range] + local
        return entries[at], entries[at + 1]

    def _index_entries(self, firsts: IntArray, ends: IntArray) -> IntArray:
        """Repetition index entries ``firsts[i]..ends[i]`` (inclusive) of every range,
        concatenated, checked to increase within the data buffer."""
        z = self._zip
        spans = self._index_spans(firsts, ends)
        entries = self._read_ranges(z.index_pos, spans).view(f"<u{z.index_width}").astype(np.int64)
        # Rows are ascending and hold at least one byte each, so every entry read,
        # across ranges too, must exceed the one before.
        bad = (entries < 0) | (entries > z.data_size)
        if bad.any() or bool((np.diff(entries) <= 0).any()):
            raise CorruptFileError(
                f"{z.what}: repetition index entries are not increasing within the "
                f"{z.data_size}-byte data buffer"
            )
        if firsts.size and firsts[0] == 0 and entries[0] != 0:
            raise CorruptFileError(f"{z.what}: the repetition index does not start at 0")
        if firsts.size and ends[-1] == z.num_rows and entries[-1] != z.data_size:
            raise CorruptFileError(
                f"{z.what}: the repetition index ends at {int(entries[-1])}, "
                f"not at the data size {z.data_size}"
            )
        return entries

    def _index_spans(self, firsts: IntArray, ends: IntArray) -> Spans:
        """Where in the repetition index lie entries ``firsts[i]..ends[i]`` (inclusive)."""
        width = self._zip.index_width
        return [
            (a * width, (b + 1) * width)
            for a, b in zip(firsts.tolist(), ends.tolist(), strict=True)
        ]

    def _read_ranges(self, base: int, spans: Spans) -> npt.NDArray[np.uint8]:
        """The bytes ``[base + a, base + b)`` of every span (ascending, disjoint),
        concatenated; spans close together share one read."""
        parts: list[npt.NDArray[np.uint8]] = []
        for group in _groups(spans):
            lo, hi = group[0][0], group[-1][1]
            chunk = read_whole(self._source, base + lo, hi - lo)
            parts.extend(chunk[a - lo : b - lo] for a, b in group)
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)

    def _fetch(
        self, starts: IntArray, ends: IntArray
    ) -> tuple[npt.NDArray[np.uint8], IntArray, IntArray]:
        """The rows' bytes, concatenated, and each row's place in them."""
        if not starts.size:
            return np.zeros(0, np.uint8), starts, ends
        spans, run_first, run_last = _row_spans(starts, ends)
        buf = self._read_ranges(self._zip.data_pos, spans)
        sizes = ends[run_last] - starts[run_first]
        run_offset = np.cumsum(sizes) - sizes
        shift = np.repeat(run_offset - starts[run_first], run_last - run_first + 1)
        return buf, starts + shift, ends + shift

    def _decode(
        self,
        buf: npt.NDArray[np.uint8],
        starts: IntArray,
        ends: IntArray,
        rows: IntArray,
        whole: bool,
    ) -> LevelledPage:
        """Levels and values of the rows ``rows`` (page row numbers), whose bytes are
        ``buf[starts[i]:ends[i]]``."""
        z = self._zip
        if bool((ends <= starts).any()):
            raise CorruptFileError(f"{z.what}: a row holds no bytes")
        if z.levels.max_rep:
            pos, words = _walk_items(z, buf, starts, ends, rows)
        else:
            pos, words = _single_items(z, buf, starts, ends, rows)
        rep = words >> z.bits_def
        defs = words & ((1 << z.bits_def) - 1)
        self._check_levels(rep, defs, pos, starts)
        visible = _visible(z, defs)
        if whole and (pos.size != z.num_items or int(visible.sum()) != z.num_visible):
            raise CorruptFileError(
                f"{z.what}: the page holds {pos.size} items ({int(visible.sum())} visible), "
                f"its layout says {z.num_items} ({z.num_visible} visible)"
            )
        values = self._values(buf, pos[visible], defs[visible] == 0)
        return LevelledPage(
            rep.astype(np.uint16) if z.bits_rep else None,
            defs.astype(np.uint16) if z.bits_def else None,
            values,
            z.levels.layers,
        )

    def _check_levels(self, rep: IntArray, defs: IntArray, pos: IntArray, starts: IntArray) -> None:
        z = self._zip
        if rep.size and (int(rep.max()) > z.levels.max_rep or int(defs.max()) > z.levels.max_def):
            raise CorruptFileError(
                f"{z.what}: a control word holds levels ({int(rep.max())}, {int(defs.max())}) "
                f"beyond the page's layers ({z.levels.max_rep}, {z.levels.max_def})"
            )
        if z.levels.max_rep:
            row_start = np.zeros(pos.size, dtype=bool)
            row_start[np.searchsorted(pos, starts)] = True
            if bool(np.any(row_start != (rep == z.levels.max_rep))):
                raise CorruptFileError(
                    f"{z.what}: the items' repetition levels do not start rows where the "
                    "repetition index does"
                )

    def _values(self, buf: npt.NDArray[np.uint8], pos: IntArray, valid: BoolArray) -> pa.Array:
        z = self._zip
        start = pos + z.word
        if z.fixed is not None:
            # Without control words the rows' bytes are the values themselves.
            width = np.full(pos.size, z.fixed.width, np.int64)
            raw = buf if z.word == 0 else select_ranges(buf, start, width)
            arr = z.fixed.build(raw, pos.size, z.arrow_type, z.what)
            check_values(arr, valid, z.what)
            return arr
        assert z.variable is not None
        lengths = _read_le(buf, start[valid], z.length_bytes)
        sizes = np.zeros(pos.size, dtype=np.int64)
        sizes[valid] = lengths
        starts = start + np.where(valid, z.length_bytes, 0)
        offsets = np.zeros(pos.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return z.variable.build(
            offsets, select_ranges(buf, starts, sizes), valid, z.arrow_type, z.what
        )


def _row_spans(starts: IntArray, ends: IntArray) -> tuple[Spans, IntArray, IntArray]:
    """The runs of touching rows' bytes ``[starts[i], ends[i])``: their spans, and the
    first and last row of each."""
    cuts = np.flatnonzero(starts[1:] != ends[:-1]) + 1
    run_first = np.concatenate([[0], cuts])
    run_last = np.concatenate([cuts - 1, [starts.size - 1]])
    spans = list(zip(starts[run_first].tolist(), ends[run_last].tolist(), strict=True))
    return spans, run_first, run_last


def _groups(spans: Spans) -> list[Spans]:
    """Spans (ascending, disjoint) in groups that one read each covers: neighbours
    closer than ``_MERGE_GAP``."""
    groups: list[Spans] = []
    for span in spans:
        if groups and span[0] - groups[-1][-1][1] <= _MERGE_GAP:
            groups[-1].append(span)
        else:
            groups.append([span])
    return groups


def _file_ranges(base: int, spans: Spans) -> Spans:
    """The ``(offset, length)`` in the file of each read :meth:`_read_ranges` makes."""
    return [(base + group[0][0], group[-1][1] - group[0][0]) for group in _groups(spans)]


def _expand(firsts: IntArray, ends: IntArray) -> IntArray:
    """All row numbers of the ranges ``[firsts[i], ends[i])``."""
    spans = ends - firsts
    total = int(spans.sum())
    out_starts = np.cumsum(spans) - spans
    return np.repeat(firsts - out_starts, spans) + np.arange(total, dtype=np.int64)
