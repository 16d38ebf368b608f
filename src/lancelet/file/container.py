"""The Lance file container: footer, offset tables, column metadata, global buffers.

The container knows nothing about types; it locates byte ranges.  Layout, from
the end of the file backwards::

    ... data buffers | global buffers | column metadata | CMO table | GBO table | footer

The footer is ``u64 column_meta_start, u64 cmo_table, u64 gbo_table,
u32 num_global_buffers, u32 num_columns, u16 major, u16 minor, b"LANC"``
(little endian).  Both tables are ``(u64 position, u64 size)`` pairs.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import add
from typing import Any, NamedTuple, Protocol, overload

import numpy as np
import pyarrow as pa
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message

from lancelet._proto import encodings_v2_0_pb2 as enc_pb
from lancelet._proto import encodings_v2_1_pb2 as pb21
from lancelet._proto import file2_pb2
from lancelet.errors import CorruptFileError, UnsupportedVersionError
from lancelet.file.memo import Memo
from lancelet.file.version import VERSIONS, from_footer

MAGIC = b"LANC"
FOOTER = struct.Struct("<QQQIIHH4s")
FOOTER_SIZE = FOOTER.size  # 40
ALIGNMENT = 64

# The specification bounds a page at 4Gi items (its length was a uint32).
MAX_PAGE_ROWS = 2**32 - 1

ARRAY_ENCODING_URL = "/lance.encodings.ArrayEncoding"
PAGE_LAYOUT_URL = "/lance.encodings21.PageLayout"
COLUMN_ENCODING_URL = "/lance.encodings.ColumnEncoding"


class RangeSource(Protocol):
    path: str
    size: int

    def read(self, offset: int, length: int) -> pa.Buffer: ...


@dataclass(frozen=True)
class Footer:
    column_meta_start: int
    cmo_table_pos: int
    gbo_table_pos: int
    num_global_buffers: int
    num_columns: int
    major: int
    minor: int

    @property
    def version(self) -> str:
        known = from_footer(self.major, self.minor)
        return f"{self.major}.{self.minor}" if known is None else known.name

    @property
    def structural(self) -> bool:
        """Whether pages hold 2.1 structural layouts (``PageLayout``) rather than
        2.0 ``ArrayEncoding`` trees."""
        known = from_footer(self.major, self.minor)
        return known is not None and known.structural


class Page(NamedTuple):
    """One disk page of a column: where its buffers are and how they are encoded.

    A 2.0 page is described by ``encoding``; a 2.1+ page by ``layout`` (and then
    ``encoding`` is empty).  A named tuple: one is made per page of every column a
    reader opens, a compaction's hundred files' 1,600.
    """

    buffer_offsets: tuple[int, ...]
    buffer_sizes: tuple[int, ...]
    num_rows: int
    encoding: enc_pb.ArrayEncoding
    layout: pb21.PageLayout | None = None


@dataclass(frozen=True)
class ColumnInfo:
    pages: tuple[Page, ...]
    buffer_offsets: tuple[int, ...]
    buffer_sizes: tuple[int, ...]

    @property
    def num_rows(self) -> int:
        return sum(p.num_rows for p in self.pages)

    def row_starts(self) -> np.ndarray:
        """Each page's first row, then the column's row count (int64, read-only)."""
        # Shared by the columns whose pages hold as many rows (read-only): a
        # compaction's hundred small files have 1,600 columns of a page of the same
        # length, and a numpy array each cost more than the rest of the column.
        lengths = tuple([p.num_rows for p in self.pages])
        found = _ROW_STARTS.find(lengths)
        return found if found is not None else _ROW_STARTS.get(lengths, lambda: _starts(lengths))


def _starts(lengths: tuple[int, ...]) -> np.ndarray:
    starts = np.array(list(accumulate(lengths, initial=0)), np.int64)
    starts.setflags(write=False)
    return starts


# Row starts by the page lengths they were summed from (see ColumnInfo.row_starts).
_ROW_STARTS: Memo[np.ndarray] = Memo(256)


class _Parsed:
    """A file's column metadata with its buffers' positions checked; each column's
    pages are made once, when first asked for (shared by the readers of files whose
    metadata reads alike: a compaction's hundred small files)."""

    def __init__(
        self,
        columns: list[_ReadColumn],
        raws: list[bytes],
        names: list[str],
        rows: list[int],
        structural: bool,
    ) -> None:
        self.columns: list[_ReadColumn | None] = list(columns)
        self.raws: list[bytes | None] = list(raws)  # each column's metadata, as stored
        self.names = names
        self.rows = rows
        self.structural = structural
        self.infos: list[ColumnInfo | None] = [None] * len(columns)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.columns)

    def info(self, index: int, source: RangeSource) -> ColumnInfo:
        found = self.infos[index]
        if found is None:
            with self._lock:  # made once, whichever thread asks first
                found = self.infos[index]
                if found is None:
                    column, raw = self.columns[index], self.raws[index]
                    assert column is not None and raw is not None
                    # A damaged layout is raised each time the column is asked for.
                    found = _shared_info(source, column, raw, self.names[index], self.structural)
                    self.infos[index] = found
                    self.columns[index] = self.raws[index] = None  # its pages hold what it said
        return found


