"""``to_pandas`` of a scan, with pylance's three ways of showing blob columns.

``"lazy"`` (the default) gives each blob as a ``BlobFile`` (``None`` for a null),
``"bytes"`` its contents, ``"descriptions"`` what ``to_table()`` returns (where the
blob lies).  The other columns are ``pyarrow.Table.to_pandas``'s, with the keywords
given; the blob columns keep their places among them.
"""

from __future__ import annotations

from typing import Any, Protocol

import pyarrow as pa

from lancelet.dataset.read import blob
from lancelet.dataset.read.projection import ROW_ID
from lancelet.errors import ArgumentError, UnsupportedOptionError

LAZY = "lazy"
BYTES = "bytes"
DESCRIPTIONS = "descriptions"
_MODES = (LAZY, BYTES, DESCRIPTIONS)

_EXTENSION_KEY = b"ARROW:extension:name"
_BLOB_V2_EXTENSION = b"lance.blob.v2"


class BlobScan(Protocol):
    """What ``to_pandas`` asks of a scan (``LanceScanner``, which reaches this module
    through its base, so is described here rather than imported)."""

    @property
    def projected_schema(self) -> pa.Schema: ...

    def to_table(self) -> pa.Table: ...

    def with_row_ids(self) -> BlobScan: ...

    def column_source(self, name: str) -> str | None: ...

    def take_blobs(self, column: str, row_ids: pa.Array) -> list[blob.BlobFile | None]: ...


def is_blob_field(field: pa.Field) -> bool:
    """A blob column as pylance tells one: marked ``lance-encoding:blob`` or the blob
    v2 extension type."""
    metadata = field.metadata or {}
    return metadata.get(blob.BLOB_KEY) == b"true" or (
        metadata.get(_EXTENSION_KEY) == _BLOB_V2_EXTENSION
    )


def _holds_blob(field: pa.Field) -> bool:
    if is_blob_field(field):
        return True
    return pa.types.is_struct(field.type) and any(
        _holds_blob(field.type.field(i)) for i in range(field.type.num_fields)
    )


def to_pandas(scanner: BlobScan, blob_mode: str, kwargs: dict[str, Any]) -> Any:
    if blob_mode not in _MODES:
        raise ArgumentError("blob_mode must be one of: 'lazy', 'bytes', 'descriptions'")
    schema = scanner.projected_schema
    blobs = [i for i, field in enumerate(schema) if _holds_blob(field)]
    if not blobs or blob_mode == DESCRIPTIONS:
        return scanner.to_table().to_pandas(**kwargs)
    names = [schema.field(i).name for i in blobs]
    sources = {name: _source_column(scanner, schema.field(name)) for name in names}
    asked_for_ids = ROW_ID in schema.names
    table = (scanner if asked_for_ids else scanner.with_row_ids()).to_table()
    row_ids = table.column(ROW_ID).combine_chunks()
    values = {}
    for name in names:
        files = scanner.take_blobs(sources[name], row_ids)
        values[name] = files if blob_mode == LAZY else [_contents(f) for f in files]
    dropped = names if asked_for_ids else [*names, ROW_ID]
    frame = table.drop_columns(dropped).to_pandas(**kwargs)
    for position, name in zip(blobs, names, strict=True):
        frame.insert(position, name, values[name])
    return frame


def _source_column(scanner: BlobScan, field: pa.Field) -> str:
    """The dataset's blob column an output blob column is (a top-level blob column, as
    named or renamed); blobs inside structs or computed columns are refused."""
    source = scanner.column_source(field.name)
    if not is_blob_field(field) or source is None:
        raise UnsupportedOptionError(
            f"to_pandas: column {field.name!r} holds blobs inside a struct or computed "
            "from them; lancelet returns blob files only for top-level blob columns. "
            "Pass blob_mode='descriptions', or select the blob column by name"
        )
    return source


def _contents(file: blob.BlobFile | None) -> bytes | None:
    return None if file is None else file.read()
