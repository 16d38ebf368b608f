"""The BITMAP scalar index: each distinct value with the set of rows holding it.

One file in the index directory (pylance's layout), ``bitmap_page_lookup.lance``:
``keys`` (the column's type; one null key for the null rows) and ``bitmaps`` (binary:
a serialized row id tree map, :mod:`lancelet.index.rowid_map`), one row per distinct
value in sort order (null first, floats in total order, so ``-0.0`` and ``0.0`` are
distinct keys); schema metadata ``lance:index_stats`` = ``{"num_bitmaps":N}``.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet import io
from lancelet.errors import CorruptIndexError
from lancelet.expr import IndexQuery
from lancelet.index import files, ordering, queries, rowid_map
from lancelet.index.base import SearchResult
from lancelet.index.external_sort import IDS, VALUES, as_table, pair_schema, sorted_blocks
from lancelet.index.remapping import AddressMapping
from lancelet.table import sorted_sets

LOOKUP_FILE = "bitmap_page_lookup.lance"
STATS_KEY = "lance:index_stats"


def lookup_schema(value_type: pa.DataType) -> pa.Schema:
    return pa.schema([pa.field("keys", value_type), pa.field("bitmaps", pa.binary())])


# -- writing ---------------------------------------------------------------------------


def _group_starts(values: pa.Array) -> np.ndarray:
    """Where each run of equal sorted values begins (floats by bits: -0.0 is not 0.0)."""
    if not len(values):
        return np.empty(0, dtype=np.int64)
    keys = ordering.sort_keys(values)
    head, tail = keys.slice(0, len(keys) - 1), keys.slice(1)
    both_null = pc.and_(pc.is_null(head), pc.is_null(tail))
    differs = pc.if_else(both_null, False, pc.fill_null(pc.not_equal(head, tail), True))
    changes = np.flatnonzero(differs.to_numpy(zero_copy_only=False)) + 1
    starts: np.ndarray = np.r_[0, changes].astype(np.int64)
    return starts


def _write_lookup(path: io.Place, keys: pa.Array, bitmaps: list[bytes], version: str) -> None:
    table = pa.Table.from_arrays(
        [keys, pa.array(bitmaps, pa.binary())], schema=lookup_schema(keys.type)
    )
    meta = {STATS_KEY: json.dumps({"num_bitmaps": len(bitmaps)}, separators=(",", ":"))}
    files.write_table(path, table, version, meta)


def write_bitmap(
    batches: Iterable[tuple[pa.Array, np.ndarray]],
    directory: io.Place,
    value_type: pa.DataType,
    version: str,
) -> int:
    """Write a BITMAP index of ``(values, row addresses)`` batches into ``directory``,
    in file format ``version`` (the dataset's).  The pairs are sorted within the memory
    budget (``LANCE_MEM_POOL_SIZE``, see :mod:`.memory_pool`), spilling as a BTREE
    build does; the bitmaps, one per distinct value, are kept until the file is
    written.  Returns the number of bitmaps."""
    where = os.fspath(directory)
    files.check_value_type(value_type, where)
    version = files.writable_version(version)
    schema = pair_schema(value_type)
    tables = (as_table(values, ids, schema) for values, ids in batches)
    keys: list[pa.Array] = []
    bitmaps: list[bytes] = []
    with sorted_blocks(tables, schema, version) as blocks:
        for values, ids in _groups(blocks, schema):
            starts = _group_starts(values)
            bounds = np.r_[starts, len(values)]
            bitmaps += [rowid_map.serialize(ids[lo:hi]) for lo, hi in itertools.pairwise(bounds)]
            keys.append(values.take(pa.array(starts)))
    key_array = pa.concat_arrays(keys) if keys else pa.array([], value_type)
    _write_lookup(directory.join(LOOKUP_FILE), key_array, bitmaps, version)
    return len(bitmaps)


def _groups(blocks: Iterable[pa.Table], schema: pa.Schema) -> Iterator[tuple[pa.Array, np.ndarray]]:
    """The sorted pairs as (values, row ids) pieces that never split a run of equal
    values: each block's last run waits for the next block, which may continue it."""
    held = schema.empty_table()
    for block in blocks:
        rows = pa.concat_tables([held, block]).combine_chunks()
        if not rows.num_rows:
            continue
        values = rows.column(VALUES).chunk(0)
        last = int(_group_starts(values)[-1])
        if last:
            yield values.slice(0, last), rows.column(IDS).to_numpy()[:last]
        held = rows.slice(last)
    if held.num_rows:
        held = held.combine_chunks()
        yield held.column(VALUES).chunk(0), held.column(IDS).to_numpy()


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
            bitmaps,
            version,
        )
        return len(bitmaps)
