"""``LanceFileWriter``: pylance's file writer, for every format version lancelet writes.

The version (``version=``, pylance's names: "2.0", "2.1", "2.2", "stable", ...)
picks the writer that turns batches into pages; the container around the pages
is the same for all of them (:mod:`lancelet.file.writing`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, MutableMapping, Sequence
from types import TracebackType
from typing import Any

import pyarrow as pa

from lancelet.errors import (
    UnsupportedOptionError,
    UnsupportedVersionError,
    UnwritableVersionError,
)
from lancelet.file import version as file_version
from lancelet.file.blob_v2 import is_blob_values
from lancelet.file.v0_1.writer import LegacyFileWriter
from lancelet.file.v2_0.writer import FileWriter20
from lancelet.file.v2_1.write.writer import FileWriter21
from lancelet.file.writing import FileWriterBase
from lancelet.io import FileIO
from lancelet.io.fileio import file_io_for


def _refuse_blob_v2(schema: pa.Schema, version: file_version.FileVersion, path: str) -> None:
    """pylance keeps a dataset's blob columns in 2.2 files as blob v2 (descriptors in
    the data file, values in ``.blob`` files beside it), which lancelet does not
    write; the 2.1 blob layout would give such a dataset columns pylance does not."""
    blobs = [f.name for f in schema if is_blob_values(f)]
    if blobs and version.structural and version.name != "2.1":
        raise UnsupportedOptionError(
            f"{path}: column {blobs[0]!r} is a blob column; lancelet writes a dataset's "
            f"blob columns in Lance 2.1 files only, not {version.name}"
        )


def _writer_class(version: file_version.FileVersion) -> type[FileWriterBase]:
    if version.name == "0.1":
        return LegacyFileWriter
    if version.structural:
        return FileWriter21
    return FileWriter20


def _resolve(path: str, requested: str | None) -> file_version.FileVersion:
    try:
        return file_version.writable(requested)
    except UnsupportedVersionError as exc:
        raise UnsupportedVersionError(f"{path}: {exc}") from exc


class LanceFileWriter:
    """Writes one Lance file (pylance's ``lance.file.LanceFileWriter``).

    Data is buffered per column (``data_cache_bytes``, 8 MiB by default) and
    written as a page whenever the buffer fills, so a long column spans many
    pages; no page exceeds ``max_page_bytes`` unless a single value does.  The
    file appears under ``path`` only when :meth:`close` succeeds.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        schema: pa.Schema | None = None,
        *,
        data_cache_bytes: int | None = None,
        version: str | None = None,
        storage_options: dict[str, str] | None = None,
        namespace_client: Any = None,
        table_id: list[str] | None = None,
        max_page_bytes: int | None = None,
        file_io: FileIO | None = None,
        **kwargs: Any,
    ) -> None:
        """``file_io``: the storage to write through (a dataset's); by default one made
        from ``storage_options``."""
        where = os.fspath(path)
        file_io = file_io_for(path, storage_options, file_io)
        if namespace_client is not None or table_id is not None:
            raise UnsupportedOptionError(
                f"{where}: LanceFileWriter: namespace_client and table_id are not supported"
            )
        for key in kwargs:
            raise UnsupportedOptionError(
                f"{where}: LanceFileWriter option {key!r} is not supported"
            )
        chosen = _resolve(where, version)
        if chosen.name == "0.1":
            # As pylance's: legacy files come from datasets' writes only.
            raise UnwritableVersionError(
                f"{where}: LanceFileWriter does not write legacy (0.1) files; "
                "write_dataset(..., data_storage_version='legacy') writes legacy datasets"
            )
        self._inner = _writer_class(chosen)(
            path, schema, chosen, data_cache_bytes, max_page_bytes, file_io
        )

    @classmethod
    def for_dataset(
        cls,
        path: str | os.PathLike[str],
        schema: pa.Schema,
        field_ids: Sequence[int],
        *,
        version: str | None = None,
        dictionaries: MutableMapping[int, pa.Array] | None = None,
        file_io: FileIO,
    ) -> LanceFileWriter:
        """A data file of a dataset, whose own schema records the dataset's field ids
        (``field_ids``, one per field of ``schema`` in pre-order) as pylance's do: a
        reader matches a file's columns to the manifest's by them.  ``dictionaries``
        are a legacy (0.1) dataset's dictionary values by field id (see
        :class:`lancelet.file.v0_1.writer.LegacyFileWriter`)."""
        where = os.fspath(path)
        chosen = _resolve(where, version)
        writer = cls.__new__(cls)
        if chosen.name == "0.1":
            writer._inner = LegacyFileWriter(path, None, chosen, None, None, file_io, dictionaries)
        else:
            writer._inner = _writer_class(chosen)(path, None, chosen, None, None, file_io)
        _refuse_blob_v2(schema, writer._inner.version, where)
        writer._inner.field_ids = tuple(field_ids)
        writer._inner.start(schema)
        return writer

    @property
    def path(self) -> str:
        return self._inner.path

    @property
    def schema(self) -> pa.Schema | None:
        return self._inner.schema

    @property
    def closed(self) -> bool:
        return self._inner.closed

    @property
    def size_bytes(self) -> int | None:
        return self._inner.size_bytes

    @property
    def version(self) -> str:
        """The format version being written ("2.0", "2.1", ...)."""
        return self._inner.version.name

    def tell(self) -> int:
        """Bytes written to the file so far (pages flushed from the column buffers)."""
        return self._inner.tell()

    def write_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        self._inner.write_batch(batch)

    def write_columns(
        self,
        columns: Sequence[Callable[[], pa.Array]],
        num_rows: int,
        batch_rows: int,
        costs: Sequence[int] | None = None,
    ) -> None:
        """Write ``num_rows`` rows given column by column (lancelet's own): see
        :meth:`lancelet.file.writing.FileWriterBase.write_columns`."""
        self._inner.write_columns(columns, num_rows, batch_rows, costs)

    def add_schema_metadata(self, key: str, value: str) -> None:
        self._inner.add_schema_metadata(key, value)

    def add_global_buffer(self, data: bytes) -> int:
        """Store extra bytes in the file; returns their global buffer index (from 1)."""
        return self._inner.add_global_buffer(data)

    def close(self) -> int | None:
        """Finish the file and publish it; returns the number of rows written."""
        return self._inner.close()

    def abort(self) -> None:
        """Discard the file being written."""
        self._inner.abort()

    def __enter__(self) -> LanceFileWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
