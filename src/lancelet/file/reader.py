"""Reading Lance 2.0 files."""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, ClassVar, NamedTuple, Protocol

import numpy as np
import pyarrow as pa
from google.protobuf.unknown_fields import UnknownFieldSet

from lancelet._proto import file_pb2
from lancelet.errors import (
    CorruptFileError,
    FileRowOutOfRangeError,
    LanceletError,
    SchemaError,
    UnsupportedEncodingError,
    UnsupportedOptionError,
    UnsupportedTypeError,
)
from lancelet.file import container, file_metadata, prefetch, v0_1
from lancelet.file.container import ColumnInfo
from lancelet.file.extensions import logical_field, logical_reader, storage_schema
from lancelet.file.file_metadata import (
    LanceFileMetadata,
    LanceFileStatistics,
)
from lancelet.file.memo import Memo
from lancelet.file.parallel import WORKERS, map_columns
from lancelet.file.schema import from_lance_fields, map_column
from lancelet.file.v2_0.fields import ColumnPages, build_reader
from lancelet.file.v2_0.layout import (
    FieldNode,
    Kind,
    build_layout,
    column_count,
    column_labels,
)
from lancelet.file.v2_1.read import fields as fields21
from lancelet.file.v2_1.read import layout as layout21
from lancelet.file.v2_1.read import runs as runs21
from lancelet.file.v2_1.read.shape import SHAPES, ColumnShape, Leaves
from lancelet.io import FileIO, InputFile, LocalInputFile
from lancelet.io.fileio import file_io_for

DEFAULT_BATCH_SIZE = 1024
# Takes of at most this many rows decode their columns on the calling thread.
_INLINE_TAKE = 2048
# A range read of at most this many cells (rows times page jobs) decodes on the caller.
_INLINE_CELLS = 65536
# Rows of a take cut into pieces for idle decoding threads are at least this many.
_TAKE_PIECE = 8192
# Projections a reader keeps resolved.
_PROJECTIONS = 32
# Decoded schemas (Arrow, and its storage types) by stored schema.
_DECODED_SCHEMAS: Memo[tuple[pa.Schema, pa.Schema]] = Memo(64)


class ColumnReader(Protocol):
    """Reads one projected column of a file, whatever its version."""

    @property
    def dtype(self) -> pa.DataType: ...

    def chunks(self, start: int, end: int) -> list[pa.Array]: ...

    def read(self, start: int, end: int) -> pa.Array: ...

    def take(self, rows: np.ndarray) -> pa.Array: ...


class ReaderResults:
    """The rows a read selected, as a table or as a stream of record batches.

    Nothing is decoded until one of the two methods is called.  ``to_table``
    decodes column by column and keeps each page as its own chunk (no copy);
    ``to_batches`` streams with memory bounded by a page per column.
    """

    def __init__(
        self,
        schema: pa.Schema,
        batches: Callable[[], Iterator[pa.RecordBatch]],
        table: Callable[[], pa.Table],
    ):
        self._schema = schema
        self._batches = batches
        self._table = table

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def to_batches(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self._schema, self._batches())

    def to_table(self) -> pa.Table:
        return self._table()


def _chunk_jobs(reader: ColumnReader, start: int, end: int) -> list[Callable[[], list[pa.Array]]]:
    """``reader.chunks(start, end)`` split into jobs where the reader can (2.1+)."""
    split = getattr(reader, "chunk_jobs", None)
    if split is not None:
        jobs: list[Callable[[], list[pa.Array]]] = split(start, end)
        return jobs
    return [lambda: reader.chunks(start, end)]


