"""What a mini-block page's layout makes of it, worked out once per layout.

A compaction opens a hundred small files whose pages of one column are laid out
alike (the same codecs, layers and counts).  Building the codecs, the layer shape
and the batch key out of a layout's protobuf cost more per page than decoding its
rows, so pages whose layouts serialize to the same bytes share one
:class:`LayoutPlan` (the codecs are immutable).  Only what follows from the layout
alone is here, and checked here; what also depends on the page's buffers is checked
per page (:class:`.miniblock.MiniBlockPage`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from functools import cached_property, lru_cache

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import CorruptFileError
from lancelet.file.memo import Memo
from lancelet.file.v2_1.read import compression
from lancelet.file.v2_1.read.bounds import max_values
from lancelet.file.v2_1.read.chunk_meta import ALIGN
from lancelet.file.v2_1.read.codec import BlockCodec, MiniBlockCodec, SelectiveCodec
from lancelet.file.v2_1.read.levels import LayerShape
from lancelet.file.v2_1.read.values import I64, U8, Values
from lancelet.file.v2_1.read.variable_width import FsstMiniBlock

__all__ = ["LayoutPlan", "plan_of", "selective"]

# Plans kept: a compaction's files share a few per column.  Larger layouts (an FSST
# symbol table's, which no other page shares) are not kept.
_MAX_KEY_BYTES = 512
_plans: Memo[LayoutPlan] = Memo(1024)

# Dictionary sizes a plan keeps the item bound of (see most_dictionary_items).
_MOST_ITEMS_KEPT = 256

Pick = Callable[[Sequence[U8], int, I64], "Values | None"]


@lru_cache(maxsize=64)
def selective(kind: type) -> bool:
    # A runtime protocol check costs as much as a small take: made once per class.
    return issubclass(kind, SelectiveCodec)


class LayoutPlan:
    """The codecs, shape and batch key of a mini-block layout, checked."""

    def __init__(self, layout: pb.MiniBlockLayout) -> None:
        self.layout = layout
        self.shape = LayerShape.of(tuple(layout.layers))
        self.has_rep = layout.HasField("rep_compression")
        self.has_def = layout.HasField("def_compression")
        if not layout.HasField("value_compression"):
            raise CorruptFileError("a mini-block page without its value compression")
        self.value_codec: MiniBlockCodec = compression.miniblock_codec(layout.value_compression)
        self.selective = selective(type(self.value_codec))
        self.pick: Pick | None = getattr(self.value_codec, "pick", None)
        self.rep_codec = compression.block_codec(layout.rep_compression) if self.has_rep else None
        self.def_codec = compression.block_codec(layout.def_compression) if self.has_def else None
        if layout.num_buffers != self.value_codec.num_buffers:
            raise CorruptFileError(
                f"the layout says {layout.num_buffers} value buffers per chunk, its "
                f"compression uses {self.value_codec.num_buffers}"
            )
        self.has_dict = layout.HasField("dictionary")
        self.depth = int(layout.repetition_index_depth)
        # The page's buffers: chunk metadata, chunks, dictionary, repetition index.
        self.num_page_buffers = 2 + int(self.has_dict) + int(self.depth > 0)
        if self.has_rep != (self.shape.max_rep > 0):
            raise CorruptFileError("repetition levels do not match the page's list layers")
        if self.depth > 0 and not self.has_rep:
            raise CorruptFileError("a repetition index without repetition levels")
        self._most_items: dict[int, int | None] = {}

    @cached_property
    def dictionary_codec(self) -> BlockCodec:
        """Built when first needed: a page whose values are never decoded does not
        fail on its dictionary's codec."""
        return compression.block_codec(self.layout.dictionary)

    def most_dictionary_items(self, nbytes: int) -> int | None:
        """:func:`.bounds.max_values` of a dictionary of ``nbytes`` bytes: kept by size,
        as the pages laid out alike have dictionaries of a few sizes."""
        if nbytes in self._most_items:
            return self._most_items[nbytes]
        found = max_values(self.layout.dictionary, nbytes)
        if len(self._most_items) < _MOST_ITEMS_KEPT:
            self._most_items[nbytes] = found
        return found

    @cached_property
    def dictionary_key(self) -> bytes:
        """Pages with the same key have their dictionaries encoded alike."""
        return self.layout.dictionary.SerializeToString(deterministic=True)

    @cached_property
    def batch_key(self) -> bytes | None:
        """Pages of one column with the same key decode their chunks alike (one
        batch for a take); None: a page with lists takes rows on its own."""
        if self.has_rep:
            return None
        layout = self.layout
        values = layout.value_compression
        if isinstance(self.value_codec, FsstMiniBlock):
            # FSST pages batch whatever their symbol tables: what the tables compressed
            # is decoded in one batch, then each page's values expanded with its own.
            encoded = b"fsst:" + values.fsst.values.SerializeToString(deterministic=True)
        else:
            encoded = values.SerializeToString(deterministic=True)
        parts = [
            encoded,
            layout.def_compression.SerializeToString(deterministic=True),
            bytes(
                repr((tuple(layout.layers), layout.num_buffers, layout.has_large_chunk)), "ascii"
            ),
            b"dict" if self.has_dict else b"",
        ]
        return b"\0".join(len(p).to_bytes(8, "little") + p for p in parts)

    @cached_property
    def header(self) -> tuple[struct.Struct, int]:
        """A chunk header's layout without lists (level count, definition level size
        if any, value buffer sizes) and its size, padded."""
        nbuf = int(self.layout.num_buffers)
        size_code, size_bytes = ("I", 4) if self.layout.has_large_chunk else ("H", 2)
        small = 1 + int(self.has_def)
        layout = struct.Struct("<" + "H" * small + size_code * nbuf)
        size = 2 * small + size_bytes * nbuf
        return layout, -(-size // ALIGN) * ALIGN


def plan_of(layout: pb.MiniBlockLayout) -> LayoutPlan:
    """The plan of ``layout``, shared with every page laid out the same way.  A layout
    that fails its checks raises each time (it is not kept); one too large to be
    shared is worked out for its page alone."""
    key = layout.SerializeToString(deterministic=True)
    found = _plans.find(key)
    if found is not None:
        return found
    # Parsed from the key, the plan holds a message no page can change.
    own = pb.MiniBlockLayout()
    own.ParseFromString(key)
    made = LayoutPlan(own)
    if len(key) <= _MAX_KEY_BYTES:
        _plans.put(key, made)
    return made
