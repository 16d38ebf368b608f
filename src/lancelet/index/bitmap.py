"""The BITMAP scalar index: each distinct value with the set of rows holding it.

One file in the index directory (pylance's layout), ``bitmap_page_lookup.lance``:
``keys`` (the column's type; one null key for the null rows) and ``bitmaps`` (binary:
a serialized row id tree map, :mod:`lancelet.index.rowid_map`), one row per distinct
value in sort order (null first, floats in total order, so ``-0.0`` and ``0.0`` are
distinct keys); schema metadata ``lance:index_stats`` = ``{"num_bitmaps":N}``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet.errors import CorruptIndexError
from lancelet.expr import IndexQuery
from lancelet.index import files, ordering, queries, rowid_map, rowid_maps, sort_order
from lancelet.index.base import SearchResult
from lancelet.index.external_sort import IDS, VALUES, array, as_table, pair_schema, sorted_rows
from lancelet.index.remapping import AddressMapping
from lancelet.index.sort_order import run_starts
from lancelet.table import sorted_sets

LOOKUP_FILE = "bitmap_page_lookup.lance"
STATS_KEY = "lance:index_stats"


def lookup_schema(value_type: pa.DataType) -> pa.Schema:
    return pa.schema([pa.field("keys", value_type), pa.field("bitmaps", pa.binary())])


# -- writing ---------------------------------------------------------------------------


def _write_lookup(
    path: io.Place, keys: pa.Array, bitmaps: pa.Array | pa.ChunkedArray, version: str
) -> None:
    table = pa.Table.from_arrays([keys, bitmaps], schema=lookup_schema(keys.type))
    meta = {STATS_KEY: json.dumps({"num_bitmaps": len(bitmaps)}, separators=(",", ":"))}
    files.write_table(path, table, version, meta)


def write_bitmap(
    batches: Iterable[tuple[pa.Array, np.ndarray]],
    directory: io.Place,
    value_type: pa.DataType,
    version: str,
) -> int:
    """Write a BITMAP index of ``(values, row addresses)`` batches into ``directory``,
    in file format ``version`` (the dataset's).  The pairs are grouped by value at once
    when they fit in one run of the memory budget (``LANCE_MEM_POOL_SIZE``, see
    :mod:`.memory_pool`), else sorted in runs spilled and merged as a BTREE build's
    are, and grouped as they come; the bitmaps, one per distinct value, serialized
    together (:mod:`.rowid_maps`), are kept until the file is written.  Returns the
    number of bitmaps."""
    where = os.fspath(directory)
    files.check_value_type(value_type, where)
    version = files.writable_version(version)
    schema = pair_schema(value_type)
    tables = (as_table(values, ids, schema) for values, ids in batches)
    keys: list[pa.Array] = []
    bitmaps: list[pa.Array] = []
    with sorted_rows(tables, schema) as rows:
        groups = _groups(rows.blocks()) if rows.whole is None else _whole_groups(rows.whole)
        for values, ids, starts in groups:
            maps = rowid_maps.serialize_groups(ids, starts)
            bitmaps += maps.chunks if isinstance(maps, pa.ChunkedArray) else [maps]
            keys.append(values)
    key_array = pa.concat_arrays(keys) if keys else pa.array([], value_type)
    serialized = pa.chunked_array(bitmaps, pa.binary())
    _write_lookup(directory.join(LOOKUP_FILE), key_array, serialized, version)
    return len(serialized)


# Each piece of the rows grouped: (the distinct values, in order; the row ids, grouped
# by value and ascending within a value; where each value's ids begin).
Groups = Iterator[tuple[pa.Array, np.ndarray, np.ndarray]]


def _whole_groups(table: pa.Table) -> Groups:
    """Every row at once (they fit in one run), grouped by value: the rows are never
    sorted nor their values copied, only each value's ids gathered."""
    if not table.num_rows:
        return
    values, ids = table.column(VALUES), array(table, IDS)
    order, starts = sort_order.grouped(values, ids.to_numpy())
    heads = starts if order is None else order[starts]
    if order is not None:
        ids = ids.take(pa.array(order))
    yield values.take(pa.array(heads)).combine_chunks(), ids.to_numpy(), starts


def _groups(blocks: Iterable[pa.Table]) -> Groups:
    """The merged blocks of spilled runs, grouped: each block's last run waits for
    the next block, which may continue it."""
    held: pa.Table | None = None
    for block in blocks:
        rows = block if held is None else pa.concat_tables([held, block])
        if not rows.num_rows:
            continue
        values = array(rows, VALUES)
        starts = run_starts(values)
        last = int(starts[-1])
        if last:
            heads = values.take(pa.array(starts[:-1]))
            yield heads, array(rows, IDS).to_numpy()[:last], starts[:-1]
        held = rows.slice(last)
    if held is not None and held.num_rows:
        # One run of equal values: the last block's last.
        ids = array(held, IDS).to_numpy()
        yield array(held, VALUES).slice(0, 1), ids, np.zeros(1, dtype=np.int64)


# -- reading ---------------------------------------------------------------------------


class BitmapIndex:
    """A BITMAP index directory, opened for searching."""

    def __init__(self, directory: str, lookup: pa.Table):
        self.directory = directory
        self._path = io.join(directory, LOOKUP_FILE)
        self._keys = lookup.column("keys").combine_chunks()
        self._bitmaps = lookup.column("bitmaps").combine_chunks()
        self.value_type: pa.DataType = self._keys.type
        self._search_keys = ordering.search_keys(self._keys)
        if self._bitmaps.null_count:
            raise CorruptIndexError(f"{self._path}: a key has no bitmap")
        if self._keys.null_count > 1:
            raise CorruptIndexError(
                f"{self._path}: {self._keys.null_count} null keys, at most 1 expected"
            )

    @classmethod
    def open(cls, directory: io.Place) -> BitmapIndex:
        where = os.fspath(directory)
        path = directory.join(LOOKUP_FILE)
        reader = files.open_file(path, [("keys", None), ("bitmaps", pa.binary())])
        stated = files.metadata(reader).get(STATS_KEY)
        if stated is not None:
            try:
                count = json.loads(stated)["num_bitmaps"]
            except (ValueError, TypeError, KeyError) as exc:
                raise CorruptIndexError(f"{path}: {STATS_KEY} {stated!r} is not valid") from exc
            if count != reader.num_rows():
                raise CorruptIndexError(
                    f"{path}: {STATS_KEY} says {count} bitmaps, the file holds {reader.num_rows()}"
                )
        return cls(where, files.read_rows(reader, 0, reader.num_rows()))

    @property
    def num_bitmaps(self) -> int:
        return len(self._keys)

    def _rows(self, positions: np.ndarray) -> rowid_map.RowAddressSet:
        sets = [
            rowid_map.deserialize(self._bitmaps[int(i)].as_py(), f"{self._path} row {int(i)}")
            for i in positions
        ]
        addresses = [s.addresses for s in sets]
        full = [s.full_fragments for s in sets]
        return rowid_map.RowAddressSet(
            sorted_sets.union(addresses),
            sorted_sets.union(full, np.uint32),
        )

    def search(self, query: IndexQuery) -> SearchResult | None:
        plan = queries.plan(query, self.value_type)
        if plan is None:
            return None
        positions = np.flatnonzero(plan.mask(self._search_keys).to_numpy(zero_copy_only=False))
        found = self._rows(positions)
        if len(found.full_fragments):
            return None  # whole fragments, whose rows this index cannot list
        return SearchResult(found.addresses.astype(np.uint64, copy=False), exact=True)

    def statistics(self) -> dict[str, Any]:
        """What pylance's ``index_stats(name)["indices"][i]`` shows for a BITMAP index."""
        return {"num_bitmaps": self.num_bitmaps}

    def remap(self, mapping: AddressMapping, out_directory: io.Place, version: str) -> int:
        """Write this index with its addresses changed by ``mapping`` (rows mapped to
        ``DELETED`` dropped; keys left with no rows dropped) into ``out_directory``."""
        version = files.writable_version(version)
        kept: list[int] = []
        bitmaps: list[bytes] = []
        for i in range(self.num_bitmaps):
            found = self._rows(np.array([i]))
            if len(found.full_fragments):
                raise CorruptIndexError(
                    f"{self._path} row {i}: whole-fragment entries cannot be remapped"
                )
            moved, keep = mapping.apply(found.addresses)
            if keep.any():
                kept.append(i)
                bitmaps.append(rowid_map.serialize(sorted_sets.unique(moved[keep])))
        _write_lookup(
            out_directory.join(LOOKUP_FILE),
            self._keys.take(pa.array(kept, pa.int64())),
            pa.array(bitmaps, pa.binary()),
            version,
        )
        return len(bitmaps)
