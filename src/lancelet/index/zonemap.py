"""The ZONEMAP scalar index: per-zone min, max, null and NaN counts (``zonemap.lance``).

The file holds one row per zone (``min``, ``max`` in the column's type, ``null_count``,
``nan_count``, ``fragment_id``, ``zone_start``, ``zone_length``), the schema metadata
``rows_per_zone``, and, as the reference writes it, the exact null rows as a
row-address tree map in a global buffer named by the ``null_bitmap`` metadata key.

Searches return every address of each zone that may hold a match (``exact=False``),
except ``IS NULL`` with a null-row buffer, which is answered exactly.  Floats are
compared so that no zone holding a match is ever dropped, whichever of IEEE or total
order the caller's filter uses: ``-0.0`` and ``0.0`` count as equal, exclusive bounds
as inclusive, and a zone holding NaNs may hold anything on a range query (the
reference's minimum skips NaNs, so a negative NaN can sit below it; a zone of NaNs
alone has a null minimum in its files).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet import io
from lancelet.errors import CorruptIndexError, UnsupportedTypeError
from lancelet.expr import Equals, IndexQuery, IsIn, IsNull, Range
from lancelet.index._files import (
    IndexDetails,
    expect_columns,
    read_index_file,
    varint_field,
    write_index_file,
)
from lancelet.index._treemap_for_labels import serialize_treemap
from lancelet.index._zone_table import column_numpy, null_rows, zone_bounds
from lancelet.index._zones import Zone, cut_zones, zone_addresses
from lancelet.index.base import SearchResult

FILE_NAME = "zonemap.lance"
DEFAULT_ROWS_PER_ZONE = 8192
TYPE_URL = "/lance.table.ZoneMapIndexDetails"
INDEX_VERSION = 0
_ROWS_KEY = "rows_per_zone"
_NULLS_KEY = "null_bitmap"


def zonemap_details(rows_per_zone: int = DEFAULT_ROWS_PER_ZONE) -> IndexDetails:
    """The manifest's index details for a zone map this module writes: rows per zone,
    no seeds, and a null-row buffer (ZoneMapIndexDetails fields 1, 2, 3)."""
    value = varint_field(1, rows_per_zone) + varint_field(2, 0) + varint_field(3, 1)
    return IndexDetails(TYPE_URL, value, INDEX_VERSION)


def check_zonemap_type(value_type: pa.DataType) -> None:
    kinds = (
        pa.types.is_integer,
        pa.types.is_float32,
        pa.types.is_float64,
        pa.types.is_boolean,
        pa.types.is_string,
        pa.types.is_large_string,
        pa.types.is_binary,
        pa.types.is_large_binary,
        pa.types.is_date,
        pa.types.is_time,
        pa.types.is_timestamp,
        pa.types.is_duration,
        pa.types.is_decimal,
    )
    if not any(kind(value_type) for kind in kinds):
        raise UnsupportedTypeError(f"a zone map index cannot be built on {value_type} values")


def write_zonemap(
    batches: Iterable[tuple[pa.Array, np.ndarray]],
    directory: io.Place,
    value_type: pa.DataType,
    file_version: str,
    *,
    rows_per_zone: int = DEFAULT_ROWS_PER_ZONE,
) -> IndexDetails:
    """Write ``zonemap.lance`` for ``batches`` of (values, row addresses), which arrive in
    fragment / offset order; returns the manifest details."""
    check_zonemap_type(value_type)
    columns: dict[str, list[Any]] = {k: [] for k in _INT_COLUMNS}
    mins: list[Any] = []
    maxs: list[Any] = []
    nulls: list[np.ndarray] = []
    for zone in cut_zones(batches, rows_per_zone, value_type):
        low, high, nan_count = _zone_extremes(zone.values)
        mins.append(low)
        maxs.append(high)
        _append_bounds(columns, zone, zone.values.null_count, nan_count)
        if zone.values.null_count:
            nulls.append(zone.addresses[np.asarray(zone.values.is_null())])
    table = _stats_table(value_type, mins, maxs, columns)
    null_addresses = np.concatenate(nulls) if nulls else np.zeros(0, dtype=np.uint64)
    write_index_file(
        directory,
        FILE_NAME,
        table,
        {_ROWS_KEY: str(rows_per_zone)},
        {_NULLS_KEY: serialize_treemap(null_addresses)},
        file_version,
    )
    return zonemap_details(rows_per_zone)


_INT_COLUMNS = {
    "null_count": pa.uint32(),
    "nan_count": pa.uint32(),
    "fragment_id": pa.uint64(),
    "zone_start": pa.uint64(),
    "zone_length": pa.uint64(),
}


def _append_bounds(columns: dict[str, list[Any]], zone: Zone, nulls: int, nans: int) -> None:
    columns["null_count"].append(nulls)
    columns["nan_count"].append(nans)
    columns["fragment_id"].append(zone.fragment_id)
    columns["zone_start"].append(zone.start)
    columns["zone_length"].append(zone.length)


def _stats_table(
    value_type: pa.DataType, mins: list[Any], maxs: list[Any], columns: dict[str, list[Any]]
) -> pa.Table:
    fields = [pa.field("min", value_type), pa.field("max", value_type)]
    fields += [pa.field(name, kind, nullable=False) for name, kind in _INT_COLUMNS.items()]
    arrays = [_scalars_array(mins, value_type), _scalars_array(maxs, value_type)]
    arrays += [pa.array(columns[name], kind) for name, kind in _INT_COLUMNS.items()]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _scalars_array(values: list[Any], value_type: pa.DataType) -> pa.Array:
    if pa.types.is_floating(value_type):
        dtype = np.float32 if pa.types.is_float32(value_type) else np.float64
        present = np.array([v is not None for v in values], dtype=bool)
        data = np.array([v if v is not None else 0.0 for v in values], dtype=dtype)
        return pa.array(data, value_type, mask=~present)
    return pa.array(values, value_type)


def _zone_extremes(values: pa.Array) -> tuple[Any, Any, int]:
    """min, max (None when the zone has no non-null value) and the NaN count, as the
    reference computes them: floats in total order but with NaN skipped by the minimum
    and taken as the maximum."""
    if pa.types.is_floating(values.type):
        return _float_extremes(values)
    both = pc.min_max(values)
    return both["min"].as_py(), both["max"].as_py(), 0


def _float_extremes(values: pa.Array) -> tuple[Any, Any, int]:
    data = np.asarray(values.drop_null().to_numpy(zero_copy_only=False))
    nan = np.isnan(data)
    nan_count = int(nan.sum())
    finite = data[~nan]
    if len(finite) == 0:
        return (float("nan"), float("nan"), nan_count) if nan_count else (None, None, 0)
    low = finite.min()
    high = finite.max()
    if low == 0 and np.any(np.signbit(finite[finite == 0])):
        low = -0.0
    if high == 0 and np.any(~np.signbit(finite[finite == 0])):
        high = 0.0
    return float(low), (float("nan") if nan_count else float(high)), nan_count


class ZoneMapIndex:
    """A zone map read from its index directory (:meth:`open`)."""

    def __init__(
        self,
        path: str,
        mins: pa.Array,
        maxs: pa.Array,
        counts: tuple[np.ndarray, np.ndarray],
        bounds: tuple[np.ndarray, np.ndarray, np.ndarray],
        rows_per_zone: int,
        nulls: np.ndarray | None,
    ) -> None:
        self.path = path
        self.value_type = mins.type
        self.rows_per_zone = rows_per_zone
        self._mins = mins
        self._maxs = maxs
        self._null_counts, self._nan_counts = counts
        self._fragments, self._starts, self._lengths = bounds
        self._nulls = nulls

    @classmethod
    def open(cls, directory: io.Place) -> ZoneMapIndex:
        file = read_index_file(directory, FILE_NAME)
        kinds: dict[str, pa.DataType | None] = {"min": None, "max": None}
        expect_columns(file, kinds | _INT_COLUMNS)
        mins = file.table.column("min").combine_chunks()
        maxs = file.table.column("max").combine_chunks()
        if not maxs.type.equals(mins.type):
            raise CorruptIndexError(f"{file.path}: min is {mins.type} but max is {maxs.type}")
        bounds = zone_bounds(file)
        null_counts = column_numpy(file, "null_count").astype(np.int64)
        nan_counts = column_numpy(file, "nan_count").astype(np.int64)
        lengths = bounds[2].astype(np.int64)
        if np.any(null_counts + nan_counts > lengths):
            raise CorruptIndexError(f"{file.path}: a zone counts more nulls and NaNs than rows")
        _check_extremes(file.path, mins, maxs, nan_counts)
        found = null_rows(file, _NULLS_KEY, bounds)
        nulls = None
        if found is not None:
            nulls, per_zone = found
            if not np.array_equal(per_zone, null_counts):
                raise CorruptIndexError(f"{file.path}: null rows disagree with the null counts")
        rows_per_zone = _rows_per_zone(file.metadata.get(_ROWS_KEY), file.path)
        return cls(file.path, mins, maxs, (null_counts, nan_counts), bounds, rows_per_zone, nulls)

    @property
    def num_zones(self) -> int:
        return len(self._fragments)

    def statistics(self) -> dict[str, Any]:
        """What pylance's ``index_stats(name)["indices"][i]`` shows for a zone map."""
        return {"num_zones": self.num_zones, "rows_per_zone": self.rows_per_zone}

    def search(self, query: IndexQuery) -> SearchResult | None:
        if isinstance(query, IsNull):
            if self._nulls is not None:
                return SearchResult(self._nulls, exact=True)
            return self._result(self._null_counts > 0)
        if isinstance(query, Equals):
            values: pa.Array | None = literals([query.value], self.value_type)
            return None if values is None else self._result(self._may_hold_any(values))
        if isinstance(query, IsIn):
            values = literals(list(query.values), self.value_type)
            return None if values is None else self._result(self._may_hold_any(values))
        if isinstance(query, Range):
            return self._search_range(query)
        return None

    def _result(self, mask: np.ndarray) -> SearchResult:
        addresses = zone_addresses(self._fragments[mask], self._starts[mask], self._lengths[mask])
        return SearchResult(addresses, exact=False)

    def _has_values(self) -> np.ndarray:
        """Zones holding a non-null value (NaNs only, where the min is null)."""
        mask: np.ndarray = pc.is_valid(self._maxs).to_numpy(zero_copy_only=False)
        return mask

    def _may_hold_any(self, values: pa.Array) -> np.ndarray:
        mask = np.zeros(self.num_zones, dtype=bool)
        if pa.types.is_floating(self.value_type):
            data = np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float64)
            if np.any(np.isnan(data)):
                mask |= self._nan_counts > 0
            data = np.sort(data[~np.isnan(data)])
            low, high = self._float_bounds(for_range=False)
            hits = np.searchsorted(data, low, "left") < np.searchsorted(data, high, "right")
            mask |= hits & self._has_values()
            return mask
        for value in values:
            inside = pc.and_(pc.less_equal(self._mins, value), pc.greater_equal(self._maxs, value))
            mask |= pc.fill_null(inside, False).to_numpy(zero_copy_only=False)
        return mask

    def _float_bounds(self, *, for_range: bool) -> tuple[np.ndarray, np.ndarray]:
        low = np.asarray(pc.fill_null(self._mins, 0).to_numpy(zero_copy_only=False), np.float64)
        high = np.asarray(pc.fill_null(self._maxs, 0).to_numpy(zero_copy_only=False), np.float64)
        low = np.where(np.isnan(low), -np.inf, low)
        high = np.where(np.isnan(high), np.inf, high)
        # A zone of NaNs alone (a null min, in the reference's files) holds no number.
        nans_only = pc.is_null(self._mins).to_numpy(zero_copy_only=False)
        low = np.where(nans_only, np.inf, low)
        high = np.where(nans_only, -np.inf, high)
        if for_range:
            nans = self._nan_counts > 0
            low = np.where(nans, -np.inf, low)
            high = np.where(nans, np.inf, high)
        return low, high

    def _search_range(self, query: Range) -> SearchResult | None:
        bounds = [b for b in (query.low, query.high) if b is not None]
        converted = literals(bounds, self.value_type)
        if converted is None:
            return None
        low = converted[0] if query.low is not None else None
        high = converted[len(converted) - 1] if query.high is not None else None
        if pa.types.is_floating(self.value_type):
            return self._result(self._float_range(low, high))
        mask = pc.is_valid(self._mins)
        if low is not None:
            above = pc.greater_equal if query.low_inclusive else pc.greater
            mask = pc.and_(mask, above(self._maxs, low))
        if high is not None:
            below = pc.less_equal if query.high_inclusive else pc.less
            mask = pc.and_(mask, below(self._mins, high))
        return self._result(pc.fill_null(mask, False).to_numpy(zero_copy_only=False))

    def _float_range(self, low: pa.Scalar | None, high: pa.Scalar | None) -> np.ndarray:
        lo_value = None if low is None else float(low.as_py())
        hi_value = None if high is None else float(high.as_py())
        if any(v is not None and np.isnan(v) for v in (lo_value, hi_value)):
            return np.ones(self.num_zones, dtype=bool)
        zone_low, zone_high = self._float_bounds(for_range=True)
        mask = self._has_values()
        # Inclusive comparisons whatever the query says: -0.0 and 0.0 differ in total
        # order but not in IEEE, and either may be the caller's semantics.
        if lo_value is not None:
            mask = mask & (zone_high >= lo_value)
        if hi_value is not None:
            mask = mask & (zone_low <= hi_value)
        return mask


