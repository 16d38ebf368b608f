"""Decoding the pages of legacy fields: a node per Lance field, per batch.

Each node reads a row range (``read``) or a list of rows (``take``) of one batch.
At open, :meth:`Node.check` walks the tree with the rows each batch must hold,
refusing page lengths that disagree and collecting every byte region the pages
occupy; regions must lie before the page table and not overlap.  What can only be
checked once read (list and string positions between the first and the last) is
checked on the rows a read touches.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from lancelet.errors import CorruptFileError, UnsupportedEncodingError
from lancelet.file.container import RangeSource
from lancelet.file.v0_1.container import Layout
from lancelet.file.v2_0.binary import gather_ranges
from lancelet.file.v2_0.types import is_fixed_width, needs_value_check, value_problem

# Region starts, sizes and names, collected at open for the overlap check.
Regions = list[tuple[np.ndarray, np.ndarray, str]]


@dataclass
class File:
    """The file a tree of nodes reads from."""

    source: RangeSource
    layout: Layout
    bytes: np.ndarray  # the whole file, uint8 (a view of the memory map)
    regions: Regions = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.source.path

    def pages(self, field_id: int) -> np.ndarray:
        pages: np.ndarray = self.layout.pages[field_id - self.layout.first_field_id]
        return pages

    def i64_at(self, positions: np.ndarray) -> np.ndarray:
        """The little-endian int64 at each of ``positions`` (checked to lie in the file)."""
        index = positions[:, None] + np.arange(8, dtype=np.int64)
        return np.ascontiguousarray(self.bytes[index]).view("<i8").reshape(-1)

    def i32_at(self, positions: np.ndarray) -> np.ndarray:
        index = positions[:, None] + np.arange(4, dtype=np.int64)
        return np.ascontiguousarray(self.bytes[index]).view("<i4").reshape(-1).astype(np.int64)


class Node(ABC):
    def __init__(self, file: File, arrow: pa.Field, label: str) -> None:
        self.file = file
        self.field = arrow
        self.dtype: pa.DataType = arrow.type
        self.label = label

    @abstractmethod
    def check(self, rows: np.ndarray) -> None:
        """Check the pages against ``rows`` (rows per batch) and note their regions."""

    @abstractmethod
    def read(self, batch: int, lo: int, hi: int) -> pa.Array:
        """Rows ``[lo, hi)`` of ``batch``."""

    @abstractmethod
    def take(self, batches: np.ndarray, rows: np.ndarray) -> pa.Array:
        """Row ``rows[i]`` (in range) of batch ``batches[i]`` for each i, in that order:
        one gather over the whole file, however many batches the rows are spread over."""

    # What sets the rows each page must hold (a list child's: its list's positions).
    counted_by = "its batch holds"

    def corrupt(self, batch: int | None, detail: str) -> CorruptFileError:
        where = "" if batch is None else f" page {batch}"
        return CorruptFileError(f"{self.file.path}: column {self.label!r}{where}: {detail}")

    def _check_lengths(self, lengths: np.ndarray, rows: np.ndarray) -> None:
        bad = np.flatnonzero(lengths != rows)
        if bad.size:
            b = int(bad[0])
            raise self.corrupt(b, f"holds {lengths[b]} values, {self.counted_by} {rows[b]}")

    def _note(self, starts: np.ndarray, sizes: np.ndarray, what: str, end: int) -> None:
        """Record byte regions, each of which must end by ``end``."""
        over = np.flatnonzero(starts + sizes > end)
        if over.size:
            b = int(over[0])
            raise self.corrupt(
                b, f"{what} (bytes {starts[b]}..{starts[b] + sizes[b]}) runs past byte {end}"
            )
        self.file.regions.append((starts, sizes, f"column {self.label!r} {what}"))


class Fixed(Node):
    """Fixed-width values (booleans as bits), or fixed-size lists of them flattened."""

    def __init__(self, file: File, arrow: pa.Field, label: str, field_id: int) -> None:
        super().__init__(file, arrow, label)
        self.pages = file.pages(field_id)
        leaf = arrow.type
        self.scale = 1  # leaf values per row
        while pa.types.is_fixed_size_list(leaf):
            self.scale *= leaf.list_size
            leaf = leaf.value_type
        if not is_fixed_width(leaf):
            raise UnsupportedEncodingError(
                f"{file.path}: column {label!r}: legacy files store no {arrow.type} pages"
            )
        self.leaf: pa.DataType = leaf
        self.bits = 1 if pa.types.is_boolean(leaf) else leaf.bit_width
        self.check_values = needs_value_check(arrow.type)

    def _nbytes(self, items: np.ndarray) -> np.ndarray:
        return (items * self.bits + 7) // 8

    def check(self, rows: np.ndarray) -> None:
        self._check_lengths(self.pages[:, 1], rows)
        most = int(self.pages[:, 1].max(initial=0)) * self.scale * self.bits
        if most > 8 * self.file.source.size:
            # Checked in Python integers first, so the sizes below cannot overflow.
            raise self.corrupt(None, f"{self.dtype} pages need {most} bits, past the file")
        sizes = self._nbytes(self.pages[:, 1] * self.scale)
        self._note(self.pages[:, 0], sizes, "values", self.file.layout.data_end)

    def read(self, batch: int, lo: int, hi: int) -> pa.Array:
        first, last = lo * self.scale, hi * self.scale
        pos = int(self.pages[batch, 0])
        if self.bits == 1:
            start = first // 8
            data = self.file.source.read(pos + start, (last + 7) // 8 - start)
            leaf = pa.Array.from_buffers(self.leaf, last - first, [None, data], offset=first % 8)
        else:
            width = self.bits // 8
            data = aligned(
                self.file.source.read(pos + first * width, (last - first) * width), width
            )
            leaf = pa.Array.from_buffers(self.leaf, last - first, [None, data])
        return self._wrap(batch, leaf)

    def take(self, batches: np.ndarray, rows: np.ndarray) -> pa.Array:
        items, starts = rows, self.pages[batches, 0]
        if self.scale != 1:
            items = (rows[:, None] * self.scale + np.arange(self.scale)).reshape(-1)
            starts = np.repeat(starts, self.scale)
        if self.bits == 1:
            raw = self.file.bytes[starts + (items >> 3)]
            bits = (raw >> (items & 7).astype(np.uint8)) & 1
            data = pa.py_buffer(np.packbits(bits.astype(np.uint8), bitorder="little"))
        else:
            width = self.bits // 8
            index = (starts + items * width)[:, None] + np.arange(width, dtype=np.int64)
            data = pa.py_buffer(np.ascontiguousarray(self.file.bytes[index]))
        first = int(batches[0]) if len(batches) else 0
        return self._wrap(first, pa.Array.from_buffers(self.leaf, len(items), [None, data]))

    def _wrap(self, batch: int, leaf: pa.Array) -> pa.Array:
        """The leaf values as the field's type, nested fixed-size lists rebuilt."""
        types = []
        dtype = self.dtype
        while pa.types.is_fixed_size_list(dtype):
            types.append(dtype)
            dtype = dtype.value_type
        arr = leaf
        for list_type in reversed(types):
            arr = pa.FixedSizeListArray.from_arrays(arr, type=list_type)
        if self.check_values:
            problem = value_problem(arr)
            if problem is not None:
                raise self.corrupt(batch, problem)
        return arr


