"""Decoders of the pure numpy codecs of ``file/codecs`` for fixed-width values: run
lengths and byte stream split."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import UnsupportedEncodingError
from lancelet.file.codecs import byte_stream_split, rle
from lancelet.file.v2_1.read.codec import (
    BlockBuilder,
    BlockCodec,
    MiniBlockBuilder,
    gather_slices,
    no_buffer_compression,
)
from lancelet.file.v2_1.read.values import (
    I64,
    U8,
    Fixed,
    Slices,
    Values,
)


def flat_bits(enc: pb.CompressiveEncoding, what: str) -> int:
    if enc.WhichOneof("compression") != "flat":
        raise UnsupportedEncodingError(f"{what} over non-flat values is not supported")
    no_buffer_compression(enc.flat, "data", what)
    return int(enc.flat.bits_per_value)


def shared_base(first: Slices, second: Slices) -> tuple[U8, I64, I64]:
    """One byte array holding both buffers, and where each chunk's pieces start."""
    if first.base is second.base:
        return first.base, first.starts, second.starts
    a, b = gather_slices(first), gather_slices(second)
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
        values, lengths = self.runs(buffers, counts)
        out = rle.expanded(values, lengths)
        return Fixed(np.ascontiguousarray(out).view(np.uint8), self.bits, len(out))

    def runs(self, buffers: Sequence[Slices], counts: I64) -> tuple[np.ndarray, I64]:
        """The chunks' runs, not expanded: values (unsigned, ``bits`` wide) and lengths."""
        values, lengths = buffers
        data, value_starts, length_starts = shared_base(values, lengths)
        return rle.rle_chunk_runs(
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

    def pick(self, buffers: Sequence[U8], count: int, index: I64) -> Values | None:
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
        out = rle.decode_rle_block(
            data, count, self.bits, length_bits=self.length_bits, what="run-length block"
        )
        return Fixed(np.ascontiguousarray(out).view(np.uint8), self.bits, len(out))


def _rle_widths(msg: pb.Rle) -> tuple[int, int]:
    return flat_bits(msg.values, "run-length encoding"), flat_bits(
        msg.run_lengths, "run-length encoding"
    )


@dataclass(frozen=True)
class BssMiniBlock:
    bits: int
    num_buffers: int = 1

    def decode(self, buffers: Sequence[Slices], counts: I64) -> Values:
        buf = buffers[0]
        out = byte_stream_split.decode_bss_chunks(
            buf.base, buf.starts, buf.sizes, counts, self.bits, what="byte-stream-split values"
        )
        return Fixed(np.ascontiguousarray(out).view(np.uint8), self.bits, len(out))

    def pick(self, buffers: Sequence[U8], count: int, index: I64) -> Values | None:
        buf = buffers[0]
        if self.bits not in byte_stream_split.VALUE_BITS or len(buf) != count * self.bits // 8:
            return None
        # Byte k of value i is byte i of stream k.
        streams = buf.reshape(self.bits // 8, count)
        picked = np.ascontiguousarray(streams[:, index].T)
        return Fixed(picked.reshape(-1), self.bits, len(index))


# -- the registries of this module's decoders ----------------------------------------

MINIBLOCK: dict[str, MiniBlockBuilder] = {
    "rle": lambda msg, build: RleMiniBlock(*_rle_widths(msg)),
    "byte_stream_split": lambda msg, build: BssMiniBlock(
        flat_bits(msg.values, "byte stream split")
    ),
}
BLOCK: dict[str, BlockBuilder] = {
    "rle": lambda msg, build: RleBlock(*_rle_widths(msg)),
}
