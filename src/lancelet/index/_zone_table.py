"""The columns every zoned index file shares (fragment_id, zone_start, zone_length),
checked on load so a damaged file is an error rather than rows that vanish."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelet.errors import CorruptIndexError
from lancelet.index._files import IndexFile
from lancelet.index._treemap_for_labels import deserialize_treemap
from lancelet.table import row_address

_LIMIT = row_address.PART_END


def column_numpy(file: IndexFile, name: str) -> np.ndarray:
    column = file.table.column(name)
    if column.null_count:
        raise CorruptIndexError(f"{file.path}: column {name!r} holds nulls")
    values: np.ndarray = column.to_numpy()
    return values


def zone_bounds(file: IndexFile) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """fragment_id, zone_start, zone_length as uint64 vectors, each zone within its
    fragment's 32-bit offset space, non-empty, and no two zones overlapping."""
    fragments = column_numpy(file, "fragment_id").astype(np.uint64)
    starts = column_numpy(file, "zone_start").astype(np.uint64)
    lengths = column_numpy(file, "zone_length").astype(np.uint64)
    if np.any(fragments >= _LIMIT) or np.any(starts >= _LIMIT):
        raise CorruptIndexError(f"{file.path}: a zone's fragment id or start is out of range")
    if np.any(lengths == 0) or np.any(lengths > _LIMIT - starts):
        raise CorruptIndexError(f"{file.path}: a zone's length is out of range")
    firsts = row_address.pack(fragments, starts)
    order = np.argsort(firsts, kind="stable")
    ends = firsts[order] + lengths[order]
    if np.any(ends[:-1] > firsts[order][1:]):
        raise CorruptIndexError(f"{file.path}: zones overlap")
    return fragments, starts, lengths


def null_rows(
    file: IndexFile, key: str, bounds: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray] | None:
    """The exact null rows the reference keeps in a global buffer, each checked to lie
    inside a zone, and how many fall in each zone; None when the file has none."""
    data = file.global_buffer(key)
    if data is None:
        return None
    rows = deserialize_treemap(data, file.path)
    fragments, starts, lengths = bounds
    firsts = row_address.pack(fragments, starts)
    order = np.argsort(firsts, kind="stable")
    slot = np.searchsorted(firsts[order], rows, side="right") - 1
    zone = order[np.clip(slot, 0, None)] if len(firsts) else slot
    if len(rows) and (np.any(slot < 0) or np.any(rows >= firsts[zone] + lengths[zone])):
        raise CorruptIndexError(f"{file.path}: a null row lies outside every zone")
    counts = np.bincount(zone, minlength=len(firsts)) if len(rows) else np.zeros(len(firsts))
    return rows, counts.astype(np.int64)


def expect_table_type(file: IndexFile, name: str, kind: pa.DataType) -> None:
    actual = file.table.schema.field(name).type
    if not actual.equals(kind):
        raise CorruptIndexError(f"{file.path}: column {name!r} is {actual}, expected {kind}")
