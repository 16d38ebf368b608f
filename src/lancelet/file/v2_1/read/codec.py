"""What a 2.1 decoder is (the mini-block and block codec protocols) and the helpers
the decoders share.  The decoders themselves are in the modules named after what they
decode; :mod:`.compression` picks one for a ``CompressiveEncoding``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import CorruptFileError, UnsupportedEncodingError
from lancelet.file.codecs._chunks import concat_ranges
from lancelet.file.v2_1.read.values import (
    I64,
    U8,
    Slices,
    Values,
    concat_values,
    gather_ranges,
)

# Nesting deeper than this is a forged message, not an encoding.
MAX_DEPTH = 16


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

    def decode_selected(self, buffers: Sequence[Slices], counts: I64, index: I64) -> Values | None:
        """The values at ``index`` (positions among all the chunks' values) only; None
        when these chunks are better decoded whole (the caller then does)."""
        ...


class BlockCodec:
    """Decodes one buffer holding ``count`` values; ``decode_chunks`` one per chunk."""

    def decode(self, data: U8, count: int) -> Values:
        raise NotImplementedError

    def decode_chunks(self, buffers: Slices, counts: I64) -> Values:
        parts = [self.decode(buffers.one(i), int(n)) for i, n in enumerate(counts.tolist())]
        return concat_values(parts)

    def decode_blocks(self, buffers: Slices, counts: I64) -> Values:
        """Several whole buffers (``counts[i]`` values in buffer ``i``, as
        :meth:`decode` takes them), decoded back to back: pages' dictionaries.
        Unlike a chunk, a block may hold several of its codec's own chunks."""
        parts = [self.decode(buffers.one(i), int(n)) for i, n in enumerate(counts.tolist())]
        return concat_values(parts)


class ChildBuilder(Protocol):
    """Builds the decoders of an encoding's children (:class:`.compression.Builder`,
    which bounds the depth of the tree)."""

    def miniblock(self, enc: pb.CompressiveEncoding) -> MiniBlockCodec: ...

    def block(self, enc: pb.CompressiveEncoding) -> BlockCodec: ...


# Each decoder module's registries map the names of ``CompressiveEncoding``'s oneof
# members to these: a decoder made from the member's message (and a builder for the
# decoders of its children).
MiniBlockBuilder = Callable[[Any, ChildBuilder], MiniBlockCodec]
BlockBuilder = Callable[[Any, ChildBuilder], BlockCodec]


def concat_slices(base: U8, starts: I64, sizes: I64) -> U8:
    """``base`` ranges back to back: ranges that touch are one view, and a single run
    of them (a page's chunks read in order) comes back without a copy."""
    if len(starts) == 1:
        start = int(starts[0])
        return base[start : start + int(sizes[0])]
    if not len(starts):
        return base[:0]
    ends = starts + sizes
    breaks = np.flatnonzero(starts[1:] != ends[:-1]) + 1
    if not len(breaks):
        return base[int(starts[0]) : int(ends[-1])]
    firsts = np.concatenate(([0], breaks))
    lasts = np.concatenate((breaks - 1, [len(starts) - 1]))
    run_starts = starts[firsts]
    return concat_ranges(base, run_starts, ends[lasts] - run_starts)


def gather_slices(buffers: Slices) -> U8:
    return concat_slices(buffers.base, buffers.starts, buffers.sizes)


def expect_sizes(buffers: Slices, expected: I64, what: str) -> None:
    bad = np.flatnonzero(buffers.sizes != expected)
    if bad.size:
        i = int(bad[0])
        raise corrupt(
            f"{what}: chunk buffer holds {int(buffers.sizes[i])} bytes, {int(expected[i])} expected"
        )


def bits_to_bools(data: U8, starts_bytes: I64, counts_bits: I64) -> np.ndarray:
    """Per chunk, the first ``counts_bits`` bits (LSB first) of its bytes, joined."""
    bits = np.unpackbits(data, bitorder="little").view(np.bool_)
    out: np.ndarray = bits[gather_ranges(starts_bytes * 8, counts_bits)]
    return out


def no_buffer_compression(message: Any, name: str, what: str) -> None:
    if message.HasField(name):
        raise UnsupportedEncodingError(f"{what} with a compressed buffer is not supported yet")
