"""Mini-block compressors: a page's values cut into chunks, and their encoding.

Each compressor returns :class:`MiniBlocks`: the chunks' value buffers, how many
values each chunk holds (a power of two but for the last) and the
``CompressiveEncoding`` that describes them.  The chunk sizes follow the
reference: 1024 values for bit packing, chunks under 8 KiB for flat values,
about 4 KiB (the first power of two past it) for variable-width values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.file.codecs import fsst_encode, jit
from lancelet.file.codecs.byte_stream_split import encode_bss_chunks
from lancelet.file.codecs.general import compress_buffer
from lancelet.file.codecs.kernels import chunks as kernels
from lancelet.file.codecs.rle import encode_rle_chunks, rle_entry_count
from lancelet.file.v2_1.write import bitpack, encodings
from lancelet.file.v2_1.write.blocks import Fixed, FixedList, Variable
from lancelet.file.v2_1.write.chunks import I64, U8, Chunked, scatter

MAX_CHUNK_BYTES = 8 * 1024 - 6
MAX_CHUNK_VALUES = 4096
VARIABLE_AIM = 4 * 1024  # lance-encoding:minichunk-size changes it
VARIABLE_MAX_VALUES = 2048
_GENERAL_MIN_BYTES = 4 * 1024
_VARIABLE_PAD = 72  # the reference pads variable-width chunks with b"H"


@dataclass(frozen=True)
class MiniBlocks:
    buffers: list[Chunked]
    counts: I64  # values per chunk
    encoding: pb.CompressiveEncoding

    @property
    def log_counts(self) -> I64:
        logs = np.zeros(len(self.counts), dtype=np.int64)
        if len(self.counts) > 1:
            logs[:-1] = np.log2(self.counts[:-1]).astype(np.int64)
        return logs


def _values_per_chunk(bytes_per_word: int, values_per_word: int) -> int:
    """The most values (a power of two, at most 4096) that stay under 8 KiB."""
    size, count = 2 * bytes_per_word, 2 if values_per_word == 1 else 8
    while 2 * size < MAX_CHUNK_BYTES and 2 * count <= MAX_CHUNK_VALUES:
        size, count = 2 * size, 2 * count
    return count


def _uniform_counts(total: int, per_chunk: int) -> I64:
    chunks = -(-total // per_chunk)
    counts = np.full(chunks, per_chunk, dtype=np.int64)
    if chunks:
        counts[-1] = total - per_chunk * (chunks - 1)
    return counts


def flat(block: Fixed) -> MiniBlocks:
    bits = block.bits_per_value
    word_bytes, per_word = (bits // 8, 1) if bits % 8 == 0 else (bits, 8)
    per_chunk = _values_per_chunk(word_bytes, per_word)
    counts = _uniform_counts(block.num_values, per_chunk)
    sizes = (counts * bits + 7) // 8
    return MiniBlocks([Chunked(block.data, sizes)], counts, encodings.flat(bits))


def bitpacked(block: Fixed) -> MiniBlocks:
    chunked = bitpack.inline_chunks(block.words())
    counts = _uniform_counts(block.num_values, bitpack.BLOCK)
    return MiniBlocks([chunked], counts, encodings.inline_bitpacking(block.bits_per_value))


def bitpacking_pays(block: Fixed) -> bool:
    """Whether inline bit packing is smaller than the flat values."""
    if block.bits_per_value not in (8, 16, 32, 64) or not block.num_values:
        return False
    return bitpack.inline_size(block.words()) < len(block.data)


def fixed(block: Fixed) -> MiniBlocks:
    return bitpacked(block) if bitpacking_pays(block) else flat(block)


RLE_MAX_VALUES = 4096
_ENTROPY_SAMPLE = 64
_BSS_ENTROPY = 4.0  # bits per byte position, pylance's "auto" sensitivity (0.5 * 8)


def run_count(values: NDArray[np.unsignedinteger]) -> int:
    """Maximal runs of equal values (not split at any length)."""
    if not len(values):
        return 0
    return 1 + int(np.count_nonzero(values[1:] != values[:-1]))


def rle_pays(block: Fixed, threshold: float) -> bool:
    """pylance's rule: fewer runs than ``threshold`` of the values, and the runs (a
    value and an 8-bit length each, runs cut at 255) no larger than bit packing."""
    if block.bits_per_value not in (8, 16, 32, 64) or not block.num_values:
        return False
    words = block.words()
    runs = run_count(words)
    if runs >= threshold * block.num_values:
        return False
    entry_bytes = block.bits_per_value // 8 + 1
    # Runs cut at 255 are at least as many as the runs: nearly distinct values (a
    # key column) are settled by that bound, without working out the cut runs.
    if runs * entry_bytes >= len(block.data):
        return False
    packed_bytes = bitpack.inline_size(words)
    if runs * entry_bytes > packed_bytes:
        return False
    rle_bytes = rle_entry_count(words, [block.num_values]) * entry_bytes
    # A tie with bit packing goes to the runs (pylance 14, measured: 52 runs of 66
    # two-bit values, 260 bytes either way, are run-length encoded); a tie with the
    # flat values goes to the flat values (4 runs of 5 int32s, 20 bytes either way).
    return rle_bytes <= packed_bytes and rle_bytes < len(block.data)


def _rle_chunks(values: NDArray[np.unsignedinteger]) -> tuple[I64, list[Chunked]]:
    """Chunks of 4096 values (the last one shorter), halved until each chunk's runs fit
    the 8 KiB chunk budget."""
    total = len(values)
    counts = _uniform_counts(total, RLE_MAX_VALUES)
    while True:
        encoded = encode_rle_chunks(values, counts)
        sizes = encoded.value_sizes + encoded.length_sizes
        over = sizes > MAX_CHUNK_BYTES
        if not over.any():
            break
        pieces: list[int] = []
        for count, too_big in zip(counts.tolist(), over.tolist(), strict=True):
            if too_big and count > 1:
                first = 1 << ((count - 1).bit_length() - 1)  # a power of two below count
                pieces += [first, count - first]
            else:
                pieces.append(count)
        counts = np.asarray(pieces, dtype=np.int64)
    values_buf = Chunked(np.frombuffer(encoded.values, np.uint8), encoded.value_sizes)
    lengths_buf = Chunked(np.frombuffer(encoded.lengths, np.uint8), encoded.length_sizes)
    return counts, [values_buf, lengths_buf]


def rle(block: Fixed) -> MiniBlocks:
    """Run-length encoded chunks: a buffer of run values and one of 8-bit run lengths."""
    counts, buffers = _rle_chunks(block.words())
    encoding = encodings.rle(block.bits_per_value)
    return MiniBlocks(buffers, counts, encoding)


def bss_pays(block: Fixed, mode: str) -> bool:
    """Byte stream split for 32/64-bit values: always when asked ("on"), and for
    "auto" when the first values' bytes vary little per position (as pylance)."""
    if block.bits_per_value not in (32, 64) or not block.num_values or mode == "off":
        return False
    if mode == "on":
        return True
    width = block.bits_per_value // 8
    sample = block.data[: min(block.num_values, _ENTROPY_SAMPLE) * width].reshape(-1, width)
    total = 0.0
    for position in range(width):
        counts = np.bincount(sample[:, position], minlength=256)
        p = counts[counts > 0] / sample.shape[0]
        total += float(-(p * np.log2(p)).sum())
    return total / width < _BSS_ENTROPY


