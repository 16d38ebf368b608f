"""Mini-block dictionaries decoded once per process by their stored bytes.

A page's dictionary is decoded whole the first time a read needs an item of it (a
general-compressed one cannot be decoded in part): a point lookup through a BTREE
index decompresses the dictionary of the index page and of each data column it
takes, some hundreds of kilobytes each, which costs more than the rest of its
decoding.  A dataset opened anew reads the same bytes again; decoding them again
would give the same items, so the items are kept by those bytes (with how they are
encoded, how many there are and their type), a few small dictionaries at most.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from lancelet.file.memo import Memo
from lancelet.file.v2_1.read.values import U8

__all__ = ["decoded"]

# Dictionaries kept, and the largest kept (its stored and its decoded bytes): at most
# a few megabytes in all.
_KEPT = 8
_KEPT_BYTES = 1 << 20

_DECODED: Memo[pa.Array | None] = Memo(_KEPT)


def decoded(
    encoding: bytes, buffer: U8, items: int, item_type: pa.DataType, decode: Callable[[], pa.Array]
) -> pa.Array:
    """``decode()``, the items of the dictionary ``buffer`` encoded as ``encoding``
    describes, or the same items decoded from the same bytes before."""
    if len(buffer) > _KEPT_BYTES:
        return decode()
    made: list[pa.Array] = []

    def make() -> pa.Array | None:
        made.append(decode())
        return made[0] if made[0].nbytes <= _KEPT_BYTES else None  # None: not kept

    found = _DECODED.get((encoding, bytes(buffer), items, item_type), make)
    if found is not None:
        return found
    return made[0] if made else decode()
