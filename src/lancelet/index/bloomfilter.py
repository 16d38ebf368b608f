"""The BLOOMFILTER scalar index: one split block Bloom filter per zone
(``bloomfilter.lance``).

One row per zone (``fragment_id``, ``zone_start``, ``zone_length``, ``has_null``,
``bloom_filter_data``), the schema metadata ``bloomfilter_item`` (rows per zone, which
is also the filter's expected distinct count) and ``bloomfilter_probability``, and the
exact null rows as a row-address tree map in the global buffer the ``null_bitmap``
key names.  Filters are pylance's bit for bit (:mod:`lancelet.index._sbbf`).

``=`` and ``IN`` return the zones whose filter may hold a value (``exact=False``);
``IS NULL`` is exact when the null-row buffer is present.  A float is hashed by its
bits, so ``0.0`` also probes ``-0.0`` (and the reverse), and NaN (whose bits vary)
matches every zone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet.errors import ArgumentError, CorruptIndexError, UnsupportedTypeError
from lancelet.expr import Equals, IndexQuery, IsIn, IsNull
from lancelet.index._files import IndexDetails, expect_columns, read_index_file, write_index_file
from lancelet.index._sbbf import build_filter, check_filters, filter_bytes, hash_values
from lancelet.index._treemap_for_labels import serialize_treemap
from lancelet.index._zone_table import column_numpy, null_rows, zone_bounds
from lancelet.index._zones import cut_zones, zone_addresses
from lancelet.index.base import SearchResult
from lancelet.index.zonemap import literals

FILE_NAME = "bloomfilter.lance"
TYPE_URL = "/lance.index.pb.BloomFilterIndexDetails"
INDEX_VERSION = 0
DEFAULT_NUMBER_OF_ITEMS = 8192
DEFAULT_PROBABILITY = 0.00057
_ITEMS_KEY = "bloomfilter_item"
_PROBABILITY_KEY = "bloomfilter_probability"
_NULLS_KEY = "null_bitmap"
_COLUMNS: dict[str, pa.DataType | None] = {
    "fragment_id": pa.uint64(),
    "zone_start": pa.uint64(),
    "zone_length": pa.uint64(),
    "has_null": pa.bool_(),
    "bloom_filter_data": pa.binary(),
}


def bloomfilter_details() -> IndexDetails:
    """The manifest's index details for a Bloom filter index (an empty message)."""
    return IndexDetails(TYPE_URL, b"", INDEX_VERSION)


def check_bloomfilter_type(value_type: pa.DataType) -> None:
    kinds = (
        pa.types.is_integer,
        pa.types.is_float32,
        pa.types.is_float64,
        pa.types.is_string,
        pa.types.is_large_string,
        pa.types.is_binary,
        pa.types.is_large_binary,
        pa.types.is_date,
        pa.types.is_time,
        pa.types.is_timestamp,
    )
    if not any(kind(value_type) for kind in kinds):
        raise UnsupportedTypeError(f"a Bloom filter index cannot be built on {value_type} values")


def write_bloomfilter(
    batches: Iterable[tuple[pa.Array, np.ndarray]],
    directory: io.Place,
    value_type: pa.DataType,
    file_version: str,
    *,
    number_of_items: int = DEFAULT_NUMBER_OF_ITEMS,
    probability: float = DEFAULT_PROBABILITY,
) -> IndexDetails:
    """Write ``bloomfilter.lance`` for ``batches`` of (values, row addresses), which
    arrive in fragment / offset order; returns the manifest details."""
    check_bloomfilter_type(value_type)
    if not 0.0 <= probability < 1.0:
        raise ArgumentError(f"Bloom filter probability must be in [0, 1), got {probability}")
    size = filter_bytes(number_of_items, probability)
    rows: dict[str, list[Any]] = {name: [] for name in _COLUMNS}
    nulls: list[np.ndarray] = []
    for zone in cut_zones(batches, number_of_items, value_type):
        rows["fragment_id"].append(zone.fragment_id)
        rows["zone_start"].append(zone.start)
        rows["zone_length"].append(zone.length)
        rows["has_null"].append(zone.values.null_count > 0)
        rows["bloom_filter_data"].append(build_filter(hash_values(zone.values), size))
        if zone.values.null_count:
            nulls.append(zone.addresses[np.asarray(zone.values.is_null())])
    schema = pa.schema([pa.field(n, t, nullable=False) for n, t in _COLUMNS.items()])
    table = pa.Table.from_arrays([pa.array(rows[n], t) for n, t in _COLUMNS.items()], schema=schema)
    null_addresses = np.concatenate(nulls) if nulls else np.zeros(0, dtype=np.uint64)
    metadata = {
        _ITEMS_KEY: str(number_of_items),
        # Rust's float Display: shortest round-trip digits, never an exponent.
        _PROBABILITY_KEY: np.format_float_positional(probability, trim="-"),
    }
    buffers = {_NULLS_KEY: serialize_treemap(null_addresses)}
    write_index_file(directory, FILE_NAME, table, metadata, buffers, file_version)
    return bloomfilter_details()


