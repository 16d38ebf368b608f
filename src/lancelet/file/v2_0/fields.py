"""Reading whole fields (columns and their children) for row ranges and row lists."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from typing import TypeVar, cast

import numpy as np
import pyarrow as pa

from lancelet.errors import CorruptFileError, LanceFileError
from lancelet.file.container import ColumnInfo, Page, RangeSource, check_range
from lancelet.file.v2_0 import list as list_enc
from lancelet.file.v2_0.binary import gather_ranges
from lancelet.file.v2_0.context import PageContext
from lancelet.file.v2_0.dispatch import decode_array, take_array
from lancelet.file.v2_0.layout import FieldNode, Kind
from lancelet.file.v2_0.types import needs_value_check, value_problem, values_per_row

T = TypeVar("T")
# A take wanting more than 1/16 of a page's rows decodes the page whole (and keeps it).
_DECODE_WHOLE = 16


class ColumnPages:
    """One column's pages, with row positions and a one-page decode cache.

    The cache makes sequential batch reads decode each page once while keeping
    memory to a page per column.
    """

    def __init__(
        self,
        source: RangeSource,
        info: ColumnInfo,
        index: int,
        global_buffers: Callable[[], Sequence[pa.Buffer]],
        label: str | None = None,
    ) -> None:
        self.source = source
        self.info = info
        self.index = index
        self.label = label or f"column {index}"
        self._global_buffers = global_buffers
        self.starts = info.row_starts()
        self._cached: tuple[int, object] | None = None

    @property
    def num_rows(self) -> int:
        return int(self.starts[-1])

    def context(self, page_no: int, dtype: pa.DataType | None = None) -> PageContext:
        """What decoding page ``page_no`` needs; ``dtype`` bounds its all-null arrays."""
        page = self.info.pages[page_no]
        buffers = [
            self.source.read(o, s)
            for o, s in zip(page.buffer_offsets, page.buffer_sizes, strict=True)
        ]
        per_row = 1 if dtype is None else values_per_row(dtype)
        return PageContext(
            path=self.source.path,
            what=f"{self.label} page {page_no}",
            page_buffers=buffers,
            column_buffers=lambda: self._column_buffers,
            file_buffers=self._global_buffers,
            decode_fn=decode_array,
            free_values=page.num_rows * per_row + 1,
        )

    @cached_property
    def _column_buffers(self) -> list[pa.Buffer]:
        return [
            self.source.read(o, s)
            for o, s in zip(self.info.buffer_offsets, self.info.buffer_sizes, strict=True)
        ]

    def page(self, page_no: int) -> Page:
        return self.info.pages[page_no]

    def pages_for(self, start: int, end: int) -> range:
        """Page numbers overlapping rows ``[start, end)``."""
        first = int(np.searchsorted(self.starts, start, side="right")) - 1
        last = int(np.searchsorted(self.starts, end, side="left"))
        return range(max(first, 0), min(last, len(self.info.pages)))

    def is_cached(self, page_no: int) -> bool:
        return self._cached is not None and self._cached[0] == page_no

    def cached(self, page_no: int, build: Callable[[int], T]) -> T:
        """``build(page_no)``, remembered until another page of this column is built."""
        if self._cached is not None and self._cached[0] == page_no:
            return cast(T, self._cached[1])
        value = build(page_no)
        self._cached = (page_no, value)
        return value


class FieldReader:
    """Reads one field: ``read(start, end)`` and ``take(rows)`` return Arrow arrays."""

    def __init__(self, node: FieldNode, columns: Sequence[ColumnPages]):
        self.node = node
        self.dtype: pa.DataType = node.field.type
        self.pages = columns[node.column]

    @property
    def num_rows(self) -> int:
        return self.pages.num_rows

    def chunks(self, start: int, end: int) -> list[pa.Array]:
        return [self.read(start, end)]

    def read(self, start: int, end: int) -> pa.Array:
        parts = self.chunks(start, end)
        if len(parts) == 1:
            return parts[0]
        return _concat(parts, self.dtype)

    def take(self, rows: np.ndarray) -> pa.Array:
        raise NotImplementedError


class LeafReader(FieldReader):
    def _decode_page(self, page_no: int) -> pa.Array:
        page = self.pages.page(page_no)
        ctx = self.pages.context(page_no, self.dtype)

        def decode() -> pa.Array:
            arr = decode_array(ctx, page.encoding, page.num_rows, self.dtype)
            ctx.check_all_buffers_used()
            check_values(ctx, arr)
            return arr

        return guarded(ctx, decode)

    def chunks(self, start: int, end: int) -> list[pa.Array]:
        out = []
        for page_no in self.pages.pages_for(start, end):
            arr = self.pages.cached(page_no, self._decode_page)
            assert isinstance(arr, pa.Array)
            first = int(self.pages.starts[page_no])
            lo, hi = max(start - first, 0), min(end - first, len(arr))
            out.append(arr if (lo, hi) == (0, len(arr)) else arr.slice(lo, hi - lo))
        return out

    def take(self, rows: np.ndarray) -> pa.Array:
        page_of = np.searchsorted(self.pages.starts, rows, side="right") - 1
        order = np.argsort(page_of, kind="stable")
        sorted_pages = page_of[order]
        parts = []
        for page_no in np.unique(sorted_pages):
            lo, hi = np.searchsorted(sorted_pages, [page_no, page_no + 1])
            local = rows[order[lo:hi]] - self.pages.starts[page_no]
            parts.append(self._take_from_page(int(page_no), local))
        result = _concat(parts, self.dtype)
        if np.any(order[1:] < order[:-1]):
            result = result.take(pa.array(np.argsort(order)))  # back to the caller's order
        return result

    def _take_from_page(self, page_no: int, local: np.ndarray) -> pa.Array:
        page = self.pages.page(page_no)
        if self.pages.is_cached(page_no) or len(local) * _DECODE_WHOLE > page.num_rows:
            # Enough rows of this page are wanted that decoding it whole is cheaper, or
            # it is decoded already.
            arr = self.pages.cached(page_no, self._decode_page)
            assert isinstance(arr, pa.Array)
            return arr.take(pa.array(local))
        ctx = self.pages.context(page_no, self.dtype)

        def take() -> pa.Array:
            arr = take_array(ctx, page.encoding, page.num_rows, self.dtype, local)
            ctx.check_all_buffers_used()
            check_values(ctx, arr)
            return arr

        return guarded(ctx, take)


class StructReader(FieldReader):
    def __init__(
        self, node: FieldNode, columns: Sequence[ColumnPages], children: list[FieldReader]
    ):
        super().__init__(node, columns)
        self.children = children

    def _assemble(self, arrays: list[pa.Array], length: int) -> pa.Array:
        """The struct of ``length`` rows; its header column carries the length, so a
        struct without fields keeps its rows."""
        for child, arr in zip(self.children, arrays, strict=True):
            if len(arr) != length:
                raise CorruptFileError(
                    f"{self.pages.source.path}: {child.pages.label} gave {len(arr)} rows "
                    f"for {length} rows of its struct {self.pages.label}"
                )
        if not arrays:
            return pa.Array.from_buffers(self.dtype, length, [None], children=[])
        fields = [self.dtype.field(i) for i in range(self.dtype.num_fields)]
        return pa.StructArray.from_arrays(arrays, fields=fields)

    def read(self, start: int, end: int) -> pa.Array:
        return self._assemble([c.read(start, end) for c in self.children], end - start)

    def chunks(self, start: int, end: int) -> list[pa.Array]:
        return [self.read(start, end)]

    def take(self, rows: np.ndarray) -> pa.Array:
        return self._assemble([c.take(rows) for c in self.children], len(rows))


class ListReader(FieldReader):
    def __init__(self, node: FieldNode, columns: Sequence[ColumnPages], child: FieldReader):
        super().__init__(node, columns)
        self.child = child

    @property
    def list_type(self) -> pa.DataType:
        return self.dtype

    def _decode_page(self, page_no: int) -> list_enc.ListPage:
        page = self.pages.page(page_no)
        ctx = self.pages.context(page_no)

        def decode() -> list_enc.ListPage:
            lp = list_enc.decode_page(ctx, page.encoding, page.num_rows)
            ctx.check_all_buffers_used()
            return lp

        return guarded(ctx, decode)

    @cached_property
    def _item_starts(self) -> np.ndarray:
        """The first item of each page: list pages count items from zero.

        The reader checked on opening that the counts add up to the items column.
        """
        counts = [p.encoding.list.num_items for p in self.pages.info.pages]
        starts = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        return starts

    def _ranges(self, start: int, end: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Absolute item (starts, ends) and validity of lists ``[start, end)``."""
        starts, ends, valids = [], [], []
        for page_no in self.pages.pages_for(start, end):
            lp = self.pages.cached(page_no, self._decode_page)
            assert isinstance(lp, list_enc.ListPage)
            first = int(self.pages.starts[page_no])
            lo, hi = max(start - first, 0), min(end - first, len(lp.ends))
            base = int(self._item_starts[page_no])
            page_ends = lp.ends[lo:hi] + base
            prev = lp.ends[lo - 1] + base if lo > 0 else base
            page_starts = np.concatenate(([prev], page_ends[:-1])) if hi > lo else page_ends
            starts.append(page_starts)
            ends.append(page_ends)
            valids.append(np.ones(hi - lo, dtype=bool) if lp.valid is None else lp.valid[lo:hi])
        if not starts:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0, dtype=bool)
        return np.concatenate(starts), np.concatenate(ends), np.concatenate(valids)

    def _assemble(
        self, item_starts: np.ndarray, item_ends: np.ndarray, valid: np.ndarray
    ) -> pa.Array:
        lengths = item_ends - item_starts
        contiguous = len(lengths) == 0 or np.array_equal(item_starts[1:], item_ends[:-1])
        if contiguous:
            lo = int(item_starts[0]) if len(lengths) else 0
            items = self.child.read(lo, int(item_ends[-1]) if len(lengths) else 0)
        else:
            items = self.child.take(gather_ranges(item_starts, lengths))
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        list_type = self.list_type
        large = pa.types.is_large_list(list_type)
        if not large and offsets[-1] >= 2**31:
            raise LanceFileError(
                f"{self.pages.source.path}: {self.pages.label}: {offsets[-1]} items do not "
                f"fit the 32-bit offsets of {self.dtype}; read fewer rows at a time"
            )
        off_type = pa.int64() if large else pa.int32()
        mask = None if valid.all() else pa.array(~valid)
        cls = pa.LargeListArray if large else pa.ListArray
        arr = cls.from_arrays(pa.array(offsets, type=off_type), items, type=list_type, mask=mask)
        return arr

    def read(self, start: int, end: int) -> pa.Array:
        return self._assemble(*self._ranges(start, end))

    def take(self, rows: np.ndarray) -> pa.Array:
        page_of = np.searchsorted(self.pages.starts, rows, side="right") - 1
        starts = np.empty(len(rows), dtype=np.int64)
        ends = np.empty(len(rows), dtype=np.int64)
        valid = np.empty(len(rows), dtype=bool)
        for page_no in np.unique(page_of):
            sel = page_of == page_no
            lp = self._decode_page(int(page_no))
            local = rows[sel] - self.pages.starts[page_no]
            base = int(self._item_starts[page_no])
            ends[sel] = lp.ends[local] + base
            starts[sel] = np.where(local > 0, lp.ends[np.maximum(local - 1, 0)] + base, base)
            valid[sel] = True if lp.valid is None else lp.valid[local]
        return self._assemble(starts, ends, valid)