def aligned(data: pa.Buffer, width: int) -> pa.Buffer:
    """``data`` at an address its values' width divides: legacy pages lie anywhere in
    the file, and Arrow's compute engine warns about (and some hardware faults on)
    values that straddle their alignment."""
    if width <= 1 or data.address % min(width, 8) == 0:
        return data
    return pa.py_buffer(data.to_pybytes())


class Binary(Node):
    """Strings and binaries: their bytes, then ``length + 1`` absolute positions."""

    def __init__(self, file: File, arrow: pa.Field, label: str, field_id: int) -> None:
        super().__init__(file, arrow, label)
        self.pages = file.pages(field_id)
        self.large = pa.types.is_large_string(arrow.type) or pa.types.is_large_binary(arrow.type)
        self.text = pa.types.is_string(arrow.type) or pa.types.is_large_string(arrow.type)
        self.positions = Positions(self, self.pages[:, 0], self.pages[:, 1] + 1, 8)
        self.first = np.zeros(len(self.pages), dtype=np.int64)  # where each page's bytes start

    def check(self, rows: np.ndarray) -> None:
        self._check_lengths(self.pages[:, 1], rows)
        self.first = check_positions(self, self.pages, self.file.layout.data_end)

    def read(self, batch: int, lo: int, hi: int) -> pa.Array:
        p = self.positions.of(batch)[lo : hi + 1]
        data = self.file.source.read(int(p[0]), int(p[-1] - p[0]))
        return self._build(batch, p - p[0], data)

    def take(self, batches: np.ndarray, rows: np.ndarray) -> pa.Array:
        pos = self.pages[batches, 0]
        starts, ends = self.file.i64_at(pos + 8 * rows), self.file.i64_at(pos + 8 * rows + 8)
        lengths = ends - starts
        # Each value must lie within its page's bytes (which end where its positions
        # start); the rest of the page is not read.
        bad = np.flatnonzero((lengths < 0) | (starts < self.first[batches]) | (ends > pos))
        if bad.size:
            raise self.corrupt(int(batches[bad[0]]), "string positions do not rise")
        data = self.file.bytes[gather_ranges(starts, lengths)]
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        first = int(batches[0]) if len(batches) else 0
        return self._build(first, offsets, pa.py_buffer(data))

    def _build(self, batch: int, offsets: np.ndarray, data: pa.Buffer) -> pa.Array:
        return build_binary(self, batch, offsets, data, nullable=self.field.nullable)


