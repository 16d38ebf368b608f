"""Reading whole fields of a 2.1 / 2.2 file for row ranges and row lists.

Each leaf column is read on its own, page by page, into its items and the
validity/offsets of every layer above them (:mod:`.levels`); a field is then put
together from its leaves: a struct's validity and a list's offsets come from the
first leaf below it (every leaf below carries the same).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import CorruptFileError, LanceFileError
from lancelet.file.codecs._chunks import sorted_groups
from lancelet.file.container import ColumnInfo, Page, RangeSource
from lancelet.file.parallel import WORKERS
from lancelet.file.v2_0.fields import concat_pages
from lancelet.file.v2_1.read import blob, fullzip, page_batches
from lancelet.file.v2_1.read.constant import ConstantPage
from lancelet.file.v2_1.read.context import PageRef, guarded
from lancelet.file.v2_1.read.layout import Kind, Node
from lancelet.file.v2_1.read.levels import Layer, LayerShape, is_list, unravel
from lancelet.file.v2_1.read.miniblock import MiniBlockPage
from lancelet.file.v2_1.read.page import LevelledPage, PageDecoder
from lancelet.file.v2_1.read.page_buffer import read_whole
from lancelet.file.v2_1.read.values import I64, Bools

# (offset, length) byte ranges of the file, as a take announces them (see prefetch).
Ranges = list[tuple[int, int]]
# Runs of at most this many pages whose rows lie in few chunks are taken page by page.
_FEW_PAGES = 4
# The layers of a top-level column whose items cannot be null.
_PLAIN = (pb.REPDEF_ALL_VALID_ITEM,)
# A page read is cut for several decoding threads above twice this many rows; pieces
# are multiples of the alignment, so that batches cut from them stay whole.
_PIECE_ROWS = 64 * 1024
_PIECE_ALIGN = 8192
# What a batch of pages decoded together may raise when one of them is damaged: the
# pages are then read one by one, whose errors name the page.
BATCH_ERRORS = (
    LanceFileError,
    pa.ArrowInvalid,
    pa.ArrowIndexError,
    IndexError,
    ValueError,
    OverflowError,
)


class _Countdown:
    """Calls ``then`` when the last of ``count`` jobs has counted down."""

    def __init__(self, count: int, then: Callable[[], None]) -> None:
        self._left = count
        self._then = then
        self._lock = threading.Lock()

    def count_down(self) -> None:
        with self._lock:
            self._left -= 1
            last = self._left == 0
        if last:
            self._then()


@lru_cache(maxsize=256)
def _shape(layers: tuple[int, ...]) -> LayerShape:
    return LayerShape.of(layers)


class LeafColumn:
    """One leaf column's pages, with their row positions and decoders."""

    def __init__(
        self,
        source: RangeSource,
        info: ColumnInfo,
        index: int,
        label: str,
        node: Node,
        lineage: tuple[Kind, ...],
        release: Callable[[Ranges], None] = lambda ranges: None,
    ) -> None:
        self.source = source
        self._release = release  # a read is done with these bytes (see InputFile.release)
        self.info = info
        self.index = index
        self.label = label
        self.node = node
        self.dtype: pa.DataType = node.field.type
        self.lineage = lineage  # the kinds of the leaf and its ancestors, leaf first
        self.starts = info.row_starts()
        self._decoders: dict[int, PageDecoder] = {}

    @property
    def num_rows(self) -> int:
        return int(self.starts[-1])

    def ref(self, page_no: int) -> PageRef:
        return PageRef(self.source.path, self.label, page_no)

    def decoder(self, page_no: int) -> PageDecoder:
        found = self._decoders.get(page_no)
        if found is None:
            found = self._make_decoder(page_no)
            self._decoders[page_no] = found
        return found

    def _make_decoder(self, page_no: int) -> PageDecoder:
        page = self.info.pages[page_no]
        ref = self.ref(page_no)
        if page.layout is None:
            raise ref.corrupt("the page has no 2.1 page layout")
        return self._layout_decoder(ref, page, page.layout, self.dtype)

    def _layout_decoder(
        self, ref: PageRef, page: Page, layout: pb.PageLayout, dtype: pa.DataType
    ) -> PageDecoder:
        kind = layout.WhichOneof("layout")
        if kind == "full_zip_layout":
            # Full-zip pages read the byte ranges of the rows asked for, not the page.
            zipped = layout.full_zip_layout
            return fullzip.decoder(
                self.source, page, zipped, self.label, dtype, page_index=ref.page
            )
        if kind == "blob_layout":

            def inner(described: pb.PageLayout, inner_type: pa.DataType) -> PageDecoder:
                return self._layout_decoder(ref, page, described, inner_type)

            blobs = layout.blob_layout
            return blob.decoder(
                self.source, page, blobs, self.label, dtype, inner, page_index=ref.page
            )
        offsets, sizes = page.buffer_offsets, page.buffer_sizes
        if kind == "mini_block_layout":
            return MiniBlockPage(
                ref, layout.mini_block_layout, self.source, (offsets, sizes), page.num_rows, dtype
            )
        located = zip(offsets, sizes, strict=True)
        buffers = [read_whole(self.source, o, s) for o, s in located]
        if kind == "constant_layout":
            return ConstantPage(ref, layout.constant_layout, buffers, page.num_rows, dtype)
        raise ref.corrupt("the page names no layout")

    def pages_for(self, start: int, end: int) -> range:
        first = int(np.searchsorted(self.starts, start, side="right")) - 1
        last = int(np.searchsorted(self.starts, end, side="left"))
        return range(max(first, 0), min(last, len(self.info.pages)))

    def page_spans(self, start: int, end: int) -> list[tuple[int, int, int]]:
        """Each page holding rows of ``[start, end)``, with those rows' span in it."""
        spans = []
        for page_no in self.pages_for(start, end):
            first = int(self.starts[page_no])
            lo, hi = max(start - first, 0), min(end, int(self.starts[page_no + 1])) - first
            if hi > lo:
                spans.append((page_no, lo, hi))
        return spans

    # -- rows of the leaf ------------------------------------------------------------

    def read(self, start: int, end: int) -> list[LeafRows]:
        return [job() for job in self.page_jobs(start, end)]

    def page_jobs(
        self, start: int, end: int, *, split: bool = False
    ) -> list[Callable[[], LeafRows]]:
        """The rows of each page in ``[start, end)``, one job per page: pages decode
        independently, so the jobs may run on several threads.  ``split``: a large
        page is cut into a job per worker too, so that a column of one big page (a
        writer's default for a fragment of a few hundred thousand rows) does not
        decode on one thread while the others wait."""
        jobs: list[Callable[[], LeafRows]] = []
        for page_no, lo, hi in self.page_spans(start, end):
            pieces = _pieces(lo, hi) if split else [(lo, hi)]
            if len(pieces) > 1:
                self.decoder(page_no)  # made here, not by two jobs at once
            # A read through the page's last row is done with its bytes once all its
            # pieces are (a scan reads pages in order; a later read maps them again).
            last = hi == int(self.starts[page_no + 1] - self.starts[page_no])
            done = _Countdown(len(pieces), partial(self._release_page, page_no)) if last else None
            jobs.extend(partial(self._page_rows, page_no, a, b, done) for a, b in pieces)
        return jobs

    def _page_rows(
        self, page_no: int, lo: int, hi: int, done: _Countdown | None = None
    ) -> LeafRows:
        page = self.decoder(page_no).read(lo, hi)
        rows = self.rows_of(page, hi - lo, page_no)
        if done is not None:
            done.count_down()
        return rows

    def _release_page(self, page_no: int) -> None:
        page = self.info.pages[page_no]
        self._release(list(zip(page.buffer_offsets, page.buffer_sizes, strict=True)))

    def take(self, rows: I64) -> list[LeafRows]:
        """Sorted, unique rows."""
        if not len(rows):
            return []
        at = int(self.starts.searchsorted(rows[0], side="right")) - 1
        if 0 <= at < len(self.info.pages) and int(rows[-1]) < int(self.starts[at + 1]):
            # All in one page (a small take, or a column of one page).
            page = self.decoder(at).take(rows - self.starts[at] if at else rows)
            return [self.rows_of(page, len(rows), at)]
        wanted = self.by_page(rows)
        out = []
        for run in self._runs(list(wanted)):
            batched = None
            if len(run) > 1 and not self._few_per_page(run, wanted):
                batched = self._take_batch(run, [wanted[p] for p in run])
            if batched is not None:
                out.append(batched)
                continue
            for page_no in run:
                page = self.decoder(page_no).take(wanted[page_no])
                out.append(self.rows_of(page, len(wanted[page_no]), page_no))
        return out

    def by_page(self, rows: I64) -> dict[int, I64]:
        """``rows`` (sorted, unique) by the page holding them, page-relative."""
        page_of = np.searchsorted(self.starts, rows, side="right") - 1
        numbers, first = sorted_groups(page_of)
        pieces = np.split(rows, first[1:])
        return {
            page_no: piece - self.starts[page_no]
            for page_no, piece in zip(numbers.tolist(), pieces, strict=True)
        }

    # -- what a take reads, for an object store to fetch first ------------------------

    def index_ranges(self, rows: I64) -> Ranges:
        """The file ranges a take of ``rows`` (sorted, unique) reads before it knows
        where its rows lie: a mini-block page's buffers but its chunks (chunk sizes,
        dictionary, repetition index) unless its decoder holds them already, a full-zip
        page's repetition index entries of the rows, all of any other page."""
        out: Ranges = []
        for page_no, local in self.by_page(rows).items():
            kind = self._kind(page_no)
            if kind == "full_zip_layout":
                out.extend(self._planned(page_no, local, index=True))
            elif kind != "mini_block_layout":
                out.extend(self._buffers(page_no))  # constant and blob pages: read whole
            elif page_no not in self._decoders:
                out.extend(r for i, r in enumerate(self._buffers(page_no)) if i != 1)
        return out

    def data_ranges(self, rows: I64) -> Ranges:
        """The file ranges holding ``rows`` (sorted, unique) themselves: the chunks of a
        mini-block page that hold them, a full-zip page's bytes of them.  Makes the
        pages' decoders, which read what :meth:`index_ranges` named."""
        out: Ranges = []
        for page_no, local in self.by_page(rows).items():
            if self._kind(page_no) in ("mini_block_layout", "full_zip_layout"):
                out.extend(self._planned(page_no, local, index=False))
        return out

    def unread_by_take(self, rows: I64, gap: int) -> float:
        """About how many bytes of the pages holding ``rows`` (sorted, unique) a take
        leaves unfetched when it fetches only their chunks or row bytes, ranges at
        most ``gap`` apart as one; estimated from the pages' sizes alone, each page's
        rows taken to be spread evenly over its bytes."""
        unread = 0.0
        for page_no, local in self.by_page(rows).items():
            page = self.info.pages[page_no]
            kind = self._kind(page_no)
            sizes = page.buffer_sizes
            if kind == "mini_block_layout" and len(sizes) > 1 and page.layout is not None:
                word = 4 if page.layout.mini_block_layout.has_large_chunk else 2
                size, pieces = sizes[1], sizes[0] // word  # the chunks, and how many
            elif kind == "full_zip_layout" and sizes:
                size, pieces = sizes[0], page.num_rows
            else:
                continue  # read whole
            unread += size - _fetched(local, page.num_rows, size, size / max(pieces, 1), gap)
        return unread

    def _kind(self, page_no: int) -> str | None:
        layout = self.info.pages[page_no].layout
        return None if layout is None else layout.WhichOneof("layout")

    def _buffers(self, page_no: int) -> Ranges:
        page = self.info.pages[page_no]
        return list(zip(page.buffer_offsets, page.buffer_sizes, strict=True))

    def _planned(self, page_no: int, local: I64, *, index: bool) -> Ranges:
        """What the page's decoder says a take of ``local`` reads in the round asked
        for; the whole page when the page cannot say (it is damaged: the take then
        reads it whole, as a scan would, and reports what is wrong)."""
        try:
            decoder = self.decoder(page_no)
            if isinstance(decoder, MiniBlockPage):
                return decoder.chunk_ranges(local)
            if isinstance(decoder, fullzip.FullZipPageDecoder):
                return decoder.index_ranges(local) if index else decoder.data_ranges(local)
        except (LanceFileError, ValueError, IndexError, OverflowError):
            pass
        return self._buffers(page_no)

    def _few_per_page(self, run: list[int], wanted: dict[int, I64]) -> bool:
        """Whether the run is of a few pages that each read their rows chunk by chunk
        (they lie in a few of its chunks): then page by page costs less than a batch."""
        if len(run) > _FEW_PAGES:
            return False
        for page_no in run:
            decoder = self.decoder(page_no)
            if not isinstance(decoder, MiniBlockPage) or not decoder.takes_few(wanted[page_no]):
                return False
        return True

    def _runs(self, page_numbers: list[int]) -> list[list[int]]:
        """The pages in order, consecutive ones that decode alike in one run."""
        runs: list[list[int]] = []
        last_key = None
        for page_no in page_numbers:
            decoder = self.decoder(page_no)
            key = decoder.batch_key if isinstance(decoder, MiniBlockPage) else None
            if key is not None and key == last_key:
                runs[-1].append(page_no)
            else:
                runs.append([page_no])
            last_key = key
        return runs

    def _take_batch(self, run: list[int], rows: list[I64]) -> LeafRows | None:
        """Rows of a run of mini-block pages, their chunks decoded in one batch; None
        when the batch fails (the pages are then read one by one, whose errors name
        the damaged page)."""
        decoders = [self.decoder(p) for p in run]
        try:
            page = page_batches.take_pages(
                [d for d in decoders if isinstance(d, MiniBlockPage)], rows
            )
            return self.rows_of(page, sum(len(r) for r in rows), run[0])
        except BATCH_ERRORS:
            return None

    def rows_of(self, page: LevelledPage, rows: int, page_no: int) -> LeafRows:
        if (
            page.rep is None
            and page.defs is None
            and page.layers == _PLAIN
            and self.lineage == (Kind.LEAF,)
            and len(page.values) == rows
        ):
            # A top-level column whose items are all valid: one layer, nothing to unravel.
            return LeafRows(page.values, [Layer(rows, None)])
        ref = self.ref(page_no)

        def build() -> LeafRows:
            shape = _shape(tuple(page.layers))
            self._check_lineage(shape)
            layers = unravel(shape, page.rep, page.defs, len(page.values))
            if layers[-1].count != rows:
                raise CorruptFileError(
                    f"the levels hold {layers[-1].count} rows where {rows} were read"
                )
            values = with_validity(page.values, layers[0].validity)
            return LeafRows(values, layers)

        return guarded(ref, build)

    def _check_lineage(self, shape: LayerShape) -> None:
        if len(shape.layers) != len(self.lineage) or any(
            is_list(layer) != (kind is Kind.LIST)
            for layer, kind in zip(shape.layers, self.lineage, strict=True)
        ):
            raise CorruptFileError(
                f"the page's layers {list(shape.layers)} do not match the field's nesting"
            )