class BloomFilterIndex:
    """A Bloom filter index read from its directory (:meth:`open`).

    The filters hash values by their bytes, so the value type is not in the file: the
    caller names the indexed column's type."""

    def __init__(
        self, path: str, value_type: pa.DataType, file: Any, parameters: tuple[int, float]
    ) -> None:
        self.path = path
        self.value_type = value_type
        self.number_of_items, self.probability = parameters
        self._fragments, self._starts, self._lengths = zone_bounds(file)
        self._has_null = column_numpy(file, "has_null").astype(bool)
        self._load_filters(file)
        found = null_rows(file, _NULLS_KEY, (self._fragments, self._starts, self._lengths))
        self._nulls: np.ndarray | None = None
        if found is not None:
            self._nulls, per_zone = found
            if not np.array_equal(per_zone > 0, self._has_null):
                raise CorruptIndexError(f"{path}: null rows disagree with the has_null flags")

    @classmethod
    def open(cls, directory: io.Place, value_type: pa.DataType) -> BloomFilterIndex:
        check_bloomfilter_type(value_type)
        file = read_index_file(directory, FILE_NAME)
        expect_columns(file, _COLUMNS)
        items = file.metadata.get(_ITEMS_KEY, str(DEFAULT_NUMBER_OF_ITEMS))
        if not items.isdigit() or int(items) == 0:
            raise CorruptIndexError(f"{file.path}: {_ITEMS_KEY} {items!r} is not a positive count")
        raw = file.metadata.get(_PROBABILITY_KEY, str(DEFAULT_PROBABILITY))
        try:
            probability = float(raw)
        except ValueError:
            raise CorruptIndexError(
                f"{file.path}: {_PROBABILITY_KEY} {raw!r} is not a number"
            ) from None
        return cls(file.path, value_type, file, (int(items), probability))

    def _load_filters(self, file: Any) -> None:
        column = file.table.column("bloom_filter_data").combine_chunks()
        if column.null_count:
            raise CorruptIndexError(f"{self.path}: a zone has no filter")
        buffers = column.buffers()
        offsets = np.frombuffer(buffers[1], dtype=np.int32)[
            column.offset : column.offset + len(column) + 1
        ].astype(np.int64)
        sizes = np.diff(offsets)
        if np.any(sizes <= 0) or np.any(sizes % 32):
            raise CorruptIndexError(f"{self.path}: a filter's size is not a whole number of blocks")
        data = buffers[2]
        self._data = (
            np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
        )
        self._offsets = offsets[:-1]
        self._sizes = sizes

    @property
    def num_zones(self) -> int:
        return len(self._fragments)

    def statistics(self) -> dict[str, Any]:
        """What pylance's ``index_stats(name)["indices"][i]`` shows for a Bloom filter."""
        return {
            "type": "BloomFilter",
            "num_blocks": self.num_zones,
            "number_of_items": self.number_of_items,
            "probability": self.probability,
        }

    def search(self, query: IndexQuery) -> SearchResult | None:
        if isinstance(query, IsNull):
            if self._nulls is not None:
                return SearchResult(self._nulls, exact=True)
            return self._result(self._has_null)
        if isinstance(query, Equals):
            values = literals([query.value], self.value_type)
        elif isinstance(query, IsIn):
            values = literals(list(query.values), self.value_type)
        else:
            return None
        if values is None:
            return None
        return self._result(self._may_hold(values))

    def _may_hold(self, values: pa.Array) -> np.ndarray:
        mask = np.zeros(self.num_zones, dtype=bool)
        if pa.types.is_floating(self.value_type):
            data = values.to_numpy(zero_copy_only=False)
            if np.any(np.isnan(data)):
                return np.ones(self.num_zones, dtype=bool)
            zeros = np.array([0.0, -0.0], dtype=data.dtype)
            values = pa.array(np.concatenate([data, zeros]) if np.any(data == 0) else data)
        for query_hash in np.unique(hash_values(values)):
            mask |= check_filters(self._data, self._offsets, self._sizes, query_hash)
        return mask

    def _result(self, mask: np.ndarray) -> SearchResult:
        addresses = zone_addresses(self._fragments[mask], self._starts[mask], self._lengths[mask])
        return SearchResult(addresses, exact=False)
