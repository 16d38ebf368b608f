"""Blob columns as pylance's Python API shows them: :class:`BlobColumn` (an Arrow
binary column as file-like objects), :class:`BlobFile` (one blob opened as a
read-only file) and the selection behind ``LanceDataset.take_blobs``.

A blob column is a ``large_binary`` field marked ``lance-encoding:blob``; its values
live out of line in the data files (2.1 blob pages), or, from Lance 2.2 on, it is a
blob v2 column (:mod:`lancelet.dataset.read.blob_v2`).  ``take_blobs`` reads the selected
values and hands each out as a :class:`BlobFile`; a null value is ``None``.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.dataset.core import arguments
from lancelet.dataset.read import blob_v2 as blob_v2_take
from lancelet.dataset.read.take import take_by_row_ids, take_rows
from lancelet.errors import ArgumentError, UnsupportedFeatureError, UnsupportedOptionError
from lancelet.file import version as file_version
from lancelet.table import blob_v2
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest, data_file_format
from lancelet.table.schema import LanceSchema
from lancelet.transaction.store import DatasetStore

__all__ = ["BlobColumn", "BlobFile", "check_writable", "take_blobs"]

BLOB_KEY = b"lance-encoding:blob"
DEFAULT_BLOB_BUFFER_SIZE = 512 * 1024


class BlobFile(io.BufferedIOBase):
    """One blob as a seekable, read-only binary file."""

    def __init__(self, inner: bytes | memoryview, buffer_size: int = DEFAULT_BLOB_BUFFER_SIZE):
        # ``inner`` is the blob's bytes (pylance's is a handle to its native reader).
        super().__init__()
        if buffer_size < 0:
            raise ArgumentError(f"BlobFile: buffer_size must not be negative, got {buffer_size}")
        self._data = memoryview(inner)
        self._pos = 0

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed file")

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def size(self) -> int:
        """The blob's size in bytes."""
        return len(self._data)

    def tell(self) -> int:
        self._check_open()
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._check_open()
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: len(self._data)}.get(whence)
        if base is None:
            raise ValueError(f"invalid whence ({whence})")
        if base + offset < 0:
            raise ValueError(f"negative seek position {base + offset}")
        self._pos = base + offset
        return self._pos

    def read(self, size: int | None = -1) -> bytes:
        self._check_open()
        start = min(self._pos, len(self._data))
        end = len(self._data) if size is None or size < 0 else min(start + size, len(self._data))
        self._pos = max(self._pos, end)
        return bytes(self._data[start:end])

    def read1(self, size: int = -1) -> bytes:
        return self.read(size)

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, b: Any) -> int:
        view = memoryview(b).cast("B")
        chunk = self.read(len(view))
        view[: len(chunk)] = chunk
        return len(chunk)

    def read_range(self, offset: int, length: int) -> bytes:
        """The ``length`` bytes from ``offset``, leaving the position where it is."""
        self._check_open()
        if offset < 0 or length < 0:
            raise OverflowError(f"BlobFile.read_range: negative offset or length {offset, length}")
        if offset + length > len(self._data):
            raise ArgumentError(
                f"BlobFile.read_range: range end {offset + length} exceeds blob size "
                f"{len(self._data)}"
            )
        return bytes(self._data[offset : offset + length])

    def read_ranges(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        """Each ``(offset, length)`` range's bytes, in the order given."""
        # pylance converts every range to unsigned integers before reading any.
        if any(offset < 0 or length < 0 for offset, length in ranges):
            raise OverflowError(f"BlobFile.read_ranges: a negative offset or length in {ranges}")
        return [self.read_range(offset, length) for offset, length in ranges]


class BlobColumn:
    """An Arrow binary column whose rows iterate as file-like objects (a null value
    as an empty one, as in pylance)."""

    def __init__(self, blob_column: pa.Array | pa.ChunkedArray) -> None:
        if not isinstance(blob_column, (pa.Array, pa.ChunkedArray)):
            raise ArgumentError(
                f"Expected a pyarrow.Array or pyarrow.ChunkedArray, got {type(blob_column)}"
            )
        dtype = blob_column.type
        if not (pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype)):
            raise ArgumentError(f"Expected a binary array, got {dtype}")
        self.blob_column = blob_column

    def __iter__(self) -> Iterator[io.BytesIO]:
        for value in self.blob_column.to_pylist():
            yield io.BytesIO(value)


def is_blob(field: pa.Field) -> bool:
    return BLOB_KEY in (field.metadata or {})