class Columns(Sequence[ColumnInfo]):
    """The columns of one opened file.  Every buffer's position was checked at open;
    a column's pages (their encodings or layouts) are parsed when it is first asked
    for, and errors then name this file: a read of 2 columns of a 16-column file
    parses the layouts of 2."""

    def __init__(self, parsed: _Parsed, source: RangeSource) -> None:
        self._parsed = parsed
        self._source = source

    def __len__(self) -> int:
        return len(self._parsed)

    @overload
    def __getitem__(self, index: int) -> ColumnInfo: ...

    @overload
    def __getitem__(self, index: slice) -> list[ColumnInfo]: ...

    def __getitem__(self, index: int | slice) -> ColumnInfo | list[ColumnInfo]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        return self._parsed.info(index, self._source)

    def rows(self, index: int) -> int:
        """The rows column ``index`` holds (its pages' lengths added up)."""
        return self._parsed.rows[index]


def check_range(source: RangeSource, offset: int, length: int, what: str) -> None:
    """Refuse a (offset, length) pair that leaves the file, before anything is read."""
    if offset < 0 or length < 0 or offset + length > source.size:
        raise CorruptFileError(
            f"{source.path}: {what} at offset {offset} with length {length} "
            f"runs past the end of the file ({source.size} bytes)"
        )


def check_aligned(source: RangeSource, offset: int, size: int, what: str) -> None:
    """Refuse a data buffer that does not start on a 64-byte boundary.

    Lance writers pad every page and column buffer to 64 bytes (larger alignments,
    such as 4096 for direct I/O, are multiples of it), so a misaligned position was
    damaged; without this check a position off by a few bytes would read a shifted
    copy of the values that no other check can tell from the real ones.
    """
    if size and offset % ALIGNMENT:
        raise CorruptFileError(
            f"{source.path}: {what} at offset {offset} is not aligned to {ALIGNMENT} bytes"
        )


def read_footer(source: RangeSource) -> Footer:
    if source.size < FOOTER_SIZE:
        raise CorruptFileError(
            f"{source.path}: file is {source.size} bytes, too short to hold a Lance footer"
        )
    raw = source.read(source.size - FOOTER_SIZE, FOOTER_SIZE).to_pybytes()
    cm_start, cmo, gbo, n_gb, n_col, major, minor, magic = FOOTER.unpack(raw)
    if magic != MAGIC:
        raise CorruptFileError(f"{source.path}: bad magic {magic!r}, not a Lance file")
    known = from_footer(major, minor)
    if known is None or not known.readable:
        name = f"{major}.{minor}" if known is None else known.name
        readable = ", ".join(v.name for v in VERSIONS.values() if v.readable)
        raise UnsupportedVersionError(
            f"{source.path}: Lance file version {name} is not supported (lancelet reads {readable})"
        )
    footer = Footer(cm_start, cmo, gbo, n_gb, n_col, major, minor)
    tail = source.size - FOOTER_SIZE
    if not cm_start <= cmo <= tail or not gbo <= tail:
        raise CorruptFileError(
            f"{source.path}: footer offsets ({cm_start}, {cmo}, {gbo}) point outside the file"
        )
    check_range(source, cmo, 16 * n_col, "column metadata offset table")
    check_range(source, gbo, 16 * n_gb, "global buffer offset table")
    if cmo + 16 * n_col > tail or gbo + 16 * n_gb > tail:
        raise CorruptFileError(f"{source.path}: the offset tables run into the footer")
    return footer


