"""How many values a buffer of a given size can hold under a compressive encoding.

Some counts are not stored next to the bytes they describe: a constant page's level
counts and a dictionary's item count are protobuf fields.  A forged one must be
refused before a decoder allocates for it, so the count is checked against the most
values the buffer could decode to: its bytes at the densest packing the encoding
allows (a zero-width bit packing, or a run of 255, holds many values per byte;
general compression expands by at most the ratios :mod:`~lancelet.file.codecs.general`
accepts).
"""

from __future__ import annotations

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.file.codecs.general import max_decompressed_size

_FASTLANES = 1024
_SCHEMES = {pb.COMPRESSION_ALGORITHM_LZ4: "lz4", pb.COMPRESSION_ALGORITHM_ZSTD: "zstd"}
_MAX_DEPTH = 16


def max_values(enc: pb.CompressiveEncoding, nbytes: int, depth: int = 0) -> int | None:
    """The most values ``nbytes`` bytes can decode to under ``enc`` as one block; None
    for an encoding this module does not know (its decoder refuses it anyway)."""
    kind = enc.WhichOneof("compression")
    if depth > _MAX_DEPTH or nbytes < 0:
        return 0
    if kind == "flat":
        bits = int(enc.flat.bits_per_value)
        return nbytes * 8 // bits if bits else 0
    if kind == "inline_bitpacking":
        word = max(int(enc.inline_bitpacking.uncompressed_bits_per_value) // 8, 1)
        return nbytes // word * _FASTLANES  # a zero-width chunk is its width word alone
    if kind == "out_of_line_bitpacking":
        word = max(int(enc.out_of_line_bitpacking.uncompressed_bits_per_value) // 8, 1)
        bits = int(enc.out_of_line_bitpacking.values.flat.bits_per_value)
        # Whole chunks, then at most a chunk's worth as a padded or raw tail.  Zero-width
        # chunks take no bytes at all: only the raw tail is then bounded by the bytes.
        return nbytes * 8 // bits + _FASTLANES if bits else nbytes // word
    if kind == "rle":
        value_bits = int(enc.rle.values.flat.bits_per_value)
        length_bits = int(enc.rle.run_lengths.flat.bits_per_value)
        if not value_bits or not length_bits or length_bits > 32:
            return 0
        runs = max(nbytes - 8, 0) * 8 // (value_bits + length_bits)
        return runs * ((1 << length_bits) - 1)
    if kind == "variable":
        width = int(enc.variable.offsets.flat.bits_per_value) // 8
        return max(nbytes // width - 3, 0) if width else 0  # two header words, count + 1
    if kind == "general":
        scheme = _SCHEMES.get(enc.general.compression.scheme)
        if scheme is None:
            return None
        return max_values(enc.general.values, max_decompressed_size(scheme, nbytes), depth + 1)
    if kind == "fixed_size_list":
        items = max_values(enc.fixed_size_list.values, nbytes, depth + 1)
        dimension = int(enc.fixed_size_list.items_per_value)
        return None if items is None else items // dimension if dimension else 0
    if kind == "constant":
        return 1  # no bytes; a block of one repeated value is one value's worth
    return None
