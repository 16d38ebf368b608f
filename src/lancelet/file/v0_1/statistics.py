"""The page statistics pylance's legacy writer keeps: for each batch and each field of
a kind it summarises, the nulls, the smallest and the largest value.

Fields are the top-level ones and those nested in structs (not in lists), of
boolean, integer, float, date, decimal128, string and binary types, by field id.
Their statistics form a batch of one struct column per field, named by its id, of
``null_count`` (int64), ``min_value`` and ``max_value`` (the field's type), one row
per data batch, written after the page table as a one-batch legacy file section of
its own (schema and page table in the file metadata).

The bounds are pylance's: nulls (and NaN) are skipped; a batch with no values
gives the type's widest range (-inf..inf for floats, false..true for booleans,
nulls for strings); a float bound of zero is -0.0 below and +0.0 above; strings and
binaries are cut to 64 bytes (strings at a character boundary), and once any value
of the batch was cut, the upper bound is the cut maximum "incremented" as pylance
does it (null when that is impossible).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet._proto import file_pb2
from lancelet.file.schema import to_lance_fields
from lancelet.file.v0_1.pages import Column, PageTable, Sink, column_tree, write_column

PREFIX_BYTES = 64

_INTEGERS = {
    pa.int8(),
    pa.uint8(),
    pa.int16(),
    pa.uint16(),
    pa.int32(),
    pa.uint32(),
    pa.int64(),
    pa.uint64(),
}
_DATES = {pa.date32(): pa.int32(), pa.date64(): pa.int64()}
_FLOATS = {pa.float32(), pa.float64()}
_TEXT = {pa.string(), pa.large_string()}
_BINARY = {pa.binary(), pa.large_binary()}


def summarised(dtype: pa.DataType) -> bool:
    return (
        dtype in _INTEGERS
        or dtype in _DATES
        or dtype in _FLOATS
        or dtype in _TEXT
        or dtype in _BINARY
        or dtype == pa.bool_()
        or pa.types.is_decimal128(dtype)
    )


@dataclass
class _Tracked:
    column: Column
    path: tuple[int, ...]  # the top-level column's index, then struct child indices
    null_counts: list[int] = field(default_factory=list)
    mins: list[pa.Array] = field(default_factory=list)
    maxs: list[pa.Array] = field(default_factory=list)

    def add(self, columns: list[pa.Array]) -> None:
        arr = columns[self.path[0]]
        for i in self.path[1:]:
            arr = arr.field(i)
        self.null_counts.append(arr.null_count)
        low, high = bounds(arr)
        self.mins.append(low)
        self.maxs.append(high)

    def array(self) -> tuple[pa.Field, pa.Array]:
        dtype = self.column.field.type
        nullable = self.column.field.nullable
        kinds = [
            pa.field("null_count", pa.int64(), nullable=False),
            pa.field("min_value", dtype, nullable=nullable),
            pa.field("max_value", dtype, nullable=nullable),
        ]
        children = [pa.array(self.null_counts, pa.int64())]
        children += [pa.concat_arrays(self.mins), pa.concat_arrays(self.maxs)]
        struct = pa.StructArray.from_arrays(children, fields=kinds)
        return pa.field(str(self.column.id), struct.type, nullable=False), struct


class StatisticsCollector:
    """Collects each batch's statistics; :meth:`write` stores them in the file."""

    def __init__(self, columns: list[Column]) -> None:
        tracked: list[_Tracked] = []

        def visit(column: Column, path: tuple[int, ...]) -> None:
            if summarised(column.field.type):
                tracked.append(_Tracked(column, path))
            if pa.types.is_struct(column.field.type):
                for i, child in enumerate(column.children):
                    visit(child, (*path, i))

        for i, column in enumerate(columns):
            visit(column, (i,))
        self.tracked = sorted(tracked, key=lambda t: t.column.id)

    def add(self, columns: list[pa.Array]) -> None:
        for each in self.tracked:
            each.add(columns)

    def write(self, sink: Sink) -> file_pb2.Metadata.StatisticsMetadata | None:
        """Write the statistics batch and its page table; None when nothing was
        summarised (no such field, or no batch)."""
        if not self.tracked or not self.tracked[0].null_counts:
            return None
        made = [t.array() for t in self.tracked]
        schema = pa.schema([f for f, _ in made])
        fields = to_lance_fields(schema)
        table = PageTable()
        for column, (_, arr) in zip(column_tree(fields, schema), made, strict=True):
            write_column(sink, column, arr, 0, table, _no_keys)
        position = sink.position
        sink.write(table.encode(0))
        return file_pb2.Metadata.StatisticsMetadata(
            schema=fields, fields=[f.id for f in fields], page_table_position=position
        )