def _offset_table(source: RangeSource, pos: int, count: int) -> np.ndarray:
    raw = source.read(pos, 16 * count)
    return np.frombuffer(raw, dtype="<u8").reshape(count, 2)


def read_global_buffer(source: RangeSource, footer: Footer, index: int) -> pa.Buffer:
    if not 0 <= index < footer.num_global_buffers:
        raise CorruptFileError(
            f"{source.path}: global buffer {index} requested but the file has "
            f"{footer.num_global_buffers}"
        )
    pos, size = (
        int(v)
        for v in _offset_table(source, footer.gbo_table_pos, footer.num_global_buffers)[index]
    )
    check_range(source, pos, size, f"global buffer {index}")
    return source.read(pos, size)


def parse_message(
    message: Message,
    data: bytes | pa.Buffer,
    what: str | _Named,
    path: str,
    *,
    strict: bool = False,
) -> None:
    """Parse ``data`` into ``message``; ``strict`` also refuses fields the schema lacks.

    The container and encoding messages of format 2.0 are frozen, so an unknown
    field in one means damaged bytes (a flipped tag turns a known field into an
    unknown one, which protobuf would otherwise skip in silence).
    """
    try:
        message.ParseFromString(data if isinstance(data, bytes) else data.to_pybytes())
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise CorruptFileError(f"{path}: {what} is not a valid protobuf message: {exc}") from exc
    if strict:
        strict_message(message, what, path)


def strict_message(message: Message, what: str | _Named, path: str) -> None:
    """Refuse a parsed ``message`` holding fields (at any depth) its schema lacks."""
    size = message.ByteSize()
    message.DiscardUnknownFields()
    if message.ByteSize() != size:
        raise CorruptFileError(f"{path}: {what} holds fields its format does not define")


def _unpack_any(
    source: RangeSource, encoding: file2_pb2.Encoding, url: str, target: Message, what: str
) -> None:
    kind = encoding.WhichOneof("location")
    if kind == "direct":
        raw = encoding.direct.encoding
    elif kind == "indirect":
        loc = encoding.indirect
        check_range(source, loc.buffer_location, loc.buffer_length, what)
        raw = source.read(loc.buffer_location, loc.buffer_length).to_pybytes()
    else:
        raise CorruptFileError(f"{source.path}: {what} has no encoding")
    wrapper = any_pb2.Any()
    parse_message(wrapper, raw, what, source.path, strict=True)
    if wrapper.type_url.rsplit("/", 1)[-1] != url.rsplit("/", 1)[-1]:
        raise CorruptFileError(
            f"{source.path}: {what} holds {wrapper.type_url!r}, expected {url!r}"
        )
    parse_message(target, wrapper.value, what, source.path, strict=True)