@dataclass(frozen=True)
class LeafRows:
    """A leaf's items (with their validity) and every layer above them."""

    values: pa.Array
    layers: list[Layer]


def with_validity(arr: pa.Array, valid: Bools | None) -> pa.Array:
    """``arr`` with the entries where ``valid`` is false made null."""
    if valid is None or bool(valid.all()) or pa.types.is_null(arr.type):
        return arr
    if len(valid) != len(arr):
        raise CorruptFileError(f"{len(valid)} validity entries for {len(arr)} values")
    if arr.null_count:
        valid = valid & np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    dtype = arr.type
    if pa.types.is_dictionary(dtype):
        return pa.DictionaryArray.from_arrays(with_validity(arr.indices, valid), arr.dictionary)
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    if arr.offset == 0 and pa.types.is_fixed_size_list(dtype):
        return pa.Array.from_buffers(dtype, len(arr), [bitmap], children=[arr.values])
    if arr.offset == 0 and (
        pa.types.is_primitive(dtype)
        or pa.types.is_string(dtype)
        or pa.types.is_binary(dtype)
        or pa.types.is_large_string(dtype)
        or pa.types.is_large_binary(dtype)
        or pa.types.is_fixed_size_binary(dtype)
        or pa.types.is_decimal(dtype)
    ):
        buffers = arr.buffers()
        return pa.Array.from_buffers(dtype, len(arr), [bitmap, *buffers[1:]])
    return pc.if_else(pa.array(valid), arr, pa.nulls(len(arr), dtype))