class Positions:
    """The positions arrays of a column's pages, each checked to rise once, when first
    read: every later read or take of the page relies on it."""

    def __init__(self, node: Node, starts: np.ndarray, counts: np.ndarray, width: int) -> None:
        self.node = node
        self.starts = starts
        self.counts = counts
        self.dtype = "<i8" if width == 8 else "<i4"
        self.width = width
        self._checked: dict[int, np.ndarray] = {}

    def of(self, batch: int) -> np.ndarray:
        found = self._checked.get(batch)
        if found is None:
            raw = self.node.file.source.read(
                int(self.starts[batch]), self.width * int(self.counts[batch])
            )
            found = np.frombuffer(raw, dtype=self.dtype).astype(np.int64)
            if np.any(found[1:] < found[:-1]):
                raise self.node.corrupt(batch, "positions do not rise")
            # One page per column is kept, as pages are read one after another.
            self._checked = {batch: found}
        return found


def check_positions(node: Node, pages: np.ndarray, end: int, *, paged: bool = True) -> np.ndarray:
    """Check the ends of the positions arrays of binary pages ``pages`` ((position,
    length) rows): the writer puts the bytes right before the positions, so the last
    position is the page's own, and the first one (returned) is where the bytes start."""
    pos, length = pages[:, 0], pages[:, 1]
    node._note(pos, 8 * (length + 1), "positions", end)
    first = node.file.i64_at(pos)
    last = node.file.i64_at(pos + 8 * length)
    bad = np.flatnonzero((last != pos) | (first < 0) | (first > last))
    if bad.size:
        b = int(bad[0])
        raise node.corrupt(
            b if paged else None,
            f"string positions run from {first[b]} to {last[b]}, not up to their own at {pos[b]}",
        )
    node._note(first, last - first, "string bytes", end)
    return first


