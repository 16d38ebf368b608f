"""``merge``: new columns from Arrow data, joined to the dataset's rows on a key.

A left join: every row of the dataset keeps its place and gets the values of
the data's row with an equal key, or nulls when there is none.  As in pylance,
a null key matches a null key, and when the data repeats a key its last row
wins.  The joined values go into one new data file per fragment (a Merge).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.dataset.mutate.schema_ops import extend_schema, new_data_files
from lancelet.dataset.read.fragment_reader import FragmentReader
from lancelet.dataset.read.projection import SPECIAL
from lancelet.dataset.read.row_keys import key_column
from lancelet.dataset.write.inputs import as_reader
from lancelet.errors import ColumnChangeError, SchemaError
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.operations import Merge
from lancelet.transaction.store import DatasetStore


def matching_rows(right_keys: pa.Array, left_keys: pa.Array, where: str) -> pa.Array:
    """For each left key, the index of the right row holding it (the last, if several),
    or null."""
    size = len(right_keys)
    # index_in finds a key's first occurrence; searching the keys backwards makes the
    # last occurrence win.
    backwards = right_keys.take(pa.array(np.arange(size - 1, -1, -1, dtype=np.int64)))
    try:
        found = pc.index_in(left_keys, value_set=backwards, skip_nulls=False)
    except pa.ArrowNotImplementedError as exc:
        raise SchemaError(f"{where}: cannot join on a key of type {left_keys.type}") from exc
    return pc.subtract(pa.scalar(size - 1, found.type), found)


def plan_merge(
    store: DatasetStore,
    manifest: Manifest,
    data: Any,
    left_on: str,
    right_on: str | None,
    schema: pa.Schema | None,
    where: str,
    fragments: Sequence[Fragment] | None = None,
) -> Merge:
    """The Merge adding the data's columns to ``fragments`` (default: all of them)."""
    right = as_reader(data, schema).read_all()
    key = left_on if right_on is None else right_on
    _check_key(manifest, right.schema, left_on, key, where)
    added = right.drop_columns([key])
    if not added.num_columns:
        raise SchemaError(f"{where}: the data holds no column besides the key {key!r}")
    new_schema = extend_schema(manifest, added.schema, where)
    chosen = manifest.fragments if fragments is None else fragments
    readers = [FragmentReader(store, manifest.schema, f) for f in chosen]
    if not readers:
        return Merge((), new_schema, preserves_nullability=True)
    # One lookup for every fragment's keys (deleted rows included, to keep the new files
    # aligned), so the data's keys are hashed once.
    left = pa.concat_arrays([key_column(store, manifest, f, left_on, where) for f in chosen])
    rows = matching_rows(right.column(key).combine_chunks(), left, where)
    merged = []
    start = 0
    with new_data_files(store, manifest) as files:
        for reader in readers:
            count = reader.fragment.physical_rows
            values = added.take(rows.slice(start, count))
            start += count
            _check_required(values, reader.deleted, where)
            merged.append(files.add(reader.fragment, values, new_schema))
    return Merge(tuple(merged), new_schema, preserves_nullability=True)


def _check_key(
    manifest: Manifest, data: pa.Schema, left_on: str, right_on: str, where: str
) -> None:
    dataset = manifest.schema.to_arrow()
    if left_on not in dataset.names and left_on not in SPECIAL:
        raise ColumnChangeError(
            f"{where}: no column {left_on!r} to join on; columns are {dataset.names}"
        )
    if right_on not in data.names:
        raise ColumnChangeError(
            f"{where}: the data has no key column {right_on!r}; it has {data.names}"
        )
    left_type = pa.uint64() if left_on in SPECIAL else dataset.field(left_on).type
    right_type = data.field(right_on).type
    if left_type != right_type:
        raise ColumnChangeError(
            f"{where}: key column {right_on!r} is {right_type} in the data but "
            f"{left_on!r} is {left_type} in the dataset"
        )


def _check_required(values: pa.Table, deleted: np.ndarray, where: str) -> None:
    """A non-nullable new column needs a match for every live row."""
    live = np.ones(values.num_rows, dtype=bool)
    live[deleted] = False
    for field, column in zip(values.schema, values.columns, strict=True):
        if field.nullable:
            continue
        if (np.asarray(column.is_null()) & live).any():
            raise ColumnChangeError(
                f"{where}: column {field.name!r} is not nullable, but some rows of the "
                "dataset have no match in the data"
            )