def concat_leaf_rows(parts: list[LeafRows], dtype: pa.DataType) -> LeafRows:
    if len(parts) == 1:
        return parts[0]
    if not parts:
        raise CorruptFileError("no rows")  # callers never ask for none
    values = concat_pages([p.values for p in parts]) if parts else pa.array([], type=dtype)
    layers = []
    for k in range(len(parts[0].layers)):
        pieces = [p.layers[k] for p in parts]
        count = sum(p.count for p in pieces)
        valid = None
        if any(p.validity is not None for p in pieces):
            valid = np.concatenate(
                [np.ones(p.count, bool) if p.validity is None else p.validity for p in pieces]
            )
        offsets = None
        if pieces[0].offsets is not None:
            below = [parts[i].layers[k - 1].count for i in range(len(parts))]
            shift = np.cumsum(below) - below
            joined = [
                p.offsets[:-1] + s
                for p, s in zip(pieces, shift.tolist(), strict=True)
                if p.offsets is not None
            ]
            offsets = np.append(np.concatenate(joined), int(sum(below))).astype(np.int64)
        layers.append(Layer(count, valid, offsets))
    return LeafRows(values, layers)


class FieldReader:
    """Reads one field (a top-level column or a struct sub-field): ``read(start, end)``
    and ``take(rows)`` return Arrow arrays of its type."""

    def __init__(self, node: Node, columns: Sequence[LeafColumn], path: str):
        self.node = node
        self.dtype: pa.DataType = node.field.type
        self.columns = columns
        self.path = path
        self.leaves = node.leaves()
        # The leaf columns that hold levels and values (empty structs hold neither).
        self._read = [
            self._column(leaf) for leaf in self.leaves if leaf.kind is not Kind.EMPTY_STRUCT
        ]

    def chunks(self, start: int, end: int) -> list[pa.Array]:
        return [chunk for job in self.chunk_jobs(start, end) for chunk in job()]

    def chunk_jobs(self, start: int, end: int) -> list[Callable[[], list[pa.Array]]]:
        """``chunks(start, end)`` as jobs that may run on several threads: a leaf's
        pages stay separate chunks (no copy), one job each."""
        if self.node.kind is Kind.LEAF:
            column = self.columns[self._column(self.node)]
            # A dictionary column is not cut: its chunks would hold different
            # dictionaries, which a take must then unify.
            jobs = column.page_jobs(start, end, split=not has_dictionary(self.dtype))
            if not jobs:
                return [lambda: [pa.array([], type=self.dtype)]]
            return [partial(_values_of, job) for job in jobs]
        return [lambda: [self.read(start, end)]]

    def read(self, start: int, end: int) -> pa.Array:
        if end <= start:
            return pa.array([], type=self.dtype)
        rows = {
            self._column(leaf): concat_leaf_rows(
                self.columns[self._column(leaf)].read(start, end), leaf.field.type
            )
            for leaf in self.leaves
            if leaf.kind is not Kind.EMPTY_STRUCT
        }
        return self._assemble(self.node, rows, end - start)

    def take(self, rows: np.ndarray) -> pa.Array:
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) == 0:
            return pa.array([], type=self.dtype)
        ascending = len(rows) < 2 or bool((rows[1:] > rows[:-1]).all())
        wanted, inverse = (rows, None) if ascending else np.unique(rows, return_inverse=True)
        found = {
            column: concat_leaf_rows(self.columns[column].take(wanted), self.columns[column].dtype)
            for column in self._read
        }
        arr = self._assemble(self.node, found, len(wanted))
        if inverse is None:
            return arr
        return arr.take(pa.array(inverse.reshape(-1)))

    @staticmethod
    def _column(node: Node) -> int:
        assert node.column is not None
        return node.column

    def _assemble(self, node: Node, rows: dict[int, LeafRows], count: int) -> pa.Array:
        try:
            return self._build(node, rows, count)
        except LanceFileError:
            raise
        except (pa.ArrowInvalid, ValueError, IndexError) as exc:
            raise CorruptFileError(
                f"{self.path}: column {node.field.name!r}: its leaves do not fit together: {exc}"
            ) from exc

    def _source(self, node: Node, rows: dict[int, LeafRows]) -> Layer | None:
        """The layer of ``node`` as the first leaf below it that has one sees it."""
        for leaf in node.leaves():
            if leaf.column in rows:
                layers = rows[leaf.column].layers
                return layers[leaf.depth - node.depth]
        return None

    def _build(self, node: Node, rows: dict[int, LeafRows], count: int) -> pa.Array:
        kind = node.kind
        dtype = node.field.type
        if kind is Kind.LEAF:
            assert node.column is not None
            return rows[node.column].values
        layer = self._source(node, rows)
        if kind is Kind.EMPTY_STRUCT or (kind is Kind.STRUCT and layer is None):
            # Only empty structs below: no levels, every row a valid struct.
            return pa.Array.from_buffers(
                dtype, count, [None], children=[self._build(c, rows, count) for c in node.children]
            )
        assert layer is not None
        mask = None if layer.validity is None else pa.array(~layer.validity)
        if kind is Kind.STRUCT:
            children = [self._build(c, rows, layer.count) for c in node.children]
            self._check_lengths(node, children, layer.count)
            fields = [dtype.field(i) for i in range(dtype.num_fields)]
            return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
        assert layer.offsets is not None
        below = self._source(node.children[0], rows)
        items = self._build(node.children[0], rows, 0 if below is None else below.count)
        if int(layer.offsets[-1]) != len(items):
            raise CorruptFileError(
                f"{self.path}: column {node.path!r}: list offsets end at "
                f"{int(layer.offsets[-1])} but {len(items)} items exist"
            )
        if pa.types.is_map(dtype):
            return _map_array(dtype, layer.offsets, items, layer.validity, self.path, node.path)
        large = pa.types.is_large_list(dtype)
        if not large and layer.offsets[-1] >= 2**31:
            raise LanceFileError(
                f"{self.path}: column {node.path!r}: {int(layer.offsets[-1])} items do not fit "
                f"the 32-bit offsets of {dtype}; read fewer rows at a time"
            )
        offsets = pa.array(layer.offsets, type=pa.int64() if large else pa.int32())
        cls = pa.LargeListArray if large else pa.ListArray
        return cls.from_arrays(offsets, items, type=dtype, mask=mask)

    def _check_lengths(self, node: Node, children: list[pa.Array], count: int) -> None:
        for child, arr in zip(node.children, children, strict=True):
            if len(arr) != count:
                raise CorruptFileError(
                    f"{self.path}: column {child.path!r} gave {len(arr)} values for "
                    f"{count} values of its struct {node.path!r}"
                )


