"""The kinds of data pylance's writers accept, as a stream of record batches.

pylance's rules (``_coerce_reader``): pandas and polars DataFrames, Arrow tables,
batches and readers, Lance datasets and scanners, pyarrow datasets and scanners,
a dict of columns, a non-empty list of row dicts, and any other iterable of record
batches, which are cast to the schema given.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pa_ds

from lancelet._arrow import cast as arrow_cast
from lancelet.dataset.core.snapshot import DatasetHandle
from lancelet.dataset.read.scanner import LanceScanner
from lancelet.errors import DataColumnNotFoundError, DataTypeError, SchemaError
from lancelet.table.schema import check_same_columns
from lancelet.transaction.store import DatasetStore


def _from_pandas(data: Any, schema: pa.Schema | None) -> pa.Table | None:
    """A pandas DataFrame as pylance converts one: by ``pyarrow.Table.from_pandas``
    with the schema given (which selects the columns), keeping an index other than a
    default range as columns (``__index_level_0__`` when unnamed), a range index in
    the schema's pandas metadata."""
    module = type(data).__module__
    if not (module.startswith("pandas") and type(data).__name__ == "DataFrame"):
        return None
    where = "cannot convert the pandas DataFrame"
    try:
        return pa.Table.from_pandas(data, schema=schema)
    except KeyError as exc:
        raise DataColumnNotFoundError(f"{where}: {exc.args[0] if exc.args else exc}") from exc
    except pa.ArrowTypeError as exc:
        raise DataTypeError(f"{where}: {exc}") from exc
    except pa.ArrowInvalid as exc:
        raise SchemaError(f"{where}: {exc}") from exc


def _is_polars_frame(data: Any) -> bool:
    # pylance's test, by name, so that polars need not be importable.
    return type(data).__module__.startswith("polars") and type(data).__name__ == "DataFrame"


def _lance_reader(data: Any) -> pa.RecordBatchReader | None:
    """The batches of one of lancelet's own datasets or scanners."""
    if isinstance(data, DatasetHandle):
        return data.scanner().to_reader()
    if isinstance(data, LanceScanner):
        return data.to_reader()
    return None


def _single_batch(batch: pa.RecordBatch) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(batch.schema, [batch])


def _from_rows(data: Any, schema: pa.Schema | None) -> pa.RecordBatchReader | None:
    """A dict of columns or a non-empty list of row dicts, built under ``schema``."""
    try:
        if isinstance(data, dict):
            return _single_batch(pa.RecordBatch.from_pydict(data, schema=schema))
        if isinstance(data, list) and data and isinstance(data[0], dict):
            return _single_batch(pa.RecordBatch.from_pylist(data, schema=schema))
    except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError) as exc:
        raise SchemaError(f"cannot build record batches from the data given: {exc}") from exc
    return None


def known_rows(data: Any) -> int | None:
    """How many rows ``data`` holds, when it says so without being read (a table, a
    batch or a pandas frame); None for streams and the rest."""
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        return int(data.num_rows)
    if type(data).__name__ == "DataFrame" and type(data).__module__.startswith("pandas"):
        return len(data)
    return None


def as_reader(data: Any, schema: pa.Schema | None = None) -> pa.RecordBatchReader:
    """Any of the inputs pylance accepts as a stream of record batches."""
    reader: pa.RecordBatchReader | None
    if isinstance(data, pa.RecordBatchReader):
        reader = data
    elif isinstance(data, pa.Table):
        reader = data.to_reader()
    elif isinstance(data, pa.RecordBatch):
        reader = _single_batch(data)
    elif (table := _from_pandas(data, schema)) is not None:
        reader = table.to_reader()
    elif _is_polars_frame(data):
        reader = data.to_arrow().to_reader()
    elif (reader := _lance_reader(data)) is not None:
        pass
    elif isinstance(data, pa_ds.Dataset):
        # Through its own scanner(): a subclass (pylance's dataset is one) may not be
        # a pyarrow dataset underneath, and Scanner.from_dataset would crash on it.
        reader = data.scanner().to_reader()
    elif isinstance(data, pa_ds.Scanner):
        reader = data.to_reader()
    elif (reader := _from_rows(data, schema)) is not None:
        pass
    elif isinstance(data, Iterable) and not isinstance(data, (str, bytes)):
        reader = _reader_from_batches(data, schema)
    else:
        raise TypeError(f"cannot write data of type {type(data).__name__}")
    if schema is not None and reader.schema != schema:
        return _cast_reader(reader, schema)
    return reader


def _reader_from_batches(data: Iterable[Any], schema: pa.Schema | None) -> pa.RecordBatchReader:
    batches = iter(data)
    if schema is not None:
        return pa.RecordBatchReader.from_batches(schema, _casting(batches, schema))
    first = next(batches, None)
    if first is None:
        raise SchemaError("no data and no schema: cannot tell what to write")
    if not isinstance(first, pa.RecordBatch):
        raise TypeError(f"expected record batches, got {type(first).__name__}")

    def chain() -> Iterator[pa.RecordBatch]:
        yield first
        for batch in batches:
            if not isinstance(batch, pa.RecordBatch):
                raise TypeError(f"expected record batches, got {type(batch).__name__}")
            yield batch

    return pa.RecordBatchReader.from_batches(first.schema, chain())


def _casting(batches: Iterator[Any], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Each batch cast to ``schema``, as pylance casts batches of an iterable."""
    for batch in batches:
        if not isinstance(batch, pa.RecordBatch):
            raise TypeError(f"expected record batches, got {type(batch).__name__}")
        if batch.schema != schema:
            try:
                batch = arrow_cast.cast(batch, schema)
            except (ValueError, TypeError, NotImplementedError) as exc:
                raise SchemaError(
                    "a record batch does not match the schema given and cannot be cast "
                    f"to it.\nExpected:\n{schema}\nGot:\n{batch.schema}"
                ) from exc
        yield batch


def _cast_reader(reader: pa.RecordBatchReader, schema: pa.Schema) -> pa.RecordBatchReader:
    def cast() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            yield arrow_cast.cast(batch.select(schema.names), schema)

    check_same_columns(schema, reader.schema, "write")
    return pa.RecordBatchReader.from_batches(schema, cast())


def given_uri(uri: Any) -> str:
    """A dataset's URI as the user gave it, or a dataset's own (for ``uri`` and events)."""
    return uri.uri if isinstance(uri, DatasetHandle) else os.fspath(uri)


def dataset_store(uri: Any, storage_options: dict[str, str] | None, where: str) -> DatasetStore:
    """The store of the dataset a call that takes a dataset's URI writes: at a path or
    URI as given, or, as pylance allows, one of lancelet's datasets, whose storage
    (its ``FileIO``) applies unless other options are given."""
    if isinstance(uri, DatasetHandle):
        if storage_options is None:
            return DatasetStore(uri.uri, file_io=uri.snapshot.store.io)
        return DatasetStore(uri.uri, storage_options)
    if not isinstance(uri, (str, os.PathLike)):
        raise TypeError(
            f"{where}: the destination must be a str, Path, or LanceDataset, "
            f"not {type(uri).__name__}"
        )
    return DatasetStore(uri, storage_options)