def bss(block: Fixed) -> MiniBlocks:
    per_chunk = 1024 if block.bits_per_value == 32 else 512
    counts = _uniform_counts(block.num_values, per_chunk)
    values = block.data.view(f"<u{block.bits_per_value // 8}")
    data, sizes = encode_bss_chunks(values, counts)
    chunked = Chunked(np.frombuffer(data, np.uint8), np.asarray(sizes, dtype=np.int64))
    return MiniBlocks([chunked], counts, encodings.byte_stream_split(block.bits_per_value))


def _variable_counts(offsets: I64, width: int, aim: int) -> I64:
    """Values per chunk as the reference cuts variable-width data: the most values,
    a power of two from 2 to 2048, whose offsets and bytes fit in ``aim`` bytes; the
    rest goes in one last chunk once it fits."""
    if jit.enabled():
        return kernels.variable_counts(offsets, width, aim, VARIABLE_MAX_VALUES)
    total = len(offsets) - 1
    # cost of values [s, s+k): offsets[s+k] - offsets[s] + (k+1)*width; with
    # key[i] = offsets[i] + i*width that is key[s+k] - key[s] + width.
    key = offsets + width * np.arange(total + 1, dtype=np.int64)
    search = key.searchsorted  # a loop per chunk: keep each step cheap
    room = aim - width
    counts: list[int] = []
    start = 0
    while start < total:
        fits = int(search(key[start] + room, "right")) - 1 - start
        remaining = total - start
        if fits >= remaining and remaining <= VARIABLE_MAX_VALUES:
            taken = remaining
        else:
            power = 1 << (max(fits, 1).bit_length() - 1)
            taken = min(max(power, 2), VARIABLE_MAX_VALUES, remaining)
        counts.append(taken)
        start += taken
    return np.asarray(counts, dtype=np.int64)


