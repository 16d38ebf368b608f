"""The full-zip layout: each level entry's control word zipped with its value.

Buffer 0 holds, per level entry: a control word (repetition level in the high
bits, definition level in the low bits, 1, 2 or 4 bytes; absent when the page has
neither), then for a visible entry its value: fixed-width values always (a null
item's bytes too), variable-width ones as a length (4 or 8 bytes) and the bytes
when the item is valid.  Buffer 1, the repetition index, holds the byte offset of
each row's first control word and the buffer's length, byte packed into the
narrowest of 1/2/4/8 bytes that fits the buffer's worst-case size; fixed-width
pages without repetition have none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import UnsupportedTypeError
from lancelet.file.codecs.general import compress_buffer
from lancelet.file.v2_1.write import encodings
from lancelet.file.v2_1.write.blocks import Fixed, FixedList, Variable
from lancelet.file.v2_1.write.chunks import I64, U8, Chunked, gather, scatter
from lancelet.file.v2_1.write.shred import PageLevels

GENERAL_MIN_VALUE = 32 * 1024
GENERAL_MIN_TOTAL = 32 * 1024


@dataclass(frozen=True)
class ZippedPage:
    buffers: list[bytes]
    layout: pb.FullZipLayout


def _bit_length(value: int) -> int:
    return int(value).bit_length()


def _control_words(levels: PageLevels) -> tuple[U8, int, int, int]:
    """Control words (one row of bytes per entry), their width and the rep/def bits."""
    rep, defs = levels.rep, levels.defs
    bits_rep = _bit_length(int(rep.max(initial=0))) if rep is not None else 0
    bits_def = _bit_length(int(defs.max(initial=0))) if defs is not None else 0
    total = bits_rep + bits_def
    if rep is None and defs is None:
        return np.zeros((levels.num_entries, 0), np.uint8), 0, 0, 0
    width = 1 if total <= 8 else 2 if total <= 16 else 4
    word = np.zeros(levels.num_entries, dtype=np.uint32)
    if rep is not None:
        word |= (rep.astype(np.uint32) & ((1 << bits_rep) - 1)) << bits_def
    if defs is not None:
        word |= defs.astype(np.uint32) & ((1 << bits_def) - 1)
    typed = word.astype({1: "<u1", 2: "<u2", 4: "<u4"}[width])
    return typed.view(np.uint8).reshape(-1, width), width, bits_rep, bits_def


def _fixed_values(block: Fixed | FixedList) -> tuple[U8, int, pb.CompressiveEncoding]:
    """Per-value bytes (rows of equal width) and their encoding."""
    if isinstance(block, Fixed):
        if block.bits_per_value == 1:
            bits = np.unpackbits(block.data, bitorder="little")[: block.num_values]
            return bits.reshape(-1, 1), 1, encodings.flat(8)
        width = block.bits_per_value // 8
        return block.data.reshape(-1, width), width, encodings.flat(block.bits_per_value)
    if block.items.bits_per_value % 8:
        raise UnsupportedTypeError(
            "full-zip pages of fixed-size lists of booleans cannot be written"
        )
    parts: list[U8] = []
    cum = 1
    for dim, valid in zip(block.dimensions, block.validity, strict=True):
        cum *= dim
        if valid is not None:
            per_row = -(-cum // 8)
            padded = np.zeros((block.num_values, per_row * 8), dtype=bool)
            padded[:, :cum] = valid.reshape(block.num_values, cum)
            parts.append(np.packbits(padded, axis=1, bitorder="little"))
    data_width = block.items.bits_per_value // 8 * cum
    parts.append(block.items.data.reshape(block.num_values, data_width))
    rows = np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]
    encoding = encodings.flat(block.items.bits_per_value)
    for dim, valid in reversed(list(zip(block.dimensions, block.validity, strict=True))):
        encoding = encodings.fixed_size_list(dim, valid is not None, encoding)
    return rows, rows.shape[1], encoding


def _pack_index(offsets: I64, worst_case: int) -> bytes:
    if worst_case == 0:
        return b""
    dtype = (
        "<u1" if worst_case <= 0xFF else "<u2" if worst_case <= 0xFFFF
        else "<u4" if worst_case <= 0xFFFFFFFF else "<u8"
    )  # fmt: skip
    return offsets.astype(dtype).tobytes()


def _new_rows(levels: PageLevels, entries: int) -> NDArray[np.bool_]:
    if levels.rep is None:
        return np.ones(entries, dtype=bool)
    starts: NDArray[np.bool_] = levels.rep == int(levels.rep.max(initial=0))
    return starts


def zip_fixed(levels: PageLevels, block: Fixed | FixedList) -> ZippedPage:
    words, word_width, bits_rep, bits_def = _control_words(levels)
    rows, value_width, encoding = _fixed_values(block)
    has_levels = levels.rep is not None or levels.defs is not None
    entries = levels.num_entries if has_levels else len(rows)
    visible = levels.visible
    value_sizes = np.full(entries, value_width, dtype=np.int64)
    if visible is not None:
        value_sizes[~visible] = 0
    sizes = word_width + value_sizes
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    out = np.zeros(int(sizes.sum()), dtype=np.uint8)
    if word_width:
        out[(starts[:, None] + np.arange(word_width)).reshape(-1)] = words.reshape(-1)
    dest = starts[value_sizes > 0] + word_width
    out[(dest[:, None] + np.arange(value_width)).reshape(-1)] = rows.reshape(-1)
    buffers = [out.tobytes()]
    if levels.rep is not None:
        bound = len(rows) * value_width + word_width * entries
        index = np.append(starts[_new_rows(levels, entries)], len(out)).astype(np.int64)
        buffers.append(_pack_index(index, bound))
    layout = pb.FullZipLayout(
        bits_rep=bits_rep, bits_def=bits_def, bits_per_value=8 * value_width,
        num_items=entries, num_visible_items=len(rows), value_compression=encoding,
        layers=levels.layers,
    )  # fmt: skip
    return ZippedPage(buffers, layout)


def _compress_each(block: Variable, scheme: str, level: int | None) -> Variable:
    pieces = [
        compress_buffer(scheme, block.data[s:e].tobytes(), level)
        for s, e in zip(block.offsets[:-1].tolist(), block.offsets[1:].tolist(), strict=True)
    ]
    offsets = np.concatenate(([0], np.cumsum([len(p) for p in pieces]))).astype(np.int64)
    return Variable(offsets, np.frombuffer(b"".join(pieces), np.uint8), block.bits_per_offset)


def per_value_general(block: Variable, requested: str | None) -> tuple[str, int | None] | None:
    """Per-value general compression: asked for, or automatic for very large values."""
    if requested == "none" or requested == "fsst":
        return None
    big = int(block.lengths.max(initial=0)) > GENERAL_MIN_VALUE
    if (requested is not None or big) and len(block.data) >= GENERAL_MIN_TOTAL:
        return (requested or "zstd", None if requested else 0)
    return None


def zip_variable(
    levels: PageLevels, block: Variable, general: tuple[str, int | None] | None
) -> ZippedPage:
    encoding = encodings.variable(block.bits_per_offset)
    if general is not None:
        block = _compress_each(block, *general)
        encoding = encodings.general(general[0], general[1], encoding)
    words, word_width, bits_rep, bits_def = _control_words(levels)
    offset_width = block.bits_per_offset // 8
    has_levels = levels.rep is not None or levels.defs is not None
    entries = levels.num_entries if has_levels else block.num_values
    defs = levels.defs
    visible = np.ones(entries, bool) if levels.visible is None else levels.visible
    valid = visible if defs is None else visible & (defs == 0)
    # Entries' value slots: visible entries map to the block's values in order.
    value_index = np.cumsum(visible) - 1
    lengths = np.zeros(entries, dtype=np.int64)
    lengths[valid] = block.lengths[value_index[valid]]
    sizes = word_width + np.where(valid, offset_width, 0) + lengths
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    out = np.zeros(int(sizes.sum()), dtype=np.uint8)
    if word_width:
        out[(starts[:, None] + np.arange(word_width)).reshape(-1)] = words.reshape(-1)
    len_bytes = lengths[valid].astype("<u8" if offset_width == 8 else "<u4").view(np.uint8)
    len_dest = starts[valid] + word_width
    out[(len_dest[:, None] + np.arange(offset_width)).reshape(-1)] = len_bytes
    src_starts = block.offsets[value_index[valid]]
    data = gather(block.data, src_starts, lengths[valid])
    scatter(out, len_dest + offset_width, Chunked(data, lengths[valid]))
    bound = len(block.data) + word_width * entries + offset_width * block.num_values
    index = np.append(starts[_new_rows(levels, entries)], len(out)).astype(np.int64)
    layout = pb.FullZipLayout(
        bits_rep=bits_rep, bits_def=bits_def, bits_per_offset=block.bits_per_offset,
        num_items=entries, num_visible_items=block.num_values, value_compression=encoding,
        layers=levels.layers,
    )  # fmt: skip
    return ZippedPage([out.tobytes(), _pack_index(index, bound)], layout)