def build_binary(
    node: Node, batch: int, offsets: np.ndarray, data: pa.Buffer, *, nullable: bool
) -> pa.Array:
    """A string/binary array from offsets (from 0) and bytes; empty values are nulls
    in a nullable field, as legacy readers have always read them."""
    dtype = node.dtype if not pa.types.is_dictionary(node.dtype) else node.dtype.value_type
    large = pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype)
    if not large and len(offsets) and offsets[-1] >= 2**31:
        raise UnsupportedEncodingError(
            f"{node.file.path}: column {node.label!r} page {batch}: more than 2 GiB of {dtype}"
        )
    bitmap = None
    if nullable and len(offsets) > 1:
        valid = offsets[1:] != offsets[:-1]
        if not valid.all():
            bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    width = np.int64 if large else np.int32
    buffers = [bitmap, pa.py_buffer(offsets.astype(width)), data]
    arr = pa.Array.from_buffers(dtype, len(offsets) - 1, buffers)
    if (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)) and len(data):
        raw = np.frombuffer(data, dtype=np.uint8)
        if raw.max() >= 0x80:
            try:
                arr.validate(full=True)
            except pa.ArrowInvalid as exc:
                raise node.corrupt(batch, f"a string is not valid UTF-8 ({exc})") from exc
    return arr


class Dictionary(Node):
    """Plain keys in the pages; the values once, elsewhere in the file."""

    def __init__(
        self, file: File, arrow: pa.Field, label: str, field_id: int, where: tuple[int, int]
    ) -> None:
        super().__init__(file, arrow, label)
        index = pa.field(arrow.name, arrow.type.index_type, arrow.nullable)
        self.keys = Fixed(file, index, label, field_id)
        self.where = where  # (offset, length) of the values
        self.values: pa.Array = pa.array([], arrow.type.value_type)

    def check(self, rows: np.ndarray) -> None:
        self.keys.check(rows)
        self.values = self._load_values()

    def _load_values(self) -> pa.Array:
        offset, length = self.where
        value_type = self.dtype.value_type
        end = self.file.layout.manifest_position
        if not (0 <= offset <= end and 0 <= length <= end):
            raise self.corrupt(None, f"dictionary at {offset} of {length} values runs past {end}")
        pages = np.array([[offset, length]], dtype=np.int64)
        if pa.types.is_integer(value_type):
            width = value_type.bit_width // 8
            self._note(pages[:, 0], pages[:, 1] * width, "dictionary", end)
            data = aligned(self.file.source.read(offset, length * width), width)
            return pa.Array.from_buffers(value_type, length, [None, data])
        if value_type not in (pa.string(), pa.binary(), pa.large_string(), pa.large_binary()):
            raise UnsupportedEncodingError(
                f"{self.file.path}: column {self.label!r}: legacy dictionaries of {value_type}"
            )
        check_positions(self, pages, end, paged=False)
        positions = Positions(self, pages[:, 0], pages[:, 1] + 1, 8).of(0)
        first = int(positions[0])
        data = self.file.source.read(first, offset - first)
        return build_binary(self, 0, positions - first, data, nullable=True)

    def _wrap(self, batch: int, keys: pa.Array) -> pa.Array:
        raw = np.asarray(keys)
        if len(raw) and (raw.min() < 0 or raw.max() >= len(self.values)):
            raise self.corrupt(batch, f"a key lies outside the {len(self.values)} values")
        return pa.DictionaryArray.from_arrays(keys, self.values)

    def read(self, batch: int, lo: int, hi: int) -> pa.Array:
        return self._wrap(batch, self.keys.read(batch, lo, hi))

    def take(self, batches: np.ndarray, rows: np.ndarray) -> pa.Array:
        return self._wrap(int(batches[0]) if len(batches) else 0, self.keys.take(batches, rows))


class Null(Node):
    """A null column: its pages carry only a length."""

    def __init__(self, file: File, arrow: pa.Field, label: str, field_id: int) -> None:
        super().__init__(file, arrow, label)
        self.pages = file.pages(field_id)

    def check(self, rows: np.ndarray) -> None:
        self._check_lengths(self.pages[:, 1], rows)

    def read(self, batch: int, lo: int, hi: int) -> pa.Array:
        return pa.nulls(hi - lo)

    def take(self, batches: np.ndarray, rows: np.ndarray) -> pa.Array:
        return pa.nulls(len(rows))


