"""The protobuf glue of 2.1 compressions: ``CompressiveEncoding`` -> a decoder.

Two registries, keyed by the name of the ``CompressiveEncoding.compression`` oneof
member, build decoders for the two contexts a mini-block page uses:

* :data:`MINIBLOCK`: the values of a mini-block page.  A decoder takes one
  :class:`~.values.Slices` per chunk buffer it owns (``num_buffers`` of them) and the
  value count of every chunk, and decodes all the chunks in one go.
* :data:`BLOCK`: a whole buffer of known count: rep/def levels (one block per chunk,
  decoded by ``decode_chunks``), a page's dictionary, a constant page's levels.

A codec without an entry is refused with :class:`UnsupportedEncodingError` naming it;
adding one is one line here (a pure numpy codec from ``file/codecs`` wrapped by a
builder).  The decoders raise lancelet errors without a location; the page decoders
run them under :func:`.context.guarded`, which adds file, column and page.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

import numpy as np

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import CorruptFileError, UnsupportedEncodingError
from lancelet.file.codecs._chunks import sorted_groups
from lancelet.file.codecs.bitpacking import _unpack_chunks, unpack_positions
from lancelet.file.codecs.fsst import FsstSymbolTable, fsst_decompress, parse_symbol_table
from lancelet.file.codecs.general import decompress_buffer
from lancelet.file.v2_1.read.values import (
    I64,
    U8,
    Bits,
    Fixed,
    Fsl,
    Packed,
    Slices,
    Values,
    Var,
    concat_values,
    gather_ranges,
    take_values,
)

_FASTLANES = 1024
_WIDTHS = (8, 16, 32, 64)
# Nesting deeper than this is a forged message, not an encoding.
_MAX_DEPTH = 16
_SCHEMES = {pb.COMPRESSION_ALGORITHM_LZ4: "lz4", pb.COMPRESSION_ALGORITHM_ZSTD: "zstd"}


def corrupt(detail: str) -> CorruptFileError:
    return CorruptFileError(detail)


class MiniBlockCodec(Protocol):
    @property
    def num_buffers(self) -> int: ...

    def decode(self, buffers: Sequence[Slices], counts: I64) -> Values: ...


class PickingCodec(Protocol):
    """A mini-block codec that reads a few values of one chunk without decoding the
    rest of it (a small take)."""

    def pick(self, buffers: Sequence[U8], count: int, index: I64) -> Values | None:
        """Values ``index`` (sorted positions below ``count``) of the chunk whose
        buffers are ``buffers`` and that holds ``count`` values; None when the chunk
        is not laid out as its encoding says (the caller then decodes it the general
        way, whose errors describe the damage) or the pick would not be cheap.

        A pick checks the chunk at least as strictly as :meth:`decode` does."""
        ...


@runtime_checkable
class SelectiveCodec(Protocol):
    """A mini-block codec whose values can be decoded a few at a time (a take)."""

    def decode_selected(self, buffers: Sequence[Slices], counts: I64, index: I64) -> Values:
        """The values at ``index`` (positions among all the chunks' values) only."""
        ...


class BlockCodec:
    """Decodes one buffer holding ``count`` values; ``decode_chunks`` one per chunk."""

    def decode(self, data: U8, count: int) -> Values:
        raise NotImplementedError

    def decode_chunks(self, buffers: Slices, counts: I64) -> Values:
        parts = [self.decode(buffers.one(i), int(n)) for i, n in enumerate(counts.tolist())]
        return concat_values(parts)


@dataclass
class Builder:
    """Builds decoders for an encoding tree, bounded in depth."""

    depth: int = 0

    def _child(self) -> Builder:
        if self.depth >= _MAX_DEPTH:
            raise corrupt(f"compressive encoding nested deeper than {_MAX_DEPTH} levels")
        return Builder(self.depth + 1)

    def miniblock(self, enc: pb.CompressiveEncoding) -> MiniBlockCodec:
        name, message = _member(enc)
        make = MINIBLOCK.get(name)
        if make is None:
            raise _unsupported(name, "mini-block values")
        return make(message, self._child())

    def block(self, enc: pb.CompressiveEncoding) -> BlockCodec:
        name, message = _member(enc)
        make = BLOCK.get(name)
        if make is None:
            raise _unsupported(name, "a block buffer (levels or dictionary)")
        return make(message, self._child())


def _member(enc: pb.CompressiveEncoding) -> tuple[str, Any]:
    name = enc.WhichOneof("compression")
    if name is None:
        raise corrupt("a compressive encoding names no compression")
    return name, getattr(enc, name)


def _unsupported(name: str, context: str) -> UnsupportedEncodingError:
    return UnsupportedEncodingError(
        f"the {name!r} compression is not supported for {context} by lancelet yet"
    )


def miniblock_codec(enc: pb.CompressiveEncoding) -> MiniBlockCodec:
    return Builder().miniblock(enc)


def block_codec(enc: pb.CompressiveEncoding) -> BlockCodec:
    return Builder().block(enc)


def levels_of(values: Values, count: int, what: str) -> np.ndarray:
    """Repetition or definition levels (u16) out of a level decoder's values."""
    if not isinstance(values, Fixed) or values.bits != 16:
        raise corrupt(f"{what} levels do not decode to 16-bit values")
    if values.count != count:
        raise corrupt(f"{what} levels decode to {values.count} values, {count} expected")
    return values.as_uint()


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def concat_slices(base: U8, starts: I64, sizes: I64) -> U8:
    """``base`` ranges back to back (one numpy view per range, joined once)."""
    if len(starts) == 1:
        start = int(starts[0])
        return base[start : start + int(sizes[0])]
    return np.concatenate(
        [base[s : s + n] for s, n in zip(starts.tolist(), sizes.tolist(), strict=True)]
    )


def _gather(buffers: Slices) -> U8:
    return concat_slices(buffers.base, buffers.starts, buffers.sizes)


def _expect_sizes(buffers: Slices, expected: I64, what: str) -> None:
    bad = np.flatnonzero(buffers.sizes != expected)
    if bad.size:
        i = int(bad[0])
        raise corrupt(
            f"{what}: chunk buffer holds {int(buffers.sizes[i])} bytes, {int(expected[i])} expected"
        )


def _bits_to_bools(data: U8, starts_bytes: I64, counts_bits: I64) -> np.ndarray:
    """Per chunk, the first ``counts_bits`` bits (LSB first) of its bytes, joined."""
    bits = np.unpackbits(data, bitorder="little").view(np.bool_)
    out: np.ndarray = bits[gather_ranges(starts_bytes * 8, counts_bits)]
    return out


def _no_buffer_compression(message: Any, name: str, what: str) -> None:
    if message.HasField(name):
        raise UnsupportedEncodingError(f"{what} with a compressed buffer is not supported yet")


# ---------------------------------------------------------------------------
# flat
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FlatCodec(BlockCodec):
    """Fixed-width values as they are: ``bits`` bits each."""

    bits: int
    num_buffers: int = 1

    def _sizes(self, counts: I64) -> I64:
        return (counts * self.bits + 7) // 8

    def decode(self, data: U8, count: int) -> Values:
        return self.decode_chunks(Slices.whole(data), np.array([count], np.int64))

    def decode_chunks(self, buffers: Slices, counts: I64) -> Values:
        _expect_sizes(buffers, self._sizes(counts), f"flat {self.bits}-bit values")
        total = int(counts.sum())
        if self.bits % 8 == 0:
            return Fixed(_gather(buffers), self.bits, total)
        data = _gather(buffers)
        offsets = np.cumsum(buffers.sizes) - buffers.sizes
        return Bits(_bits_to_bools(data, offsets, counts * self.bits), self.bits, total)


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
            picked = buf.reshape(count, width)[index]
        return Fixed(picked.reshape(-1).view(np.uint8), bits, len(index))


def _flat_codec(msg: pb.Flat) -> FlatCodec:
    _no_buffer_compression(msg, "data", "flat values")
    if not 0 < msg.bits_per_value <= 1 << 24:
        raise corrupt(f"flat values of {msg.bits_per_value} bits")
    return FlatCodec(int(msg.bits_per_value))


# ---------------------------------------------------------------------------
# FastLanes bit packing (inline: a bit width word per chunk; out of line: one width)
# ---------------------------------------------------------------------------


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
        # As a block: consecutive 1024-value chunks, each with its own width word.
        width_bytes = self.word_bits // 8
        starts, pos = [], 0
        for _ in range((count + _FASTLANES - 1) // _FASTLANES):
            if pos + width_bytes > len(data):
                raise corrupt("bit-packed block ends inside a chunk's width word")
            bits = int(
                np.frombuffer(data[pos : pos + width_bytes].tobytes(), f"<u{width_bytes}")[0]
            )
            if bits > self.word_bits:
                raise corrupt(f"bit-packed chunk claims {bits} bits of {self.word_bits}")
            starts.append(pos)
            pos += width_bytes + _FASTLANES * bits // 8
        if pos != len(data):
            raise corrupt(f"bit-packed block holds {len(data)} bytes, {pos} expected")
        counts = np.full(len(starts), _FASTLANES, np.int64)
        if len(counts):
            counts[-1] = count - _FASTLANES * (len(counts) - 1)
        sizes = np.diff(np.append(np.array(starts, np.int64), pos))
        return self.decode_chunks(Slices(data, np.array(starts, np.int64), sizes), counts)

    def decode_chunks(self, buffers: Slices, counts: I64) -> Values:
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
        _expect_sizes(buffers, width_bytes + _FASTLANES * widths // 8, "bit-packed chunk")
        chunks = _unpack_grouped(buffers.base, buffers.starts + width_bytes, widths, self.word_bits)
        values = _first_values(chunks, counts)
        return Fixed(values.view(np.uint8), self.word_bits, len(values))


@dataclass(frozen=True)
class InlineMiniBlock:
    codec: InlineBitpacking
    num_buffers: int = 1

    def decode(self, buffers: Sequence[Slices], counts: I64) -> Values:
        return self.codec.decode_chunks(buffers[0], counts)

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
    _no_buffer_compression(msg, "values", "inline bit packing")
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
        _expect_sizes(
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


def _out_of_line(msg: pb.OutOfLineBitpacking, build: Builder) -> BlockCodec:
    word = _width(int(msg.uncompressed_bits_per_value), "out-of-line bit packing")
    if msg.values.WhichOneof("compression") != "flat":
        raise UnsupportedEncodingError("out-of-line bit packing over non-flat values")
    bits = int(msg.values.flat.bits_per_value)
    if not 0 <= bits <= word:
        raise corrupt(f"out-of-line bit packing to {bits} of {word} bits")
    return OutOfLineBitpacking(word, bits)


# ---------------------------------------------------------------------------
# variable width
# ---------------------------------------------------------------------------


def _offset_bits(msg: pb.Variable, what: str) -> int:
    _no_buffer_compression(msg, "values", what)
    if msg.offsets.WhichOneof("compression") != "flat":
        raise UnsupportedEncodingError(f"{what} with compressed offsets is not supported")
    bits = int(msg.offsets.flat.bits_per_value)
    if bits not in (32, 64):
        raise corrupt(f"{what} with {bits}-bit offsets")
    return bits


@dataclass(frozen=True)
class VariableMiniBlock:
    """Each chunk: ``count + 1`` offsets (relative to the chunk buffer), then the bytes."""

    offset_bits: int
    num_buffers: int = 1

    def decode(self, buffers: Sequence[Slices], counts: I64) -> Values:
        buf = buffers[0]
        width = self.offset_bits // 8
        table = (counts + 1) * width
        if len(buf) and bool(np.any(buf.sizes < table)):
            raise corrupt("a variable-width chunk is too small for its offsets")
        raw = concat_slices(buf.base, buf.starts, table)
        offsets = np.ascontiguousarray(raw).view(f"<u{width}").astype(np.int64)
        firsts = np.cumsum(counts + 1) - (counts + 1)
        lasts = firsts + counts
        steps = np.diff(offsets)
        inner = np.ones(len(steps), dtype=bool)
        inner[lasts[:-1]] = False  # a step from one chunk's last offset to the next's first
        lengths = steps[inner]
        # A chunk's bytes start right after its offsets: the first offset says where.
        if (
            bool(np.any(lengths < 0))
            or bool(np.any(offsets[firsts] != table))
            or bool(np.any(offsets[lasts] > buf.sizes))
        ):
            raise corrupt("variable-width offsets leave their chunk or decrease")
        out = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=out[1:])
        data = concat_slices(
            buf.base, buf.starts + offsets[firsts], offsets[lasts] - offsets[firsts]
        )
        return Var(out, data)

    def pick(self, buffers: Sequence[U8], count: int, index: I64) -> Values | None:
        buf = buffers[0]
        width = self.offset_bits // 8
        table = (count + 1) * width
        if len(buf) < table:
            return None
        offsets = buf[:table].view(f"<u{width}").astype(np.int64)
        if (
            int(offsets[0]) != table
            or int(offsets[-1]) > len(buf)
            or bool(np.any(offsets[1:] < offsets[:-1]))
        ):
            return None
        starts = offsets[index]
        lengths = offsets[index + 1] - starts
        out = np.zeros(len(index) + 1, dtype=np.int64)
        np.cumsum(lengths, out=out[1:])
        return Var(out, buf[gather_ranges(starts, lengths)])


def _variable_mini(msg: pb.Variable, build: Builder) -> MiniBlockCodec:
    return VariableMiniBlock(_offset_bits(msg, "variable-width values"))


@dataclass(frozen=True)
class VariableBlock(BlockCodec):
    """``[bits per offset][start of the bytes][count + 1 offsets][bytes]``, the two
    header words of the offsets' width."""

    offset_bits: int

    def decode(self, data: U8, count: int) -> Values:
        width = self.offset_bits // 8
        if len(data) < 2 * width:
            raise corrupt("variable-width block too short for its header")
        head = np.ascontiguousarray(data[: 2 * width]).view(f"<u{width}")
        if int(head[0]) != self.offset_bits:
            raise corrupt(
                f"variable-width block says {int(head[0])}-bit offsets, "
                f"its encoding {self.offset_bits}"
            )
        start = int(head[1])
        if start != 2 * width + (count + 1) * width or start > len(data):
            raise corrupt(f"variable-width block of {count} values puts its bytes at {start}")
        offsets = np.ascontiguousarray(data[2 * width : start]).view(f"<u{width}").astype(np.int64)
        body = data[start:]
        if len(offsets) and (
            int(offsets[-1]) > len(body) or bool(np.any(np.diff(offsets) < 0)) or offsets[0] < 0
        ):
            raise corrupt("variable-width block offsets leave the block or decrease")
        first = int(offsets[0]) if len(offsets) else 0
        return Var(offsets - first, body[first : int(offsets[-1]) if len(offsets) else 0])


def _variable_block(msg: pb.Variable, build: Builder) -> BlockCodec:
    return VariableBlock(_offset_bits(msg, "variable-width values"))


# ---------------------------------------------------------------------------
# FSST
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FsstMiniBlock:
    raw_table: bytes
    inner: MiniBlockCodec

    @property
    def num_buffers(self) -> int:
        return self.inner.num_buffers

    @cached_property
    def table(self) -> FsstSymbolTable:
        return parse_symbol_table(self.raw_table)

    def decode(self, buffers: Sequence[Slices], counts: I64) -> Values:
        inner = self._compressed(buffers, counts)
        offsets, data = fsst_decompress(self.table, inner.data, inner.offsets)
        return Var(offsets, data)

    def decode_selected(self, buffers: Sequence[Slices], counts: I64, index: I64) -> Values:
        # Every value is compressed on its own: expand only the ones asked for.
        picked = take_values(self._compressed(buffers, counts), index)
        assert isinstance(picked, Var)
        offsets, data = fsst_decompress(self.table, picked.data, picked.offsets)
        return Var(offsets, data)

    def pick(self, buffers: Sequence[U8], count: int, index: I64) -> Values | None:
        inner = getattr(self.inner, "pick", None)
        picked = None if inner is None else inner(buffers, count, index)
        if not isinstance(picked, Var):
            return None
        offsets, data = fsst_decompress(self.table, picked.data, picked.offsets)
        return Var(offsets, data)

    def _compressed(self, buffers: Sequence[Slices], counts: I64) -> Var:
        inner = self.inner.decode(buffers, counts)
        if not isinstance(inner, Var):
            raise corrupt("FSST values do not decode to variable-width values")
        if inner.count != int(counts.sum()):
            raise corrupt(f"the chunks hold {inner.count} values, {int(counts.sum())} expected")
        return inner


def _fsst(msg: pb.Fsst, build: Builder) -> MiniBlockCodec:
    return FsstMiniBlock(bytes(msg.symbol_table), build.miniblock(msg.values))


# ---------------------------------------------------------------------------
# general compression (lz4, zstd)
# ---------------------------------------------------------------------------


def _scheme(msg: pb.General) -> str:
    scheme = _SCHEMES.get(msg.compression.scheme)
    if scheme is None:
        raise UnsupportedEncodingError(
            f"general compression scheme {msg.compression.scheme} is not supported"
        )
    return scheme


def _inflate(scheme: str, data: U8) -> U8:
    raw = decompress_buffer(scheme, np.ascontiguousarray(data).tobytes())
    return np.frombuffer(raw, dtype=np.uint8)


@dataclass(frozen=True)
class GeneralMiniBlock:
    """The first buffer of every chunk compressed whole; the inner codec decodes the rest."""

    scheme: str
    inner: MiniBlockCodec

    @property
    def num_buffers(self) -> int:
        return self.inner.num_buffers

    def decode(self, buffers: Sequence[Slices], counts: I64) -> Values:
        first = buffers[0]
        parts = [_inflate(self.scheme, first.one(i)) for i in range(len(first))]
        sizes = np.array([len(p) for p in parts], dtype=np.int64)
        base = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
        inflated = Slices(base, np.cumsum(sizes) - sizes, sizes)
        return self.inner.decode([inflated, *buffers[1:]], counts)

    def pick(self, buffers: Sequence[U8], count: int, index: I64) -> Values | None:
        inner = getattr(self.inner, "pick", None)
        if inner is None:
            return None
        picked: Values | None = inner(
            [_inflate(self.scheme, buffers[0]), *buffers[1:]], count, index
        )
        return picked


def _general_mini(msg: pb.General, build: Builder) -> MiniBlockCodec:
    return GeneralMiniBlock(_scheme(msg), build.miniblock(msg.values))


@dataclass(frozen=True)
class GeneralBlock(BlockCodec):
    scheme: str
    inner: BlockCodec

    def decode(self, data: U8, count: int) -> Values:
        return self.inner.decode(_inflate(self.scheme, data), count)


def _general_block(msg: pb.General, build: Builder) -> BlockCodec:
    return GeneralBlock(_scheme(msg), build.block(msg.values))


# ---------------------------------------------------------------------------
# fixed-size lists of fixed-width items
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _FslLayer:
    dimension: int
    has_validity: bool


def _fsl_layers(msg: pb.FixedSizeList) -> tuple[list[_FslLayer], FlatCodec]:
    layers: list[_FslLayer] = []
    current = msg
    items = 1
    while True:
        items *= current.items_per_value
        if not 0 < current.items_per_value <= 1 << 20 or items > 1 << 20:
            raise corrupt(
                f"fixed-size list of {current.items_per_value} items per value ({items} in all)"
            )
        layers.append(_FslLayer(int(current.items_per_value), current.has_validity))
        if len(layers) > _MAX_DEPTH:
            raise corrupt("fixed-size lists nested too deep")
        kind = current.values.WhichOneof("compression")
        if kind == "fixed_size_list":
            current = current.values.fixed_size_list
        elif kind == "flat":
            return layers, _flat_codec(current.values.flat)
        else:
            raise UnsupportedEncodingError(f"fixed-size list items compressed with {kind!r}")


@dataclass(frozen=True)
class FslMiniBlock:
    """Buffers: the items' validity bitmaps of the layers that have one (outermost
    first), then the flat items."""

    layers: tuple[_FslLayer, ...]
    items: FlatCodec

    @property
    def num_buffers(self) -> int:
        return 1 + sum(layer.has_validity for layer in self.layers)

    def decode(self, buffers: Sequence[Slices], counts: I64) -> Values:
        dims = np.cumprod([layer.dimension for layer in self.layers])
        values: Values = self.items.decode_chunks(buffers[-1], counts * int(dims[-1]))
        spare = list(buffers[:-1])
        for depth in range(len(self.layers) - 1, -1, -1):
            layer = self.layers[depth]
            bits_per_chunk = counts * int(dims[depth])
            validity = None
            if layer.has_validity:
                bitmap = spare.pop()
                _expect_sizes(bitmap, (bits_per_chunk + 7) // 8, "fixed-size list validity")
                data = _gather(bitmap)
                validity = _bits_to_bools(
                    data, np.cumsum(bitmap.sizes) - bitmap.sizes, bits_per_chunk
                )
            count = int(bits_per_chunk.sum()) // layer.dimension
            values = Fsl(values, layer.dimension, validity, count)
        return values


def _fsl_mini(msg: pb.FixedSizeList, build: Builder) -> MiniBlockCodec:
    layers, items = _fsl_layers(msg)
    return FslMiniBlock(tuple(layers), items)


@dataclass(frozen=True)
class FslBlock(BlockCodec):
    layers: tuple[_FslLayer, ...]
    items: FlatCodec

    def decode(self, data: U8, count: int) -> Values:
        if any(layer.has_validity for layer in self.layers):
            raise UnsupportedEncodingError("a fixed-size list block with item validity")
        dims = np.cumprod([layer.dimension for layer in self.layers])
        values: Values = self.items.decode(data, count * int(dims[-1]))
        for depth in range(len(self.layers) - 1, -1, -1):
            layer = self.layers[depth]
            values = Fsl(values, layer.dimension, None, count * int(dims[depth]) // layer.dimension)
        return values


def _fsl_block(msg: pb.FixedSizeList, build: Builder) -> BlockCodec:
    layers, items = _fsl_layers(msg)
    return FslBlock(tuple(layers), items)


# ---------------------------------------------------------------------------
# constant
# ---------------------------------------------------------------------------


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


def _constant(msg: pb.Constant, build: Builder) -> BlockCodec:
    return ConstantBlock(bytes(msg.value))


# ---------------------------------------------------------------------------
# pure codecs of file/codecs: run lengths, byte stream split, packed structs
# ---------------------------------------------------------------------------


def _codec(module: str, name: str) -> ModuleType:
    try:
        return importlib.import_module(f"lancelet.file.codecs.{module}")
    except ImportError:
        raise UnsupportedEncodingError(f"the {name!r} compression is not supported yet") from None


def _flat_bits(enc: pb.CompressiveEncoding, what: str) -> int:
    if enc.WhichOneof("compression") != "flat":
        raise UnsupportedEncodingError(f"{what} over non-flat values is not supported")
    _no_buffer_compression(enc.flat, "data", what)
    return int(enc.flat.bits_per_value)


def _shared_base(first: Slices, second: Slices) -> tuple[U8, I64, I64]:
    """One byte array holding both buffers, and where each chunk's pieces start."""
    if first.base is second.base:
        return first.base, first.starts, second.starts
    a, b = _gather(first), _gather(second)
    return (
        np.concatenate([a, b]),
        np.cumsum(first.sizes) - first.sizes,
        len(a) + np.cumsum(second.sizes) - second.sizes,
    )


@dataclass(frozen=True)
class RleMiniBlock:
    """Two buffers per chunk: the run values, then the run lengths."""

    bits: int
    length_bits: int
    num_buffers: int = 2

    def decode(self, buffers: Sequence[Slices], counts: I64) -> Values:
        rle = _codec("rle", "rle")
        values, lengths = buffers
        data, value_starts, length_starts = _shared_base(values, lengths)
        out = rle.decode_rle_chunks(
            data,
            value_starts,
            values.sizes,
            length_starts,
            lengths.sizes,
            counts,
            self.bits,
            length_bits=self.length_bits,
            what="run-length encoded values",
        )
        return Fixed(np.ascontiguousarray(out).view(np.uint8), self.bits, len(out))

    def pick(self, buffers: Sequence[U8], count: int, index: I64) -> Values | None:
        rle = _codec("rle", "rle")
        if self.bits not in rle.VALUE_BITS or self.length_bits not in rle.LENGTH_BITS:
            return None
        values, lengths = buffers
        value_bytes, length_bytes = self.bits // 8, self.length_bits // 8
        runs = len(values) // value_bytes
        if len(values) % value_bytes or len(lengths) != runs * length_bytes:
            return None
        run_lengths = lengths.view(f"<u{length_bytes}")
        if runs and int(run_lengths.min()) == 0:
            return None
        ends = np.cumsum(run_lengths, dtype=np.int64)
        total = int(ends[-1]) if runs else 0
        if total < count:
            return None
        if total > count:
            # As the batched decode: only a legacy chunk of a power of two values may
            # have a last run reaching past it (clipped, which moves no position).
            before_last = int(ends[-2]) if runs > 1 else 0
            if before_last >= count or count & (count - 1):
                return None
        run = np.searchsorted(ends, index, side="right")
        picked = values.view(f"<u{value_bytes}")[run]
        return Fixed(picked.view(np.uint8), self.bits, len(picked))


@dataclass(frozen=True)
class RleBlock(BlockCodec):
    """``u64 size of the values | values | lengths``."""

    bits: int
    length_bits: int

    def decode(self, data: U8, count: int) -> Values:
        rle = _codec("rle", "rle")
        out = rle.decode_rle_block(
            data, count, self.bits, length_bits=self.length_bits, what="run-length block"
        )
        return Fixed(np.ascontiguousarray(out).view(np.uint8), self.bits, len(out))


def _rle_widths(msg: pb.Rle) -> tuple[int, int]:
    return _flat_bits(msg.values, "run-length encoding"), _flat_bits(
        msg.run_lengths, "run-length encoding"
    )


@dataclass(frozen=True)
class BssMiniBlock:
    bits: int
    num_buffers: int = 1

    def decode(self, buffers: Sequence[Slices], counts: I64) -> Values:
        bss = _codec("byte_stream_split", "byte_stream_split")
        buf = buffers[0]
        out = bss.decode_bss_chunks(
            buf.base, buf.starts, buf.sizes, counts, self.bits, what="byte-stream-split values"
        )
        return Fixed(np.ascontiguousarray(out).view(np.uint8), self.bits, len(out))

    def pick(self, buffers: Sequence[U8], count: int, index: I64) -> Values | None:
        bss = _codec("byte_stream_split", "byte_stream_split")
        buf = buffers[0]
        if self.bits not in bss.VALUE_BITS or len(buf) != count * self.bits // 8:
            return None
        # Byte k of value i is byte i of stream k.
        streams = buf.reshape(self.bits // 8, count)
        picked = np.ascontiguousarray(streams[:, index].T)
        return Fixed(picked.reshape(-1), self.bits, len(index))


@dataclass(frozen=True)
class PackedMiniBlock:
    """Rows of fixed-width fields, the fields' bytes one after another."""

    bits: tuple[int, ...]
    num_buffers: int = 1

    def decode(self, buffers: Sequence[Slices], counts: I64) -> Values:
        packed = _codec("packed", "packed_struct")
        buf = buffers[0]
        fields = packed.decode_packed_rows(
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


def _packed(msg: pb.PackedStruct, build: Builder) -> MiniBlockCodec:
    if msg.HasField("values") and msg.values.WhichOneof("compression") not in (None, "flat"):
        raise UnsupportedEncodingError("a packed struct whose rows are compressed")
    return PackedMiniBlock(tuple(int(b) for b in msg.bits_per_value))


# ---------------------------------------------------------------------------
# the registries
# ---------------------------------------------------------------------------

MiniBlockBuilder = Callable[[Any, Builder], MiniBlockCodec]
BlockBuilder = Callable[[Any, Builder], BlockCodec]

MINIBLOCK: dict[str, MiniBlockBuilder] = {
    "flat": lambda msg, build: FlatMiniBlock(_flat_codec(msg)),
    "inline_bitpacking": lambda msg, build: InlineMiniBlock(_inline(msg)),
    "variable": _variable_mini,
    "fsst": _fsst,
    "general": _general_mini,
    "fixed_size_list": _fsl_mini,
    "rle": lambda msg, build: RleMiniBlock(*_rle_widths(msg)),
    "byte_stream_split": lambda msg, build: BssMiniBlock(
        _flat_bits(msg.values, "byte stream split")
    ),
    "packed_struct": _packed,
}

BLOCK: dict[str, BlockBuilder] = {
    "flat": lambda msg, build: _flat_codec(msg),
    "inline_bitpacking": lambda msg, build: _inline(msg),
    "out_of_line_bitpacking": _out_of_line,
    "variable": _variable_block,
    "general": _general_block,
    "fixed_size_list": _fsl_block,
    "constant": _constant,
    "rle": lambda msg, build: RleBlock(*_rle_widths(msg)),
}

__all__ = [
    "BLOCK",
    "MINIBLOCK",
    "BlockCodec",
    "Builder",
    "MiniBlockCodec",
    "block_codec",
    "levels_of",
    "miniblock_codec",
]
