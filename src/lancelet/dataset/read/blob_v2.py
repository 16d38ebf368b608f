"""``take_blobs`` on blob v2 columns (Lance 2.2 datasets): the descriptors a take
returns, resolved to the values' bytes wherever pylance put them (see
:mod:`lancelet.file.blob_v2`): in the row's data file, or in a sidecar file in the
directory named after it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet.dataset.read.projection import ROW_ADDRESS
from lancelet.dataset.read.take import addresses_of_ids
from lancelet.errors import CorruptFileError, UnsupportedFeatureError
from lancelet.file.blob_v2 import DEDICATED, INLINE, PACKED, sidecar_name
from lancelet.table import blob_v2, row_address
from lancelet.table.fragment import DataFile
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore

__all__ = [
    "columns",
    "fragments_of",
    "refuse_assignments",
    "resolve",
    "values_of",
    "with_values",
]


def fragments_of(
    store: DatasetStore, manifest: Manifest, kind: str, rows: np.ndarray
) -> np.ndarray:
    """The fragment id of each selected row (``kind``: indices, ids or addresses)."""
    if kind == "indices":
        ends = np.cumsum([f.num_rows for f in manifest.fragments], dtype=np.int64)
        ids = np.asarray([f.id for f in manifest.fragments], dtype=np.int64)
        return ids[np.searchsorted(ends, rows, side="right")]
    addresses = rows.astype(np.uint64)
    if kind == "ids" and manifest.stable_row_ids:
        addresses = addresses_of_ids(store, manifest, addresses)
    return row_address.fragment_ids(addresses).astype(np.int64)


def resolve(
    store: DatasetStore,
    manifest: Manifest,
    field_id: int,
    descriptors: pa.StructArray,
    fragment_ids: np.ndarray,
) -> list[bytes | None]:
    """Each descriptor's bytes (None for a null), read from the data file of the
    column ``field_id`` in the row's fragment or from its sidecar files."""
    valid = np.asarray(descriptors.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    # flatten: the children as the struct's rows see them (its offset, its nulls).
    kinds, positions, sizes, blob_ids = (
        np.asarray(c.fill_null(0).to_numpy(zero_copy_only=False)).astype(np.int64)
        for c in descriptors.flatten()[:4]
    )
    unknown = valid & ~np.isin(kinds, (INLINE, PACKED, DEDICATED))
    if unknown.any():
        kind = int(kinds[np.argmax(unknown)])
        raise UnsupportedFeatureError(
            f"take_blobs: blobs of kind {kind} (external blobs) are not supported"
        )
    # A dedicated sidecar holds its one value from the start.
    starts = np.where(kinds == DEDICATED, 0, positions)
    # The file each value is in: its fragment's data file (blob id -1) or a sidecar.
    in_sidecar = kinds != INLINE
    rows = np.flatnonzero(valid)
    out: list[bytes | None] = [None] * len(descriptors)
    if not rows.size:
        return out
    keys = np.stack([fragment_ids[rows], np.where(in_sidecar, blob_ids, -1)[rows]], axis=1)
    places, group = np.unique(keys.reshape(-1, 2), axis=0, return_inverse=True)
    order = np.argsort(group.reshape(-1), kind="stable")
    bounds = np.cumsum(np.bincount(group.reshape(-1), minlength=len(places)))[:-1]
    data_files = {f.id: _data_file(f.files, field_id) for f in manifest.fragments}
    for (fragment_id, blob_id), members in zip(places, np.split(rows[order], bounds), strict=True):
        data = data_files[int(fragment_id)]
        path = store.data_path(data.path, data.base_id)
        if blob_id >= 0:
            path = io.join(path.removesuffix(".lance"), sidecar_name(int(blob_id)))
        _read_into(store.io, out, path, members, starts[members], sizes[members])
    return out


def columns(manifest: Manifest) -> list[str]:
    """The dataset's blob v2 columns."""
    return [f.name for f in manifest.schema.top_level() if blob_v2.is_blob_v2(f)]


def refuse_assignments(manifest: Manifest, updates: Iterable[str], where: str) -> None:
    """Refuse an update that assigns a blob v2 column (its values are bytes, not an
    expression lancelet evaluates)."""
    assigned = sorted(set(updates) & set(columns(manifest)))
    if assigned:
        raise UnsupportedFeatureError(
            f"{where}: column {assigned[0]!r} is a blob v2 column; lancelet does not "
            "update blob values"
        )


def with_values(
    store: DatasetStore,
    manifest: Manifest,
    batches: Iterator[pa.RecordBatch],
    schema: pa.Schema,
) -> tuple[Iterator[pa.RecordBatch], pa.Schema]:
    """Scanned batches (with row addresses) as they are written: each blob v2
    column's values in place of its descriptors, without the addresses."""
    kept = pa.schema([f for f in schema if f.name != ROW_ADDRESS], schema.metadata)

    def resolved() -> Iterator[pa.RecordBatch]:
        for batch in batches:
            addresses = batch.column(ROW_ADDRESS).to_numpy(zero_copy_only=False)
            yield values_of(store, manifest, batch.drop_columns([ROW_ADDRESS]), addresses)

    return resolved(), blob_v2.values_schema(kept)


Rows = TypeVar("Rows", pa.RecordBatch, pa.Table)


def values_of(store: DatasetStore, manifest: Manifest, rows: Rows, addresses: np.ndarray) -> Rows:
    """``rows`` (those at ``addresses``) with each blob v2 column's values in place of
    its descriptors."""
    fragments = row_address.fragment_ids(addresses).astype(np.int64)
    for field in manifest.schema.top_level():
        i = rows.schema.get_field_index(field.name)
        if blob_v2.is_blob_v2(field) and i >= 0:
            column = rows.column(i)
            if isinstance(column, pa.ChunkedArray):
                column = column.combine_chunks()
            values = resolve(store, manifest, field.id, column, fragments)
            plain = blob_v2.values_schema(pa.schema([rows.schema.field(i)])).field(0)
            rows = rows.set_column(i, plain, pa.array(values, pa.large_binary()))
    return rows


def _data_file(files: tuple[DataFile, ...], field_id: int) -> DataFile:
    held = [f for f in files if field_id in f.fields]
    if not held:
        raise CorruptFileError(f"no data file holds field {field_id}")
    return held[0]


def _read_into(
    file_io: io.FileIO,
    out: list[bytes | None],
    path: str,
    rows: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
) -> None:
    source = file_io.open_input(path)
    try:
        ends = starts + sizes
        if len(rows) and (starts.min() < 0 or ends.max() > source.size):
            raise CorruptFileError(f"{path}: a blob runs past the file's end")
        ranges = list(zip(starts.tolist(), sizes.tolist(), strict=True))
        source.prefetch(ranges)
        for row, (start, size) in zip(rows.tolist(), ranges, strict=True):
            out[row] = source.read(start, size).to_pybytes() if size else b""
    finally:
        source.close()
