"""Encoding one page of one leaf column: choosing the layout and the compression.

The choices follow pylance 14: a page with no values, or only null ones, is a
constant layout carrying just its levels (format 2.2 compresses them; a null
struct above the leaf counts as null); from format 2.2 a page whose non-null
values are all equal is a constant layout too (its levels raw: pylance reads
them so only); low-cardinality pages are
dictionary encoded; values narrower than 256 bytes go to mini-blocks, wider ones
to full-zip (``lance-encoding:structural-encoding`` overrides this).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import LanceFileError, UnsupportedTypeError
from lancelet.file.codecs import packed
from lancelet.file.codecs.general import compress_buffer
from lancelet.file.v2_1.write import (
    bitpack,
    chunks,
    dictionary,
    encodings,
    fullzip,
    levels,
    miniblock,
)
from lancelet.file.v2_1.write.blocks import (
    Block,
    Fixed,
    FixedList,
    Packed,
    Variable,
    fixed_width_bits,
    max_value_bytes,
    to_block,
)
from lancelet.file.v2_1.write.params import FieldParams
from lancelet.file.v2_1.write.shred import LeafBatch, LeafPath, PageLevels, page_levels

MINIBLOCK_MAX_VALUE_BYTES = 256
_MAX_CHUNK_LEVELS = 0xFFFF
_INLINE_MAX = 32


@dataclass(frozen=True)
class Options:
    large_chunks: bool  # format 2.2: u32 chunk words and sizes
    constant_pages: bool  # format 2.2: constant layout for repeated values
    dictionary_64: bool  # format 2.2: 64-bit values may get a dictionary
    dictionary_general: bool  # format 2.2: the dictionary gets general compression
    level_rle: bool  # format 2.2: levels may be run-length encoded


@dataclass(frozen=True)
class EncodedPage:
    buffers: list[bytes | pa.Buffer]  # a full-zip page's data is an Arrow buffer
    layout: pb.PageLayout
    num_rows: int


def _concat(arrays: list[pa.Array]) -> pa.Array:
    if len(arrays) == 1:
        return arrays[0]
    if pa.types.is_dictionary(arrays[0].type):
        return pa.chunked_array(arrays).unify_dictionaries().combine_chunks()
    return pa.concat_arrays(arrays)


def _constant(
    page: PageLevels,
    inline: bytes | None,
    value: bytes | None,
    options: Options,
    compress_levels: bool = False,
) -> EncodedPage:
    """A constant page: the scalar (``inline`` or a ``value`` buffer; neither: all null)
    and the page's levels, raw ``u16`` or (``compress_levels``, format 2.2) compressed
    as one chunk the way mini-block levels are, with their value counts."""
    layout = pb.ConstantLayout(layers=page.layers)
    if inline is not None:
        layout.inline_value = inline
    buffers: list[bytes] = []
    if page.rep is not None or page.defs is not None:
        for name, data in (("rep", page.rep), ("def", page.defs)):
            if data is None:
                buffers.append(b"")
            elif compress_levels:
                counts = np.asarray([len(data)], dtype=np.int64)
                chunked, encoding = levels.compress(data, counts, options.level_rle)
                buffers.append(chunked.data.tobytes())
                getattr(layout, f"{name}_compression").CopyFrom(encoding)
                setattr(layout, f"num_{name}_values", len(data))
            else:
                buffers.append(data.astype("<u2").tobytes())
    if value is not None:
        buffers = [value, *buffers]
    return EncodedPage(buffers, pb.PageLayout(constant_layout=layout), page.num_rows)


def _validity(values: pa.Array) -> NDArray[np.bool_] | None:
    if pa.types.is_null(values.type):
        return np.zeros(len(values), dtype=bool)
    if pa.types.is_dictionary(values.type):
        indices, _ = dictionary.arrow_dictionary(values)
        if indices.null_count == 0:
            return None
        return np.asarray(indices.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if values.null_count == 0:
        return None
    return np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _scalar_buffer(block: Block, first: int) -> tuple[bytes | None, bytes | None]:
    """(inline value, value buffer) of the constant that value ``first`` holds."""
    if isinstance(block, Variable):
        start, end = int(block.offsets[first]), int(block.offsets[first + 1])
        width = block.bits_per_offset // 8
        offsets = np.asarray([0, end - start], dtype=f"<u{width}").tobytes()
        data = block.data[start:end].tobytes()
        header = np.asarray([2, len(offsets), len(data)], dtype="<u4").tobytes()
        return None, header + offsets + data
    assert isinstance(block, Fixed)
    if block.bits_per_value == 1:
        bit = (int(block.data[first // 8]) >> (first % 8)) & 1
        return bytes([bit]), None
    width = block.bits_per_value // 8
    raw = block.data[first * width : (first + 1) * width].tobytes()
    if width <= _INLINE_MAX:
        return raw, None
    return None, np.asarray([1, width], dtype="<u4").tobytes() + raw


def _constant_value(block: Block, valid: NDArray[np.bool_] | None) -> int | None:
    """Index of a value every non-null value equals (None: they differ)."""
    if isinstance(block, FixedList | Packed):
        return None
    # Most pages differ early: a look at the first values settles those cheaply.
    if valid is None and isinstance(block, Fixed) and block.bits_per_value % 8 == 0:
        width = block.bits_per_value // 8
        head = block.data[: 64 * width].reshape(-1, width)
        if not bool((head == head[0]).all()):
            return None
    if valid is None and isinstance(block, Variable):
        first_lengths = np.diff(block.offsets[:65])
        if not bool((first_lengths == first_lengths[0]).all()):
            return None
    keep = np.arange(block.num_values) if valid is None else np.flatnonzero(valid)
    if not len(keep):
        return None
    first = int(keep[0])
    if isinstance(block, Variable):
        lengths = block.lengths[keep]
        if not (lengths == lengths[0]).all():
            return None
        size = int(lengths[0])
        if size == 0:
            return first
        if valid is None:  # equal lengths: the values lie back to back
            start = int(block.offsets[0])
            picked = block.data[start : start + size * len(keep)]
        else:
            picked = chunks.gather(block.data, block.offsets[keep], lengths)
        rows = picked.reshape(len(keep), size)
        return first if bool((rows == rows[0]).all()) else None
    if block.bits_per_value == 1:
        bits = np.unpackbits(block.data, bitorder="little")[: block.num_values][keep]
        return first if bool((bits == bits[0]).all()) else None
    rows = np.take(block.data.reshape(block.num_values, block.bits_per_value // 8), keep, axis=0)
    return first if bool((rows == rows[0]).all()) else None


def _dictionary_buffer(
    block: Block, params: FieldParams, options: Options
) -> tuple[bytes, pb.CompressiveEncoding]:
    if isinstance(block, Variable):
        width = block.bits_per_offset // 8
        dtype = f"<u{width}"
        head = np.asarray([8 * width, 2 * width + width * (block.num_values + 1)], dtype=dtype)
        raw = head.tobytes() + block.offsets.astype(dtype).tobytes() + block.data.tobytes()
        encoding = encodings.variable(block.bits_per_offset)
    else:
        assert isinstance(block, Fixed)
        packable = block.num_values <= bitpack.BLOCK and miniblock.bitpacking_pays(block)
        if options.dictionary_general and packable:
            # As pylance's 2.2 files: up to 1,024 integers that bit packing shrinks are
            # packed in one inline block, whatever compression the field names for its
            # dictionary values.  pylance reads no longer inline block; it packs more
            # items out of line, as below.
            packed_values = bitpack.inline_chunks(block.words())
            return packed_values.data.tobytes(), encodings.inline_bitpacking(block.bits_per_value)
        bits = _out_of_line_width(block) if options.dictionary_general else None
        if bits is not None:
            # More items, narrower than their type: packed out of line at the widest
            # item's width, as pylance's 2.2 files (a BTREE's keys: a lookup then
            # unpacks only the blocks holding its page's items).
            one = np.array([block.num_values], dtype=np.int64)  # the dictionary: one chunk
            packed = bitpack.out_of_line_chunks(block.words(), one, bits)
            return packed.data.tobytes(), encodings.out_of_line_bitpacking(
                block.bits_per_value, bits
            )
        raw = block.data.tobytes()
        encoding = encodings.flat(block.bits_per_value)
    if options.dictionary_general and params.dict_values != "none":
        level = params.dict_values_level
        compressed = compress_buffer(params.dict_values, raw, level)
        return compressed, encodings.general(params.dict_values, level, encoding)
    return raw, encoding


def _out_of_line_width(block: Fixed) -> int | None:
    """The bit width a dictionary of more than 1,024 integers is packed out of line
    at; None when packing would not narrow them (pylance then compresses them)."""
    if block.num_values <= bitpack.BLOCK or block.bits_per_value not in (8, 16, 32, 64):
        return None
    words = block.words()
    width = int(bitpack.bit_lengths(np.bitwise_or.reduce(words, keepdims=True))[0])
    return width if width < block.bits_per_value else None


def _value_compressor(
    block: Fixed | Variable | FixedList, params: FieldParams, text: bool
) -> miniblock.MiniBlocks:
    if isinstance(block, FixedList):
        return miniblock.fixed_list(block)
    general = params.compression in ("lz4", "zstd")
    if isinstance(block, Variable):
        compressed = None
        aim = params.minichunk_size
        forced = params.compression == "fsst"
        # As pylance: FSST is tried on text only, unless the field asks for it (binary
        # values, JSONB say, stay plain and read back without expansion), and not
        # where the field asks for another compression.
        if forced or (text and params.compression is None):
            compressed = miniblock.fsst(block, forced=forced, aim=aim)
        blocks = miniblock.variable(block, aim) if compressed is None else compressed
    elif params.compression == "none":
        blocks = miniblock.flat(block)
    elif general and miniblock.bss_pays(block, params.bss):
        blocks = miniblock.bss(block)
    elif miniblock.rle_pays(block, params.rle_threshold):
        blocks = miniblock.rle(block)
    else:
        blocks = miniblock.fixed(block)
    if general:
        assert params.compression is not None
        blocks = miniblock.general(blocks, params.compression, params.level)
    return blocks


def _indices(block: Fixed, params: FieldParams) -> miniblock.MiniBlocks:
    """Dictionary indices: run-length encoded, bit packed or flat, as any integers
    (flat when the field asks for no compression)."""
    if params.compression == "none":
        return miniblock.flat(block)
    if miniblock.rle_pays(block, params.rle_threshold):
        return miniblock.rle(block)
    return miniblock.fixed(block)


def _miniblock(
    page: PageLevels,
    blocks: miniblock.MiniBlocks,
    options: Options,
    where: str,
    dictionary_part: tuple[bytes, pb.CompressiveEncoding, int] | None = None,
) -> EncodedPage:
    counts = blocks.counts
    has_levels = page.rep is not None or page.defs is not None
    per_chunk = (
        levels.level_counts(page.visible, counts, page.num_entries)
        if has_levels
        else np.zeros(len(counts), np.int64)
    )
    if len(per_chunk) and int(per_chunk.max()) > _MAX_CHUNK_LEVELS:
        raise LanceFileError(f"{where}: a mini-block chunk would hold more than 65535 levels")
    layout = pb.MiniBlockLayout(
        value_compression=blocks.encoding,
        layers=page.layers,
        num_buffers=len(blocks.buffers),
        num_items=int(counts.sum()),
        has_large_chunk=options.large_chunks,
    )
    rep_chunked = def_chunked = None
    rep_index = None
    if page.rep is not None:
        raw = levels.raw_chunks(page.rep, per_chunk)
        rep_index = chunks.repetition_index(raw, page.max_rep)
        rep_chunked, encoding = levels.compress(page.rep, per_chunk, options.level_rle)
        layout.rep_compression.CopyFrom(encoding)
        layout.repetition_index_depth = 1
    if page.defs is not None:
        def_chunked, encoding = levels.compress(page.defs, per_chunk, options.level_rle)
        layout.def_compression.CopyFrom(encoding)
    serialized = chunks.serialize(
        per_chunk, rep_chunked, def_chunked, blocks.buffers, blocks.log_counts,
        options.large_chunks, where,
    )  # fmt: skip
    buffers = [serialized.metadata, serialized.data]
    if dictionary_part is not None:
        data, encoding, items = dictionary_part
        buffers.append(data)
        layout.dictionary.CopyFrom(encoding)
        layout.num_dictionary_items = items
    if rep_index is not None:
        buffers.append(rep_index)
    return EncodedPage(buffers, pb.PageLayout(mini_block_layout=layout), page.num_rows)


def _packed_rows(block: Packed) -> Fixed:
    rows = [f.data.reshape(block.num_values, -1) for f in block.fields if isinstance(f, Fixed)]
    data = np.frombuffer(packed.encode_packed_rows(rows), dtype=np.uint8)
    return Fixed(data, 8 * sum(r.shape[1] for r in rows), block.num_values)


def packed_page(page: PageLevels, block: Packed, options: Options, where: str) -> EncodedPage:
    widths = [f.bits_per_value if isinstance(f, Fixed) else f.bits_per_offset for f in block.fields]
    if block.fixed:
        flat_rows = miniblock.flat(_packed_rows(block))
        encoding = encodings.packed_struct(widths)
        blocks = miniblock.MiniBlocks(flat_rows.buffers, flat_rows.counts, encoding)
        return _miniblock(page, blocks, options, where)
    if not options.large_chunks:
        raise UnsupportedTypeError(
            f"{where}: packed structs with variable-width fields need Lance file format 2.2"
        )
    prefixes = {f.bits_per_offset // 8 for f in block.fields if isinstance(f, Variable)}
    if len(prefixes) != 1:
        raise UnsupportedTypeError(
            f"{where}: a packed struct's variable-width fields must all be large or all not"
        )
    parts: list[NDArray[np.uint8] | packed.VariableColumn] = [
        f.data.reshape(block.num_values, -1) if isinstance(f, Fixed)
        else packed.VariableColumn(f.offsets, f.data)
        for f in block.fields
    ]  # fmt: skip
    offsets, data = packed.encode_variable_packed(parts, prefix=prefixes.pop())
    raw = np.frombuffer(data, dtype=np.uint8)
    rows = Variable(offsets, raw, 32 if len(raw) < 2**31 else 64)
    kinds = [(w, isinstance(f, Variable)) for w, f in zip(widths, block.fields, strict=True)]
    zipped = fullzip.zip_variable(page, rows, None, None, encodings.variable_packed_struct(kinds))
    return EncodedPage(zipped.buffers, pb.PageLayout(full_zip_layout=zipped.layout), page.num_rows)


def _fullzip(page: PageLevels, block: Block, params: FieldParams, text: bool) -> EncodedPage:
    if isinstance(block, Variable):
        general = fullzip.per_value_general(block, params.compression, params.level)
        fsst = None
        forced = params.compression == "fsst"
        # pylance tries FSST on full-zip pages of text only, unless asked for it
        # (serialized bitmaps, a remapped BITMAP index's, would cost a table for nothing).
        if general is None and (forced or (text and params.compression != "none")):
            fsst = miniblock.fsst_compressed(block, forced=forced)
        zipped = fullzip.zip_variable(page, block, general, fsst)
    else:
        assert not isinstance(block, Packed)
        zipped = fullzip.zip_fixed(page, block)
    layout = pb.PageLayout(full_zip_layout=zipped.layout)
    return EncodedPage(zipped.buffers, layout, page.num_rows)


def _structured(
    page: PageLevels, block: Block, params: FieldParams, options: Options, where: str, text: bool
) -> EncodedPage:
    if isinstance(block, Packed):
        return packed_page(page, block, options, where)
    wide = max_value_bytes(block) >= MINIBLOCK_MAX_VALUE_BYTES
    if params.structural == "fullzip" or (params.structural is None and wide):
        return _fullzip(page, block, params, text)
    try:
        return _miniblock(page, _value_compressor(block, params, text), options, where)
    except LanceFileError:
        if params.structural == "miniblock":
            raise
        # Chunks that cannot hold their levels or bytes: full-zip has no such limits.
        return _fullzip(page, block, params, text)


def _arrow_dictionary_page(
    page: PageLevels, values: pa.Array, params: FieldParams, options: Options, where: str
) -> EncodedPage:
    indices, dict_values = dictionary.arrow_dictionary(values)
    bits = fixed_width_bits(indices.type)
    raw = np.frombuffer(indices.buffers()[1], np.uint8)
    width = bits // 8
    data = raw[indices.offset * width : (indices.offset + len(indices)) * width]
    index_block = Fixed(data, bits, len(indices))
    value_block = to_block(dict_values)
    part = (*_dictionary_buffer(value_block, params, options), len(dict_values))
    return _miniblock(page, _indices(index_block, params), options, where, part)


def encode(
    path: LeafPath,
    batches: Sequence[LeafBatch],
    params: FieldParams,
    options: Options,
    where: str,
) -> EncodedPage:
    """One page of the column ``path`` from the batches buffered for it."""
    if path.empty_struct:
        # The reference marks an empty struct's column nullable, with no levels.
        layout = pb.ConstantLayout(layers=[pb.REPDEF_NULLABLE_ITEM])
        rows = sum(b.num_rows for b in batches)
        return EncodedPage([], pb.PageLayout(constant_layout=layout), rows)
    page = page_levels(path, batches)
    values = _concat([b.values for b in batches])
    packed_levels = options.level_rle  # format 2.2 compresses a constant page's levels
    if len(values) == 0:
        return _constant(page, None, None, options, packed_levels)
    valid = _validity(values)
    if options.constant_pages and page.defs is not None:
        # A value is there only where its definition level is 0: a null struct above
        # the leaf hides the values Arrow holds under it.
        visible = page.visible
        present = page.defs == 0 if visible is None else page.defs[visible] == 0
        valid = None if bool(present.all()) else present
    if valid is not None and not valid.any():
        if len(path.lists) == 1:  # the leaf's own nulls and nothing above it
            layout = pb.ConstantLayout(layers=page.layers)
            return EncodedPage([], pb.PageLayout(constant_layout=layout), page.num_rows)
        return _constant(page, None, None, options, packed_levels)
    if pa.types.is_dictionary(values.type):
        return _arrow_dictionary_page(page, values, params, options, where)
    block = to_block(values)
    if options.constant_pages:
        first = _constant_value(block, valid)
        if first is not None:
            # pylance reads raw levels only beside a scalar
            return _constant(page, *_scalar_buffer(block, first), options)
    meta = params.metadata or {}
    encoded = dictionary.try_encode(block, meta, options.dictionary_64, where)
    if encoded is not None:
        part = (*_dictionary_buffer(encoded.dictionary, params, options), encoded.num_items)
        return _miniblock(page, _indices(encoded.indices, params), options, where, part)
    text = pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
    return _structured(page, block, params, options, where, text)
