"""Updating rows in place by SQL expressions, as rows rewritten (pylance's REWRITE_ROWS).

The matching rows are read whole, their new values computed and written as new
fragments; the old copies are deleted through deletion vectors.  The pieces that
turn row addresses into deletions, and that undo an uncommitted rewrite, are shared
with merge_insert.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.dataset.mutate.delete import delete_addresses, discard_deletions
from lancelet.dataset.read import blob_v2
from lancelet.dataset.read.scanner import ROW_ADDRESS, ROW_ID, LanceScanner
from lancelet.dataset.read.take import created_at
from lancelet.dataset.write.data_files import (
    check_writable,
    conform,
    discard_data_files,
    write_fragment_files,
)
from lancelet.errors import SchemaError
from lancelet.expr.compute import evaluate
from lancelet.expr.filter import parse_value
from lancelet.table import lineage
from lancelet.table.blob_v2 import values_schema
from lancelet.table.manifest import Manifest
from lancelet.transaction.operations import Delete, Update
from lancelet.transaction.store import DatasetStore

_Op = TypeVar("_Op", Update, Delete)


@dataclass(frozen=True)
class RowRewrite(Generic[_Op]):
    """An uncommitted row rewrite: its operation (files already written) and the counts
    the caller reports once it commits."""

    operation: _Op
    counts: dict[str, int]


def cast_options(target: pa.DataType) -> pc.CastOptions:
    # As SQL casts do: a float loses its fraction going into an integer column, but a
    # value out of the column's range is an error rather than wrapped around.
    return pc.CastOptions(target, allow_float_truncate=True)


def discard_rewrite(store: DatasetStore, base: Manifest, operation: Update | Delete) -> None:
    """Remove the data and deletion files of an Update (or Delete) planned on ``base``
    that did not commit."""
    if isinstance(operation, Update):
        discard_data_files(store, operation.new_fragments)
    discard_deletions(store, base, operation.updated_fragments)


class _Assignments:
    """The ``updates`` mapping compiled: new values per column, cast to its type."""

    def __init__(self, updates: Mapping[str, str], schema: pa.Schema, where: str) -> None:
        if not updates:
            raise ValueError(f"{where}: no updates given")
        unknown = [name for name in updates if name not in schema.names]
        if unknown:
            raise SchemaError(
                f"{where}: no column named {unknown[0]!r}; columns are {schema.names}"
            )
        self.where = where
        self.schema = schema
        self.expressions = {
            name: parse_value(sql, schema, computes=True)[0] for name, sql in updates.items()
        }

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        values = evaluate(pa.Table.from_batches([batch]), self.expressions, self.where)
        columns = list(batch.columns)
        for name in self.expressions:
            index = self.schema.get_field_index(name)
            columns[index] = self._cast(name, values.column(name), self.schema.field(index).type)
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def _cast(self, name: str, values: pa.ChunkedArray, target: pa.DataType) -> pa.Array:
        try:
            cast = pc.cast(values, options=cast_options(target))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise SchemaError(
                f"{self.where}: the new values of column {name!r} ({values.type}) "
                f"do not fit its type {target}: {exc}"
            ) from exc
        return cast.combine_chunks() if cast.num_chunks != 1 else cast.chunk(0)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.empty(0, np.uint64)


def plan_update(
    store: DatasetStore,
    manifest: Manifest,
    updates: Mapping[str, str],
    where: str | pc.Expression | None,
    data_storage_version: str | None = None,
) -> RowRewrite[Update]:
    """Write the updated rows as new fragments and delete their old copies; nothing is
    committed.  A failure removes what was written."""
    label = f"{store.root}: update"
    check_writable(manifest, data_storage_version)
    blob_v2.refuse_assignments(manifest, updates, label)
    schema = manifest.schema.to_arrow()
    assignments = _Assignments(updates, schema, label)
    scan = LanceScanner(store, manifest, columns=[*schema.names, ROW_ID, ROW_ADDRESS], filter=where)
    addresses: list[np.ndarray] = []
    ids: list[np.ndarray] = []

    def rewritten() -> Iterator[pa.RecordBatch]:
        for batch in scan.to_batches():
            addresses.append(batch.column(ROW_ADDRESS).to_numpy())
            ids.append(batch.column(ROW_ID).to_numpy())
            rows = assignments.apply(batch.drop_columns([ROW_ID, ROW_ADDRESS]))
            # Blob v2 values move with their rows, written anew (inline).
            yield blob_v2.values_of(store, manifest, rows, addresses[-1])

    schema = values_schema(schema)
    reader = pa.RecordBatchReader.from_batches(schema, rewritten())
    new_fragments = write_fragment_files(
        store, conform(reader, schema, label), manifest.schema, manifest.data_storage_version
    )
    found = _joined(addresses)
    try:
        if manifest.stable_row_ids:
            # Updated rows keep their ids and creation versions in their new place,
            # as in pylance; the commit records them as updated at its version.
            created = created_at(store, manifest, found)
            new_fragments = lineage.carried(new_fragments, _joined(ids), created)
        updated, removed = delete_addresses(store, manifest, found)
    except BaseException:
        discard_data_files(store, new_fragments)
        raise
    # As pylance records them: the ids of the updated columns and of their nested fields.
    columns = manifest.schema.resolve(list(updates), label)
    field_ids = sorted(i for f in columns for i in manifest.schema.subtree_ids(f.id))
    operation = Update(removed, updated, tuple(new_fragments), (), tuple(field_ids))
    return RowRewrite(operation, {"num_rows_updated": len(found)})