class Struct(Node):
    """A struct: no pages of its own (and no validity), its children's rows."""

    def __init__(
        self, file: File, arrow: pa.Field, label: str, field_id: int, children: list[Node]
    ) -> None:
        super().__init__(file, arrow, label)
        self.pages = file.pages(field_id)
        self.children = children

    def check(self, rows: np.ndarray) -> None:
        # Writers leave a struct's rows of the page table empty: pages there belong
        # to a field of another type (the schema was damaged).
        if np.any(self.pages != 0):
            raise self.corrupt(None, "a struct has pages of its own")
        for child in self.children:
            child.check(rows)

    def _build(self, arrays: list[pa.Array], num_rows: int) -> pa.Array:
        if not arrays:
            return pa.StructArray.from_buffers(self.dtype, num_rows, [None], children=[])
        return pa.StructArray.from_arrays(arrays, fields=list(self.dtype))

    def read(self, batch: int, lo: int, hi: int) -> pa.Array:
        return self._build([c.read(batch, lo, hi) for c in self.children], hi - lo)

    def take(self, batches: np.ndarray, rows: np.ndarray) -> pa.Array:
        return self._build([c.take(batches, rows) for c in self.children], len(rows))


class List(Node):
    """A list: ``rows + 1`` positions (from 0) into the child's values of the batch."""

    def __init__(self, file: File, arrow: pa.Field, label: str, field_id: int, child: Node) -> None:
        super().__init__(file, arrow, label)
        self.pages = file.pages(field_id)
        self.child = child
        child.counted_by = "its list positions say"
        self.width = 8 if pa.types.is_large_list(arrow.type) else 4
        self.items = np.zeros(len(self.pages), dtype=np.int64)  # child values per batch
        self.positions = Positions(self, self.pages[:, 0], self.pages[:, 1], self.width)

    def check(self, rows: np.ndarray) -> None:
        pos, length = self.pages[:, 0], self.pages[:, 1]
        # A batch of no rows may have no positions at all.
        self._check_lengths(np.where((rows == 0) & (length == 0), 1, length), rows + 1)
        self._note(pos, self.width * length, "list positions", self.file.layout.data_end)
        at = self.file.i64_at if self.width == 8 else self.file.i32_at
        has = np.flatnonzero(length > 0)
        first = np.zeros(len(pos), dtype=np.int64)
        first[has] = at(pos[has])
        self.items[has] = at(pos[has] + self.width * (length[has] - 1))
        bad = np.flatnonzero((first != 0) | (self.items < 0))
        if bad.size:
            b = int(bad[0])
            raise self.corrupt(b, f"list positions run from {first[b]} to {self.items[b]}")
        self.child.check(self.items)

    def _build(self, offsets: np.ndarray, values: pa.Array) -> pa.Array:
        make = pa.LargeListArray if self.width == 8 else pa.ListArray
        width = np.int64 if self.width == 8 else np.int32
        return make.from_arrays(pa.array(offsets.astype(width)), values, type=self.dtype)

    def read(self, batch: int, lo: int, hi: int) -> pa.Array:
        if hi == lo:
            return pa.array([], self.dtype)
        p = self.positions.of(batch)[lo : hi + 1]
        values = self.child.read(batch, int(p[0]), int(p[-1]))
        return self._build(p - p[0], values)

    def take(self, batches: np.ndarray, rows: np.ndarray) -> pa.Array:
        if not len(rows):
            return pa.array([], self.dtype)
        at = self.pages[batches, 0] + self.width * rows
        read = self.file.i64_at if self.width == 8 else self.file.i32_at
        starts, ends = read(at), read(at + self.width)
        lengths = ends - starts
        bad = np.flatnonzero((lengths < 0) | (starts < 0) | (ends > self.items[batches]))
        if bad.size:
            raise self.corrupt(int(batches[bad[0]]), "list positions do not rise")
        values = self.child.take(np.repeat(batches, lengths), gather_ranges(starts, lengths))
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return self._build(offsets, values)
