"""The LABEL_LIST scalar index on list columns (``bitmap_page_lookup.lance``).

One row per distinct list element (``keys``, in the element type, ascending with a
null element first) with the row addresses of the lists holding it (``bitmaps``: a
serialized row-address tree map).  Lists that are themselves null hold no element;
pylance 14 records their rows in a global buffer named by the ``lance:label_list_nulls``
metadata key (index version 1), and the number of keys under ``lance:index_stats``.

``array_has_any`` / ``array_has_all`` are answered exactly: the rows whose list holds
any / every one of the values (a null element never matches, a null or empty list
never does).  Queries with a null value or no values are left to the scan.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import reduce
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet import io
from lancelet.errors import ArgumentError, CorruptIndexError, LanceFileError, UnsupportedTypeError
from lancelet.expr import HasAll, HasAny, IndexQuery
from lancelet.index._files import IndexDetails, read_index_file, write_index_file
from lancelet.index._treemap_for_labels import deserialize_treemap, serialize_treemap
from lancelet.index.base import SearchResult
from lancelet.index.zonemap import literals
from lancelet.table import sorted_sets

FILE_NAME = "bitmap_page_lookup.lance"
TYPE_URL = "/lance.table.LabelListIndexDetails"
INDEX_VERSION = 1
_NULLS_KEY = "lance:label_list_nulls"
_STATS_KEY = "lance:index_stats"


def label_list_details() -> IndexDetails:
    """The manifest's index details for a label-list index (an empty message)."""
    return IndexDetails(TYPE_URL, b"", INDEX_VERSION)


def _item_type(list_type: pa.DataType) -> pa.DataType:
    if not (pa.types.is_list(list_type) or pa.types.is_large_list(list_type)):
        raise UnsupportedTypeError(f"a label-list index needs a list column, not {list_type}")
    item: pa.DataType = list_type.value_type
    if pa.types.is_nested(item) or pa.types.is_dictionary(item):
        raise UnsupportedTypeError(f"a label-list index cannot index {item} list elements")
    return item


def write_label_list(
    batches: Iterable[tuple[pa.Array, np.ndarray]],
    directory: io.Place,
    value_type: pa.DataType,
    file_version: str,
) -> IndexDetails:
    """Write ``bitmap_page_lookup.lance`` for ``batches`` of (lists, row addresses) of a
    column of type ``value_type``; returns the manifest details."""
    item_type = _item_type(value_type)
    keys: list[pa.Array] = []
    owners: list[np.ndarray] = []
    nulls: list[np.ndarray] = []
    for values, addresses in batches:
        values, addresses = _check_batch(values, addresses, value_type)
        nulls.append(addresses[np.asarray(values.is_null())])
        keys.append(pc.list_flatten(values))
        owners.append(addresses[pc.list_parent_indices(values).to_numpy()])
    all_keys = pa.concat_arrays(keys) if keys else pa.array([], item_type)
    all_owners = np.concatenate(owners) if owners else np.zeros(0, np.uint64)
    key_array, bitmaps = _group(all_keys, all_owners)
    table = pa.table(
        {"keys": key_array, "bitmaps": pa.array(bitmaps, pa.binary())},
        schema=pa.schema([pa.field("keys", item_type), pa.field("bitmaps", pa.binary())]),
    )
    null_rows = np.concatenate(nulls) if nulls else np.zeros(0, np.uint64)
    stats = json.dumps({"num_bitmaps": len(bitmaps)}, separators=(",", ":"))
    write_index_file(
        directory,
        FILE_NAME,
        table,
        {_STATS_KEY: stats},
        {_NULLS_KEY: serialize_treemap(null_rows)},
        file_version,
    )
    return label_list_details()


def _check_batch(
    values: pa.Array, addresses: np.ndarray, value_type: pa.DataType
) -> tuple[pa.Array, np.ndarray]:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not values.type.equals(value_type):
        raise ArgumentError(f"index values have type {values.type}, expected {value_type}")
    addresses = np.asarray(addresses)
    if addresses.dtype != np.uint64 or addresses.ndim != 1 or len(addresses) != len(values):
        raise ArgumentError("row addresses must be a uint64 vector, one per value")
    return values, addresses


