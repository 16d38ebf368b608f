"""The BTREE scalar index: every value with its row address, sorted, in pages.

Two files in the index directory (pylance's layout):

* ``page_data.lance``: ``values`` (the column's type) and ``ids`` (uint64 row
  addresses), sorted by value (nulls first, floats in total order), cut into pages of
  ``batch_size`` rows (4096): page ``i`` is rows ``[i * 4096, (i + 1) * 4096)``.
* ``page_lookup.lance``: one row per page: ``min`` (null when the page holds nulls),
  ``max`` (null when it holds only nulls), ``null_count`` and ``page_idx`` (uint32);
  schema metadata ``batch_size`` ("4096") and ``range_partitioned`` ("false").

The lookup is read once on open; a search reads only the pages whose range can hold a
match, and checks each against the lookup (sorted, nulls first, inside its bounds), so
damage shows as an error rather than as wrong rows.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet import io
from lancelet.errors import CorruptIndexError, UnsupportedIndexError
from lancelet.expr import IndexQuery
from lancelet.file import LanceFileReader, LanceFileWriter
from lancelet.index import files, ordering, queries
from lancelet.index.base import SearchResult
from lancelet.index.external_sort import IDS, VALUES, as_table, pair_schema, sorted_blocks
from lancelet.index.remapping import AddressMapping
from lancelet.io import accounting
from lancelet.table import sorted_sets

LOOKUP_FILE = "page_lookup.lance"
DATA_FILE = "page_data.lance"
BATCH_SIZE = 4096
_WRITE_ROWS = 256 * BATCH_SIZE


def lookup_schema(value_type: pa.DataType) -> pa.Schema:
    return pa.schema(
        [
            pa.field("min", value_type),
            pa.field("max", value_type),
            pa.field("null_count", pa.uint32(), nullable=False),
            pa.field("page_idx", pa.uint32(), nullable=False),
        ]
    )


# -- writing ---------------------------------------------------------------------------


class _PageWriter:
    """Cuts a sorted stream into pages, writes them, and keeps each page's summary."""

    def __init__(self, writer: LanceFileWriter, batch_size: int):
        self.writer = writer
        self.batch_size = batch_size
        self.pending: list[pa.Table] = []
        self.held = 0
        self.mins: list[pa.Array] = []
        self.maxs: list[pa.Array] = []
        self.null_counts: list[np.ndarray] = []

    def add(self, table: pa.Table) -> None:
        self.pending.append(table)
        self.held += table.num_rows
        if self.held >= self.batch_size:
            whole = pa.concat_tables(self.pending)  # chunks kept: nothing is copied
            full = (whole.num_rows // self.batch_size) * self.batch_size
            self._pages(whole.slice(0, full))
            rest = whole.slice(full)
            self.pending, self.held = [rest], rest.num_rows

    def finish(self) -> None:
        if self.held:
            self._pages(pa.concat_tables(self.pending))
        self.pending, self.held = [], 0

    def _pages(self, table: pa.Table) -> None:
        """Write whole pages (and at the end the last, partial one), summarizing each:
        its first value and its last, and its nulls.  Nulls sort first, so a page
        holds some exactly when its first value is null: that null is its min."""
        # In batches of at most 256 pages: the writer encodes each batch's pages with
        # temporaries the size of the batch, which stay small and get reused.
        for batch in table.to_batches(max_chunksize=_WRITE_ROWS):
            self.writer.write_batch(batch)
        values = table.column(VALUES)
        starts = np.arange(0, table.num_rows, self.batch_size, dtype=np.int64)
        lasts = np.minimum(starts + self.batch_size, table.num_rows) - 1
        self.mins.append(values.take(pa.array(starts)).combine_chunks())
        self.maxs.append(values.take(pa.array(lasts)).combine_chunks())
        nulls = np.zeros(len(starts), dtype=np.int64)
        if values.null_count:
            missing = values.is_null().to_numpy().astype(np.int64)
            nulls = np.add.reduceat(missing, starts)
        self.null_counts.append(nulls)

    def lookup(self, value_type: pa.DataType) -> pa.Table:
        nulls = np.concatenate([np.empty(0, dtype=np.int64), *self.null_counts])
        count = len(nulls)
        empty = pa.array([], value_type)
        return pa.Table.from_arrays(
            [
                pa.concat_arrays(self.mins) if count else empty,
                pa.concat_arrays(self.maxs) if count else empty,
                pa.array(nulls.astype(np.uint32)),
                pa.array(np.arange(count, dtype=np.uint32)),
            ],
            schema=lookup_schema(value_type),
        )


def write_btree(
    batches: Iterable[tuple[pa.Array, np.ndarray]],
    directory: io.Place,
    value_type: pa.DataType,
    version: str,
    *,
    run_rows: int | None = None,
    batch_size: int = BATCH_SIZE,
) -> int:
    """Write a BTREE index of ``(values, row addresses)`` batches into ``directory``, in
    file format ``version`` (the dataset's).  Sorting holds at most the memory budget
    (``LANCE_MEM_POOL_SIZE``, see :mod:`.memory_pool`) and at most ``run_rows`` rows,
    if given, at once; longer inputs are sorted in runs spilled to scratch files and
    merged.  Returns the number of rows indexed."""
    where = os.fspath(directory)
    files.check_value_type(value_type, where)
    version = files.writable_version(version)
    schema = pair_schema(value_type)
    data_path, lookup_path = directory.join(DATA_FILE), directory.join(LOOKUP_FILE)
    tables = (as_table(values, ids, schema) for values, ids in batches)
    writer = LanceFileWriter(data_path.path, schema, version=version, file_io=data_path.file_io)
    pages = _PageWriter(writer, batch_size)
    try:
        with sorted_blocks(tables, schema, run_rows) as blocks:
            for block in blocks:
                pages.add(block)
        pages.finish()
        rows = writer.close() or 0
        meta = {"batch_size": str(batch_size), "range_partitioned": "false"}
        files.write_table(lookup_path, pages.lookup(value_type), version, meta)
    except BaseException:
        if not writer.closed:
            writer.abort()
        files.remove_quietly([data_path, lookup_path])
        raise
    return rows


# -- reading ---------------------------------------------------------------------------


def _batch_size(meta: dict[str, str], path: str) -> int:
    if meta.get("range_partitioned", "false") != "false":
        raise UnsupportedIndexError(f"{path}: range-partitioned BTREE indices are not supported")
    text = meta.get("batch_size", str(BATCH_SIZE))
    if not text.isdigit() or not 0 < int(text) <= 1 << 31:
        raise CorruptIndexError(f"{path}: the page size (batch_size) {text!r} is not valid")
    return int(text)


# Rows a remap reads, checks and maps at once (some megabytes of keys and ids).
_GROUP_ROWS = 1 << 20

# Decoded pages an open index keeps (each holds up to a batch of 4,096 keys and ids).
_CACHED_PAGES = 16
# The Python objects of an opened file's metadata (a BTREE's data file: one or two
# columns of a few pages), as the index cache's object walk measured them.
_OPEN_FILE_BYTES = 8 * 1024


# Lance before 0.21 wrote the pages in the legacy file format, naming the row id column
# "row_ids"; the reference reads the two columns by position.
_LEGACY_IDS = "row_ids"


def _open_pages(path: io.Place, value_type: pa.DataType) -> LanceFileReader:
    # Opened once: its schema names the id column.
    with files.reading(path):
        reader = LanceFileReader(path.path, file_io=path.file_io)
    ids = _LEGACY_IDS if reader.schema.names == [VALUES, _LEGACY_IDS] else IDS
    files.check_columns(reader, path, [(VALUES, value_type), (ids, pa.uint64())])
    return reader


def _nulls(keys: pa.Array) -> np.ndarray:
    """Which of ``keys`` are null (no Arrow kernel call when none is)."""
    if not keys.null_count:
        return np.zeros(len(keys), dtype=bool)
    nulls: np.ndarray = keys.is_null().to_numpy(zero_copy_only=False)
    return nulls


def _filled(keys: pa.Array) -> np.ndarray:
    """Integer ``keys`` as numpy, nulls as 0."""
    filled: np.ndarray = (keys.fill_null(0) if keys.null_count else keys).to_numpy()
    return filled


class BTreeIndex:
    """A BTREE index directory, opened for searching."""

    def __init__(self, directory: str, lookup: pa.Table, data: LanceFileReader, batch_size: int):
        self.directory = directory
        self._data = data
        self._batch_size = batch_size
        self._lookup = lookup
        self.value_type: pa.DataType = lookup.schema.field("min").type
        self._min_keys = ordering.search_keys(lookup.column("min").combine_chunks())
        self._max_keys = ordering.search_keys(lookup.column("max").combine_chunks())
        self._null_counts = lookup.column("null_count").to_numpy().astype(np.int64)
        self._check_lookup()
        # Pages read and checked lately: repeated lookups of nearby keys skip the decode.
        self._pages: OrderedDict[int, tuple[pa.Array, pa.Array]] = OrderedDict()
        self._prewarmed = False

    @classmethod
    def open(cls, directory: io.Place) -> BTreeIndex:
        where = os.fspath(directory)
        lookup_path = directory.join(LOOKUP_FILE)
        columns = [
            ("min", None),
            ("max", None),
            ("null_count", pa.uint32()),
            ("page_idx", pa.uint32()),
        ]
        reader = files.open_file(lookup_path, columns)
        if reader.schema.field("min").type != reader.schema.field("max").type:
            raise CorruptIndexError(f"{lookup_path}: min and max have different types")
        batch_size = _batch_size(files.metadata(reader), lookup_path.path)
        lookup = files.read_rows(reader, 0, reader.num_rows())
        value_type = lookup.schema.field("min").type
        data = _open_pages(directory.join(DATA_FILE), value_type)
        # Pages are listed by page_idx; put them in data order (writers list them so).
        page_idx = lookup.column("page_idx").to_numpy()
        if len(page_idx) > 1 and not bool((page_idx[1:] > page_idx[:-1]).all()):
            lookup = lookup.take(pc.sort_indices(lookup.column("page_idx")))
        return cls(where, lookup, data, batch_size)

    def cache_bytes(self) -> int:
        """The memory the opened index holds, for the index cache: its lookup table and
        keys, the pages it keeps, and the data file's parsed metadata."""
        arrays = [self._lookup, self._min_keys, self._max_keys]
        arrays += [a for page in self._pages.values() for a in page]
        held = sum(int(a.nbytes) for a in arrays) + int(self._null_counts.nbytes)
        return held + _OPEN_FILE_BYTES

    @property
    def num_pages(self) -> int:
        return int(self._lookup.num_rows)

    def _page_rows(self) -> np.ndarray:
        total = self._data.num_rows()
        starts = np.arange(self.num_pages, dtype=np.int64) * self._batch_size
        return np.clip(total - starts, 0, self._batch_size)

    def _check_lookup(self) -> None:
        path = io.join(self.directory, LOOKUP_FILE)
        pages, total = self.num_pages, self._data.num_rows()
        idx = self._lookup.column("page_idx").to_numpy()
        if not np.array_equal(idx, np.arange(pages)) or pages != -(-total // self._batch_size):
            raise CorruptIndexError(
                f"{path}: {pages} pages (page_idx {idx[:8].tolist()}...) do not cover the "
                f"{total} rows of {DATA_FILE} in pages of {self._batch_size}"
            )
        rows, nulls = self._page_rows(), self._null_counts
        min_null, max_null = _nulls(self._min_keys), _nulls(self._max_keys)
        # Nulls sort first: whole pages of nulls, then at most one page that starts with them.
        partial = np.flatnonzero(nulls < rows)
        bad = (
            np.any(nulls > rows)
            or np.any(min_null != (nulls > 0))
            or np.any(max_null != (nulls == rows))
            or (len(partial) > 0 and np.any(nulls[partial[0] + 1 :] != 0))
        )
        # Integers compare as numbers (nulls filled, left out below); other keys by rank.
        bounds = self._integer_bounds
        if bounds is not None:
            min_r, max_r, _ = bounds
        else:
            min_r, max_r = ordering.dense_ranks([self._min_keys, self._max_keys])
        both = ~min_null & ~max_null
        follows = ~max_null[:-1] & ~min_null[1:]
        if (
            bad
            or np.any(min_r[both] > max_r[both])
            or np.any(max_r[:-1][follows] > min_r[1:][follows])
        ):
            raise CorruptIndexError(f"{path}: the page summaries contradict each other")

    # -- searching ---------------------------------------------------------------------

    @cached_property
    def _max_valid(self) -> np.ndarray:
        """Pages holding some non-null value."""
        return ~_nulls(self._max_keys)

    @cached_property
    def _integer_bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """For integer search keys: the pages' min and max keys (nulls as 0) and which
        mins are null, as numpy; None for other keys."""
        if not pa.types.is_integer(self._min_keys.type):
            return None
        return _filled(self._min_keys), _filled(self._max_keys), _nulls(self._min_keys)

    def _candidate_pages(self, plan: queries.Plan) -> np.ndarray:
        max_valid = self._max_valid
        if isinstance(plan, queries.Nulls):
            return np.flatnonzero(self._null_counts > 0)
        if isinstance(plan, queries.Interval) and self._integer_bounds is not None:
            # As below, comparing keys rather than ranks (integers order as numbers).
            mins, maxs, min_null = self._integer_bounds
            keep = max_valid.copy()
            if plan.low is not None:
                low = np.asarray(plan.low.as_py(), dtype=maxs.dtype)
                keep &= (maxs >= low) if plan.low_inclusive else (maxs > low)
            if plan.high is not None:
                high = np.asarray(plan.high.as_py(), dtype=mins.dtype)
                keep &= min_null | ((mins <= high) if plan.high_inclusive else (mins < high))
            return np.flatnonzero(keep)
        min_r, max_r = self._bounds.ranks
        if isinstance(plan, queries.KeySet):
            lit = np.unique(self._bounds.place(plan.keys))
            upto_max = np.searchsorted(lit, max_r, side="right")
            below_min = np.where(min_r < 0, 0, np.searchsorted(lit, min_r, side="left"))
            return np.flatnonzero(max_valid & (upto_max > below_min))
        bounds = [b for b in (plan.low, plan.high) if b is not None]
        extra = pa.array(bounds, self._min_keys.type) if bounds else self._min_keys.slice(0, 0)
        lit = self._bounds.place(extra)
        keep = max_valid.copy()
        it = iter(lit)
        if plan.low is not None:
            low = next(it)
            keep &= (max_r > low) | ((max_r == low) & plan.low_inclusive)
        if plan.high is not None:
            high = next(it)
            keep &= (min_r < high) | ((min_r == high) & plan.high_inclusive)
        return np.flatnonzero(keep)

    @cached_property
    def _bounds(self) -> ordering.Ranked:
        """The pages' bounds ranked once; each search places only its literals."""
        return ordering.Ranked([self._min_keys, self._max_keys])

    def _check_page(self, page: int, keys: pa.Array) -> None:
        nulls = int(self._null_counts[page])
        rest = keys.slice(nulls)
        ok = keys.slice(0, nulls).null_count == nulls and rest.null_count == 0
        bounds = self._integer_bounds
        if ok and len(rest) and bounds is not None:
            # Integers compare as numbers: numpy, not four Arrow kernel calls.
            values = rest.to_numpy()
            mins, maxs, min_null = bounds
            ok = bool((values[1:] >= values[:-1]).all()) and values[-1] <= maxs[page]
            ok = ok and (bool(min_null[page]) or values[0] >= mins[page])
        elif ok and len(rest):
            ok = not pc.any(pc.less(rest.slice(1), rest.slice(0, len(rest) - 1))).as_py()
            low, high = self._min_keys[page], self._max_keys[page]
            ok = ok and not (low.is_valid and pc.less(rest[0], low).as_py())
            ok = ok and not pc.greater(rest[len(rest) - 1], high).as_py()
        if not ok:
            raise CorruptIndexError(
                f"{io.join(self.directory, DATA_FILE)}: page {page} does not match "
                f"its summary in {LOOKUP_FILE}"
            )

    def _read_pages(self, pages: np.ndarray) -> Iterator[tuple[int, pa.Array, pa.Array]]:
        """(page, its search keys, its row ids), checked against the lookup."""
        wanted = pages.tolist()
        missing = np.array([p for p in wanted if p not in self._pages], dtype=np.int64)
        accounting.add(parts_loaded=len(missing), index_cache_hits=len(wanted) - len(missing))
        for page in wanted:
            if page in self._pages:
                self._pages.move_to_end(page)
                yield page, *self._pages[page]
        for page, table in self._page_tables(missing):
            keys = ordering.search_keys(table.column(VALUES).combine_chunks())
            self._check_page(page, keys)
            ids = table.column(IDS).combine_chunks()
            self._remember(page, keys, ids)
            yield page, keys, ids

    def _page_tables(self, pages: np.ndarray) -> Iterator[tuple[int, pa.Table]]:
        if not len(pages):
            return
        # Neighbouring pages are read together.
        breaks = np.flatnonzero(np.diff(pages) != 1) + 1
        rows = self._page_rows()
        for group in np.split(pages, breaks):
            start = int(group[0]) * self._batch_size
            table = files.read_rows(self._data, start, int(rows[group].sum()))
            table = table.rename_columns([VALUES, IDS])  # a legacy file names them otherwise
            for page in group:
                offset = (int(page) - int(group[0])) * self._batch_size
                yield int(page), table.slice(offset, int(rows[page]))

    def _remember(self, page: int, keys: pa.Array, ids: pa.Array) -> None:
        self._pages[page] = (keys, ids)
        while len(self._pages) > _CACHED_PAGES and not self._prewarmed:
            self._pages.popitem(last=False)

    def prewarm(self) -> None:
        """Read every page into memory and keep them all there from now on."""
        self._prewarmed = True
        for _ in self._read_pages(np.arange(self.num_pages)):
            pass

    def search(self, query: IndexQuery) -> SearchResult | None:
        plan = queries.plan(query, self.value_type)
        if plan is None:
            return None
        found: list[np.ndarray] = []
        for page, keys, ids in self._read_pages(self._candidate_pages(plan)):
            found.append(self._hits(plan, page, keys, ids))
        addresses = sorted_sets.union(found)
        return SearchResult(addresses.astype(np.uint64, copy=False), exact=True)

    def _hits(self, plan: queries.Plan, page: int, keys: pa.Array, ids: pa.Array) -> np.ndarray:
        """The row ids of a page's keys that ``plan`` selects."""
        if isinstance(plan, queries.Interval) and pa.types.is_integer(keys.type):
            # The page was checked to hold its nulls first, then its keys in order: the
            # keys of an interval are one run of it, found by two binary searches.
            nulls = int(self._null_counts[page])
            values = keys.slice(nulls).to_numpy()
            lo, hi = 0, len(values)
            if plan.low is not None:
                low = np.asarray(plan.low.as_py(), dtype=values.dtype)
                lo = int(values.searchsorted(low, "left" if plan.low_inclusive else "right"))
            if plan.high is not None:
                high = np.asarray(plan.high.as_py(), dtype=values.dtype)
                hi = int(values.searchsorted(high, "right" if plan.high_inclusive else "left"))
            hits: np.ndarray = ids.slice(nulls + lo, max(hi - lo, 0)).to_numpy()
            return hits
        selected: np.ndarray = ids.filter(plan.mask(keys)).to_numpy()
        return selected

    def statistics(self) -> dict[str, Any]:
        """What pylance's ``index_stats(name)["indices"][i]`` shows for a BTREE index."""
        if not self.num_pages:
            null = pa.scalar(None, self.value_type)
            return {"min": ordering.display(null), "max": ordering.display(null), "num_pages": 0}
        return {
            "min": ordering.display(self._lookup.column("min")[0]),
            "max": ordering.display(self._lookup.column("max")[self.num_pages - 1]),
            "num_pages": self.num_pages,
        }

    def scan(self) -> Iterator[pa.Table]:
        """Every (values, ids) row, page by page, checked."""
        for page, table in self._page_tables(np.arange(self.num_pages)):
            self._check_page(page, ordering.search_keys(table.column(VALUES).combine_chunks()))
            yield table

    def _scan_groups(self) -> Iterator[pa.Table]:
        """Every (values, ids) row, as :meth:`scan`, but many pages at a time: a group
        without nulls whose keys ascend throughout, each page's within its bounds, is
        checked at once (per page, a remap of a small index spent more on the checks
        and calls than on its rows); any other group is checked page by page."""
        rows = self._page_rows()
        per_group = max(1, _GROUP_ROWS // self._batch_size)
        for first in range(0, self.num_pages, per_group):
            pages = np.arange(first, min(first + per_group, self.num_pages))
            start = first * self._batch_size
            table = files.read_rows(self._data, start, int(rows[pages].sum()))
            table = table.rename_columns([VALUES, IDS])  # a legacy file names them otherwise
            keys = ordering.search_keys(table.column(VALUES).combine_chunks())
            if not self._group_in_order(pages, keys, rows[pages]):
                for page in pages.tolist():
                    offset = (page - first) * self._batch_size
                    self._check_page(page, keys.slice(offset, int(rows[page])))
            yield table

    def _group_in_order(self, pages: np.ndarray, keys: pa.Array, rows: np.ndarray) -> bool:
        """Whether consecutive ``pages`` hold no nulls and ``keys`` (theirs, back to
        back) never descend, each page starting at or above its min and ending at or
        below its max: then every page passes :meth:`_check_page`."""
        if keys.null_count or self._null_counts[pages].any() or not len(keys) or not rows.all():
            return False
        if pc.any(pc.less(keys.slice(1), keys.slice(0, len(keys) - 1))).as_py():
            return False
        firsts = np.cumsum(rows) - rows
        lows = self._min_keys.take(pa.array(pages))
        highs = self._max_keys.take(pa.array(pages))
        below = pc.less(keys.take(pa.array(firsts)), lows)
        above = pc.greater(keys.take(pa.array(firsts + rows - 1)), highs)
        return not (pc.any(below).as_py() or pc.any(above).as_py())

    def remap(
        self,
        mapping: AddressMapping,
        out_directory: io.Place,
        version: str,
        *,
        run_rows: int | None = None,
    ) -> int:
        """Write this index with its addresses changed by ``mapping`` (rows mapped to
        ``DELETED`` dropped) into ``out_directory``; returns the rows written."""

        def batches() -> Iterator[tuple[pa.Array, np.ndarray]]:
            for table in self._scan_groups():
                ids, keep = mapping.apply(table.column(IDS).to_numpy())
                yield table.column(VALUES).combine_chunks().filter(pa.array(keep)), ids[keep]

        return write_btree(batches(), out_directory, self.value_type, version, run_rows=run_rows)
