"""List: the list column's pages hold end offsets into the items column.

Each page counts items from zero and records ``num_items``; a null list stores
``end + null_offset_adjustment`` (see :mod:`.binary`).  The items live in the
next column(s), paged independently.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.file.v2_0 import flat
from lancelet.file.v2_0.binary import split_offsets
from lancelet.file.v2_0.context import PageContext


@dataclass(frozen=True)
class ListPage:
    ends: np.ndarray  # int64 end offset of each list, relative to the page's first item
    valid: np.ndarray | None  # None when no list in the page is null
    num_items: int


def decode_page(ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int) -> ListPage:
    if enc.WhichOneof("array_encoding") != "list":
        raise ctx.corrupt(f"list column page is encoded as {enc.WhichOneof('array_encoding')}")
    msg = enc.list
    raw = ctx.decode_u64(msg.offsets, num_rows)
    ends, valid = split_offsets(ctx, raw, msg.null_offset_adjustment, "list")
    last = int(ends[-1]) if len(ends) else 0
    if last != msg.num_items:
        raise ctx.corrupt(f"list offsets end at item {last}, the page says {msg.num_items}")
    return ListPage(ends, valid, msg.num_items)


def encode_page(
    lengths: np.ndarray, valid: np.ndarray, add_buffer: flat.AddBuffer
) -> tuple[pb.ArrayEncoding, int]:
    """Encode one page of lists from their lengths and validity; returns (encoding, items)."""
    ends = np.cumsum(lengths, dtype=np.uint64)
    num_items = int(ends[-1]) if len(ends) else 0
    adjustment = num_items + 1
    if not valid.all():
        ends = ends + np.uint64(adjustment) * (~valid).astype(np.uint64)
    offsets = flat.encode_u64(ends, add_buffer)
    msg = pb.List(offsets=offsets, null_offset_adjustment=adjustment, num_items=num_items)
    return pb.ArrayEncoding(list=msg), num_items