def _check_extremes(path: str, mins: pa.Array, maxs: pa.Array, nan_counts: np.ndarray) -> None:
    """A zone has both extremes or neither, except that the reference records a float
    zone whose values are all NaN with a null min and a NaN max."""
    lone_max = pc.and_(pc.is_null(mins), pc.is_valid(maxs)).to_numpy(zero_copy_only=False)
    if pa.types.is_floating(maxs.type) and lone_max.any():
        nan_max = np.isnan(np.asarray(pc.fill_null(maxs, 0).to_numpy(zero_copy_only=False)))
        if np.all(nan_max[lone_max] & (nan_counts[lone_max] > 0)):
            lone_max[:] = False
    lone_min = pc.and_(pc.is_valid(mins), pc.is_null(maxs)).to_numpy(zero_copy_only=False)
    if lone_max.any() or lone_min.any():
        raise CorruptIndexError(f"{path}: a zone has a min but no max, or the reverse")


def literals(values: list[pa.Scalar], value_type: pa.DataType) -> pa.Array | None:
    """The query's literals in the index's type, or None when one is null or does not
    convert exactly (the index then cannot answer)."""
    try:
        array = pa.array(values) if values else pa.array([], value_type)
        converted = array.cast(value_type, safe=True)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    if converted.null_count:
        return None
    return converted


def _rows_per_zone(raw: str | None, path: str) -> int:
    if raw is None:
        return DEFAULT_ROWS_PER_ZONE
    if not raw.isdigit() or int(raw) == 0:
        raise CorruptIndexError(f"{path}: rows_per_zone metadata {raw!r} is not a positive count")
    return int(raw)