class BytesListReader(ListReader):
    """A string or binary field an early 2.0 writer stored as a list of uint8."""

    def __init__(self, node: FieldNode, columns: Sequence[ColumnPages], child: FieldReader):
        super().__init__(node, columns, child)
        large = pa.types.is_large_string(self.dtype) or pa.types.is_large_binary(self.dtype)
        self._list_type = pa.large_list(pa.uint8()) if large else pa.list_(pa.uint8())

    @property
    def list_type(self) -> pa.DataType:
        return self._list_type

    def _assemble(
        self, item_starts: np.ndarray, item_ends: np.ndarray, valid: np.ndarray
    ) -> pa.Array:
        lists = super()._assemble(item_starts, item_ends, valid)
        items = lists.values
        if items.null_count:
            raise CorruptFileError(f"{self.pages.source.path}: {self.pages.label} has null bytes")
        values = items.buffers()[1]
        if values is not None and items.offset:
            values = values.slice(items.offset)
        arr = pa.Array.from_buffers(
            self.dtype,
            len(lists),
            [lists.buffers()[0], lists.buffers()[1], values],
            offset=lists.offset,
        )
        try:
            arr.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise CorruptFileError(f"{self.pages.source.path}: {self.pages.label}: {exc}") from exc
        return arr


def _concat(parts: list[pa.Array], dtype: pa.DataType) -> pa.Array:
    if not parts:
        return pa.array([], type=dtype)
    return parts[0] if len(parts) == 1 else concat_pages(parts)


