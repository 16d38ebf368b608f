"""Reading one fragment: its columns gathered from several data files.

A fragment's columns may be spread over data files written at different times
(a column added later lives in a file of its own).  Data files name their
fields by id, so a column is found by id, not by name: a renamed column still
reads, and a column no file of the fragment holds reads as nulls.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Sequence
from functools import cached_property

import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet.errors import (
    CorruptDatasetError,
    LanceFileError,
    UnsupportedEncodingError,
    UnsupportedVersionError,
)
from lancelet.file.extensions import json_as_text
from lancelet.file.memo import Memo
from lancelet.file.reader import LanceFileReader
from lancelet.table.fragment import DataFile, Fragment
from lancelet.table.schema import LanceSchema, column_field_ids
from lancelet.table.validate import check_file_fields
from lancelet.transaction.store import DatasetStore

# (data file index, column name inside that file, its type under the dataset's names)
_Location = tuple[int, str, pa.DataType]
_Fetch = Callable[[int, list[str]], pa.Table]


class FragmentReader:
    def __init__(
        self, store: DatasetStore, schema: LanceSchema, fragment: Fragment, *, shared: bool = True
    ) -> None:
        """``shared``: the fragment's file readers are kept by the store for its later
        reads (not for a compaction's, whose files no later version reads: kept, a
        hundred readers with their pages and mappings would outlive it)."""
        self.store = store
        self.schema = schema
        self.fragment = fragment
        self._shared = shared
        self._files: dict[int, LanceFileReader] = {}

    def _file(self, index: int) -> LanceFileReader:
        if index not in self._files:
            data_file = self.fragment.files[index]
            path = self.store.data_path(data_file.path, data_file.base_id)
            reader = self._open(path, data_file)
            if reader.num_rows() != self.fragment.physical_rows:
                raise CorruptDatasetError(
                    f"{path}: holds {reader.num_rows()} rows, fragment {self.fragment.id} "
                    f"says {self.fragment.physical_rows}"
                )
            where = f"{path}: fragment {self.fragment.id}"
            # The columns no file holds are worked out only if the ids disagree.
            stored = list(reader.field_ids)
            check_file_fields(data_file.fields, stored, lambda: self._missing, where)
            self._files[index] = reader
        return self._files[index]

    def data_file(self, index: int) -> LanceFileReader:
        """The reader of data file ``index``, opened and checked against the fragment
        (shared with the store's other readers of that file)."""
        return self._file(index)

    def _open(self, path: str, data_file: DataFile) -> LanceFileReader:
        """The file's reader, shared with earlier readers of the same store while the
        file is unchanged (opening parses its footer and column metadata)."""
        opened = self.store.cache("data_files") if self._shared else None
        key = (path, self.store.io.fingerprint(path)) if opened is not None else None
        reader: LanceFileReader | None = None if opened is None else opened.get(key)
        if reader is not None:
            return reader
        try:
            reader = LanceFileReader(path, file_io=self.store.io)
        except (UnsupportedVersionError, UnsupportedEncodingError):
            raise  # a file lancelet cannot read yet is not a damaged one
        except (LanceFileError, OSError) as exc:
            if io.store_failed(exc):
                raise
            raise CorruptDatasetError(
                f"fragment {self.fragment.id}: data file {data_file.path}: {exc}"
            ) from exc
        if opened is not None:
            opened[key] = reader
        return reader

    @cached_property
    def _missing(self) -> set[int]:
        """Ids of the schema's columns that no data file of the fragment holds."""
        held = {i for data_file in self.fragment.files for i in data_file.fields}
        return set(column_field_ids(self.schema)) - held

    def _file_columns(self, index: int, data_file: DataFile) -> dict[int, _Location]:
        """Dataset field id -> where that top-level column is in one data file (kept
        with the shared reader: a lookup costs as much as a small take)."""
        reader = self._file(index)
        names = tuple((f.id, f.name) for f in self.schema.fields)
        key = (index, tuple(data_file.fields), names)
        shared = reader.schema_key
        if shared is not None:
            # The locations follow from the file's schema alone: files written with
            # one schema (a compaction's hundred small ones) share them, and so do
            # the datasets of a process (a dataset opened anew finds them worked out).
            return _BY_SCHEMA.get((shared, key), lambda: self._locate(index, reader, data_file))
        known = _LOCATIONS.setdefault(reader, {})
        if key not in known:
            known[key] = self._locate(index, reader, data_file)
        return known[key]

    def _locate(
        self, index: int, reader: LanceFileReader, data_file: DataFile
    ) -> dict[int, _Location]:
        arrow = reader.schema
        local, local_ids = _layout(reader)
        if len(local_ids) != len(data_file.fields):
            raise CorruptDatasetError(
                f"{data_file.path}: the manifest lists {len(data_file.fields)} fields, "
                f"the file has {len(local_ids)}"
            )
        to_dataset = dict(zip(local_ids, data_file.fields, strict=True))
        if reader.structural:
            # Structs and lists own no column there (the manifest lists leaves only);
            # the file's schema records their ids, in pre-order as the local ones.
            all_ids = reader.all_field_ids
            if len(all_ids) != len(local.fields):
                raise CorruptDatasetError(f"{data_file.path}: the file's schema lists no ids")
            for mine, theirs in zip((f.id for f in local.fields), all_ids, strict=True):
                to_dataset.setdefault(mine, theirs)
        names = {f.id: f.name for f in self.schema.fields}
        found: dict[int, _Location] = {}
        for top in local.top_level():
            # Nested fields may have been renamed since the file was written: its
            # types are given the dataset's names, matched by field id.
            renamed = [
                names.get(to_dataset.get(i, -1), f"\0{i}") for i in local.subtree_ids(top.id)
            ]
            stored = arrow.field(top.name).type
            found[to_dataset[top.id]] = (index, top.name, _renamed(stored, iter(renamed[1:])))
        return found

    @cached_property
    def _locations(self) -> dict[int, _Location]:
        found: dict[int, _Location] = {}
        for index, data_file in enumerate(self.fragment.files):
            found.update(self._file_columns(index, data_file))
        return found

    def validate(self) -> None:
        """Open every data file and the deletion file; raise if any is missing or corrupt."""
        for index in range(len(self.fragment.files)):
            self._file(index)
        _ = self._locations
        _ = self.deleted
        _ = self.row_ids

    @cached_property
    def row_ids(self) -> np.ndarray | None:
        """The stable id of each physical row; None when the fragment has none."""
        return self.store.read_row_ids(self.fragment)

    @cached_property
    def lineage(self) -> tuple[np.ndarray, np.ndarray]:
        """The version that created each physical row, and the one that last updated it."""
        return self.store.read_lineage(self.fragment)

    @cached_property
    def deleted(self) -> np.ndarray:
        """Physical offsets of the deleted rows, sorted."""
        return self.store.read_deletions(self.fragment)

    def _columns(self, names: Sequence[str]) -> list[tuple[pa.Field, _Location | None]]:
        fields = self.schema.resolve(names, self.store.root)
        arrow = self.schema.to_arrow()
        return [(arrow.field(f.name), self._locations.get(f.id)) for f in fields]

    def read(self, names: Sequence[str], start: int, stop: int) -> pa.Table:
        """Columns ``names`` of physical rows ``[start, stop)``, deleted rows included."""

        def fetch(index: int, columns: list[str]) -> pa.Table:
            return self._file(index).read_range(start, stop - start, columns=columns).to_table()

        return self._assemble(names, stop - start, fetch)

    def read_runs(self, name: str, start: int, stop: int) -> tuple[pa.Table, np.ndarray] | None:
        """Column ``name`` of physical rows ``[start, stop)`` as the runs its file stores:
        a table of that column holding each run's value, and the runs' lengths; None
        where the file stores them otherwise."""
        ((field, location),) = self._columns([name])
        if location is None:
            return None
        found = self._file(location[0]).read_runs(location[1], start, stop)
        if found is None:
            return None
        values, lengths = found
        array = self._converted(pa.chunked_array([values]), location[2], field)
        return pa.Table.from_arrays([array], schema=pa.schema([field])), lengths

    def take(self, names: Sequence[str], rows: np.ndarray) -> pa.Table:
        """Columns ``names`` of the given physical rows, in the given order."""

        def fetch(index: int, columns: list[str]) -> pa.Table:
            return self._file(index).take_rows(rows, columns=columns).to_table()

        return self._assemble(names, len(rows), fetch)

    def _assemble(self, names: Sequence[str], num_rows: int, fetch: _Fetch) -> pa.Table:
        columns = self._columns(names)
        if not columns:
            # A table with no columns still has to carry its row count.
            return pa.table([pa.nulls(num_rows)], names=["_"]).select([])
        by_file: dict[int, list[str]] = {}
        for _, location in columns:
            if location is not None:
                by_file.setdefault(location[0], []).append(location[1])
        tables = {index: fetch(index, cols) for index, cols in by_file.items()}
        arrays = []
        for field, location in columns:
            if location is None:
                array = pa.chunked_array([pa.nulls(num_rows, field.type)])
            else:
                stored = tables[location[0]].column(location[1])
                array = self._converted(stored, location[2], field)
            arrays.append(array)
        return pa.Table.from_arrays(arrays, schema=pa.schema([f for f, _ in columns]))

    def _converted(
        self, stored: pa.ChunkedArray, renamed: pa.DataType, field: pa.Field
    ) -> pa.ChunkedArray:
        try:
            return _as_type(stored, renamed, field.type)
        except (pa.ArrowException, ValueError) as exc:
            # A stored type that does not fit the schema's: the two disagree.
            raise CorruptDatasetError(
                f"fragment {self.fragment.id}: column {field.name!r} is stored as "
                f"{stored.type}, which does not fit the schema's {field.type}: {exc}"
            ) from exc


# Locations by the file's stored schema, the fragment's field ids for it and the
# dataset's field names: they follow from those alone (never changed by a caller).
_BY_SCHEMA: Memo[dict[int, _Location]] = Memo(64)
_LOCATIONS: weakref.WeakKeyDictionary[
    LanceFileReader,
    dict[tuple[int, tuple[int, ...], tuple[tuple[int, str], ...]], dict[int, _Location]],
] = weakref.WeakKeyDictionary()

_LAYOUTS: weakref.WeakKeyDictionary[LanceFileReader, tuple[LanceSchema, list[int]]] = (
    weakref.WeakKeyDictionary()
)


def _layout(reader: LanceFileReader) -> tuple[LanceSchema, list[int]]:
    """A data file's own schema, with the ids of its fields that own a column; kept
    as long as the reader is (readers are shared while their file is unchanged)."""
    found = _LAYOUTS.get(reader)
    if found is None:
        local = LanceSchema.from_arrow(reader.schema, check_key=False)
        found = _LAYOUTS[reader] = (local, column_field_ids(local, structural=reader.structural))
    return found


def _renamed(dtype: pa.DataType, names: Iterator[str]) -> pa.DataType:
    """``dtype`` with its nested fields renamed, in pre-order, from ``names``.

    A fixed-size list is one Lance field without children, so it keeps its type."""

    def field(f: pa.Field) -> pa.Field:
        return pa.field(next(names), _renamed(f.type, names), f.nullable, f.metadata)

    if pa.types.is_struct(dtype):
        return pa.struct([field(dtype.field(i)) for i in range(dtype.num_fields)])
    if pa.types.is_large_list(dtype):
        return pa.large_list(field(dtype.value_field))
    if pa.types.is_list(dtype):
        return pa.list_(field(dtype.value_field))
    if pa.types.is_map(dtype):
        next(names)  # its entries; readers name the key and value fields key and value
        key, value = field(dtype.key_field), field(dtype.item_field)
        return pa.map_(key.with_name("key"), value.with_name("value"))
    return dtype


def _as_type(column: pa.ChunkedArray, renamed: pa.DataType, wanted: pa.DataType) -> pa.ChunkedArray:
    """A stored column under the dataset's current type: nested fields renamed (a
    zero-copy view) and nested fields dropped since (a cast, which matches by name)."""
    if column.type == wanted:
        return column
    if renamed != column.type:
        column = pa.chunked_array([c.view(renamed) for c in column.chunks], type=renamed)
    column = json_as_text(column, wanted)
    if column.type == wanted:
        return column
    if not _fits(column.type, wanted):
        # A schema that names another type than the file holds (a damaged one): a
        # cast would give other values, or the same ones under a type they lack.
        raise ValueError("the types differ")
    return column.cast(wanted)


def _fits(stored: pa.DataType, wanted: pa.DataType) -> bool:
    """Whether ``wanted`` is ``stored`` less nested fields dropped since (or the
    extension type a file stores as ``stored``)."""
    if stored == wanted:
        return True
    if isinstance(wanted, pa.BaseExtensionType):
        return _fits(stored, wanted.storage_type)
    if pa.types.is_struct(stored) and pa.types.is_struct(wanted):
        have = {stored.field(i).name: stored.field(i).type for i in range(stored.num_fields)}
        return all(
            wanted.field(i).name in have and _fits(have[wanted.field(i).name], wanted.field(i).type)
            for i in range(wanted.num_fields)
        )
    for same_kind in (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list):
        if same_kind(stored) and same_kind(wanted):
            sizes_match = getattr(stored, "list_size", 0) == getattr(wanted, "list_size", 0)
            return sizes_match and _fits(stored.value_type, wanted.value_type)
    return False


def live_mask(reader: FragmentReader, start: int, stop: int) -> np.ndarray | None:
    """Which of a fragment's physical rows ``[start, stop)`` are not deleted (None
    when all of them)."""
    deleted = reader.deleted
    dead = deleted[(deleted >= start) & (deleted < stop)]
    if not len(dead):
        return None
    keep = np.ones(stop - start, dtype=bool)
    keep[dead.astype(np.int64) - start] = False
    return keep
