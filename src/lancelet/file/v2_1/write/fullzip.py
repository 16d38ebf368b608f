"""Full-zip pages: the writer's choices (value compression, per-value general
compression for very large values) around the zipping itself
(:mod:`lancelet.file.codecs.zipped`: control words, values, repetition index)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import UnsupportedTypeError
from lancelet.file.codecs import zipped
from lancelet.file.codecs.general import compress_buffer
from lancelet.file.v2_1.write import encodings
from lancelet.file.v2_1.write.blocks import Fixed, FixedList, Variable
from lancelet.file.v2_1.write.chunks import U8
from lancelet.file.v2_1.write.shred import PageLevels

GENERAL_MIN_VALUE = 32 * 1024
GENERAL_MIN_TOTAL = 32 * 1024


@dataclass(frozen=True)
class ZippedPage:
    buffers: list[bytes | pa.Buffer]
    layout: pb.FullZipLayout


def _levels(page: PageLevels) -> tuple[zipped.Levels, int | None]:
    """The codec's view of the levels, and the entry count (None: one per value)."""
    if page.rep is None and page.defs is None:
        return zipped.Levels(None, None), None
    max_rep = int(page.rep.max(initial=0)) if page.rep is not None else 0
    return zipped.Levels(page.rep, page.defs, max_rep, page.max_visible), page.num_entries


def _fixed_values(block: Fixed | FixedList) -> tuple[U8, pb.CompressiveEncoding]:
    """Per-value bytes (one row per value) and their encoding."""
    if isinstance(block, Fixed):
        if block.bits_per_value == 1:
            bits = np.unpackbits(block.data, bitorder="little")[: block.num_values]
            return bits.reshape(-1, 1), encodings.flat(8)
        width = block.bits_per_value // 8
        return block.data.reshape(-1, width), encodings.flat(block.bits_per_value)
    if block.items.bits_per_value % 8:
        raise UnsupportedTypeError(
            "full-zip pages of fixed-size lists of booleans cannot be written"
        )
    cum = 1
    validity: list[NDArray[np.bool_] | None] = []
    for dim, valid in zip(block.dimensions, block.validity, strict=True):
        cum *= dim
        validity.append(None if valid is None else valid.reshape(block.num_values, cum))
    data_width = block.items.bits_per_value // 8 * cum
    rows = zipped.fixed_size_list_rows(validity, block.items.data.reshape(-1, data_width))
    encoding = encodings.flat(block.items.bits_per_value)
    for dim, valid in reversed(list(zip(block.dimensions, block.validity, strict=True))):
        encoding = encodings.fixed_size_list(dim, valid is not None, encoding)
    return rows, encoding


def _page(result: zipped.Zipped, layout: pb.FullZipLayout) -> ZippedPage:
    buffers: list[bytes | pa.Buffer] = [result.data]
    if result.repetition_index is not None:
        buffers.append(result.repetition_index)
    layout.bits_rep = result.bits_rep
    layout.bits_def = result.bits_def
    layout.num_items = result.num_items
    layout.num_visible_items = result.num_visible_items
    return ZippedPage(buffers, layout)


def zip_fixed(page: PageLevels, block: Fixed | FixedList) -> ZippedPage:
    rows, encoding = _fixed_values(block)
    levels, entries = _levels(page)
    result = zipped.zip_fixed(rows, levels, len(rows) if entries is None else entries)
    layout = pb.FullZipLayout(
        bits_per_value=8 * rows.shape[1], value_compression=encoding, layers=page.layers
    )
    return _page(result, layout)


def _compress_each(block: Variable, scheme: str, level: int | None) -> Variable:
    pieces = [
        compress_buffer(scheme, block.data[s:e].tobytes(), level)
        for s, e in zip(block.offsets[:-1].tolist(), block.offsets[1:].tolist(), strict=True)
    ]
    offsets = np.concatenate(([0], np.cumsum([len(p) for p in pieces]))).astype(np.int64)
    return Variable(offsets, np.frombuffer(b"".join(pieces), np.uint8), block.bits_per_offset)


def per_value_general(
    block: Variable, requested: str | None, level: int | None = None
) -> tuple[str, int | None] | None:
    """Per-value general compression: asked for, or automatic for very large values.
    As pylance: always zstd (lz4 asked for gets zstd too), at the level asked for
    with zstd, else 0 (zstd's default)."""
    if requested == "none" or requested == "fsst":
        return None
    big = int(block.lengths.max(initial=0)) > GENERAL_MIN_VALUE
    if (requested is not None or big) and len(block.data) >= GENERAL_MIN_TOTAL:
        return ("zstd", level if requested == "zstd" and level is not None else 0)
    return None


def zip_variable(
    page: PageLevels,
    block: Variable,
    general: tuple[str, int | None] | None,
    fsst: tuple[Variable, bytes] | None = None,
    encoding: pb.CompressiveEncoding | None = None,
) -> ZippedPage:
    """``general``: compress each value on its own; ``fsst``: the values already
    FSST-compressed, and their symbol table; ``encoding``: what the values are (plain
    variable-width values by default)."""
    if encoding is None:
        encoding = encodings.variable(block.bits_per_offset)
    if general is not None:
        block = _compress_each(block, *general)
        encoding = encodings.general(general[0], general[1], encoding)
    elif fsst is not None:
        block, table = fsst
        encoding = encodings.fsst(table, encoding)
    levels, entries = _levels(page)
    result = zipped.zip_variable(
        block.offsets,
        block.data,
        levels,
        block.num_values if entries is None else entries,
        length_bytes=block.bits_per_offset // 8,
    )
    layout = pb.FullZipLayout(
        bits_per_offset=block.bits_per_offset, value_compression=encoding, layers=page.layers
    )
    return _page(result, layout)
