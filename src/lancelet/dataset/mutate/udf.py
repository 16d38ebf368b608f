"""Functions that compute new columns from record batches: pylance's ``batch_udf``
decorator and ``BatchUDF``, and plain callables, applied batch by batch."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from lancelet.dataset.mutate.udf_checkpoint import BatchCheckpoint
from lancelet.errors import ArgumentError, SchemaError

RecordBatchFunction = Callable[[pa.RecordBatch], pa.RecordBatch]


class BatchUDF:
    """A function from a record batch to a record batch (or a pandas DataFrame) of new
    columns, whose output must match ``output_schema`` (default: the first output's)."""

    def __init__(
        self,
        func: Callable[[pa.RecordBatch], Any],
        output_schema: pa.Schema | None = None,
        checkpoint_file: str | os.PathLike[str] | None = None,
    ) -> None:
        self.func = func
        self.output_schema = output_schema
        self.checkpoint_file = checkpoint_file

    def __call__(self, batch: pa.RecordBatch) -> Any:
        # The function as written, so that a user can test it directly.
        return self.func(batch)


def batch_udf(
    output_schema: pa.Schema | None = None,
    checkpoint_file: str | os.PathLike[str] | None = None,
) -> Callable[[Callable[[pa.RecordBatch], Any]], BatchUDF]:
    """Decorator making a function a :class:`BatchUDF` for ``add_columns``."""

    def wrap(func: Callable[[pa.RecordBatch], Any]) -> BatchUDF:
        return BatchUDF(func, output_schema, checkpoint_file)

    return wrap


def _as_batch(result: Any, where: str) -> pa.RecordBatch:
    if isinstance(result, pa.RecordBatch):
        return result
    if type(result).__name__ == "DataFrame" and hasattr(result, "to_dict"):
        # As pylance: an index other than a default range becomes a column.
        return pa.RecordBatch.from_pandas(result)
    raise TypeError(f"{where}: the function must return a pyarrow RecordBatch, not {result!r}")


def batch_function(transform: Callable[[pa.RecordBatch], Any], where: str) -> RecordBatchFunction:
    """``transform`` as a function whose every output is a record batch of one schema:
    a :class:`BatchUDF`'s declared one, or else that of its output for the first row."""
    expected = transform.output_schema if isinstance(transform, BatchUDF) else None

    def call(batch: pa.RecordBatch) -> pa.RecordBatch:
        nonlocal expected
        if expected is None:
            # As pylance: the schema comes from a call on the first row alone, and
            # every call after must give it.
            expected = _as_batch(transform(batch.slice(0, 1)), where).schema
        result = _as_batch(transform(batch), where)
        if not result.schema.equals(expected):
            raise SchemaError(
                f"{where}: Output schema of function does not match the expected schema. "
                f"Expected:\n{expected}\nGot:\n{result.schema}"
            )
        # The schema metadata pylance keeps is the first output's (a DataFrame's range
        # index is recorded there, differently for each batch).
        return result.replace_schema_metadata(expected.metadata)

    return call


def apply_in_batches(
    table: pa.Table,
    func: RecordBatchFunction,
    batch_size: int | None,
    where: str,
    checkpoint: tuple[BatchCheckpoint, int] | None = None,
) -> pa.Table:
    """``func`` over ``table`` in batches of at most ``batch_size`` rows (default: as
    the table is chunked), its outputs joined; they must hold as many rows.  With a
    ``checkpoint`` (and the fragment id the rows belong to), results found there are
    reused and new ones recorded."""
    if batch_size is not None and batch_size <= 0:
        raise ArgumentError(f"{where}: batch_size must be positive, not {batch_size}")
    batches = table.to_batches(max_chunksize=batch_size) if batch_size else table.to_batches()
    if not batches:
        batches = [pa.RecordBatch.from_pylist([], schema=table.schema)]
    if checkpoint is None:
        results = [func(batch) for batch in batches]
    else:
        results = [_checkpointed(func, batch, i, *checkpoint) for i, batch in enumerate(batches)]
    values = pa.Table.from_batches(results)
    if values.num_rows != table.num_rows:
        raise ArgumentError(f"{where}: the function returned {values.num_rows} rows for "
                            f"{table.num_rows}")  # fmt: skip
    return values


def _checkpointed(
    func: RecordBatchFunction,
    batch: pa.RecordBatch,
    index: int,
    checkpoint: BatchCheckpoint,
    fragment_id: int,
) -> pa.RecordBatch:
    found = checkpoint.get(fragment_id, index)
    if found is not None:
        return found
    result = func(batch)
    checkpoint.put(fragment_id, index, result)
    return result


def discard_checkpoint(transform: object) -> None:
    """Remove a :class:`BatchUDF`'s checkpoint file once its columns are committed."""
    if isinstance(transform, BatchUDF) and transform.checkpoint_file is not None:
        path = os.fspath(transform.checkpoint_file)
        if os.path.exists(path):
            os.remove(path)