def _group(keys: pa.Array, owners: np.ndarray) -> tuple[pa.Array, list[bytes]]:
    """Distinct keys in ascending order (null first) and the serialized row set of each."""
    encoded = pc.dictionary_encode(keys, null_encoding="encode")
    dictionary = encoded.dictionary
    order = pc.array_sort_indices(dictionary, null_placement="at_start").to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    codes = rank[encoded.indices.to_numpy(zero_copy_only=False)]
    sequence = np.lexsort((owners, codes))
    codes, owners = codes[sequence], owners[sequence]
    # Where each key's run ends, and where it starts (no runs without keys).
    bounds = np.append(np.flatnonzero(np.diff(codes)) + 1, len(codes))[: len(codes)]
    starts = np.insert(bounds[:-1], 0, 0) if len(codes) else bounds
    bitmaps = [serialize_treemap(owners[s:e]) for s, e in zip(starts, bounds, strict=True)]
    return dictionary.take(pa.array(order)), bitmaps


class LabelListIndex:
    """A label-list index read from its directory (:meth:`open`); bitmaps are read
    from the file as queries need them."""

    def __init__(self, file: Any, keys: pa.Array, list_nulls: np.ndarray | None) -> None:
        self._file = file
        self.path: str = file.path
        self.keys = keys
        self.value_type = keys.type
        self._list_nulls = list_nulls

    @classmethod
    def open(cls, directory: io.Place) -> LabelListIndex:
        file = read_index_file(directory, FILE_NAME, columns=["keys"])
        full_schema = file.reader.schema
        if full_schema.names != ["keys", "bitmaps"] or not full_schema.field("bitmaps").type.equals(
            pa.binary()
        ):
            raise CorruptIndexError(
                f"{file.path}: columns are {full_schema}, expected keys and binary bitmaps"
            )
        keys = file.table.column("keys").combine_chunks()
        if keys.null_count > 1 or len(pc.unique(keys)) != len(keys):
            raise CorruptIndexError(f"{file.path}: a label appears more than once")
        data = file.global_buffer(_NULLS_KEY)
        list_nulls = None if data is None else deserialize_treemap(data, file.path)
        return cls(file, keys, list_nulls)

    def statistics(self) -> dict[str, Any]:
        """What pylance's ``index_stats(name)["indices"][i]`` shows for a label list."""
        return {"num_bitmaps": len(self.keys)}

    def null_list_addresses(self) -> np.ndarray | None:
        """Rows whose list is null (None for files written before pylance kept them)."""
        return self._list_nulls

    def search(self, query: IndexQuery) -> SearchResult | None:
        if not isinstance(query, HasAny | HasAll) or len(query.values) == 0:
            return None
        values = literals(list(query.values), self.value_type)
        if values is None:
            return None
        positions = pc.index_in(values, value_set=self.keys).to_numpy(zero_copy_only=False)
        found = ~np.isnan(positions.astype(np.float64))
        if isinstance(query, HasAll) and not np.all(found):
            return SearchResult(np.zeros(0, dtype=np.uint64), exact=True)
        rows = np.unique(positions[found].astype(np.int64))
        sets = self._bitmaps(rows)
        if not sets:
            return SearchResult(np.zeros(0, dtype=np.uint64), exact=True)
        if isinstance(query, HasAny):
            return SearchResult(sorted_sets.union(sets), exact=True)
        both = reduce(sorted_sets.intersection, sets)
        return SearchResult(both, exact=True)

    def _bitmaps(self, rows: np.ndarray) -> list[np.ndarray]:
        if len(rows) == 0:
            return []
        try:
            table = self._file.reader.take_rows(rows, columns=["bitmaps"]).to_table()
        except (LanceFileError, pa.ArrowException, ValueError, IndexError) as exc:
            raise CorruptIndexError(f"{self.path}: bitmaps do not read: {exc}") from exc
        column = table.column("bitmaps")
        if column.null_count:
            raise CorruptIndexError(f"{self.path}: a label has no bitmap")
        return [deserialize_treemap(item.as_buffer().to_pybytes(), self.path) for item in column]
