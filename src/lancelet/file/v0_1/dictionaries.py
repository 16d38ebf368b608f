"""Dictionary columns of legacy (0.1) files and datasets.

A legacy file stores a dictionary column's keys in its pages and the values once,
after the statistics (integers plainly, strings and binaries as a binary page);
the field's ``dictionary`` message records where (the binary page's positions) and
how many.  A legacy dataset keeps one dictionary per column: pylance writes the
dataset's values into every data file and into each manifest file (before its
index section), and reads them from the manifest.

pylance writes a batch's keys as they are, even when the batch's dictionary is not
the dataset's (so its rows then read as other values).  lancelet maps such keys
onto the dataset's dictionary, and refuses a batch holding a value it lacks (the
arrays of one batch are concatenated first, which unifies their dictionaries).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet._proto import file_pb2
from lancelet.errors import LegacyTypeError, SchemaError, UnsupportedFeatureError
from lancelet.file.v0_1.pages import Column, Sink, is_binary_like, write_binary


def check_value_type(dtype: pa.DictionaryType, column: str) -> None:
    """pylance's legacy writer keeps integer, string and binary dictionary values."""
    value = dtype.value_type
    if not (pa.types.is_integer(value) or is_binary_like(value)):
        raise LegacyTypeError(
            f"column {column!r}: legacy (0.1) files keep no dictionaries of {value} values"
        )


def write_values(sink: Sink, values: pa.Array) -> int:
    """Write a dictionary's values; the position its ``dictionary`` message records."""
    if is_binary_like(values.type):
        return write_binary(sink, values)
    position = sink.position
    width = values.type.bit_width // 8
    data = values.buffers()[1]
    if data is not None and len(values):
        sink.write(data.slice(values.offset * width, len(values) * width))
    return position


class FileDictionaries:
    """The dictionary values a legacy file stores, by field id, and the keys each
    batch writes against them.  The values come from the dataset (``values``, which
    batches then fill in for columns that have none yet: a new dataset takes each
    column's first batch's dictionary, as pylance does)."""

    def __init__(self, values: MutableMapping[int, pa.Array]) -> None:
        self.values = values

    def keys(self, column: Column, arr: pa.DictionaryArray) -> np.ndarray:
        indices = arr.indices
        dtype = np.dtype(indices.type.to_pandas_dtype()).newbyteorder("<")
        raw = np.zeros(len(indices), dtype=dtype)
        if indices.buffers()[1] is not None and len(indices):
            whole = np.frombuffer(indices.buffers()[1], dtype=dtype)
            raw = whole[indices.offset : indices.offset + len(indices)]
        known = self.values.get(column.id)
        if known is None:
            self.values[column.id] = arr.dictionary
            return raw
        if arr.dictionary.equals(known):
            return raw
        values, known = as_read(arr.dictionary), as_read(known)
        return _remapped(raw, indices, values, known, column.field.name)


def as_read(values: pa.Array) -> pa.Array:
    """Dictionary values as readers load them: an empty string or binary is null."""
    if not is_binary_like(values.type) or not len(values):
        return values
    return pc.if_else(pc.equal(pc.binary_length(values), 0), pa.nulls(1, values.type)[0], values)


def dictionaries_of(columns: Sequence[Column], arrays: Sequence[pa.Array]) -> dict[int, pa.Array]:
    """The dictionary of every dictionary column (nested ones too) among ``arrays``."""
    out: dict[int, pa.Array] = {}

    def visit(column: Column, arr: pa.Array) -> None:
        dtype = arr.type
        if pa.types.is_dictionary(dtype):
            out[column.id] = arr.dictionary
        elif pa.types.is_struct(dtype):
            for i, child in enumerate(column.children):
                visit(child, arr.field(i))
        elif pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
            visit(column.children[0], arr.values)

    for column, arr in zip(columns, arrays, strict=True):
        visit(column, arr)
    return out


def _remapped(
    raw: np.ndarray, indices: pa.Array, values: pa.Array, known: pa.Array, name: str
) -> np.ndarray:
    """Keys into ``values`` as keys into the dictionary ``known``."""
    valid = np.ones(len(raw), dtype=bool)
    if indices.null_count:
        valid = indices.is_valid().to_numpy(zero_copy_only=False)
    at = pc.index_in(values, value_set=known)
    used = np.unique(raw[valid]).astype(np.int64)
    missing = used[~at.take(pa.array(used)).is_valid().to_numpy(zero_copy_only=False)]
    if missing.size:
        shown = values.take(pa.array(missing[:3])).to_pylist()
        raise SchemaError(
            f"column {name!r}: values {shown} are not in the dataset's dictionary; a legacy "
            "(0.1) dataset keeps one dictionary per column, its first batch's"
        )
    mapping = np.asarray(at.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    out = np.zeros(len(raw), dtype=raw.dtype)
    out[valid] = mapping[raw[valid].astype(np.int64)]
    return out


def write_dictionaries(
    sink: Sink, fields: Sequence[file_pb2.Field], values: Mapping[int, pa.Array], where: str
) -> None:
    """Write the values of the dictionary fields among ``fields`` (in field id order,
    as pylance does) and record where each lies in its field."""
    for f in sorted(fields, key=lambda f: f.id):
        if not f.logical_type.startswith("dict:"):
            continue
        found = values.get(f.id)
        if found is None:
            raise UnsupportedFeatureError(
                f"{where}: the values of dictionary column {f.name!r} are not known, so "
                "the legacy (0.1) manifest that keeps them cannot be written"
            )
        f.dictionary.offset = write_values(sink, found)
        f.dictionary.length = len(found)


def read_values(data: bytes, where: tuple[int, int], value_type: pa.DataType, end: int) -> pa.Array:
    """The ``length`` dictionary values written at ``offset`` (see :func:`write_values`)
    in ``data``, all of them before ``end``; a ``ValueError`` says what is wrong."""
    offset, length = where
    if not (0 <= offset <= end and 0 <= length <= end):
        raise ValueError(f"{length} values at {offset} lie outside the first {end} bytes")
    if not is_binary_like(value_type):
        width = value_type.bit_width // 8
        if offset + length * width > end:
            raise ValueError(f"{length} values at {offset} run past byte {end}")
        raw = pa.py_buffer(data[offset : offset + length * width])
        return pa.Array.from_buffers(value_type, length, [None, raw])
    if offset + 8 * (length + 1) > end:
        raise ValueError(f"{length} positions at {offset} run past byte {end}")
    positions = np.frombuffer(data, dtype="<i8", count=length + 1, offset=offset).astype(np.int64)
    first = int(positions[0])
    if positions[-1] != offset or first < 0 or np.any(np.diff(positions) < 0):
        raise ValueError(f"the positions at {offset} do not rise from the bytes before them")
    large = value_type in (pa.large_string(), pa.large_binary())
    offsets = pa.py_buffer((positions - first).astype(np.int64 if large else np.int32))
    values = pa.Array.from_buffers(
        value_type, length, [None, offsets, pa.py_buffer(data[first:offset])]
    )
    values.validate(full=True)  # a string must be UTF-8
    return as_read(values)
