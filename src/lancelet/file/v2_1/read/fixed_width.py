"""Decoders of fixed-width values: flat, FastLanes bit packing (inline: a bit width
word per chunk; out of line: one width), constants, and packed struct rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import UnsupportedEncodingError
from lancelet.file.codecs import packed as packed_rows
from lancelet.file.codecs._chunks import sorted_groups
from lancelet.file.codecs.bitpacking import (
    _unpack_chunks,
    unpack_inline,
    unpack_inline_selected,
    unpack_positions,
)
from lancelet.file.v2_1.read.codec import (
    BlockBuilder,
    BlockCodec,
    ChildBuilder,
    MiniBlockBuilder,
    MiniBlockCodec,
    bits_to_bools,
    concat_slices,
    corrupt,
    expect_sizes,
    gather_slices,
    no_buffer_compression,
)
from lancelet.file.v2_1.read.values import (
    I64,
    U8,
    Bits,
    Fixed,
    Packed,
    Slices,
    Values,
    gather_ranges,
    take_rows,
)

_FASTLANES = 1024
_WIDTHS = (8, 16, 32, 64)


# -- flat ----------------------------------------------------------------------


@dataclass(frozen=True)
class FlatCodec(BlockCodec):
    """Fixed-width values as they are: ``bits`` bits each."""

    bits: int
    num_buffers: int = 1

    def _sizes(self, counts: I64) -> I64:
        return (counts * self.bits + 7) // 8

    def decode(self, data: U8, count: int) -> Values:
        return self.decode_chunks(Slices.whole(data), np.array([count], np.int64))

    def decode_blocks(self, buffers: Slices, counts: I64) -> Values:
        # A flat block is laid out as a flat chunk is.
        return self.decode_chunks(buffers, counts)

    def decode_chunks(self, buffers: Slices, counts: I64) -> Values:
        expect_sizes(buffers, self._sizes(counts), f"flat {self.bits}-bit values")
        total = int(counts.sum())
        if self.bits % 8 == 0:
            return Fixed(gather_slices(buffers), self.bits, total)
        data = gather_slices(buffers)
        offsets = np.cumsum(buffers.sizes) - buffers.sizes
        return Bits(bits_to_bools(data, offsets, counts * self.bits), self.bits, total)


@dataclass(frozen=True)
class FlatMiniBlock:
    flat: FlatCodec
    num_buffers: int = 1

    def decode(self, buffers: Sequence[Slices], counts: I64) -> Values:
        return self.flat.decode_chunks(buffers[0], counts)

    def pick(self, buffers: Sequence[U8], count: int, index: I64) -> Values | None:
        bits = self.flat.bits
        buf = buffers[0]
        if bits % 8 or len(buf) != count * bits // 8:
            return None
        width = bits // 8
        if width in (1, 2, 4, 8):
            picked = buf.view(f"<u{width}")[index]
        else:
            picked = take_rows(buf.reshape(count, width), index)
        return Fixed(picked.reshape(-1).view(np.uint8), bits, len(index))


def flat_codec(msg: pb.Flat) -> FlatCodec:
    no_buffer_compression(msg, "data", "flat values")
    if not 0 < msg.bits_per_value <= 1 << 24:
        raise corrupt(f"flat values of {msg.bits_per_value} bits")
    return FlatCodec(int(msg.bits_per_value))


# -- FastLanes bit packing --------------------------------------------------


def _width(bits: int, what: str) -> int:
    if bits not in _WIDTHS:
        raise UnsupportedEncodingError(f"{what} of {bits}-bit values is not supported")
    return bits


def _unpack(words: np.ndarray, bits: int) -> np.ndarray:
    """(chunks, bits, lanes) packed words -> (chunks, 1024) values."""
    if bits == 0:
        return np.zeros((words.shape[0], _FASTLANES), dtype=words.dtype)
    return _unpack_chunks(words, bits)


def _rows(base: U8, starts: I64, length: int) -> U8:
    """``length`` bytes from each start, as a (len(starts), length) array."""
    if len(starts) * length == 0:
        return np.zeros((len(starts), length), dtype=np.uint8)
    out: U8 = base[starts[:, None] + np.arange(length, dtype=np.int64)]
    return out


def _unpack_grouped(base: U8, starts: I64, widths: np.ndarray, word_bits: int) -> np.ndarray:
    """Unpack FastLanes chunks of 1024 values at byte ``starts``, each of its own bit
    width, with one vectorised call per distinct width; (chunks, 1024) values."""
    dtype = np.dtype(f"<u{word_bits // 8}")
    lanes = _FASTLANES // word_bits
    out = np.empty((len(starts), _FASTLANES), dtype=dtype)
    for width in np.unique(widths).tolist():
        sel = np.flatnonzero(widths == width)
        size = _FASTLANES * width // 8
        raw = concat_slices(base, starts[sel], np.full(len(sel), size, np.int64))
        words = np.ascontiguousarray(raw).view(dtype).reshape(len(sel), width, lanes)
        out[sel] = _unpack(words, width)
    return out


def _first_values(chunks: np.ndarray, counts: I64) -> np.ndarray:
    """The first ``counts[i]`` values of each row of ``chunks``, joined."""
    if len(counts) and bool(np.all(counts[:-1] == _FASTLANES)):
        return chunks.reshape(-1)[: (len(counts) - 1) * _FASTLANES + int(counts[-1])]
    keep = np.arange(_FASTLANES) < counts[:, None]
    return chunks[keep]


@dataclass(frozen=True)
class InlineBitpacking(BlockCodec):
    """Chunks of up to 1024 values, each a ``word_bits`` word holding its bit width
    followed by the 1024 values FastLanes-packed at that width."""

    word_bits: int
    num_buffers: int = 1

    def decode(self, data: U8, count: int) -> Values:
        return self.decode_blocks(Slices.whole(data), np.array([count], np.int64))

    def decode_blocks(self, buffers: Slices, counts: I64) -> Values:
        # A block: consecutive 1024-value chunks, each with its own width word.  The
        # chunks of every block are found first, then decoded in one batch.
        starts: list[int] = []
        sizes: list[int] = []
        chunk_counts: list[int] = []
        for block, count in enumerate(counts.tolist()):
            base = int(buffers.starts[block])
            for at, size in self._chunks_of(buffers.one(block), count):
                starts.append(base + at)
                sizes.append(size)
            full, rest = divmod(count, _FASTLANES)
            chunk_counts += [_FASTLANES] * full + ([rest] if rest else [])
        located = Slices(buffers.base, np.array(starts, np.int64), np.array(sizes, np.int64))
        return self.decode_chunks(located, np.array(chunk_counts, np.int64))

    def _chunks_of(self, data: U8, count: int) -> list[tuple[int, int]]:
        """Where each chunk of a block of ``count`` values starts in it, and its size."""
        width_bytes = self.word_bits // 8
        found, pos = [], 0
        for _ in range((count + _FASTLANES - 1) // _FASTLANES):
            if pos + width_bytes > len(data):
                raise corrupt("bit-packed block ends inside a chunk's width word")
            bits = int.from_bytes(data[pos : pos + width_bytes].tobytes(), "little")
            if bits > self.word_bits:
                raise corrupt(f"bit-packed chunk claims {bits} bits of {self.word_bits}")
            size = width_bytes + _FASTLANES * bits // 8
            found.append((pos, size))
            pos += size
        if pos != len(data):
            raise corrupt(f"bit-packed block holds {len(data)} bytes, {pos} expected")
        return found

    def decode_chunks(self, buffers: Slices, counts: I64) -> Values:
        fast = unpack_inline(buffers.base, buffers.starts, buffers.sizes, counts, self.word_bits)
        if fast is not None:
            return Fixed(fast.view(np.uint8), self.word_bits, len(fast))
        width_bytes = self.word_bits // 8
        if len(counts) and (int(counts.max()) > _FASTLANES or int(counts.min()) < 0):
            raise corrupt(f"a bit-packed chunk holds more than {_FASTLANES} values")
        if len(buffers) and int(buffers.sizes.min()) < width_bytes:
            raise corrupt("a bit-packed chunk is too small for its bit width")
        heads = _rows(buffers.base, buffers.starts, width_bytes)
        widths = np.ascontiguousarray(heads).view(f"<u{width_bytes}").reshape(-1).astype(np.int64)
        if len(widths) and int(widths.max()) > self.word_bits:
            raise corrupt(
                f"a bit-packed chunk claims {int(widths.max())} bits per {self.word_bits}-bit value"
            )
        expect_sizes(buffers, width_bytes + _FASTLANES * widths // 8, "bit-packed chunk")
        chunks = _unpack_grouped(buffers.base, buffers.starts + width_bytes, widths, self.word_bits)
        values = _first_values(chunks, counts)
        return Fixed(values.view(np.uint8), self.word_bits, len(values))


@dataclass(frozen=True)
class InlineMiniBlock:
    codec: InlineBitpacking
    num_buffers: int = 1

    def decode(self, buffers: Sequence[Slices], counts: I64) -> Values:
        return self.codec.decode_chunks(buffers[0], counts)

    def decode_selected(self, buffers: Sequence[Slices], counts: I64, index: I64) -> Values | None:
        """The values at ``index`` only: a take of a few rows per chunk reads each
        value's one or two words instead of unpacking every chunk (None: decode the
        chunks whole, as without the kernels or for chunks off their words)."""
        if 2 * len(index) > int(counts.sum()):
            # Most of the values (a compaction's take of the live rows): unpacking the
            # chunks whole and dropping the others costs less than finding each one.
            return None
        buf = buffers[0]
        word_bits = self.codec.word_bits
        picked = unpack_inline_selected(buf.base, buf.starts, buf.sizes, counts, word_bits, index)
        return None if picked is None else Fixed(picked.view(np.uint8), word_bits, len(picked))

    def pick(self, buffers: Sequence[U8], count: int, index: I64) -> Values | None:
        word_bits = self.codec.word_bits
        word = word_bits // 8
        buf = buffers[0]
        if not 0 <= count <= _FASTLANES or len(buf) < word:
            return None
        bits = int.from_bytes(buf[:word].tobytes(), "little")
        if bits > word_bits or len(buf) != word + _FASTLANES * bits // 8:
            return None
        words = buf[word:].view(f"<u{word}")
        picked = unpack_positions(words, bits, index)
        return Fixed(picked.view(np.uint8), word_bits, len(picked))


def _inline(msg: pb.InlineBitpacking) -> InlineBitpacking:
    no_buffer_compression(msg, "values", "inline bit packing")
    return InlineBitpacking(_width(int(msg.uncompressed_bits_per_value), "inline bit packing"))


@dataclass(frozen=True)
class OutOfLineBitpacking(BlockCodec):
    """One bit width for the whole buffer: whole chunks of 1024 values packed at
    ``bits``, then the tail either packed as a zero-padded chunk or stored raw."""

    word_bits: int
    bits: int

    def decode(self, data: U8, count: int) -> Values:
        return self.decode_chunks(Slices.whole(data), np.array([count], np.int64))

    def decode_at(self, data: U8, count: int, positions: I64) -> Values:
        """Values ``positions`` (in range, sorted, unique) of a buffer of ``count``:
        only the packed chunks that hold them are unpacked."""
        word = self.word_bits // 8
        dtype = np.dtype(f"<u{word}")
        chunk_bytes = _FASTLANES * self.bits // 8
        whole, tail = divmod(count, _FASTLANES)
        raw_tail = tail > 0 and len(data) == whole * chunk_bytes + tail * word
        packed_chunks = whole + int(tail > 0 and not raw_tail)
        expected = whole * chunk_bytes + (
            tail * word if raw_tail else (packed_chunks - whole) * chunk_bytes
        )
        if len(data) != expected:
            raise corrupt(
                f"bit-packed ({self.bits} of {self.word_bits} bits) values: buffer holds "
                f"{len(data)} bytes, {expected} expected"
            )
        chunk = positions // _FASTLANES
        out = np.empty(len(positions), dtype=dtype)
        packed = chunk < packed_chunks
        ids, _ = sorted_groups(np.sort(chunk[packed]))
        widths = np.full(len(ids), self.bits, np.int64)
        unpacked = _unpack_grouped(data, ids * chunk_bytes, widths, self.word_bits)
        out[packed] = unpacked[np.searchsorted(ids, chunk[packed]), positions[packed] % _FASTLANES]
        if not bool(packed.all()):
            raw = np.ascontiguousarray(data[whole * chunk_bytes :]).view(dtype)
            out[~packed] = raw[positions[~packed] - whole * _FASTLANES]
        return Fixed(out.view(np.uint8), self.word_bits, len(out))

    def decode_chunks(self, buffers: Slices, counts: I64) -> Values:
        word = self.word_bits // 8
        chunk_bytes = _FASTLANES * self.bits // 8
        whole, tail = counts // _FASTLANES, counts % _FASTLANES
        packed_size = whole * chunk_bytes
        raw_tail = (tail > 0) & (buffers.sizes == packed_size + tail * word)
        padded_tail = (tail > 0) & ~raw_tail
        expect_sizes(
            buffers,
            packed_size + np.where(raw_tail, tail * word, 0) + padded_tail * chunk_bytes,
            f"bit-packed ({self.bits} of {self.word_bits} bits) levels",
        )
        # Every packed 1024-value chunk of every buffer, in order, unpacked at once.
        nchunks = whole + padded_tail
        chunk_starts = np.repeat(buffers.starts, nchunks) + chunk_bytes * (
            np.arange(int(nchunks.sum())) - np.repeat(np.cumsum(nchunks) - nchunks, nchunks)
        )
        widths = np.full(len(chunk_starts), self.bits, np.int64)
        unpacked = _unpack_grouped(buffers.base, chunk_starts, widths, self.word_bits)
        # Values per packed chunk: 1024, or the tail for a padded last chunk.
        per_chunk = np.full(len(chunk_starts), _FASTLANES, np.int64)
        last = np.cumsum(nchunks) - 1
        per_chunk[last[padded_tail]] = tail[padded_tail]
        packed_values = _first_values(unpacked, per_chunk) if len(per_chunk) else unpacked[:0, 0]
        if not raw_tail.any():
            return Fixed(packed_values.view(np.uint8), self.word_bits, len(packed_values))
        return self._with_raw_tails(buffers, counts, packed_values, raw_tail, whole, tail)

    def _with_raw_tails(
        self,
        buffers: Slices,
        counts: I64,
        packed_values: np.ndarray,
        raw_tail: np.ndarray,
        whole: I64,
        tail: I64,
    ) -> Values:
        word = self.word_bits // 8
        dtype = np.dtype(f"<u{word}")
        out = np.empty(int(counts.sum()), dtype=dtype)
        out_starts = np.cumsum(counts) - counts
        from_packed = np.where(raw_tail, whole * _FASTLANES, counts)
        out[gather_ranges(out_starts, from_packed)] = packed_values
        tail_starts = buffers.starts[raw_tail] + whole[raw_tail] * (_FASTLANES * self.bits // 8)
        raw = concat_slices(buffers.base, tail_starts, tail[raw_tail] * word)
        out[gather_ranges(out_starts[raw_tail] + from_packed[raw_tail], tail[raw_tail])] = (
            np.ascontiguousarray(raw).view(dtype)
        )
        return Fixed(out.view(np.uint8), self.word_bits, len(out))


def _out_of_line(msg: pb.OutOfLineBitpacking, build: ChildBuilder) -> BlockCodec:
    word = _width(int(msg.uncompressed_bits_per_value), "out-of-line bit packing")
    if msg.values.WhichOneof("compression") != "flat":
        raise UnsupportedEncodingError("out-of-line bit packing over non-flat values")
    bits = int(msg.values.flat.bits_per_value)
    if not 0 <= bits <= word:
        raise corrupt(f"out-of-line bit packing to {bits} of {word} bits")
    return OutOfLineBitpacking(word, bits)


# -- constants ------------------------------------------------------------


@dataclass(frozen=True)
class ConstantBlock(BlockCodec):
    value: bytes

    def decode(self, data: U8, count: int) -> Values:
        if len(data):
            raise corrupt("a constant-encoded buffer holds bytes")
        if not self.value:
            raise corrupt("a constant encoding without its value")
        width = len(self.value)
        tiled = np.tile(np.frombuffer(self.value, dtype=np.uint8), count)
        return Fixed(tiled, 8 * width, count)


def _constant(msg: pb.Constant, build: ChildBuilder) -> BlockCodec:
    return ConstantBlock(bytes(msg.value))


# -- packed structs -------------------------------------------------------


@dataclass(frozen=True)
class PackedMiniBlock:
    """Rows of fixed-width fields, the fields' bytes one after another."""

    bits: tuple[int, ...]
    num_buffers: int = 1

    def decode(self, buffers: Sequence[Slices], counts: I64) -> Values:
        buf = buffers[0]
        fields = packed_rows.decode_packed_rows(
            buf.base, buf.starts, buf.sizes, counts, list(self.bits), what="packed struct"
        )
        total = int(counts.sum())
        return Packed(
            tuple(
                Fixed(np.ascontiguousarray(f).reshape(-1), b, total)
                for f, b in zip(fields, self.bits, strict=True)
            ),
            total,
        )


def _packed(msg: pb.PackedStruct, build: ChildBuilder) -> MiniBlockCodec:
    if msg.HasField("values") and msg.values.WhichOneof("compression") not in (None, "flat"):
        raise UnsupportedEncodingError("a packed struct whose rows are compressed")
    return PackedMiniBlock(tuple(int(b) for b in msg.bits_per_value))


# -- the registries of this module's decoders ----------------------------------------

MINIBLOCK: dict[str, MiniBlockBuilder] = {
    "flat": lambda msg, build: FlatMiniBlock(flat_codec(msg)),
    "inline_bitpacking": lambda msg, build: InlineMiniBlock(_inline(msg)),
    "packed_struct": _packed,
}
BLOCK: dict[str, BlockBuilder] = {
    "flat": lambda msg, build: flat_codec(msg),
    "inline_bitpacking": lambda msg, build: _inline(msg),
    "out_of_line_bitpacking": _out_of_line,
    "constant": _constant,
}
