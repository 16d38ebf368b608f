"""``LanceFragment.update_columns``: new values for existing columns of one fragment,
joined from other data, written as a new data file (not committed)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lancelet.dataset.mutate.merge_columns import matching_rows
from lancelet.dataset.mutate.schema_ops import new_data_files
from lancelet.dataset.read.fragment_reader import FragmentReader
from lancelet.dataset.read.projection import ROW_ADDRESS, ROW_ID
from lancelet.dataset.read.row_keys import key_column
from lancelet.dataset.write.inputs import as_reader
from lancelet.errors import ArgumentError, SchemaError
from lancelet.table.fragment import DataFile, Fragment
from lancelet.table.fragment_check import TOMBSTONE
from lancelet.table.manifest import Manifest
from lancelet.table.schema import file_field_ids
from lancelet.transaction.store import DatasetStore

# Columns a scan computes rather than stores: they cannot be given new values.
METADATA_COLUMNS = frozenset(
    {ROW_ID, ROW_ADDRESS, "_rowoffset", "_row_created_at_version", "_row_last_updated_at_version"}
)


def _updated_columns(manifest: Manifest, right: pa.Schema, key: str, where: str) -> list[str]:
    names = [n for n in right.names if n != key]
    existing = set(manifest.schema.top_level_names())
    for name in names:
        if name in METADATA_COLUMNS:
            raise ArgumentError(
                f"{where}: column {name} is a reserved metadata column and cannot be updated"
            )
        if name not in existing:
            raise SchemaError(
                f"{where}: column {name} in right side fragment does not exist in left side "
                "fragment"
            )
    if not names:
        raise ArgumentError(f"{where}: the data names no column to update besides {key!r}")
    return names


def _merged(old: pa.ChunkedArray, new: pa.ChunkedArray, match: pa.Array, where: str) -> pa.Array:
    column = old.combine_chunks()
    try:
        values = new.combine_chunks().cast(column.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaError(
            f"{where}: cannot store {new.type} values in a {column.type} column"
        ) from exc
    return pc.if_else(match.is_valid(), values.take(match), column)


def _tombstoned(files: tuple[DataFile, ...], gone: set[int]) -> tuple[DataFile, ...]:
    return tuple(
        replace(f, fields=tuple(TOMBSTONE if i in gone else i for i in f.fields)) for f in files
    )


def update_columns(
    store: DatasetStore,
    manifest: Manifest,
    fragment: Fragment,
    data: Any,
    left_on: str,
    right_on: str | None,
    schema: pa.Schema | None,
) -> tuple[Fragment, list[int]]:
    """The fragment with the columns ``data`` names (besides its key) replaced: a row
    whose key matches a row of ``data`` takes that row's values (the last such row's,
    when several match), the others keep theirs."""
    where = f"{store.root}: fragment {fragment.id}: update_columns"
    key = right_on if right_on is not None else left_on
    right = as_reader(data, schema).read_all()
    if key not in right.schema.names:
        raise SchemaError(f"{where}: the data has no column {key!r} to join on")
    names = _updated_columns(manifest, right.schema, key, where)
    if left_on not in (ROW_ID, ROW_ADDRESS, *manifest.schema.top_level_names()):
        raise SchemaError(f"{where}: the fragment has no column {left_on!r} to join on")
    left = key_column(store, manifest, fragment, left_on, where)
    right_keys = right.column(key).combine_chunks()
    try:
        right_keys = right_keys.cast(left.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaError(
            f"{where}: cannot join {left.type} {left_on!r} with {right_keys.type}"
        ) from exc
    match = matching_rows(right_keys, left, where)
    old = FragmentReader(store, manifest.schema, fragment).read(names, 0, fragment.physical_rows)
    values = pa.table(
        [_merged(old.column(n), right.column(n), match, where) for n in names],
        schema=old.schema,
    )
    modified = file_field_ids(manifest.schema, names)
    bare = replace(fragment, files=_tombstoned(fragment.files, set(modified)))
    with new_data_files(store, manifest) as files:
        return files.add(bare, values, manifest.schema), modified