def _map_array(
    dtype: pa.MapType,
    offsets: I64,
    entries: pa.Array,
    validity: Bools | None,
    path: str,
    column: str,
) -> pa.Array:
    """A map array from its offsets (32-bit in Arrow), entries and validity."""
    if offsets[-1] >= 2**31:
        raise LanceFileError(
            f"{path}: column {column!r}: {int(offsets[-1])} map entries do not fit the 32-bit "
            "offsets of a map; read fewer rows at a time"
        )
    if entries.null_count or entries.field(0).null_count:
        raise CorruptFileError(f"{path}: column {column!r}: a map entry or key is null")
    bitmap = None
    if validity is not None and not bool(validity.all()):
        bitmap = pa.py_buffer(np.packbits(validity, bitorder="little"))
    starts = pa.py_buffer(np.ascontiguousarray(offsets, dtype=np.int32))
    return pa.Array.from_buffers(dtype, len(offsets) - 1, [bitmap, starts], children=[entries])


def lineages(nodes: list[Node]) -> dict[int, tuple[Kind, ...]]:
    """For every leaf column: the kinds of the leaf and of its ancestors, leaf first."""
    out: dict[int, tuple[Kind, ...]] = {}
    for top in nodes:
        _add_lineages(top, (), out)
    return out


def _add_lineages(node: Node, above: tuple[Kind, ...], out: dict[int, tuple[Kind, ...]]) -> None:
    # A module function: a recursive closure holds itself, a cycle only the garbage
    # collector frees (and files are opened by the hundred).
    chain = (node.kind, *above)
    if node.column is not None:
        out[node.column] = chain
    for child in node.children:
        _add_lineages(child, chain, out)


