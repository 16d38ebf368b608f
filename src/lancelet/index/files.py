"""Reading and writing the Lance files a scalar index keeps in its directory.

Index files are ordinary Lance files in the dataset's data file format (pylance
writes a 2.0 dataset's indices as 2.0 files, a 2.2 dataset's as 2.2).  Whatever goes
wrong reading one (a missing file, damaged bytes, an unexpected schema) is a
:class:`~lancelet.errors.CorruptIndexError` naming the file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress

import pyarrow as pa

from lancelet import io
from lancelet.errors import CorruptIndexError, LanceletError, UnsupportedTypeError
from lancelet.file import LanceFileReader, LanceFileWriter
from lancelet.file import version as file_version
from lancelet.index import ordering


@contextmanager
def reading(path: str | io.Place) -> Iterator[None]:
    """Turn any failure to read ``path`` into a CorruptIndexError naming it."""
    try:
        yield
    except CorruptIndexError:
        raise
    except OSError as exc:
        if io.store_failed(exc):
            raise  # the store failed a request: the index is not damaged
        if isinstance(exc, FileNotFoundError):
            raise CorruptIndexError(f"{path}: the index file is missing") from exc
        raise CorruptIndexError(f"{path}: the index file cannot be read: {exc}") from exc
    except (LanceletError, pa.ArrowException) as exc:
        raise CorruptIndexError(f"{path}: the index file cannot be read: {exc}") from exc


def open_file(path: io.Place, columns: Sequence[tuple[str, pa.DataType | None]]) -> LanceFileReader:
    """Open an index file whose schema must be exactly ``columns`` (name, type; a None
    type: any type lancelet can order)."""
    with reading(path):
        reader = LanceFileReader(path.path, file_io=path.file_io)
    check_columns(reader, path, columns)
    return reader


def check_columns(
    reader: LanceFileReader, path: io.Place, columns: Sequence[tuple[str, pa.DataType | None]]
) -> None:
    """The schema of the index file ``reader`` reads must be exactly ``columns``."""
    schema = reader.schema
    if schema.names != [name for name, _ in columns]:
        raise CorruptIndexError(
            f"{path}: the index file has columns {schema.names}, "
            f"expected {[name for name, _ in columns]}"
        )
    for field, (name, dtype) in zip(schema, columns, strict=True):
        ok = ordering.is_indexable(field.type) if dtype is None else field.type == dtype
        if not ok:
            raise CorruptIndexError(f"{path}: column {name!r} has the unexpected type {field.type}")


def read_rows(reader: LanceFileReader, start: int, count: int) -> pa.Table:
    with reading(reader.path):
        table: pa.Table = reader.read_range(start, count).to_table()
    if table.num_rows != count:
        raise CorruptIndexError(f"{reader.path}: read {table.num_rows} rows, asked for {count}")
    return table.combine_chunks()


def metadata(reader: LanceFileReader) -> dict[str, str]:
    raw = reader.schema.metadata or {}
    return {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in raw.items()}


def check_value_type(dtype: pa.DataType, what: str) -> None:
    if not ordering.is_indexable(dtype):
        raise UnsupportedTypeError(f"{what}: values of type {dtype} cannot be indexed")


def writable_version(version: str) -> str:
    """The file format to write index files in: the dataset's own (2.0 for legacy)."""
    return file_version.index_file_version(version)


def write_table(
    path: io.Place,
    table: pa.Table,
    version: str,
    meta: dict[str, str],
    buffers: Mapping[str, bytes] | None = None,
    unnamed_buffers: Sequence[bytes] = (),
) -> None:
    """Write one small index file whole; each of ``buffers`` goes into a global buffer
    whose position the schema metadata records under the buffer's key, then each of
    ``unnamed_buffers`` (whose positions the caller records in ``meta``)."""
    writer = LanceFileWriter(path.path, table.schema, version=version, file_io=path.file_io)
    try:
        for key, data in (buffers or {}).items():
            writer.add_schema_metadata(key, str(writer.add_global_buffer(data)))
        for data in unnamed_buffers:
            writer.add_global_buffer(data)
        for key, value in meta.items():
            writer.add_schema_metadata(key, value)
        if table.num_rows:
            writer.write_batch(table)
    except BaseException:
        writer.abort()
        raise
    writer.close()


def remove_quietly(paths: Sequence[io.Place]) -> None:
    for path in paths:
        with suppress(FileNotFoundError):
            path.file_io.delete(path.path)
