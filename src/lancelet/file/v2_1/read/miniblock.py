"""Mini-block pages: small chunks of levels and compressed values.

Buffers of a page: 0 the chunk metadata (a word per chunk: the low 4 bits give
log2 of the chunk's value count, except in the last chunk whose count is what
remains of ``num_items``; the rest give the chunk's size in 8-byte words, minus
one; words are u16 in 2.1 and u32 with ``has_large_chunk``, 2.2), 1 the chunks, then
the dictionary (when the layout has one) and the repetition index (when
``repetition_index_depth > 0``: per chunk, the rows that finish in it and the level
entries after its last finished row).

A chunk: u16 level count, u16 size of its rep and of its def buffer (when present),
one size per value buffer (u16, or u32 with ``has_large_chunk``), padding to 8, then
each buffer padded to 8.  Reads decode only the chunks that hold the rows asked for,
all of them in one batch per buffer kind, and read only those chunks' bytes (the
chunk buffer is a :class:`~.page_buffer.PageBuffer`).  A take whose rows lie in a
few chunks of a page without lists reads each of those chunks on its own and, where
the value codec can (:class:`~.codec.PickingCodec`), decodes only the values
asked for; any doubt about a chunk sends the take down the batched path, whose checks
and errors are the reference.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import pyarrow as pa

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import CorruptFileError, LanceFileError
from lancelet.file.codecs._chunks import sorted_groups
from lancelet.file.container import RangeSource
from lancelet.file.v2_1.read import compression, dictionaries
from lancelet.file.v2_1.read.arrow import dictionary_array, to_arrow
from lancelet.file.v2_1.read.chunk_meta import ALIGN, FEW_CHUNKS, chunk_table, header_words, pad
from lancelet.file.v2_1.read.codec import BlockCodec, MiniBlockCodec, SelectiveCodec
from lancelet.file.v2_1.read.context import PageRef, guarded
from lancelet.file.v2_1.read.fixed_width import OutOfLineBitpacking
from lancelet.file.v2_1.read.levels import check_levels, visible
from lancelet.file.v2_1.read.miniblock_plan import plan_of, selective
from lancelet.file.v2_1.read.page import LevelledPage
from lancelet.file.v2_1.read.page_buffer import PageBuffer, read_whole
from lancelet.file.v2_1.read.values import (
    I64,
    U8,
    Fixed,
    Slices,
    Values,
    concat_values,
    gather_ranges,
    take_values,
)

# What a chunk whose bytes contradict each other may raise on the way; the batched
# path then reads it again and reports the damage.
_DOUBT = (
    LanceFileError,
    ValueError,
    IndexError,
    OverflowError,
    TypeError,
    BufferError,
    struct.error,
    pa.ArrowInvalid,
    pa.ArrowIndexError,
)


@dataclass(frozen=True)
class _Decoded:
    """Levels and values of some chunks, back to back, with where each chunk starts."""

    rep: np.ndarray | None
    defs: np.ndarray | None
    values: pa.Array
    level_starts: I64  # per decoded chunk: its first entry
    num_levels: int


@dataclass(frozen=True)
class ChunkPieces:
    """Where the buffers of some chunks lie: per chunk, its level entries, the start
    and size of each level buffer (repetition first), and its value buffers."""

    num_levels: I64
    level_starts: list[I64]
    level_sizes: list[I64]
    values: list[Slices]


@dataclass(frozen=True)
class _Raw:
    """:class:`_Decoded` before its values become Arrow."""

    rep: np.ndarray | None
    defs: np.ndarray | None
    values: Values
    level_starts: I64
    num_levels: int


def _distinct(values: I64) -> tuple[I64, I64]:
    """``np.unique(values, return_inverse=True)``, without its sort when the values
    ascend already (the indices of a BTREE page's sorted keys do)."""
    if len(values) and bool((values[1:] >= values[:-1]).all()):
        first = np.empty(len(values), dtype=bool)
        first[0] = True
        np.not_equal(values[1:], values[:-1], out=first[1:])
        return values[first], np.cumsum(first, dtype=np.int64) - 1
    found, inverse = np.unique(values, return_inverse=True)
    return found, inverse.reshape(-1)


class MiniBlockPage:
    """A :class:`~.page.PageDecoder` for one mini-block page of one leaf column."""

    def __init__(
        self,
        ref: PageRef,
        layout: pb.MiniBlockLayout,
        source: RangeSource,
        buffers: tuple[Sequence[int], Sequence[int]],
        num_rows: int,
        dtype: pa.DataType,
    ) -> None:
        """``buffers``: the offsets and sizes of the page's buffers in ``source``
        (checked to lie in it when the file was opened)."""
        self.ref = ref
        self.layout = layout
        self.dtype = dtype
        self._rows = num_rows
        # Decoded when first needed (a plain attribute, not a cached_property: that
        # would give each of a compaction's thousand pages an instance dict).
        self._dictionary: pa.Array | None = None
        # Whether a read took a few of its dictionary's items already (the next one
        # decodes the whole dictionary and keeps it: a page read again and again).
        self._picked_items = False
        guarded(ref, lambda: self._setup(source, *buffers))

    # -- page structure -------------------------------------------------------------

    def _setup(self, source: RangeSource, offsets: Sequence[int], sizes: Sequence[int]) -> None:
        # The codecs, shape and layout checks are shared by the pages laid out alike.
        plan = self.plan = plan_of(self.layout)
        self.shape = plan.shape
        self.has_rep, self.has_def = plan.has_rep, plan.has_def
        self.value_codec, self._pick = plan.value_codec, plan.pick
        self.rep_codec, self.def_codec = plan.rep_codec, plan.def_codec
        if len(offsets) != plan.num_page_buffers:
            raise CorruptFileError(
                f"the page has {len(offsets)} buffers, {plan.num_page_buffers} expected"
            )
        # The chunks are read as they are decoded (see page_buffer); the other
        # buffers are small, or needed whole: read now.
        self.chunk_buffer = PageBuffer(source, offsets[1], sizes[1])
        self._dict_buffer = read_whole(source, offsets[2], sizes[2]) if plan.has_dict else None
        self._chunks(source.read(offsets[0], sizes[0]).to_pybytes())
        index = read_whole(source, offsets[-1], sizes[-1]) if plan.depth > 0 else None
        self._row_index(index, plan.depth)

    def _chunks(self, meta: bytes) -> None:
        word = 4 if self.layout.has_large_chunk else 2
        items, size = int(self.layout.num_items), len(self.chunk_buffer)
        table = chunk_table(meta, word, items, size)
        self.sizes, self.offsets, self.counts, self.item_starts = table[:4]
        self.fewest_values = table.fewest  # in a chunk

    def _row_index(self, index: U8 | None, depth: int) -> None:
        n = len(self.counts)
        self.indexed = True
        if not self.has_rep:
            # A row is an item: the chunk value counts are the row index.
            if int(self.layout.num_items) != self._rows:
                raise CorruptFileError(
                    f"a page without lists holds {self.layout.num_items} items "
                    f"for {self._rows} rows"
                )
            self.chunk_rows, self.first_row = self.counts, self.item_starts
            return
        self.preamble = np.zeros(n, dtype=bool)
        self.trailer = np.zeros(n, dtype=bool)
        if index is None:
            self.indexed = False  # rows are found by decoding the whole page
            rows = np.zeros(n, dtype=np.int64)
        else:
            stride = depth + 1
            if len(index) != 8 * stride * n:
                raise CorruptFileError(
                    f"the repetition index holds {len(index)} bytes for {n} chunks"
                )
            table = np.ascontiguousarray(index).view("<u8").reshape(n, stride)
            if n and int(table.max()) > 2**48:
                raise CorruptFileError("a repetition index entry is out of range")
            ends = table[:, 0].astype(np.int64)
            self.trailer = table[:, 1] > 0
            self.preamble[1:] = self.trailer[:-1]
            rows = ends + self.trailer - self.preamble
            if n and (bool(self.trailer[-1]) or bool(np.any(rows < 0))):
                raise CorruptFileError("the repetition index does not describe whole rows")
        self.chunk_rows = rows
        self.first_row = np.cumsum(rows) - rows
        if self.indexed and int(rows.sum()) != self._rows:
            raise CorruptFileError(f"the chunks hold {int(rows.sum())} rows, the page {self._rows}")
        # The chunk where a run of continued rows ends: the next chunk with no trailer.
        whole = np.flatnonzero(~self.trailer)
        self.run_end = whole[np.searchsorted(whole, np.arange(n))] if n else whole

    @property
    def dictionary(self) -> pa.Array:
        """The page's dictionary items, decoded once."""
        return self._decoded_dictionary(shared=False)

    def _decoded_dictionary(self, shared: bool) -> pa.Array:
        """``shared``: for a read much shorter than the dictionary, which is kept for
        the next reader of the same bytes (see :mod:`.dictionaries`); a long read
        decodes it without the cost of keying it by its bytes."""
        if self._dictionary is None:
            assert self._dict_buffer is not None
            items, buffer = self.dictionary_items(), self._dict_buffer

            def decode() -> pa.Array:
                return to_arrow(self._dictionary_codec.decode(buffer, items), self.item_type)

            if shared:
                encoding = self.layout.dictionary.SerializeToString()
                self._dictionary = dictionaries.decoded(
                    encoding, buffer, items, self.item_type, decode
                )
            else:
                self._dictionary = decode()
        return self._dictionary

    @property
    def dictionary_decoded(self) -> bool:
        """Whether :attr:`dictionary` was asked for already."""
        return self._dictionary is not None

    def dictionary_items(self) -> int:
        """How many items the page's dictionary holds, checked against its size."""
        assert self._dict_buffer is not None
        items = int(self.layout.num_dictionary_items)
        most = self.plan.most_dictionary_items(len(self._dict_buffer))
        if most is not None and items > most:
            raise CorruptFileError(
                f"a dictionary of {items} items in {len(self._dict_buffer)} bytes"
            )
        return items

    @property
    def _dictionary_codec(self) -> BlockCodec:
        return self.plan.dictionary_codec

    @property
    def dict_buffer(self) -> U8 | None:
        """The page's dictionary bytes (None: no dictionary)."""
        return self._dict_buffer

    @property
    def item_type(self) -> pa.DataType:
        return self.dtype.value_type if pa.types.is_dictionary(self.dtype) else self.dtype

    def _few_from_dictionary(self, indices: Values, share: int) -> pa.Array | None:
        """The items ``indices`` point at, decoding only those when the dictionary's
        codec can and they are few (at most one in ``share`` items); None: decode the
        whole dictionary (also for the page's second such read: a page read again and
        again, as by repeated lookups, decodes it once and keeps it)."""
        items = int(self.layout.num_dictionary_items)
        codec = self._dictionary_codec
        if (
            self.dictionary_decoded
            or self._picked_items
            or not isinstance(codec, OutOfLineBitpacking)
            or not isinstance(indices, Fixed)
            or indices.bits not in (8, 16, 32, 64)
            or share * indices.count > items
            or pa.types.is_dictionary(self.dtype)
        ):
            return None
        assert self._dict_buffer is not None
        raw = indices.as_uint().astype(np.int64)
        if len(raw) and int(raw.max()) >= items:
            raise CorruptFileError(
                f"a dictionary index {int(raw.max())} is past the {items} dictionary items"
            )
        wanted, inverse = _distinct(raw)
        # Repeated as numpy values, then made Arrow once (an Arrow take costs more).
        picked = take_values(codec.decode_at(self._dict_buffer, items, wanted), inverse)
        self._picked_items = True
        return to_arrow(picked, self.item_type)

    # -- decoding chunks --------------------------------------------------------------

    def chunk_data(self, ids: I64) -> tuple[U8, I64]:
        """The bytes of chunks ``ids`` (ascending) and where each starts in them."""
        return self.chunk_buffer.gather(self.offsets[ids], self.sizes[ids])

    def _decode(self, ids: I64) -> _Decoded:
        raw = self.decode_raw(*self.chunk_data(ids), self.sizes[ids], self.counts[ids])
        return _Decoded(
            raw.rep, raw.defs, self.values_to_arrow(raw.values), raw.level_starts, raw.num_levels
        )

    def values_to_arrow(self, values: Values, few: bool = False) -> pa.Array:
        """``few``: values of a take, whose dictionary items may be decoded alone.  A
        range read decodes alone the items of a run much shorter than the dictionary
        (a BTREE index page of 4,096 sorted keys in a file page whose dictionary holds
        every distinct key: its items lie in a chunk or two of the dictionary's)."""
        if self._dict_buffer is not None:
            found = self._few_from_dictionary(values, 16 if few else 4)
            if found is not None:
                return found
            shared = 4 * values.count < int(self.layout.num_dictionary_items)
            return dictionary_array(values, self._decoded_dictionary(shared), self.dtype, None)
        return to_arrow(values, self.dtype)

    def chunk_pieces(self, data: U8, starts: I64, sizes: I64) -> ChunkPieces:
        """The buffers of the chunks at ``starts`` of ``data`` (of ``sizes`` bytes),
        found from their headers and checked to fill each chunk."""
        nbuf = int(self.layout.num_buffers)
        big = 4 if self.layout.has_large_chunk else 2
        small_fields = 1 + int(self.has_rep) + int(self.has_def)
        header = int(pad(np.array([2 * small_fields + big * nbuf]))[0])
        if len(starts) and int(sizes.min()) < header:
            raise CorruptFileError("a chunk is smaller than its header")
        words, size_words = header_words(data, starts, small_fields, big, nbuf)
        fields = list(words.T)
        buf_sizes = list(size_words.T)
        num_levels = fields[0]
        pos = starts + header
        level_sizes = fields[1:]
        level_starts_in_chunk = []
        for size in level_sizes:
            level_starts_in_chunk.append(pos)
            pos = pos + pad(size)
        value_slices = []
        for size in buf_sizes:
            value_slices.append(Slices(data, pos, size))
            pos = pos + pad(size)
        if bool(np.any(pos - starts != sizes)):
            raise CorruptFileError("a chunk's buffer sizes do not add up to the chunk's size")
        return ChunkPieces(num_levels, level_starts_in_chunk, level_sizes, value_slices)

    def decode_raw(
        self,
        data: U8,
        starts: I64,
        sizes: I64,
        counts: I64,
        select: I64 | None = None,
        values_codec: MiniBlockCodec | None = None,
    ) -> _Raw:
        """Chunks at ``starts`` of ``data`` (their sizes and value counts given), decoded
        with this page's codecs but not yet made Arrow; any page with the same
        :attr:`batch_key` decodes the same way (FSST values up to their expansion,
        each page with its own symbol table), so chunks of several pages may come in
        one batch.  With ``select`` (positions among the chunks' values), the values
        are only those; codecs that can leave the others undecoded do.
        ``values_codec``: decode the values with it instead of the page's."""
        pieces = self.chunk_pieces(data, starts, sizes)
        num_levels, level_starts_in_chunk = pieces.num_levels, pieces.level_starts
        value_slices = pieces.values
        rep = defs = None
        levels = list(pieces.level_sizes)
        if (self.has_rep or self.has_def) and bool(np.any(num_levels < counts)):
            raise CorruptFileError("a chunk has fewer level entries than values")
        if self.rep_codec is not None:
            rep = self._levels(
                self.rep_codec, data, level_starts_in_chunk[0], levels[0], num_levels, "repetition"
            )
            level_starts_in_chunk, levels = level_starts_in_chunk[1:], levels[1:]
        if self.def_codec is not None:
            defs = self._levels(
                self.def_codec, data, level_starts_in_chunk[0], levels[0], num_levels, "definition"
            )
        if rep is None and defs is not None and bool(np.any(num_levels != counts)):
            raise CorruptFileError("a chunk without lists has more level entries than values")
        values = self._values(value_slices, counts, select, values_codec)
        total_levels = (
            int(num_levels.sum()) if (self.has_rep or self.has_def) else int(counts.sum())
        )
        per_chunk = num_levels if (self.has_rep or self.has_def) else counts
        return _Raw(rep, defs, values, np.cumsum(per_chunk) - per_chunk, total_levels)

    def _values(
        self,
        slices: list[Slices],
        counts: I64,
        select: I64 | None,
        codec: MiniBlockCodec | None = None,
    ) -> Values:
        if codec is None:
            codec = self.value_codec
        expected = int(counts.sum())
        if select is not None and selective(type(codec)):
            picked = cast(SelectiveCodec, codec).decode_selected(slices, counts, select)
            if picked is not None:
                return picked
        values = codec.decode(slices, counts)
        if values.count != expected:
            raise CorruptFileError(
                f"the chunks decode to {values.count} values, {expected} expected"
            )
        return values if select is None else take_values(values, select)

    @staticmethod
    def _levels(
        codec: BlockCodec,
        data: U8,
        starts: I64,
        sizes: I64,
        num_levels: I64,
        what: str,
    ) -> np.ndarray:
        values = codec.decode_chunks(Slices(data, starts, sizes), num_levels)
        return compression.levels_of(values, int(num_levels.sum()), what)

    # -- rows -------------------------------------------------------------------------

    @property
    def num_rows(self) -> int:
        return self._rows

    def read(self, start: int, end: int) -> LevelledPage:
        return guarded(self.ref, lambda: self._read(start, end))

    def take(self, rows: np.ndarray) -> LevelledPage:
        return guarded(self.ref, lambda: self._take(np.asarray(rows, dtype=np.int64)))

    def levelled_page(
        self, rep: np.ndarray | None, defs: np.ndarray | None, values: pa.Array
    ) -> LevelledPage:
        check_levels(self.shape, rep, defs)
        return LevelledPage(rep, defs, values, self.shape.layers)

    def _read(self, start: int, end: int) -> LevelledPage:
        if not 0 <= start <= end <= self._rows:
            raise IndexError(f"rows [{start}, {end}) are outside the page's {self._rows}")
        if start == end:
            return self.levelled_page(*self._empty())
        if not self.has_rep:
            ids = self.chunks_holding(start, end)
            decoded = self._decode(ids)
            lo = start - int(self.item_starts[ids[0]])
            hi = lo + (end - start)
            return self.levelled_page(
                None, _cut(decoded.defs, lo, hi), decoded.values.slice(lo, hi - lo)
            )
        ids, row0 = self._chunks_for_range(start, end)
        decoded = self._decode(ids)
        positions = self._row_starts(decoded, ids)
        first = start - row0
        lo = int(positions[first])
        hi = int(positions[end - row0]) if end - row0 < len(positions) else decoded.num_levels
        return self._levels_range(decoded, lo, hi)

    def chunks_holding(self, start: int, end: int) -> I64:
        """The chunks holding values ``[start, end)`` of a page without lists (not
        empty: ``start < end``)."""
        c0 = int(np.searchsorted(self.item_starts, start, side="right")) - 1
        c1 = int(np.searchsorted(self.item_starts, end, side="left"))
        return np.arange(c0, c1, dtype=np.int64)

    def _chunks_for_range(self, start: int, end: int) -> tuple[I64, int]:
        if not self.indexed:
            return np.arange(len(self.counts), dtype=np.int64), 0
        row_ends = self.first_row + self.chunk_rows
        c0 = int(np.searchsorted(row_ends, start, side="right"))
        c1 = int(self.run_end[int(np.searchsorted(row_ends, end - 1, side="right"))])
        return np.arange(c0, c1 + 1, dtype=np.int64), int(self.first_row[c0])

    def _row_starts(self, decoded: _Decoded, ids: I64) -> I64:
        """Where each row starts among the decoded entries, checked against the index."""
        assert decoded.rep is not None
        positions = np.flatnonzero(decoded.rep == self.shape.max_rep)
        chunk = np.searchsorted(decoded.level_starts, positions, side="right") - 1
        found = np.bincount(chunk, minlength=len(ids))
        if not self.indexed:
            if len(positions) != self._rows or (len(decoded.rep) and positions[0] != 0):
                raise CorruptFileError(
                    f"the repetition levels hold {len(positions)} rows, the page {self._rows}"
                )
            return positions
        nonempty = decoded.level_starts < decoded.num_levels
        opens = np.zeros(len(ids), dtype=bool)
        first = decoded.level_starts[nonempty]
        opens[nonempty] = decoded.rep[first] == self.shape.max_rep
        if not np.array_equal(found, self.chunk_rows[ids]) or bool(
            np.any(opens[nonempty] == self.preamble[ids][nonempty])
        ):
            raise CorruptFileError("the repetition index disagrees with the repetition levels")
        return positions

    def _levels_range(self, decoded: _Decoded, lo: int, hi: int) -> LevelledPage:
        vis = visible(self.shape, decoded.defs, decoded.num_levels)
        before: I64 = np.cumsum(vis) - vis
        v_lo = int(before[lo]) if lo < len(before) else int(vis.sum())
        v_hi = int(before[hi]) if hi < len(before) else int(vis.sum())
        return self.levelled_page(
            _cut(decoded.rep, lo, hi),
            _cut(decoded.defs, lo, hi),
            decoded.values.slice(v_lo, v_hi - v_lo),
        )

    def _empty(self) -> tuple[np.ndarray | None, np.ndarray | None, pa.Array]:
        none = np.zeros(0, dtype=np.uint16)
        values = pa.array([], type=self.dtype)
        return (none if self.has_rep else None, none if self.has_def else None, values)

    def _take(self, rows: I64) -> LevelledPage:
        if len(rows) == 0:
            return self.levelled_page(*self._empty())
        if int(rows[0]) < 0 or int(rows[-1]) >= self._rows or bool((rows[1:] <= rows[:-1]).any()):
            raise IndexError(f"rows to take must be sorted, unique and inside {self._rows}")
        if not self.has_rep:
            few = self._take_few(rows) if self._pick is not None else None
            if few is not None:
                return few
            ids, local = self.flat_positions(rows, np.zeros(1, np.int64))
            raw = self.decode_raw(*self.chunk_data(ids), self.sizes[ids], self.counts[ids], local)
            defs = None if raw.defs is None else raw.defs[local]
            return self.levelled_page(None, defs, self.values_to_arrow(raw.values, few=True))
        ids = self._chunks_for_rows(rows)
        decoded = self._decode(ids)
        positions = self._row_starts(decoded, ids)
        row_ids = self._row_numbers(decoded, ids, positions)
        k = np.searchsorted(row_ids, rows)
        if bool(np.any(k >= len(row_ids))) or not np.array_equal(
            row_ids[np.minimum(k, len(row_ids) - 1)], rows
        ):
            raise CorruptFileError("a row is missing from the chunks the repetition index names")
        lo = positions[k]
        bounds = np.union1d(positions, self._segment_starts(decoded, ids))
        bounds = np.append(bounds, decoded.num_levels)
        hi = bounds[np.searchsorted(bounds, lo, side="right")]
        picks = gather_ranges(lo, hi - lo)
        vis = visible(self.shape, decoded.defs, decoded.num_levels)
        before = np.append(np.cumsum(vis) - vis, int(vis.sum()))
        value_picks = gather_ranges(before[lo], before[hi] - before[lo])
        return self.levelled_page(
            None if decoded.rep is None else decoded.rep[picks],
            None if decoded.defs is None else decoded.defs[picks],
            decoded.values.take(pa.array(value_picks)),
        )

    # -- small takes, chunk by chunk (no lists) --------------------------------------

    @property
    def _header(self) -> tuple[struct.Struct, int]:
        return self.plan.header

    def takes_few(self, rows: I64) -> bool:
        """Whether a take of ``rows`` (sorted, in range) reads them chunk by chunk."""
        if self.has_rep or self._pick is None or not len(rows):
            return False
        return self._chunk_span(rows) < FEW_CHUNKS

    def _chunk_span(self, rows: I64) -> int:
        """How many chunks lie between the first and the last of ``rows``, less one."""
        starts = self.item_starts
        first = int(starts.searchsorted(rows[0], side="right"))
        return int(starts.searchsorted(rows[-1], side="right")) - first

    def _take_few(self, rows: I64) -> LevelledPage | None:
        """Rows (sorted, unique, in range) of a page without lists that lie in a few
        chunks, read chunk by chunk and, where the value codec can, value by value;
        None when they span more chunks, or a chunk looks wrong in any way (the
        batched path then reads them and raises what it finds)."""
        starts = self.item_starts
        first = int(starts.searchsorted(rows[0], side="right")) - 1
        last = int(starts.searchsorted(rows[-1], side="right")) - 1
        if last - first >= FEW_CHUNKS:
            return None
        try:
            return self._pick_chunks(rows, first, last)
        except _DOUBT:
            return None

    def _pick_chunks(self, rows: I64, first: int, last: int) -> LevelledPage | None:
        chunk_starts = self.item_starts[first : last + 1]
        cuts = np.append(rows.searchsorted(chunk_starts), len(rows))
        holding = np.flatnonzero(cuts[1:] > cuts[:-1])  # chunks holding some of the rows
        data, at = self.chunk_data(first + holding)
        view = memoryview(np.ascontiguousarray(data).data)
        parts: list[Values] = []
        levels: list[np.ndarray] = []
        for k, start in zip(holding.tolist(), at.tolist(), strict=True):
            local = rows[int(cuts[k]) : int(cuts[k + 1])] - int(chunk_starts[k])
            picked = self._pick_chunk(first + k, local, data, view, start)
            if picked is None:
                return None
            parts.append(picked[0])
            if picked[1] is not None:
                levels.append(picked[1])
        defs = None
        if self.has_def:
            defs = levels[0] if len(levels) == 1 else np.concatenate(levels)
        return self.levelled_page(None, defs, self.values_to_arrow(concat_values(parts), few=True))

    def _pick_chunk(
        self, chunk: int, local: I64, data: U8, view: memoryview, start: int
    ) -> tuple[Values, np.ndarray | None] | None:
        """Values (and definition levels) ``local`` of one chunk, whose bytes are at
        ``start`` of ``data`` (``view`` is its memoryview), checked as
        :meth:`decode_raw` checks it; None if any check fails."""
        assert self._pick is not None
        size = int(self.sizes[chunk])
        count = int(self.counts[chunk])
        layout, header = self._header
        if size < header:
            return None
        fields = layout.unpack_from(view, start)
        pos = start + header
        def_at = def_size = 0
        small = 1
        if self.has_def:
            def_at, def_size, small = pos, fields[1], 2
            pos += -(-def_size // ALIGN) * ALIGN
        buffers = []
        for buffer_size in fields[small:]:
            buffers.append(data[pos : pos + buffer_size])
            pos += -(-buffer_size // ALIGN) * ALIGN
        if pos - start != size:
            return None
        defs = None
        if self.def_codec is not None:
            num_levels = fields[0]
            if num_levels != count:
                return None
            one = np.array([num_levels], np.int64)
            where = Slices(data, np.array([def_at], np.int64), np.array([def_size], np.int64))
            decoded = self.def_codec.decode_chunks(where, one)
            defs = compression.levels_of(decoded, num_levels, "definition")[local]
        values = self._pick(buffers, count, local)
        return None if values is None else (values, defs)

    def flat_positions(self, rows: I64, first: I64) -> tuple[I64, I64]:
        """Without lists: the chunks holding ``rows`` and where each row lies among
        those chunks' values decoded back to back after ``first[0]`` others."""
        starts = self.item_starts
        # Chunks tile the page: the rows in each, from where each chunk's first row
        # falls among the sorted rows (a search per chunk, not one per row).
        per = np.diff(rows.searchsorted(starts), append=len(rows))
        if len(rows) and len(starts) and bool((per > 0).all()):
            # Every chunk holds a wanted row (a scan's take of most rows): all are
            # decoded, and a row lies where it lies in the page.
            before = int(first[0])
            first[0] += int(starts[-1] + self.counts[-1])
            return np.arange(len(starts), dtype=np.int64), rows + before
        ids = np.flatnonzero(per)
        counts = self.counts[ids]
        before = np.cumsum(counts) - counts + first[0]
        first[0] += int(counts.sum())
        return ids, rows + np.repeat(before - starts[ids], per[ids])

    @property
    def batch_key(self) -> bytes | None:
        """Pages of one column with the same key decode their chunks alike (one
        batch for a take); None: this page takes rows on its own."""
        return self.plan.batch_key

    def chunk_ranges(self, rows: I64) -> list[tuple[int, int]]:
        """Where in the file lie the chunks a take of ``rows`` (sorted, unique) decodes,
        announced to an object store first so that only they are fetched."""
        if not len(rows):
            return []
        if self.has_rep:
            ids = self._chunks_for_rows(rows)
        else:
            ids, _ = sorted_groups(np.searchsorted(self.item_starts, rows, side="right") - 1)
        return self.chunk_buffer.ranges(self.offsets[ids], self.sizes[ids])

    def _chunks_for_rows(self, rows: I64) -> I64:
        n = len(self.counts)
        if not self.indexed:
            return np.arange(n, dtype=np.int64)
        row_ends = self.first_row + self.chunk_rows
        first = np.searchsorted(row_ends, rows, side="right")
        last = self.run_end[first]
        marks = np.zeros(n + 1, dtype=np.int64)
        np.add.at(marks, first, 1)
        np.add.at(marks, last + 1, -1)
        return np.flatnonzero(np.cumsum(marks)[:n] > 0).astype(np.int64)

    def _row_numbers(self, decoded: _Decoded, ids: I64, positions: I64) -> I64:
        """The page row number of each row start among the decoded entries."""
        if not self.indexed:
            return np.arange(len(positions), dtype=np.int64)
        chunk = np.searchsorted(decoded.level_starts, positions, side="right") - 1
        first_in_chunk = np.searchsorted(positions, decoded.level_starts)
        rank = np.arange(len(positions)) - first_in_chunk[chunk]
        numbers: I64 = self.first_row[ids[chunk]] + rank
        return numbers

    @staticmethod
    def _segment_starts(decoded: _Decoded, ids: I64) -> I64:
        """Where a decoded chunk follows one that was not decoded: its leading entries
        continue a row that is not wanted."""
        breaks = np.ones(len(ids), dtype=bool)
        breaks[1:] = ids[1:] != ids[:-1] + 1
        starts: I64 = decoded.level_starts[breaks]
        return starts


def _cut(levels: np.ndarray | None, lo: int, hi: int) -> np.ndarray | None:
    return None if levels is None else levels[lo:hi]