def has_dictionary(dtype: pa.DataType) -> bool:
    """Whether ``dtype`` is or holds dictionary values (whose chunks, once a read is
    cut, would hold different dictionaries)."""
    if pa.types.is_dictionary(dtype):
        return True
    return any(has_dictionary(dtype.field(i).type) for i in range(dtype.num_fields))


def _pieces(lo: int, hi: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` cut into a piece per decoding thread, each of at least
    ``_PIECE_ROWS`` rows and a multiple of ``_PIECE_ALIGN`` (the last excepted)."""
    rows = hi - lo
    count = min(WORKERS, rows // _PIECE_ROWS)
    if count < 2:
        return [(lo, hi)]
    size = -(-rows // count)
    size = -(-size // _PIECE_ALIGN) * _PIECE_ALIGN
    return [(a, min(a + size, hi)) for a in range(lo, hi, size)]


def _fetched(rows: I64, num_rows: int, size: int, piece: float, gap: int) -> float:
    """About how many of a page's ``size`` bytes a take of ``rows`` fetches when they
    come in pieces of ``piece`` bytes and ranges at most ``gap`` apart are fetched as
    one: a row as far from the last as a piece and the gap costs a piece, a nearer one
    the bytes between."""
    steps = np.diff(rows) * (size / max(num_rows, 1))
    return min(float(size), piece + float(np.where(steps <= piece + gap, steps, piece).sum()))


def _values_of(job: Callable[[], LeafRows]) -> list[pa.Array]:
    return [job().values]