def variable_chunks(block: Variable, counts: I64) -> Chunked:
    """Per chunk: offsets relative to the chunk (the first past the offsets), the
    bytes, padding to the offset width."""
    width = block.bits_per_offset // 8
    offsets = block.offsets
    if jit.enabled():
        data, sizes = kernels.variable_chunks(offsets, block.data, counts, width, _VARIABLE_PAD)
        return Chunked(data, sizes)
    value_starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    byte_starts = offsets[value_starts]
    byte_counts = offsets[value_starts + counts] - byte_starts
    head = (counts + 1) * width
    sizes = head + byte_counts
    sizes = sizes + (-sizes % width)
    out_starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    out = np.full(int(sizes.sum()), _VARIABLE_PAD, dtype=np.uint8)
    # Chunk c holds offsets[vs..vs+n] - offsets[vs] + head: entry k of all chunks'
    # offsets together belongs to chunk owner[k] and is offsets[k - owner[k]].  Every
    # chunk starts at a multiple of the width, so the offsets go in as whole words.
    entries = counts + 1
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), entries)
    ramp = np.arange(len(owner), dtype=np.int64)
    first_entry = value_starts + np.arange(len(counts), dtype=np.int64)
    rel = offsets[ramp - owner] + (head - byte_starts)[owner]
    words = out.view("<u8" if width == 8 else "<u4")
    words[ramp + (out_starts // width - first_entry)[owner]] = rel
    # Consecutive chunks hold consecutive values, so their bytes are one slice.
    first = int(byte_starts[0]) if len(counts) else 0
    data = block.data[first : first + int(byte_counts.sum())]
    scatter(out, out_starts + head, Chunked(data, byte_counts))
    return Chunked(out, sizes.astype(np.int64))


FSST_MIN_BYTES = 32 * 1024  # pylance compresses no smaller page
FSST_MIN_MAX_LENGTH = 5  # nor one whose strings are all shorter


def fsst_compressed(block: Variable, forced: bool) -> tuple[Variable, bytes] | None:
    """The values FSST-compressed, and the symbol table blob; None when FSST is not
    worth it (small pages, short strings, or no gain, on a sample first and then on
    all the values), unless ``forced``.  A forced page under 32 KiB is stored as is
    behind an "uncompressed" table, as pylance's."""
    big = len(block.data) >= FSST_MIN_BYTES
    long = block.num_values > 0 and int(block.lengths.max()) >= FSST_MIN_MAX_LENGTH
    if not forced and not (big and long):
        return None
    if not big:
        return block, fsst_encode.serialize_uncompressed()
    table = fsst_encode.build_table(block.data, block.offsets)
    if not forced and not fsst_encode.likely_pays(table, block.data, block.offsets):
        return None  # without compressing every value only to throw the result away
    offsets, data = fsst_encode.compress(table, block.data, block.offsets)
    if not forced and len(data) + fsst_encode.TABLE_BYTES >= len(block.data):
        return None
    return Variable(offsets, data, block.bits_per_offset), fsst_encode.serialize(table)


def fsst(block: Variable, forced: bool = False, aim: int = VARIABLE_AIM) -> MiniBlocks | None:
    compressed = fsst_compressed(block, forced)
    if compressed is None:
        return None
    values, table = compressed
    inner = variable(values, aim)
    return MiniBlocks(inner.buffers, inner.counts, encodings.fsst(table, inner.encoding))


def variable(block: Variable, aim: int = VARIABLE_AIM) -> MiniBlocks:
    counts = _variable_counts(block.offsets, block.bits_per_offset // 8, aim)
    chunked = variable_chunks(block, counts)
    return MiniBlocks([chunked], counts, encodings.variable(block.bits_per_offset))


def _bit_slices(bits: NDArray[np.bool_], starts: I64, counts: I64) -> Chunked:
    """Each chunk's run of ``bits``, packed from bit 0 (LSB first)."""
    sizes = (counts + 7) // 8
    padded = np.zeros(int((sizes * 8).sum()), dtype=bool)
    out_starts = np.concatenate(([0], np.cumsum(sizes * 8)[:-1])).astype(np.int64)
    ramp = np.arange(int(counts.sum()), dtype=np.int64)
    first = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    src = np.repeat(starts - first, counts) + ramp
    dst = np.repeat(out_starts - first, counts) + ramp
    padded[dst] = bits[src]
    return Chunked(np.packbits(padded, bitorder="little"), sizes.astype(np.int64))


def fixed_list(block: FixedList) -> MiniBlocks:
    """Rows never split across chunks; each list layer's item validity is a buffer."""
    cum = 1
    validity_bytes = 0
    for dim, valid in zip(block.dimensions, block.validity, strict=True):
        cum *= dim
        if valid is not None:
            validity_bytes += -(-cum // 8)
    row_bits = block.items.bits_per_value * cum
    word_bytes, per_word = (row_bits // 8, 1) if row_bits % 8 == 0 else (row_bits, 8)
    per_chunk = _values_per_chunk(validity_bytes * per_word + word_bytes, per_word)
    counts = _uniform_counts(block.num_values, per_chunk)
    row_starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    buffers: list[Chunked] = []
    cum = 1
    for dim, valid in zip(block.dimensions, block.validity, strict=True):
        cum *= dim
        if valid is not None:
            buffers.append(_bit_slices(valid, row_starts * cum, counts * cum))
    data_sizes = (counts * row_bits + 7) // 8
    buffers.append(Chunked(block.items.data, data_sizes.astype(np.int64)))
    encoding = encodings.flat(block.items.bits_per_value)
    for dim, valid in reversed(list(zip(block.dimensions, block.validity, strict=True))):
        encoding = encodings.fixed_size_list(dim, valid is not None, encoding)
    return MiniBlocks(buffers, counts, encoding)


def general(blocks: MiniBlocks, scheme: str, level: int | None) -> MiniBlocks:
    """Compress each chunk's first buffer on its own, when that pays."""
    first = blocks.buffers[0]
    if len(first.data) < _GENERAL_MIN_BYTES:
        return blocks
    starts = first.starts
    pieces = [
        compress_buffer(scheme, first.data[s : s + n].tobytes(), level)
        for s, n in zip(starts.tolist(), first.sizes.tolist(), strict=True)
    ]
    sizes = np.asarray([len(p) for p in pieces], dtype=np.int64)
    if int(sizes.sum()) >= int(first.sizes.sum()):
        return blocks
    data: U8 = np.frombuffer(b"".join(pieces), dtype=np.uint8)
    wrapped = encodings.general(scheme, level, blocks.encoding)
    return MiniBlocks([Chunked(data, sizes), *blocks.buffers[1:]], blocks.counts, wrapped)