def check_writable(schema: pa.Schema, version: str, where: str) -> None:
    """Refuse blob columns in 2.0 files (the 2.0 blob encoding, which lancelet does
    not write) and in legacy (0.1) ones (which pylance writes but cannot read back)."""
    blobs = [f.name for f in schema if is_blob(f)]
    if blobs and version in ("0.1", "2.0"):
        raise UnsupportedFeatureError(
            f"{where}: column {blobs[0]!r} is a blob column (lance-encoding:blob); lancelet "
            f"writes blob columns in Lance 2.1 and 2.2 datasets only, not {version} "
            "(pass data_storage_version='2.1' or '2.2')"
        )


def dataset_schema(schema: pa.Schema, version: str, where: str) -> LanceSchema:
    """The schema of a new dataset of ``version`` files holding ``schema``'s columns:
    from 2.2 on, blob columns are blob v2 columns, as pylance makes them."""
    if version in ("0.1", "2.0", "2.1"):
        return LanceSchema.from_arrow(schema)
    nested = [
        f"{top.name}.{f.name}" for top in schema for f in _nested_fields(top.type) if is_blob(f)
    ]
    if nested:
        raise UnsupportedFeatureError(
            f"{where}: {nested[0]!r} is a blob column inside a struct or list; lancelet "
            f"writes blob columns of Lance {version} datasets at the top level only"
        )
    if not any(is_blob(f) for f in schema):
        return LanceSchema.from_arrow(schema)
    meta = {k.decode(): v for k, v in (schema.metadata or {}).items()}
    return LanceSchema.from_proto(blob_v2.lance_fields(schema, where), meta)


def _nested_fields(dtype: pa.DataType) -> Iterator[pa.Field]:
    if pa.types.is_struct(dtype):
        children = [dtype.field(i) for i in range(dtype.num_fields)]
    elif pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        children = [dtype.value_field]
    else:
        children = []
    for child in children:
        yield child
        yield from _nested_fields(child.type)


def files_version(fragments: Sequence[Fragment]) -> str:
    """The format of the fragments' data files (lancelet's default with none)."""
    for fragment in fragments:
        for data in fragment.files:
            name = data_file_format(data.file_major_version, data.file_minor_version)
            if name is not None:
                return name
    return file_version.DEFAULT_WRITE


def _selection(ids: Any, addresses: Any, indices: Any, call: str) -> tuple[str, np.ndarray]:
    given = [(k, v) for k, v in (("ids", ids), ("addresses", addresses),
                                 ("indices", indices)) if v is not None]  # fmt: skip
    if len(given) != 1:
        raise ArgumentError(f"{call}: exactly one of ids, addresses or indices must be given")
    kind, values = given[0]
    rows = arguments.indices(values, call)
    if len(rows) and int(rows.min()) < 0:
        raise ArgumentError(f"{call}: {kind} must not be negative")
    return kind, rows


def take_blobs(
    store: DatasetStore,
    manifest: Manifest,
    column: str,
    selection: tuple[Any, Any, Any],
    buffer_size: int,
) -> list[BlobFile | None]:
    """The blobs of ``column`` at the rows chosen by one of (ids, addresses, indices)."""
    call = "take_blobs"
    schema: LanceSchema = manifest.schema
    arrow = schema.to_arrow()
    if column not in arrow.names or not is_blob(arrow.field(column)):
        raise ArgumentError(f"{call}: {column!r} is not a blob column of the dataset")
    kind, rows = _selection(*selection, call)
    if kind == "indices":
        table = take_rows(store, manifest, rows, [column])
    else:
        if kind == "addresses" and manifest.stable_row_ids:
            raise UnsupportedOptionError(
                f"{call}: addresses of a dataset with stable row ids are not supported; pass ids"
            )
        table = take_by_row_ids(store, manifest, rows.astype(np.uint64), [column])
        if table.num_rows != len(rows):
            # pylance's words: it refuses rather than return fewer blobs than asked for.
            raise UnsupportedOptionError(
                f"{call}: A take operation that includes row addresses must not target deleted rows"
            )
    values = table.column(column).combine_chunks()
    if pa.types.is_struct(values.type):  # blob v2: descriptors of the values
        field_id = next(f.id for f in schema.top_level() if f.name == column)
        fragments = blob_v2_take.fragments_of(store, manifest, kind, rows)
        data = blob_v2_take.resolve(store, manifest, field_id, values, fragments)
    else:
        data = values.to_pylist()
    return [None if value is None else BlobFile(value, buffer_size) for value in data]
