"""Blob v2 columns (pylance 14's blob columns in Lance 2.2 datasets): their shape.

A dataset's manifest records such a column as the extension ``lance.blob.v2``, a
struct of ``data`` (large_binary) and ``uri`` (string).  Its data files hold one
*descriptor* per value instead, a packed struct of ``(kind, position, size,
blob_id, blob_uri)`` whose children carry no field ids; scans return these
descriptors.  ``kind`` says where the bytes are: ``INLINE`` in the data file itself
(``position`` is a file offset), ``PACKED`` in a shared sidecar file (at
``position``), ``DEDICATED`` alone in a sidecar file, ``EXTERNAL`` at ``blob_uri``.
Sidecar files live in a directory named after the data file (without ``.lance``),
named by ``blob_id``'s 32 bits in reverse order, as pylance names them.
"""

from __future__ import annotations

from typing import Final

import pyarrow as pa

__all__ = [
    "BLOB_KEY",
    "DEDICATED",
    "DESCRIPTOR_TYPE",
    "EXTENSION",
    "INLINE",
    "PACKED",
    "STORED_TYPE",
    "descriptor_field",
    "is_blob_values",
    "is_descriptor_field",
    "sidecar_name",
]

EXTENSION: Final = "lance.blob.v2"
BLOB_KEY: Final = b"lance-encoding:blob"
PACKED_KEY: Final = b"lance-encoding:packed"
INLINE: Final = 0
PACKED: Final = 1
DEDICATED: Final = 2

DESCRIPTOR_TYPE: Final = pa.struct(
    [
        pa.field("kind", pa.uint8(), nullable=False),
        pa.field("position", pa.uint64(), nullable=False),
        pa.field("size", pa.uint64(), nullable=False),
        pa.field("blob_id", pa.uint32(), nullable=False),
        pa.field("blob_uri", pa.string(), nullable=False),
    ]
)
STORED_TYPE: Final = pa.struct([pa.field("data", pa.large_binary()), pa.field("uri", pa.string())])
"""The column's type as the manifest records it (the extension's storage)."""


def descriptor_field(name: str, nullable: bool) -> pa.Field:
    """The column as data files store it and scans return it."""
    meta = {BLOB_KEY: b"true", PACKED_KEY: b"true"}
    return pa.field(name, DESCRIPTOR_TYPE, nullable=nullable, metadata=meta)


def is_descriptor_field(field: pa.Field) -> bool:
    return field.type == DESCRIPTOR_TYPE and BLOB_KEY in (field.metadata or {})


def is_blob_values(field: pa.Field) -> bool:
    """A column of blob values as the user gives them (``lance-encoding:blob``)."""
    binary = pa.types.is_large_binary(field.type) or pa.types.is_binary(field.type)
    return binary and BLOB_KEY in (field.metadata or {})


def sidecar_name(blob_id: int) -> str:
    """The file name of sidecar ``blob_id``: its 32 bits, lowest first."""
    return format(blob_id, "032b")[::-1] + ".blob"
