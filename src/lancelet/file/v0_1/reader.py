"""``LanceFileReader`` for legacy files: the same calls, answered from batches."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet._proto import file_pb2
from lancelet.errors import (
    CorruptFileError,
    SchemaError,
    UnsupportedTypeError,
    UnsupportedVersionError,
)
from lancelet.file.container import first_overlap
from lancelet.file.extensions import storage_schema
from lancelet.file.file_metadata import (
    LanceBufferDescriptor,
    LanceColumnMetadata,
    LanceFileMetadata,
    LanceFileStatistics,
    LancePageMetadata,
)
from lancelet.file.reader import ColumnReader, LanceFileReader
from lancelet.file.schema import from_lance_fields
from lancelet.file.v0_1.container import file_view, read_layout
from lancelet.file.v0_1.fields import (
    Binary,
    Dictionary,
    File,
    Fixed,
    List,
    Node,
    Null,
    Struct,
)
from lancelet.file.v2_0.types import is_variable_width
from lancelet.io import FileIO


class Column:
    """One projected field across the file's batches."""

    def __init__(self, node: Node, offsets: np.ndarray, field: pa.Field) -> None:
        self.node = node
        self.offsets = offsets
        self.field = field
        self.dtype: pa.DataType = field.type

    def chunks(self, start: int, end: int) -> list[pa.Array]:
        first = int(np.searchsorted(self.offsets, start, side="right")) - 1
        out = []
        for batch in range(max(first, 0), len(self.offsets) - 1):
            lo, hi = int(self.offsets[batch]), int(self.offsets[batch + 1])
            if lo >= end:
                break
            if min(hi, end) > max(lo, start):
                out.append(self.node.read(batch, max(lo, start) - lo, min(hi, end) - lo))
        return out

    def read(self, start: int, end: int) -> pa.Array:
        parts = self.chunks(start, end)
        if not parts:
            return pa.array([], self.dtype)
        return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)

    def take(self, rows: np.ndarray) -> pa.Array:
        """``rows`` (in range) in their order."""
        if not len(rows):
            return pa.array([], self.dtype)
        batches = np.searchsorted(self.offsets, rows, side="right") - 1
        return self.node.take(batches, rows - self.offsets[batches])


class LegacyFileReader(LanceFileReader, reads_legacy_files=True):
    """Reads a legacy (0.1) Lance file; :class:`LanceFileReader` hands such files here."""

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
        # storage_options, file_io: taken, and the namespace refused, by LanceFileReader.__new__
        self.path = os.fspath(path)
        self._source = self._open_source()
        self._layout = read_layout(self._source)
        fields = self._layout.fields
        try:
            self._logical_schema = from_lance_fields(
                fields, self._layout.schema_metadata, json_text=False
            )
            # Decoded as extension types' storage (with their Arrow keys), which a
            # dataset casts to its own types.
            self._schema = storage_schema(self._logical_schema)
        except UnsupportedTypeError:
            raise
        except SchemaError as exc:
            raise CorruptFileError(f"{self.path}: {exc}") from exc
        self._num_rows = self._layout.num_rows
        self._field_ids = self._all_field_ids = tuple(f.id for f in fields)
        self._file = File(self._source, self._layout, file_view(self._source))
        self._tree = _build(self._file, fields, self._schema)
        rows = np.diff(self._layout.batch_offsets)
        for node in self._tree:
            node.check(rows)
        _check_disjoint(self._file)
        self._default_columns = list(columns) if columns is not None else None

    @property
    def structural(self) -> bool:
        return False  # every field owns a column, as in 2.0

    # -- projection -------------------------------------------------------------------

    def _projected_columns(self, columns: Sequence[str] | None) -> list[int]:
        """None to announce: a legacy file's pages are found as its fields read them."""
        return []

    def _project(self, names: Sequence[str] | None) -> tuple[pa.Schema, list[ColumnReader]]:
        names = names if names is not None else self._default_columns
        if names is None:
            chosen = [(node, node.field) for node in self._tree]
        else:
            chosen = [self._find(name) for name in names]
        offsets = self._layout.batch_offsets
        columns: list[ColumnReader] = [Column(node, offsets, f) for node, f in chosen]
        schema = pa.schema([f for _, f in chosen], metadata=self._schema.metadata)
        return schema, columns

    def _find(self, name: str) -> tuple[Node, pa.Field]:
        """A top-level column, or a dotted path to a struct sub-field."""
        whole = next((n for n in self._tree if n.field.name == name), None)
        if whole is not None:
            return whole, whole.field
        candidates: Sequence[Node] = self._tree
        node: Node | None = None
        for part in name.split("."):
            node = next((n for n in candidates if n.field.name == part), None)
            if node is None:
                raise SchemaError(f"{self.path}: no column named {name!r}")
            candidates = node.children if isinstance(node, Struct) else []
        assert node is not None
        return node, node.field.with_name(name)

    # -- reads ------------------------------------------------------------------------

    def file_statistics(self) -> LanceFileStatistics:
        raise UnsupportedVersionError(
            f"{self.path}: file statistics are kept only for Lance 2.x files, not legacy ones"
        )

    def metadata(self) -> LanceFileMetadata:
        """The file as 2.x metadata would describe it: a column per field with pages
        (position, length in values) for each batch, no global buffers."""
        layout = self._layout
        columns = [
            LanceColumnMetadata(
                [],
                [
                    LancePageMetadata([LanceBufferDescriptor(int(p), int(n))], "legacy", int(n))
                    for p, n in layout.pages[f.id - layout.first_field_id]
                ],
            )
            for f in layout.fields
        ]
        return LanceFileMetadata(
            schema=self._schema,
            num_rows=self._num_rows,
            num_data_bytes=layout.data_end,
            num_column_metadata_bytes=self._source.size - layout.data_end,
            num_global_buffer_bytes=0,
            global_buffers=[],
            columns=columns,
            major_version=layout.major,
            minor_version=layout.minor,
        )


