"""Writing legacy (0.1) pages as pylance's legacy writer lays them out.

A batch is written field by field in schema order, depth first: a struct has no
page of its own (its children follow), a list writes its positions and then its
items, every other field one page.  The page table records each page's position
and its length in values.  No page keeps validity, so what a null slot holds is
written as it is (a null boolean as false), exactly as pylance writes it:

* fixed-width values (fixed-size lists and binaries flattened, booleans as bits):
  the slots' bytes;
* strings and binaries: their bytes, then ``length + 1`` absolute int64 positions
  (the page's position is the positions'; a null's slot is as long as it is);
* lists: ``length + 1`` positions (int32, int64 for large lists) from 0 into the
  items written after them;
* dictionaries: the keys, plainly (the values go once to the end of the file);
* null columns: no bytes, a length at the current position.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet._proto import file_pb2
from lancelet.errors import LanceFileError


class Sink(Protocol):
    """Where pages go: an output file, or bytes counted from some position."""

    @property
    def position(self) -> int: ...

    def write(self, data: bytes | bytearray | memoryview | pa.Buffer) -> None: ...


class BytesSink:
    """Bytes in memory, their positions counted from ``start`` (the offset at which
    they will land in a file)."""

    def __init__(self, start: int = 0) -> None:
        self.data = bytearray()
        self.start = start

    @property
    def position(self) -> int:
        return self.start + len(self.data)

    def write(self, data: bytes | bytearray | memoryview | pa.Buffer) -> None:
        self.data += memoryview(data)


@dataclass
class Column:
    """A Lance field of the file (its id) with its Arrow field and child columns."""

    id: int
    field: pa.Field
    children: list[Column] = field(default_factory=list)

    def walk(self) -> list[Column]:
        out = [self]
        for child in self.children:
            out += child.walk()
        return out


def column_tree(fields: list[file_pb2.Field], schema: pa.Schema) -> list[Column]:
    """The top-level columns of a file whose Lance fields (pre-order) describe the
    Arrow ``schema`` (in storage form)."""
    ids = iter(f.id for f in fields)

    def build(arrow: pa.Field) -> Column:
        column = Column(next(ids), arrow)
        dtype = arrow.type
        if pa.types.is_struct(dtype):
            column.children = [build(dtype.field(i)) for i in range(dtype.num_fields)]
        elif pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
            column.children = [build(dtype.value_field)]
        return column

    return [build(f) for f in schema]


class PageTable:
    """Where each (field id, batch) page lies: position and length in values."""

    def __init__(self) -> None:
        self.pages: dict[int, dict[int, tuple[int, int]]] = {}

    def set(self, field_id: int, batch: int, position: int, length: int) -> None:
        self.pages.setdefault(field_id, {})[batch] = (position, length)

    def encode(self, first_id: int) -> bytes:
        """The table from field id ``first_id`` to the largest id with a page, for as
        many batches as pages were set for; missing pages (structs) are (0, 0)."""
        if not self.pages:
            raise LanceFileError("a legacy file needs at least one batch with a page")
        last = max(self.pages)
        batches = 1 + max(max(per) for per in self.pages.values())
        table = np.zeros((last - first_id + 1, batches, 2), dtype="<i8")
        for field_id, per in self.pages.items():
            for batch, (position, length) in per.items():
                table[field_id - first_id, batch] = (position, length)
        return table.tobytes()


# The keys a dictionary column writes for an array (see dictionaries.FileDictionaries).
KeysOf = Callable[[Column, pa.DictionaryArray], np.ndarray]


def write_column(
    sink: Sink, column: Column, arr: pa.Array, batch: int, table: PageTable, keys_of: KeysOf
) -> None:
    """Write ``arr``, one batch of ``column``, and record its pages."""
    dtype = arr.type
    if pa.types.is_struct(dtype):
        for i, child in enumerate(column.children):
            write_column(sink, child, arr.field(i), batch, table, keys_of)
    elif pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        offsets = value_offsets(arr)
        width = "<i8" if pa.types.is_large_list(dtype) else "<i4"
        table.set(column.id, batch, sink.position, len(offsets))
        sink.write((offsets - offsets[0]).astype(width).tobytes())
        items = arr.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
        write_column(sink, column.children[0], items, batch, table, keys_of)
    elif pa.types.is_null(dtype):
        table.set(column.id, batch, sink.position, len(arr))
    elif pa.types.is_dictionary(dtype):
        table.set(column.id, batch, sink.position, len(arr))
        sink.write(keys_of(column, arr).tobytes())
    elif is_binary_like(dtype):
        table.set(column.id, batch, write_binary(sink, arr), len(arr))
    else:
        table.set(column.id, batch, sink.position, len(arr))
        sink.write(plain_bytes(arr))


def is_binary_like(dtype: pa.DataType) -> bool:
    return dtype in (pa.string(), pa.binary(), pa.large_string(), pa.large_binary())


def value_offsets(arr: pa.Array) -> np.ndarray:
    """The ``len(arr) + 1`` offsets (int64) of a string, binary or list array."""
    large = arr.type in (pa.large_string(), pa.large_binary()) or pa.types.is_large_list(arr.type)
    buffer = arr.buffers()[1]
    if buffer is None or (len(arr) == 0 and buffer.size == 0):
        return np.zeros(1, dtype=np.int64)
    raw = np.frombuffer(buffer, dtype="<i8" if large else "<i4")
    return raw[arr.offset : arr.offset + len(arr) + 1].astype(np.int64)


def write_binary(sink: Sink, arr: pa.Array) -> int:
    """Write a string or binary array's bytes and positions; where the positions are."""
    offsets = value_offsets(arr)
    start = sink.position
    first, last = int(offsets[0]), int(offsets[-1])
    data = arr.buffers()[2]
    if last > first and data is not None:
        sink.write(data.slice(first, last - first))
    positions = sink.position
    sink.write((offsets - first + start).astype("<i8").tobytes())
    return positions


def plain_bytes(arr: pa.Array) -> pa.Buffer | bytes:
    """A fixed-width array's slots as pylance's plain encoder writes them: fixed-size
    lists flattened (their null rows' items as they are), booleans as bits with
    nulls false, other values as their slots hold them."""
    dtype = arr.type
    if pa.types.is_fixed_size_list(dtype):
        size = dtype.list_size
        return plain_bytes(arr.values.slice(arr.offset * size, len(arr) * size))
    if pa.types.is_boolean(dtype):
        bits = pc.fill_null(arr, False).to_numpy(zero_copy_only=False)
        return np.packbits(bits.astype(np.uint8), bitorder="little").tobytes()
    width = dtype.bit_width // 8
    data = arr.buffers()[1]
    if data is None or width == 0 or len(arr) == 0:
        return b""
    return data.slice(arr.offset * width, len(arr) * width)
