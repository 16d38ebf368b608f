"""The rows a vector index is built over: each live row's key (its address, or its
stable row id) and vector, read batch by batch into one array; null vectors and
vectors with a NaN left out, as pylance leaves them out; cosine indices' vectors
made unit vectors as pylance normalizes them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.dataset.core.snapshot import Snapshot
from lancelet.dataset.indices import vector_elements
from lancelet.dataset.read.scanner import ROW_ADDRESS, ROW_ID, LanceScanner

BATCH_ROWS = 1 << 16


def live_vectors(
    snapshot: Snapshot,
    path: str,
    dimension: int,
    metric: str,
    element: np.dtype,
    multivector: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """(row keys uint64, vectors (n, d) of type ``element``) of the rows the index
    holds; a multivector row's vectors each under the row's key."""
    manifest = snapshot.manifest
    by_row_id = manifest.stable_row_ids
    scanner = LanceScanner(
        snapshot.store,
        manifest,
        columns=[path],
        with_row_id=by_row_id,
        with_row_address=not by_row_id,
        batch_size=BATCH_ROWS,
    )
    # Filled in place, batch by batch: the column is held once, not twice.
    capacity = sum(f.physical_rows for f in manifest.fragments)
    vectors = np.empty((capacity, dimension), dtype=element)
    row_keys = np.empty(capacity, dtype=np.uint64)
    filled = 0
    for batch in scanner.to_batches():  # one step per batch
        values = batch.column(path)
        column = batch.column(ROW_ID if by_row_id else ROW_ADDRESS)
        if multivector:
            values, column = _each_vector(values, column)
        present = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        flat = values.filter(pa.array(present)).flatten()
        block = flat.to_numpy(zero_copy_only=False).reshape(-1, dimension)
        if metric == "cosine":
            block = vector_elements.unit_rows(block)
        if filled + len(block) > len(vectors):  # row counts the manifest lacks
            vectors = _grown(vectors, filled + len(block))
            row_keys = _grown(row_keys, len(vectors))
        row_keys[filled : filled + len(block)] = column.to_numpy(zero_copy_only=False)[present]
        vectors[filled : filled + len(block)] = block
        filled += len(block)
    row_keys, vectors = row_keys[:filled], vectors[:filled]
    if element == vector_elements.BINARY:
        return row_keys, vectors
    kept = ~np.isnan(vectors).any(axis=1)
    if kept.all():  # no copy of the column
        return row_keys, vectors
    return row_keys[kept], np.ascontiguousarray(vectors[kept])


def _each_vector(
    values: pa.ChunkedArray | pa.Array, keys: pa.ChunkedArray | pa.Array
) -> tuple[pa.Array, pa.Array]:
    """A multivector column's vectors, one per entry, and their rows' keys (null and
    empty rows hold none)."""
    lists = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    counts = pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False)
    each_key = np.repeat(keys.to_numpy(), counts.astype(np.int64))
    return lists.flatten(), pa.array(each_key, pa.uint64())


def _grown(array: np.ndarray, least: int) -> np.ndarray:
    """``array`` with room for at least ``least`` rows (and twice as many as now)."""
    rows = max(least, 2 * len(array), 1)
    out = np.empty((rows, *array.shape[1:]), dtype=array.dtype)
    out[: len(array)] = array
    return out
