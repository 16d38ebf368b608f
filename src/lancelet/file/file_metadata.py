"""A file's layout as pylance's ``LanceFileReader.metadata()`` and
``file_statistics()`` describe it: buffers, pages and columns with their positions
and sizes (the same class and field names as pylance's)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancelet.file.container import ColumnInfo, Footer
from lancelet.file.describe import rust_debug
from lancelet.io import InputFile


@dataclass(frozen=True)
class LanceBufferDescriptor:
    position: int
    size: int


@dataclass(frozen=True)
class LancePageMetadata:
    buffers: list[LanceBufferDescriptor]
    encoding: str
    num_rows: int


@dataclass(frozen=True)
class LanceColumnMetadata:
    column_buffers: list[LanceBufferDescriptor]
    pages: list[LancePageMetadata]


@dataclass(frozen=True)
class LanceColumnStatistics:
    num_pages: int
    size_bytes: int


@dataclass(frozen=True)
class LanceFileStatistics:
    columns: list[LanceColumnStatistics]


@dataclass(frozen=True)
class LanceFileMetadata:
    schema: pa.Schema
    num_rows: int
    num_data_bytes: int
    num_column_metadata_bytes: int
    num_global_buffer_bytes: int
    global_buffers: list[LanceBufferDescriptor]
    columns: list[LanceColumnMetadata]
    major_version: int
    minor_version: int


def statistics(columns: Sequence[ColumnInfo]) -> LanceFileStatistics:
    """Pages and on-disk bytes (page and column buffers) of each column."""
    return LanceFileStatistics(
        [
            LanceColumnStatistics(
                len(c.pages),
                sum(c.buffer_sizes) + sum(sum(p.buffer_sizes) for p in c.pages),
            )
            for c in columns
        ]
    )


def structural(
    footer: Footer,
    source: InputFile,
    columns: Sequence[ColumnInfo],
    schema: pa.Schema,
    num_rows: int,
) -> LanceFileMetadata:
    """The metadata of a 2.x file (its footer read from ``source``)."""
    f = footer
    gbo = np.frombuffer(source.read(f.gbo_table_pos, 16 * f.num_global_buffers), dtype="<u8")
    globals_ = [LanceBufferDescriptor(int(p), int(s)) for p, s in gbo.reshape(-1, 2)]
    described = [
        LanceColumnMetadata(
            [
                LanceBufferDescriptor(o, s)
                for o, s in zip(c.buffer_offsets, c.buffer_sizes, strict=True)
            ],
            [
                LancePageMetadata(
                    [
                        LanceBufferDescriptor(o, s)
                        for o, s in zip(p.buffer_offsets, p.buffer_sizes, strict=True)
                    ],
                    rust_debug(p.encoding if p.layout is None else p.layout),
                    p.num_rows,
                )
                for p in c.pages
            ],
        )
        for c in columns
    ]
    data_bytes = min([g.position for g in globals_] + [f.column_meta_start])
    return LanceFileMetadata(
        schema=schema,
        num_rows=num_rows,
        num_data_bytes=data_bytes,
        num_column_metadata_bytes=f.cmo_table_pos - f.column_meta_start,
        num_global_buffer_bytes=sum(g.size for g in globals_),
        global_buffers=globals_,
        columns=described,
        major_version=f.major,
        minor_version=f.minor,
    )