def _no_keys(column: Column, arr: pa.DictionaryArray) -> np.ndarray:
    raise AssertionError("statistics hold no dictionaries")


# -- bounds -------------------------------------------------------------------------------


def bounds(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """The smallest and largest value of one batch of a field, as one-value arrays."""
    dtype = arr.type
    if dtype == pa.bool_():
        return _boolean_bounds(arr)
    if dtype in _FLOATS:
        return _float_bounds(arr)
    if dtype in _TEXT or dtype in _BINARY:
        return _binary_bounds(arr)
    if pa.types.is_decimal128(dtype):
        return _decimal_bounds(arr)
    storage = _DATES.get(dtype, dtype)
    values = arr.view(storage).drop_null().to_numpy()
    if len(values):
        low, high = values.min(), values.max()
    else:
        info = np.iinfo(values.dtype)
        low, high = info.min, info.max
    return (
        pa.array([low], storage).view(dtype),
        pa.array([high], storage).view(dtype),
    )


def _boolean_bounds(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    values = arr.drop_null()
    some_true = bool(len(values)) and bool(pc.any(values).as_py())
    some_false = bool(len(values)) and not pc.all(values).as_py()
    low = some_true and not some_false
    high = some_true or not some_false
    return pa.array([low]), pa.array([high])


def _float_bounds(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    values = arr.to_numpy(zero_copy_only=False)  # nulls read as NaN, skipped with it
    values = values[~np.isnan(values)]
    kind = values.dtype.type
    if len(values):
        low, high = kind(values.min()), kind(values.max())
    else:
        low, high = kind(-np.inf), kind(np.inf)
    if low == 0:
        low = kind(-0.0)
    if high == 0:
        high = kind(0.0)
    return pa.array([low], arr.type), pa.array([high], arr.type)


def _decimal_bounds(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    if arr.null_count == len(arr):
        # The widest 128-bit integers, whatever the precision says.
        low = (1 << 127).to_bytes(16, "little")
        high = ((1 << 127) - 1).to_bytes(16, "little")
        return _raw(arr.type, low), _raw(arr.type, high)
    found = pc.min_max(arr)
    return pa.array([found["min"].as_py()], arr.type), pa.array([found["max"].as_py()], arr.type)


def _raw(dtype: pa.DataType, data: bytes) -> pa.Array:
    return pa.Array.from_buffers(dtype, 1, [None, pa.py_buffer(data)])


def _binary_bounds(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    values = arr.drop_null()
    text = arr.type in _TEXT
    if not len(values):
        return pa.nulls(1, arr.type), pa.nulls(1, arr.type)
    cut = pc.max(pc.binary_length(values)).as_py() > PREFIX_BYTES
    found = pc.min_max(values)
    low, high = (_bytes(found[k].as_py()) for k in ("min", "max"))
    low, high = _prefix(low, text), _prefix(high, text)
    upper: bytes | None = high
    if cut:
        upper = _increment_utf8(high) if text else _increment(high)
    if text:
        return (
            pa.array([low.decode()], arr.type),
            pa.array([None if upper is None else upper.decode()], arr.type),
        )
    return pa.array([low], arr.type), pa.array([upper], arr.type)


def _bytes(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else value


def _prefix(value: bytes, text: bool) -> bytes:
    """At most the first 64 bytes (for text, up to the last whole character)."""
    if len(value) <= PREFIX_BYTES:
        return value
    end = PREFIX_BYTES
    while text and end > 0 and value[end] & 0xC0 == 0x80:
        end -= 1  # ``end`` falls inside a character: back to its first byte
    return value[:end]


def _increment_utf8(value: bytes) -> bytes | None:
    """pylance's successor of a cut string: from the last byte back, the first byte
    that can be raised to give valid UTF-8, raised as little as that takes (the
    bytes after it kept)."""
    data = bytearray(value)
    for i in range(len(data) - 1, -1, -1):
        original = data[i]
        for byte in range(original + 1, 256):
            data[i] = byte
            try:
                bytes(data).decode("utf-8")
            except UnicodeDecodeError:
                continue
            return bytes(data)
        data[i] = original
    return None


def _increment(value: bytes) -> bytes | None:
    """pylance's successor of cut binary: one added to the bytes as a big-endian number
    (None when they are all 0xff)."""
    data = bytearray(value)
    for i in range(len(data) - 1, -1, -1):
        data[i] = (data[i] + 1) & 0xFF
        if data[i]:
            return bytes(data)
    return None
