"""The protobuf glue of 2.1 compressions: ``CompressiveEncoding`` -> a decoder.

Two registries, keyed by the name of the ``CompressiveEncoding.compression`` oneof
member, build decoders for the two contexts a mini-block page uses:

* :data:`MINIBLOCK`: the values of a mini-block page.  A decoder takes one
  :class:`~.values.Slices` per chunk buffer it owns (``num_buffers`` of them) and the
  value count of every chunk, and decodes all the chunks in one go.
* :data:`BLOCK`: a whole buffer of known count: rep/def levels (one block per chunk,
  decoded by ``decode_chunks``), a page's dictionary, a constant page's levels.

A codec without an entry is refused with :class:`UnsupportedEncodingError` naming it;
adding one is one line in the registry of the module of what it decodes
(:mod:`.fixed_width`, :mod:`.variable_width`, :mod:`.wrapped`, :mod:`.rle_bss`): a
builder of the decoder from the encoding's message.  The decoders raise lancelet
errors without a location; the page decoders run them under
:func:`.context.guarded`, which adds file, column and page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import UnsupportedEncodingError
from lancelet.file.v2_1.read import fixed_width, rle_bss, variable_width, wrapped
from lancelet.file.v2_1.read.codec import (
    MAX_DEPTH,
    BlockBuilder,
    BlockCodec,
    MiniBlockBuilder,
    MiniBlockCodec,
    corrupt,
)
from lancelet.file.v2_1.read.values import Fixed, Values


@dataclass
class Builder:
    """Builds decoders for an encoding tree, bounded in depth."""

    depth: int = 0

    def _child(self) -> Builder:
        if self.depth >= MAX_DEPTH:
            raise corrupt(f"compressive encoding nested deeper than {MAX_DEPTH} levels")
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


MINIBLOCK: dict[str, MiniBlockBuilder] = {
    **fixed_width.MINIBLOCK,
    **variable_width.MINIBLOCK,
    **wrapped.MINIBLOCK,
    **rle_bss.MINIBLOCK,
}
BLOCK: dict[str, BlockBuilder] = {
    **fixed_width.BLOCK,
    **variable_width.BLOCK,
    **wrapped.BLOCK,
    **rle_bss.BLOCK,
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
