"""Decoders wrapped around another decoder: general-purpose compression (lz4, zstd)
of a chunk's buffer, and fixed-size lists (their items one decoder, their validity
bits beside them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import UnsupportedEncodingError
from lancelet.file.codecs.general import decompress_buffer
from lancelet.file.v2_1.read.codec import (
    MAX_DEPTH,
    BlockBuilder,
    BlockCodec,
    ChildBuilder,
    MiniBlockBuilder,
    MiniBlockCodec,
    bits_to_bools,
    corrupt,
    expect_sizes,
    gather_slices,
)
from lancelet.file.v2_1.read.fixed_width import FlatCodec, flat_codec
from lancelet.file.v2_1.read.values import (
    I64,
    U8,
    Fsl,
    Slices,
    Values,
)

_SCHEMES = {pb.COMPRESSION_ALGORITHM_LZ4: "lz4", pb.COMPRESSION_ALGORITHM_ZSTD: "zstd"}


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


def _general_mini(msg: pb.General, build: ChildBuilder) -> MiniBlockCodec:
    return GeneralMiniBlock(_scheme(msg), build.miniblock(msg.values))


@dataclass(frozen=True)
class GeneralBlock(BlockCodec):
    scheme: str
    inner: BlockCodec

    def decode(self, data: U8, count: int) -> Values:
        return self.inner.decode(_inflate(self.scheme, data), count)

    def decode_blocks(self, buffers: Slices, counts: I64) -> Values:
        # Each block is compressed on its own; what they hold decodes in one batch.
        parts = [_inflate(self.scheme, buffers.one(i)) for i in range(len(buffers))]
        sizes = np.array([len(p) for p in parts], dtype=np.int64)
        base = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
        return self.inner.decode_blocks(Slices(base, np.cumsum(sizes) - sizes, sizes), counts)


def _general_block(msg: pb.General, build: ChildBuilder) -> BlockCodec:
    return GeneralBlock(_scheme(msg), build.block(msg.values))


# -- fixed-size lists of fixed-width items ------------------------------------


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
        if len(layers) > MAX_DEPTH:
            raise corrupt("fixed-size lists nested too deep")
        kind = current.values.WhichOneof("compression")
        if kind == "fixed_size_list":
            current = current.values.fixed_size_list
        elif kind == "flat":
            return layers, flat_codec(current.values.flat)
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
                expect_sizes(bitmap, (bits_per_chunk + 7) // 8, "fixed-size list validity")
                data = gather_slices(bitmap)
                validity = bits_to_bools(
                    data, np.cumsum(bitmap.sizes) - bitmap.sizes, bits_per_chunk
                )
            count = int(bits_per_chunk.sum()) // layer.dimension
            values = Fsl(values, layer.dimension, validity, count)
        return values


def _fsl_mini(msg: pb.FixedSizeList, build: ChildBuilder) -> MiniBlockCodec:
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


def _fsl_block(msg: pb.FixedSizeList, build: ChildBuilder) -> BlockCodec:
    layers, items = _fsl_layers(msg)
    return FslBlock(tuple(layers), items)


# -- the registries of this module's decoders ----------------------------------------

MINIBLOCK: dict[str, MiniBlockBuilder] = {
    "general": _general_mini,
    "fixed_size_list": _fsl_mini,
}
BLOCK: dict[str, BlockBuilder] = {
    "general": _general_block,
    "fixed_size_list": _fsl_block,
}
