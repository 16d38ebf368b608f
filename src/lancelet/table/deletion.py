"""Deletion vectors: which row offsets of a fragment are deleted, and their file bytes.

Two encodings exist.  A sparse vector is an Arrow IPC file holding one
non-nullable ``uint32`` column ``row_id``; a dense one is a Roaring bitmap in
the portable serialization.  Readers accept both; the writer switches to the
bitmap above :data:`BITMAP_THRESHOLD` rows, as the reference does.
"""

from __future__ import annotations

import array

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from lancelet.errors import CorruptDatasetError
from lancelet.table import sorted_sets
from lancelet.table.naming import DeletionKind

BITMAP_THRESHOLD = 5_000
_SCHEMA = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])
# A deletion file is a few kilobytes: handing its decompression to Arrow's thread pool
# costs several times the work, more so on a busy machine.
_READ_OPTIONS = pa.ipc.IpcReadOptions(use_threads=False)


def choose_kind(num_deleted: int) -> DeletionKind:
    return DeletionKind.BITMAP if num_deleted >= BITMAP_THRESHOLD else DeletionKind.ARROW


def encode(rows: np.ndarray) -> tuple[DeletionKind, bytes]:
    """The file bytes for a set of deleted row offsets (sorted, unique uint32)."""
    rows = np.asarray(rows, dtype=np.uint32)
    kind = choose_kind(len(rows))
    if kind is DeletionKind.BITMAP:
        return kind, BitMap(array.array("I", rows.tobytes())).serialize()
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.ipc.new_file(sink, _SCHEMA, options=options) as writer:
        writer.write_batch(pa.record_batch([pa.array(rows, pa.uint32())], schema=_SCHEMA))
    return kind, sink.getvalue().to_pybytes()


def decode(data: bytes, kind: DeletionKind, physical_rows: int, path: str) -> np.ndarray:
    """Sorted deleted offsets; anything unreadable, repeated or out of range is an error."""
    try:
        rows = _decode_bitmap(data) if kind is DeletionKind.BITMAP else _decode_arrow(data, path)
    except CorruptDatasetError:
        raise
    except Exception as exc:  # pyarrow and pyroaring raise assorted types for bad bytes
        raise CorruptDatasetError(f"{path}: deletion file does not parse: {exc}") from exc
    unique = sorted_sets.unique(rows)
    if len(unique) != len(rows):
        # Writers list each row once (the reference in no particular order).
        raise CorruptDatasetError(f"{path}: deletion file lists a row more than once")
    rows = unique
    if len(rows) and int(rows[-1]) >= physical_rows:
        raise CorruptDatasetError(
            f"{path}: deletes row {int(rows[-1])} of a fragment with {physical_rows} rows"
        )
    return rows


def _decode_bitmap(data: bytes) -> np.ndarray:
    rows: np.ndarray = np.frombuffer(BitMap.deserialize(data).to_array(), dtype=np.uint32)
    return rows


def _decode_arrow(data: bytes, path: str) -> np.ndarray:
    table = pa.ipc.open_file(pa.py_buffer(data), options=_READ_OPTIONS).read_all()
    if table.num_columns != 1 or not pa.types.is_integer(table.schema.field(0).type):
        raise CorruptDatasetError(
            f"{path}: deletion file schema is {table.schema}, expected uint32"
        )
    column = table.column(0)
    if column.null_count:
        raise CorruptDatasetError(f"{path}: deletion file holds nulls")
    if column.type == pa.uint32():  # as written: no negative offsets to look for
        rows: np.ndarray = column.to_numpy()
        return rows
    values: np.ndarray = np.asarray(column.to_numpy(), dtype=np.int64)
    if len(values) and values.min() < 0:
        raise CorruptDatasetError(f"{path}: deletion file holds a negative row offset")
    return values.astype(np.uint32)