def read_columns(
    source: RangeSource, footer: Footer, labels: Sequence[str] | None = None
) -> Columns:
    """Parse every column's metadata and check where its buffers lie; each column's
    pages (their encodings or layouts) are made when the column is first asked for.

    Every buffer must lie inside the file, and no two of the byte ranges the file
    names (page, column and global buffers, column metadata, the offset tables and
    the footer) may overlap: writers lay them out one after another, so an overlap
    means a position or size was damaged.  ``labels`` name the columns in errors.
    """
    table = _offset_table(source, footer.cmo_table_pos, footer.num_columns)
    ranges = table.tolist()
    for index, (pos, size) in enumerate(ranges):
        if pos < 0 or size < 0 or pos + size > source.size:
            # Named only when refused: a label per column costs every open.
            check_range(source, pos, size, _column_what(index, labels))
    raws = _column_bytes(source, ranges)
    # What follows depends on these bytes, the file's size and its footer alone: a
    # file opened again (a dataset opened anew) is parsed and checked once.
    tail = bytes(source.read(footer.gbo_table_pos, 16 * footer.num_global_buffers))
    key = (source.size, footer, table.tobytes(), tail, *raws)
    found = _COLUMNS.find(key)
    if found is not None:
        return Columns(found, source)
    parsed, direct = _parse_columns(source, footer, labels, ranges, raws, tail)
    # An encoding stored elsewhere in the file (indirect) is not among the bytes of
    # the key: such files are parsed each time, as are those of large metadata.
    if direct and sum(len(raw) for raw in raws) <= _COLUMNS_KEPT_BYTES:
        _COLUMNS.put(key, parsed)
    return Columns(parsed, source)


def _column_bytes(source: RangeSource, ranges: list[list[int]]) -> list[bytes]:
    """Each column's metadata bytes (the ranges checked).  Writers store them one
    after another: read as one range then, and cut (one request, not one a column)."""
    ends = [pos + size for pos, size in ranges]
    if len(ranges) > 1 and all(ranges[i][0] == ends[i - 1] for i in range(1, len(ranges))):
        first = ranges[0][0]
        block = bytes(source.read(first, ends[-1] - first))
        return [
            block[pos - first : end - first] for (pos, _), end in zip(ranges, ends, strict=True)
        ]
    return [bytes(source.read(pos, size)) for pos, size in ranges]


# Files' column metadata parsed and checked, by the bytes read (see read_columns).  The
# values are shared by the readers of those files, which change nothing in them.
_COLUMNS: Memo[_Parsed] = Memo(256)
# Larger metadata (files of many pages) is parsed each time.
_COLUMNS_KEPT_BYTES = 64 * 1024


def _column_what(index: int, labels: Sequence[str] | None) -> str:
    label = labels[index] if labels is not None and index < len(labels) else None
    return f"column {index} metadata" + ("" if label is None else f" ({label})")


def _parse_columns(
    source: RangeSource,
    footer: Footer,
    labels: Sequence[str] | None,
    ranges: list[list[int]],
    raws: list[bytes],
    globals_table: bytes,
) -> tuple[_Parsed, bool]:
    """The columns' metadata with every buffer's position checked, and whether every
    encoding they name is stored in their metadata."""
    columns, names, rows = [], [], []
    direct = True
    layout = _Layout(source.path)
    for index, ((pos, size), raw) in enumerate(zip(ranges, raws, strict=True)):
        # Names are made only for an error: a compaction opens 1,600 columns.
        what = _Named(_column_what, index, labels)
        layout.add(pos, size, what)
        label = labels[index] if labels is not None and index < len(labels) else None
        names.append(label or f"column {index}")
        column = _READ_COLUMNS.find(raw)
        if column is None:
            meta = file2_pb2.ColumnMetadata()
            parse_message(meta, raw, what, source.path, strict=True)
            column = _read_column(source, meta, names[-1])
            if len(raw) <= _COLUMN_KEPT_BYTES:
                _READ_COLUMNS.put(raw, column)
        for page_no, page in enumerate(column.pages):
            layout.add_data(page.offsets, page.sizes, _Named(_buffer_what, names[-1], page_no))
        if column.offsets:
            layout.add_data(column.offsets, column.sizes, _Named(_buffer_what, names[-1]))
        direct = direct and column.direct
        columns.append(column)
        rows.append(column.rows)
    _add_tail(source, footer, layout, globals_table)
    layout.check_inside(source)
    layout.check()
    layout.check_data_aligned(source, tolerate_packed=not footer.structural)
    return _Parsed(columns, raws, names, rows, footer.structural), direct