def _takes(readers: Sequence[ColumnReader], rows: np.ndarray) -> list[Any]:
    """Each reader's take of ``rows`` on the pool.  With fewer columns than threads,
    the rows are cut into a piece per idle thread, so that one wide column (a long
    text a filter reads) does not decode on one thread while the others wait."""
    pieces = min(WORKERS // max(len(readers), 1), len(rows) // _TAKE_PIECE)
    if pieces < 2 or any(fields21.has_dictionary(r.dtype) for r in readers):
        return map_columns(lambda r: r.take(rows), readers)
    cuts = np.array_split(rows, pieces)
    done = iter(
        map_columns(lambda job: job[0].take(job[1]), [(r, c) for r in readers for c in cuts])
    )
    return [pa.chunked_array([next(done) for _ in cuts], type=r.dtype) for r in readers]


class LanceFileReader:
    """Reads a Lance file (format 2.0): whole, by row range, by row list, or as batches.

    ``columns`` selects top-level columns or struct sub-fields (``"a.b"``).
    """

    _io: FileIO  # set by __new__
    # The subclass that reads legacy (0.1) files, which __new__ hands them to.  It
    # lives above this module (lancelet.file.v0_1.reader) and registers itself when
    # its class is made; the package lancelet.file imports it, so it is registered
    # before any reader can be made.
    _legacy_reader: ClassVar[type[LanceFileReader] | None] = None

    def __init_subclass__(cls, *, reads_legacy_files: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if reads_legacy_files:
            LanceFileReader._legacy_reader = cls

    def __new__(
        cls,
        path: str | os.PathLike[str],
        storage_options: dict[str, str] | None = None,
        columns: Sequence[str] | None = None,
        *,
        namespace_client: Any = None,
        table_id: list[str] | None = None,
        file_io: FileIO | None = None,
    ) -> LanceFileReader:
        if namespace_client is not None or table_id is not None:
            raise UnsupportedOptionError(
                f"{os.fspath(path)}: LanceFileReader: namespace_client and table_id are not "
                "supported"
            )
        file_io = file_io_for(path, storage_options, file_io)
        try:
            source: InputFile | None = file_io.open_input(path)
        except (LanceletError, OSError):
            source = None  # __init__ opens it again and reports the problem
        kind = cls
        if cls is LanceFileReader and source is not None and v0_1.ends_in_legacy_footer(source):
            assert cls._legacy_reader is not None, "lancelet.file.v0_1.reader is not imported"
            kind = cls._legacy_reader
        reader = super().__new__(kind)
        # Handed to __init__, so a file is opened once (a request on an object store).
        reader.__dict__["_opened"] = source
        reader.__dict__["_io"] = file_io
        return reader

    def _open_source(self) -> InputFile:
        source: InputFile | None = self.__dict__.pop("_opened", None)
        return source if source is not None else self._io.open_input(self.path)

    def __init__(
        self,
        path: str | os.PathLike[str],
        storage_options: dict[str, str] | None = None,
        columns: Sequence[str] | None = None,
        *,
        namespace_client: Any = None,
        table_id: list[str] | None = None,
        file_io: FileIO | None = None,
    ):
        """``file_io``: the storage to read through (a dataset's); by default one made
        from ``storage_options``.  namespace_client, table_id: refused by __new__."""
        self.path = os.fspath(path)
        self._source: InputFile = self._open_source()
        self._footer = container.read_footer(self._source)
        descriptor = self._read_descriptor()
        self._num_rows = descriptor.length
        # Files written together share their schema: what depends on it alone is
        # worked out once per distinct schema (a compaction opens a hundred such files).
        self._schema_key = (self._footer.structural, descriptor.schema_bytes)
        self._field_ids = descriptor.field_ids
        self._all_field_ids = _PREORDER.get(
            self._schema_key, lambda: _preorder_ids(descriptor.schema.fields)
        )
        self._logical_schema, self._schema = self._decoded_schema(descriptor.schema)
        # Pages hold this, not a method of the reader: a bound method would make the
        # reader and its pages a cycle, freed only by a full garbage collection.
        self._global_buffers = _GlobalBuffers(self._source, self._footer)
        # Projections resolved lately, by column names (None: the default columns):
        # column readers hold no state of a read, so repeated reads share them.
        self._projections: dict[tuple[str, ...] | None, tuple[pa.Schema, list[ColumnReader]]] = {}
        self._default_columns = list(columns) if columns is not None else None
        self._pages: list[ColumnPages] = []
        self._leaves: Sequence[fields21.LeafColumn] = ()
        if self._footer.structural:
            self._open_structural()
        else:
            self._open_2_0()

    def _read_descriptor(self) -> _Descriptor:
        """The file's descriptor (global buffer 0): its schema and length.  Files of
        one schema and length (a compaction's) store the same bytes: parsed once."""
        raw = container.read_global_buffer(self._source, self._footer, 0).to_pybytes()
        found = _DESCRIPTORS.find(raw)
        if found is not None:
            return found
        descriptor = file_pb2.FileDescriptor()
        container.parse_message(descriptor, raw, "file descriptor (global buffer 0)", self.path)
        if len(UnknownFieldSet(descriptor)) or len(UnknownFieldSet(descriptor.schema)):
            # Only a field's own attributes may grow between writers; a stray field
            # at these levels is a damaged length or tag (a cut-short field's tail).
            raise CorruptFileError(f"{self.path}: the file descriptor holds unknown fields")
        schema = descriptor.schema
        ids = tuple(f.id for f in schema.fields)
        made = _Descriptor(descriptor.length, schema, schema.SerializeToString(), ids)
        if len(raw) <= _DESCRIPTOR_KEPT_BYTES:
            _DESCRIPTORS.put(raw, made)
        return made

    def _decoded_schema(self, schema: file_pb2.Schema) -> tuple[pa.Schema, pa.Schema]:
        return _DECODED_SCHEMAS.get(self._schema_key, lambda: self._decode_schema(schema))

    def _decode_schema(self, schema: file_pb2.Schema) -> tuple[pa.Schema, pa.Schema]:
        """The file's Arrow schema, and the same with extension types' storage types
        (columns decode as those; _projected wraps them back)."""
        try:
            logical: pa.Schema = from_lance_fields(schema.fields, schema.metadata, json_text=False)
            return logical, storage_schema(logical)
        except UnsupportedTypeError as exc:
            if not self._footer.structural:
                raise CorruptFileError(f"{self.path}: {exc}") from exc
            # Newer writers store types lancelet does not read yet (fixed-size lists
            # of structs): not damage.
            raise UnsupportedEncodingError(f"{self.path}: {exc}") from exc
        except SchemaError as exc:
            raise CorruptFileError(f"{self.path}: {exc}") from exc

    def _open_2_0(self) -> None:
        """Format 2.0: a column per field (two for early writers' strings), structure
        in struct and list pages."""
        found = map_column(self._schema)
        if found is not None:
            raise CorruptFileError(
                f"{self.path}: column {found!r} is a map, which a Lance 2.0 file cannot hold"
            )
        nodes = self._layout_2_0()
        labels = column_labels(nodes)
        self._columns = container.read_columns(self._source, self._footer, labels)
        if len(labels) != len(self._columns):
            raise CorruptFileError(
                f"{self.path}: schema needs {len(labels)} columns, file has {len(self._columns)}"
            )
        pages = [
            ColumnPages(self._source, info, i, self._global_buffers, labels[i])
            for i, info in enumerate(self._columns)
        ]
        for node in nodes:
            self._check_rows(node, self._num_rows, pages, "the file says")
        self._pages = pages
        self._nodes: list[FieldNode] | list[layout21.Node] = nodes

    def _layout_2_0(self) -> list[FieldNode]:
        nodes = build_layout(self._schema)
        if column_count(nodes) == self._footer.num_columns:
            return nodes
        # Early 2.0 writers stored strings and binaries as lists of bytes, in two
        # columns: only the file's encodings tell which fields they are.
        columns = container.read_columns(self._source, self._footer)

        def list_encoded(column: int) -> bool:
            pages = columns[column].pages if column < len(columns) else ()
            return bool(pages) and pages[0].encoding.WhichOneof("array_encoding") == "list"

        return build_layout(self._schema, list_encoded)

    def _open_structural(self) -> None:
        """Format 2.1+: one column per leaf, structure in the leaves' levels."""
        shape = SHAPES.get(self._schema_key, lambda: ColumnShape.of(self._schema))
        labels = shape.labels
        self._columns = container.read_columns(self._source, self._footer, labels)
        if len(labels) != len(self._columns):
            raise CorruptFileError(
                f"{self.path}: schema needs {len(labels)} columns, file has {len(self._columns)}"
            )
        for i in range(len(labels)):
            if self._columns.rows(i) != self._num_rows:
                raise CorruptFileError(
                    f"{self.path}: {labels[i]} holds {self._columns.rows(i)} rows, "
                    f"the file says {self._num_rows}"
                )
        # Each leaf is made when first read (a read of a few of many columns makes few).
        self._leaves = Leaves(self._source, self._columns, shape)
        self._nodes = list(shape.nodes)
        # Only leaves own columns: a data file's field ids (DataFile.fields) are theirs.
        owners = shape.owners
        if len(owners) == len(self._all_field_ids):
            self._field_ids = tuple(
                i for owns, i in zip(owners, self._all_field_ids, strict=True) if owns
            )

    def _check_rows(
        self, node: FieldNode, expected: int, pages: list[ColumnPages], source: str
    ) -> None:
        """Every column holds the rows its parent implies: a struct's children as many
        as the struct, a list's items as many as its pages count."""
        column = pages[node.column]
        if column.num_rows != expected:
            raise CorruptFileError(
                f"{self.path}: {column.label} holds {column.num_rows} rows, {source} {expected}"
            )
        if node.kind is Kind.STRUCT:
            for page_no, page in enumerate(column.info.pages):
                # A struct's header pages carry only its length; anything else there
                # means the schema and the columns disagree.
                if page.encoding.WhichOneof("array_encoding") != "struct" or page.buffer_sizes:
                    raise CorruptFileError(
                        f"{self.path}: {column.label} page {page_no} is not a struct page"
                    )
            for child in node.children:
                self._check_rows(child, expected, pages, "its struct holds")
        elif node.kind is Kind.LIST:
            items = 0
            for page_no, page in enumerate(column.info.pages):
                if page.encoding.WhichOneof("array_encoding") != "list":
                    raise CorruptFileError(
                        f"{self.path}: {column.label} page {page_no} is not a list page"
                    )
                items += page.encoding.list.num_items
            self._check_rows(node.children[0], items, pages, "its lists refer to")

    # -- projection -------------------------------------------------------------------

    def _project(self, columns: Sequence[str] | None) -> tuple[pa.Schema, list[ColumnReader]]:
        names = columns if columns is not None else self._default_columns
        key = None if names is None else tuple(names)
        found = self._projections.get(key)
        if found is None:
            found = self._projections[key] = self._projected(names)
            if len(self._projections) > _PROJECTIONS:
                self._projections.pop(next(iter(self._projections)), None)
        schema, readers = found
        return schema, list(readers)

    def _projected(self, names: Sequence[str] | None) -> tuple[pa.Schema, list[ColumnReader]]:
        nodes: list[FieldNode | layout21.Node] = (
            list(self._nodes) if names is None else [self._resolve(name) for name in names]
        )
        readers: list[ColumnReader] = []
        for node in nodes:
            if isinstance(node, layout21.Node):
                readers.append(fields21.FieldReader(node, self._leaves, self.path))
            else:
                assert isinstance(node, FieldNode)
                readers.append(build_reader(node, self._pages))
        readers = [logical_reader(r, node.field) for r, node in zip(readers, nodes, strict=True)]
        fields = [logical_field(node.field, json_text=False) for node in nodes]
        return pa.schema(fields, metadata=self._schema.metadata), readers

    def _resolve(self, name: str) -> FieldNode | layout21.Node:
        """A top-level column or a dotted path to a struct sub-field."""
        candidates: Sequence[FieldNode | layout21.Node] = self._nodes
        node: FieldNode | layout21.Node | None = None
        parts = name.split(".")
        for depth, part in enumerate(parts):
            node = next((n for n in candidates if n.field.name == part), None)
            if node is None:
                # A top-level name may itself contain dots.
                whole = (
                    next((n for n in self._nodes if n.field.name == name), None)
                    if depth == 0
                    else None
                )
                if whole is not None:
                    return whole
                raise SchemaError(f"{self.path}: no column named {name!r}")
            candidates = list(node.children) if pa.types.is_struct(node.field.type) else []
        assert node is not None
        if len(parts) > 1:
            if isinstance(node, layout21.Node):
                return node.renamed(name)
            node = FieldNode(node.field.with_name(name), node.column, node.children)
        return node

    # -- reads -----------------------------------------------------------------------

    def _projected_columns(self, columns: Sequence[str] | None) -> list[int]:
        """The file columns a read of ``columns`` decodes (what prefetching announces)."""
        names = columns if columns is not None else self._default_columns
        nodes = self._nodes if names is None else [self._resolve(name) for name in names]
        return [c for node in nodes for c in prefetch.node_columns(node)]

    def _buffers(
        self, columns: Sequence[str] | None, of: Callable[[ColumnInfo], prefetch.Ranges]
    ) -> prefetch.Ranges:
        """``of`` each projected column's metadata, joined, and inside the file."""
        found = [r for c in self._projected_columns(columns) for r in of(self._columns[c])]
        return prefetch.within(found, self._source.size)

    def _prefetch_range(self, columns: Sequence[str] | None, start: int, end: int) -> None:
        """Announce the pages rows ``[start, end)`` of ``columns`` need (see :mod:`.prefetch`)."""
        if isinstance(self._source, LocalInputFile):
            return  # a memory map needs no warning
        n = self._num_rows
        self._source.prefetch(
            self._buffers(columns, lambda info: prefetch.range_buffers(info, start, end, n))
        )

    def _release_after(self, columns: Sequence[str] | None, end: int) -> None:
        """After reading up to row ``end``: keep only the pages a read from ``end`` on
        continues in (a sequential scan fetches no page twice)."""
        if isinstance(self._source, LocalInputFile):
            return
        n = self._num_rows
        following = (
            self._buffers(columns, lambda info: prefetch.range_buffers(info, end, end + 1, n))
            if end < n
            else []
        )
        self._source.retain(following)

    def _prefetch_rows(self, columns: Sequence[str] | None, rows: np.ndarray) -> None:
        if isinstance(self._source, LocalInputFile) or not len(rows):
            return
        if self.structural:  # only what the rows need, not their pages
            leaves = [self._leaves[c] for c in self._projected_columns(columns)]
            if prefetch.take_rows(self._source, leaves, rows):
                return
        n = self._num_rows
        self._source.prefetch(
            self._buffers(columns, lambda info: prefetch.row_buffers(info, rows, n))
        )

    def _batches(
        self,
        schema: pa.Schema,
        readers: list[ColumnReader],
        start: int,
        end: int,
        batch_size: int,
        columns: Sequence[str] | None,
    ) -> Iterator[pa.RecordBatch]:
        for lo in range(start, end, batch_size):
            hi = min(lo + batch_size, end)
            self._prefetch_range(columns, lo, hi)
            try:
                arrays = [r.read(lo, hi) for r in readers]
            finally:
                self._release_after(columns, hi)
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)

    def _range_results(
        self, start: int, num_rows: int, batch_size: int, columns: Sequence[str] | None
    ) -> ReaderResults:
        if start < 0 or num_rows < 0 or start + num_rows > self._num_rows:
            raise FileRowOutOfRangeError(
                f"{self.path}: rows [{start}, {start + num_rows}) are outside 0..{self._num_rows}"
            )
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        schema, readers = self._project(columns)
        end = start + num_rows

        def table() -> pa.Table:
            self._prefetch_range(columns, start, end)
            try:
                # Every page of every column is a job; the pool runs them all, unless
                # they are too little work for its hand-offs (and the GIL they contend
                # for): a compaction reads a hundred small files, measured 10% faster.
                jobs = [_chunk_jobs(r, start, end) for r in readers]
                flat = [job for js in jobs for job in js]
                if (end - start) * len(flat) <= _INLINE_CELLS:
                    done = iter([job() for job in flat])
                else:
                    done = iter(map_columns(lambda job: job(), flat))
                chunked = [
                    pa.chunked_array([c for _ in js for c in next(done)], type=r.dtype)
                    for r, js in zip(readers, jobs, strict=True)
                ]
            finally:
                self._release_after(columns, end)
            return pa.Table.from_arrays(chunked, schema=schema)

        return ReaderResults(
            schema, lambda: self._batches(schema, readers, start, end, batch_size, columns), table
        )

    def read_all(
        self,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        batch_readahead: int = 16,
        columns: Sequence[str] | None = None,
    ) -> ReaderResults:
        return self._range_results(0, self._num_rows, batch_size, columns)

    def read_range(
        self,
        start: int,
        num_rows: int,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        batch_readahead: int = 16,
        columns: Sequence[str] | None = None,
    ) -> ReaderResults:
        return self._range_results(start, num_rows, batch_size, columns)

    def take_rows(
        self,
        indices: Sequence[int] | np.ndarray,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        batch_readahead: int = 16,
        columns: Sequence[str] | None = None,
    ) -> ReaderResults:
        rows = np.asarray(indices, dtype=np.int64).reshape(-1)
        if len(rows) and (rows.min() < 0 or rows.max() >= self._num_rows):
            bad = int(rows[(rows < 0) | (rows >= self._num_rows)][0])
            raise FileRowOutOfRangeError(f"{self.path}: row {bad} is outside 0..{self._num_rows}")
        schema, readers = self._project(columns)

        def table() -> pa.Table:
            self._prefetch_rows(columns, rows)
            try:
                if len(rows) <= _INLINE_TAKE:  # too little work to be worth the pool's hand-offs
                    arrays = [r.take(rows) for r in readers]
                else:
                    arrays = _takes(readers, rows)
            finally:
                self._source.retain(())
            return pa.Table.from_arrays(arrays, schema=schema)

        def batches() -> Iterator[pa.RecordBatch]:
            for lo in range(0, len(rows), batch_size):
                part = rows[lo : lo + batch_size]
                self._prefetch_rows(columns, part)
                try:
                    arrays = [r.take(part) for r in readers]
                finally:
                    self._source.retain(())
                yield pa.RecordBatch.from_arrays(arrays, schema=schema)

        return ReaderResults(schema, batches, table)

    def read_runs(self, column: str, start: int, end: int) -> runs21.Runs | None:
        """Rows ``[start, end)`` of top-level ``column`` as the runs its pages store
        (values and lengths, see :mod:`.v2_1.read.runs`); None unless it is a plain
        leaf stored as runs there (then read the rows)."""
        if not self.structural:
            return None  # formats 0.1 and 2.0 store no mini-block runs
        node = next((n for n in self._nodes if n.field.name == column), None)
        if (
            not isinstance(node, layout21.Node)
            or node.kind is not layout21.Kind.LEAF
            or node.column is None
            or storage_schema(pa.schema([node.field])).field(0) != node.field
            or pa.types.is_dictionary(node.field.type)
        ):
            return None
        return runs21.leaf_runs(self._leaves[node.column], start, end)

    def plain_leaves(self) -> list[fields21.LeafColumn] | None:
        """The leaf column of each top-level column, for takes across files (see
        :mod:`.many`); None unless the file is local (nothing to fetch first), 2.1+,
        and every top-level column a leaf stored as it reads (no nesting, extension)."""
        if not isinstance(self._source, LocalInputFile) or not _PLAIN.get(
            self._schema_key, self._all_plain
        ):
            return None
        return [self._leaves[n.column] for n in self._nodes if isinstance(n, layout21.Node)
                and n.column is not None]  # fmt: skip

    def _all_plain(self) -> bool:
        """Whether every top-level column is a leaf stored as it reads: a property of
        the schema alone, worked out once for files written alike."""
        nodes = [n for n in self._nodes if isinstance(n, layout21.Node)]
        return (
            len(nodes) == len(self._nodes)
            and all(n.kind is layout21.Kind.LEAF and n.column is not None for n in nodes)
            and storage_schema(self.schema) == self.schema
        )

    def num_rows(self) -> int:
        return self._num_rows

    @property
    def field_ids(self) -> tuple[int, ...]:
        """The field ids the file's own schema records for its columns, in pre-order
        (format 2.0: every field's; 2.1 and later: the leaves', as only they own a
        column)."""
        return self._field_ids

    @property
    def all_field_ids(self) -> tuple[int, ...]:
        """Every field id the file's own schema records, structs and lists included, in
        pre-order."""
        return self._all_field_ids

    @property
    def schema_key(self) -> Hashable | None:
        """Equal for files whose stored schemas (and format families) are equal, so
        that what follows from the schema alone can be shared; None: not known."""
        key: Hashable | None = self.__dict__.get("_schema_key")
        return key

    @property
    def structural(self) -> bool:
        """Whether the file is of format 2.1 or later (only leaves own columns)."""
        return self._footer.structural

    def read_global_buffer(self, index: int) -> bytes:
        data: bytes = container.read_global_buffer(self._source, self._footer, index).to_pybytes()
        return data

    def page_bytes(self, column: int) -> int:
        """Bytes the pages of one column take on disk (after any compression)."""
        return sum(sum(page.buffer_sizes) for page in self._columns[column].pages)

    def file_statistics(self) -> LanceFileStatistics:
        """Pages and on-disk bytes (page and column buffers) of each column."""
        return file_metadata.statistics(self._columns)

    def metadata(self) -> LanceFileMetadata:
        return file_metadata.structural(
            self._footer, self._source, self._columns, self._logical_schema, self._num_rows
        )

    @property
    def schema(self) -> pa.Schema:
        return self._logical_schema


class _GlobalBuffers:
    """A file's global buffers, read on first use (2.0 pages rarely point at them)."""

    def __init__(self, source: InputFile, footer: container.Footer) -> None:
        self._source = source
        self._footer = footer
        self._buffers: list[pa.Buffer] | None = None

    def __call__(self) -> list[pa.Buffer]:
        if self._buffers is None:
            count = self._footer.num_global_buffers
            read = container.read_global_buffer
            self._buffers = [read(self._source, self._footer, i) for i in range(count)]
        return self._buffers


# What files written alike share, by their schema key (see ``__init__``).
_PREORDER: Memo[tuple[int, ...]] = Memo(64)


class _Descriptor(NamedTuple):
    """A file descriptor as a reader uses it; ``schema`` is shared by the readers of
    files that stored the same descriptor, so nothing may change it."""

    length: int
    schema: file_pb2.Schema
    schema_bytes: bytes
    field_ids: tuple[int, ...]


# Parsed file descriptors by their stored bytes (up to a size: a schema's, not a
# wide table's) and how many are kept.
_DESCRIPTORS: Memo[_Descriptor] = Memo(256)
_DESCRIPTOR_KEPT_BYTES = 64 * 1024
_PLAIN: Memo[bool] = Memo(64)


def _preorder_ids(fields: Sequence[file_pb2.Field]) -> tuple[int, ...]:
    """Field ids in pre-order of the tree their parent ids form (file order among
    siblings), as the schema is rebuilt from them."""
    children: dict[int, list[int]] = {}
    for f in fields:
        children.setdefault(f.parent_id, []).append(f.id)
    out: list[int] = []
    stack = list(reversed(children.get(-1, [])))
    while stack and len(out) <= len(fields):
        current = stack.pop()
        out.append(current)
        stack.extend(reversed(children.get(current, []) if current != -1 else []))
    return tuple(out)