def _build(file: File, fields: Sequence[file_pb2.Field], schema: pa.Schema) -> list[Node]:
    """A node per top-level field, built alongside the Arrow schema made from ``fields``."""
    children: dict[int, list[file_pb2.Field]] = {}
    for f in fields:
        children.setdefault(f.parent_id, []).append(f)

    def build(proto: file_pb2.Field, arrow: pa.Field, label: str) -> Node:
        dtype = arrow.type
        kids = children.get(proto.id, [])
        if pa.types.is_struct(dtype):
            nodes = [build(k, dtype.field(i), f"{label}.{k.name}") for i, k in enumerate(kids)]
            return Struct(file, arrow, label, proto.id, nodes)
        if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
            item = build(kids[0], dtype.value_field, f"{label}.{kids[0].name}")
            return List(file, arrow, label, proto.id, item)
        if pa.types.is_dictionary(dtype):
            if not proto.HasField("dictionary"):
                raise CorruptFileError(f"{file.path}: column {label!r} has no dictionary")
            where = (proto.dictionary.offset, proto.dictionary.length)
            return Dictionary(file, arrow, label, proto.id, where)
        if pa.types.is_null(dtype):
            return Null(file, arrow, label, proto.id)
        if is_variable_width(dtype):
            return Binary(file, arrow, label, proto.id)
        return Fixed(file, arrow, label, proto.id)

    top = children.get(-1, [])
    return [build(proto, schema.field(i), proto.name) for i, proto in enumerate(top)]


def _check_disjoint(file: File) -> None:
    """No two byte regions the pages claim may overlap: the writer lays pages out one
    after another, so an overlap means a position or length was damaged."""
    if not file.regions:
        return
    starts = np.concatenate([r[0] for r in file.regions])
    sizes = np.concatenate([r[1] for r in file.regions])
    names = np.concatenate([np.full(len(r[0]), i) for i, r in enumerate(file.regions)])
    clash = first_overlap(starts, sizes)
    if clash is not None:
        first, second = clash
        raise CorruptFileError(
            f"{file.path}: {file.regions[names[first]][2]} (bytes {starts[first]}.."
            f"{starts[first] + sizes[first]}) overlaps {file.regions[names[second]][2]} "
            f"(from byte {starts[second]})"
        )