# Columns' metadata read, by its bytes.  The small files a compaction reads, written
# alike, repeat most of theirs (pages of as many rows, encoded as long, lie at the
# same offsets): 423 distinct of 1,600 in a hundred files of lineitem.  What is kept
# depends on those bytes alone (each file's buffers are still checked against it).
_READ_COLUMNS: Memo[_ReadColumn] = Memo(1024)
# Larger metadata (a column of many pages) is read each time.
_COLUMN_KEPT_BYTES = 2048


class _Named:
    """A byte range's name, made when an error needs it."""

    __slots__ = ("args", "make")

    def __init__(self, make: Callable[..., str], *args: Any) -> None:
        self.make = make
        self.args = args

    def __str__(self) -> str:
        return self.make(*self.args)


def _page_what(label: str, page_no: int) -> str:
    return f"{label} page {page_no}"


def _buffer_what(label: str, page_no: int | None = None) -> str:
    return f"{label if page_no is None else _page_what(label, page_no)} buffer"


class _Layout:
    """Named byte ranges of one file, checked to be pairwise disjoint (empty ones aside)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.starts: list[int] = []
        self.sizes: list[int] = []
        self.names: list[str | _Named] = []
        self.data: list[int] = []

    def add(self, start: int, size: int, name: str | _Named) -> None:
        self.starts.append(start)
        self.sizes.append(size)
        self.names.append(name)

    def add_data(self, starts: Sequence[int], sizes: Sequence[int], name: str | _Named) -> None:
        """Page and column buffers (all named ``name``), also checked for alignment."""
        first = len(self.starts)
        self.data.extend(range(first, first + len(starts)))
        self.starts.extend(starts)
        self.sizes.extend(sizes)
        self.names.extend([name] * len(starts))

    def check_data_aligned(self, source: RangeSource, tolerate_packed: bool) -> None:
        """Refuse a misaligned data buffer (see :func:`check_aligned`).

        Early 2.0 writers (pylance 0.13) did not pad: they wrote the data buffers
        back to back from the start of the file.  ``tolerate_packed`` accepts
        misaligned buffers from such a file when the data buffers tile the start
        of the file exactly, because moving any one of them would leave a gap or an
        overlap, so a damaged position is still refused.
        """
        if len(self.data) <= _FEW_RANGES and not any(
            self.sizes[i] and self.starts[i] % ALIGNMENT for i in self.data
        ):
            return  # a small file, all aligned: no numpy calls
        data = np.asarray(self.data, dtype=np.int64)
        starts = np.asarray(self.starts, dtype=np.int64)[data] if data.size else data
        sizes = np.asarray(self.sizes, dtype=np.int64)[data] if data.size else data
        misaligned = np.flatnonzero((sizes > 0) & (starts % ALIGNMENT != 0))
        if not misaligned.size or (tolerate_packed and _tiles_from_zero(starts, sizes)):
            return
        first = int(data[misaligned[0]])
        check_aligned(source, self.starts[first], self.sizes[first], str(self.names[first]))

    def check_inside(self, source: RangeSource) -> None:
        """Refuse a range that does not lie in the file (each checked only when some
        range is out: a compaction's hundred files hold 10,000 ranges)."""
        starts, sizes = self.starts, self.sizes
        if starts and (
            min(starts) < 0 or min(sizes) < 0 or max(map(add, starts, sizes)) > source.size
        ):
            for start, size, name in zip(starts, sizes, self.names, strict=True):
                check_range(source, start, size, str(name))

    def check(self) -> None:
        starts, sizes = self.starts, self.sizes
        if len(starts) <= _FEW_RANGES:
            clash = first_overlap_of_few(starts, sizes)
        else:
            clash = first_overlap(np.asarray(starts, np.int64), np.asarray(sizes, np.int64))
        if clash is not None:
            first, second = clash
            raise CorruptFileError(
                f"{self.path}: {self.names[first]} (bytes {starts[first]}.."
                f"{starts[first] + sizes[first]}) overlaps {self.names[second]} "
                f"(from byte {starts[second]})"
            )


# Up to this many byte ranges (a small file's), the layout is checked with Python
# ints: cheaper than the numpy calls, which pay off for files of many pages.
_FEW_RANGES = 256


def first_overlap_of_few(starts: Sequence[int], sizes: Sequence[int]) -> tuple[int, int] | None:
    """:func:`first_overlap` of a few ranges, with Python ints."""
    before = -1  # the last non-empty range in file order
    for i in sorted(range(len(starts)), key=starts.__getitem__):
        if not sizes[i]:
            continue
        if before >= 0 and starts[before] + sizes[before] > starts[i]:
            return before, i
        before = i
    return None


def _tiles_from_zero(starts: np.ndarray, sizes: np.ndarray) -> bool:
    """Whether the non-empty ranges cover ``[0, total)`` with no gap between them."""
    keep = sizes > 0
    order = np.argsort(starts[keep], kind="stable")
    s, n = starts[keep][order], sizes[keep][order]
    return bool(s.size) and s[0] == 0 and bool(np.array_equal(s[1:], (s + n)[:-1]))


def first_overlap(starts: np.ndarray, sizes: np.ndarray) -> tuple[int, int] | None:
    """The indices of two non-empty byte ranges that overlap (the first such pair in
    file order); None when all are disjoint."""
    keep = np.flatnonzero(sizes > 0)
    order = keep[np.argsort(starts[keep], kind="stable")]
    ends = starts[order] + sizes[order]
    clash = np.flatnonzero(ends[:-1] > starts[order][1:])
    if not clash.size:
        return None
    return int(order[clash[0]]), int(order[clash[0] + 1])


def _add_tail(source: RangeSource, footer: Footer, layout: _Layout, table: bytes) -> None:
    """The global buffers (``table``: their offset table), both offset tables and the footer."""
    globals_ = np.frombuffer(table, dtype="<u8").reshape(footer.num_global_buffers, 2)
    for index, (pos, size) in enumerate(globals_.tolist()):
        check_range(source, pos, size, f"global buffer {index}")
        layout.add(pos, size, f"global buffer {index}")
    layout.add(footer.cmo_table_pos, 16 * footer.num_columns, "the column metadata offset table")
    layout.add(footer.gbo_table_pos, 16 * footer.num_global_buffers, "the global buffer table")
    layout.add(source.size - FOOTER_SIZE, FOOTER_SIZE, "the footer")


class _ReadPage(NamedTuple):
    """A page's fields as read from its column's metadata at open."""

    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    length: int
    encoding: file2_pb2.Encoding


class _ReadColumn(NamedTuple):
    """A column's metadata as read at open: its pages, its own buffers, whether
    every encoding is stored in it (none indirect), and its rows."""

    pages: list[_ReadPage]
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    direct: bool
    rows: int


def _read_column(source: RangeSource, meta: file2_pb2.ColumnMetadata, label: str) -> _ReadColumn:
    """The column's pages and buffers (their places checked by the caller).
    Each protobuf field is read once, and repeated ones as slices (lists: iterating a
    freshly parsed field costs twice as much): a compaction opens a hundred files of
    many columns."""
    direct = meta.encoding.WhichOneof("location") != "indirect"
    rows = 0
    pages = []
    for page_no, page in enumerate(meta.pages[:]):
        read = _ReadPage(
            tuple(page.buffer_offsets[:]), tuple(page.buffer_sizes[:]), page.length, page.encoding
        )
        if len(read.offsets) != len(read.sizes):
            raise CorruptFileError(
                f"{source.path}: {_page_what(label, page_no)} lists mismatched buffer "
                "offsets and sizes"
            )
        if read.length > MAX_PAGE_ROWS:
            raise CorruptFileError(
                f"{source.path}: {_page_what(label, page_no)} claims {read.length} rows, "
                "more than a page can hold"
            )
        direct = direct and read.encoding.WhichOneof("location") != "indirect"
        rows += read.length
        pages.append(read)
    offsets, sizes = tuple(meta.buffer_offsets[:]), tuple(meta.buffer_sizes[:])
    if len(offsets) != len(sizes):
        raise CorruptFileError(f"{source.path}: {label} lists mismatched buffer offsets and sizes")
    return _ReadColumn(pages, offsets, sizes, direct, rows)


def _shared_info(
    source: RangeSource, column: _ReadColumn, raw: bytes, label: str, structural: bool
) -> ColumnInfo:
    """:func:`_column_info`, shared by the columns whose metadata reads alike (files
    written alike) when every encoding is stored in it: what it holds then depends on
    those bytes alone, and nothing changes it."""
    if not column.direct or len(raw) > _COLUMN_KEPT_BYTES:
        return _column_info(source, column, label, structural)
    return _INFOS.get((raw, structural), lambda: _column_info(source, column, label, structural))


_INFOS: Memo[ColumnInfo] = Memo(1024)


def _column_info(
    source: RangeSource, column: _ReadColumn, label: str, structural: bool
) -> ColumnInfo:
    """A column's pages, their encodings (2.0) or layouts (2.1+) parsed: its buffers'
    positions were checked when the file was opened."""
    pages = []
    for page_no, page in enumerate(column.pages):
        if structural:
            encoding = _NO_ENCODING
            page_layout = _page_layout(source, page.encoding, label, page_no)
        else:
            page_layout = None
            encoding = enc_pb.ArrayEncoding()
            what = f"{_page_what(label, page_no)} encoding"
            _unpack_any(source, page.encoding, ARRAY_ENCODING_URL, encoding, what)
        pages.append(Page(page.offsets, page.sizes, page.length, encoding, page_layout))
    return ColumnInfo(tuple(pages), column.offsets, column.sizes)


# The (empty) 2.0 encoding of every 2.1+ page: one object, which nothing changes.
_NO_ENCODING = enc_pb.ArrayEncoding()

# Page layouts parsed (and checked) by their stored bytes.  A compaction opens a
# hundred files of one schema whose pages of a column repeat one layout; parsing
# and checking each again cost more than the rest of opening the file.  A layout
# is shared by the pages that stored it alike, so nothing may change one.
_PAGE_LAYOUTS: Memo[pb21.PageLayout] = Memo(1024)
# Larger layouts (an FSST symbol table's, which no other page shares) are not kept.
_PAGE_LAYOUT_KEPT_BYTES = 512


def _page_layout(
    source: RangeSource, encoding: file2_pb2.Encoding, label: str, page_no: int
) -> pb21.PageLayout:
    raw = encoding.direct.encoding if encoding.WhichOneof("location") == "direct" else None
    found = None if raw is None else _PAGE_LAYOUTS.find(raw)
    if found is not None:
        return found
    page_layout = pb21.PageLayout()
    what = f"{_page_what(label, page_no)} layout"
    _unpack_any(source, encoding, PAGE_LAYOUT_URL, page_layout, what)
    if raw is not None and len(raw) <= _PAGE_LAYOUT_KEPT_BYTES:
        _PAGE_LAYOUTS.put(raw, page_layout)
    return page_layout


def pack_any(message: Message, url: str) -> bytes:
    wrapper = any_pb2.Any(type_url=url, value=message.SerializeToString())
    return wrapper.SerializeToString()


def encode_footer(footer: Footer) -> bytes:
    return FOOTER.pack(
        footer.column_meta_start,
        footer.cmo_table_pos,
        footer.gbo_table_pos,
        footer.num_global_buffers,
        footer.num_columns,
        footer.major,
        footer.minor,
        MAGIC,
    )


def padding(position: int) -> int:
    """Bytes needed to bring ``position`` up to the next 64-byte boundary."""
    return -position % ALIGNMENT