def concat_pages(parts: list[pa.Array]) -> pa.Array:
    """One array from several pages' arrays; dictionary pages each have their own dictionary."""
    if pa.types.is_dictionary(parts[0].type):
        # Arrow cannot unify dictionaries holding nulls (pylance stores null rows as a
        # null item), so such items become null indices first.
        parts = [_without_null_items(p) for p in parts]
        return pa.chunked_array(parts).unify_dictionaries().combine_chunks()
    return pa.concat_arrays(parts)


def _without_null_items(arr: pa.DictionaryArray) -> pa.DictionaryArray:
    """The same values, with rows that point at a null item made null rows."""
    items = arr.dictionary
    if not items.null_count:
        return arr
    keep = np.asarray(items.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    renumber = np.cumsum(keep) - 1
    positions = np.asarray(arr.indices.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    valid = np.asarray(arr.indices.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    valid &= keep[positions]
    indices = pa.array(renumber[positions], type=arr.type.index_type, mask=~valid)
    return pa.DictionaryArray.from_arrays(indices, items.filter(pa.array(keep)))


def check_values(ctx: PageContext, arr: pa.Array) -> None:
    """Refuse a decoded page whose values Arrow's full validation would reject."""
    if needs_value_check(arr.type):
        problem = value_problem(arr)
        if problem is not None:
            raise ctx.corrupt(f"invalid values: {problem}")


def guarded(ctx: PageContext, work: Callable[[], T]) -> T:
    """Run one page's decode, naming the file, column and page in any error.

    Decoders raise lancelet errors for every condition they check; the helpers
    below them (FSST, bit-packing, codecs) do not know the file, so their messages
    gain it here.  As a last resort, Arrow refusing what a decoder built is
    reported as a corrupt page rather than leaking ``ArrowInvalid``.
    """
    try:
        return work()
    except LanceFileError as exc:
        if str(exc).startswith(ctx.path):
            raise
        raise type(exc)(f"{ctx.path}: {ctx.what}: {exc}") from exc
    except pa.ArrowInvalid as exc:
        raise ctx.corrupt(f"the decoded data is not valid: {exc}") from exc


def build_reader(node: FieldNode, columns: Sequence[ColumnPages]) -> FieldReader:
    if node.kind is Kind.STRUCT:
        kids = [build_reader(c, columns) for c in node.children]
        return StructReader(node, columns, kids)
    if node.bytes_as_list:
        return BytesListReader(node, columns, build_reader(node.children[0], columns))
    if node.kind is Kind.LIST:
        return ListReader(node, columns, build_reader(node.children[0], columns))
    return LeafReader(node, columns)


__all__ = ["ColumnPages", "FieldReader", "build_reader", "check_range"]
