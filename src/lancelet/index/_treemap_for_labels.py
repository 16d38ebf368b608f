"""The reference's row-address tree map serialization, for the label-list bitmaps and
the null-row sets of zone maps and Bloom filters.

The layout: a little-endian ``u32`` entry count, then per fragment (ascending) its
``u32`` id, a ``u32`` byte size and a Roaring bitmap (portable serialization) of the
row offsets.  A size of 0 means "every row of the fragment", which these indices
never write; reading one is refused, since the rows it stands for are unknown here.
"""

from __future__ import annotations

import array
import struct

import numpy as np
from pyroaring import BitMap

from lancelet.errors import CorruptIndexError
from lancelet.table import row_address

_U32 = struct.Struct("<I")


def serialize_treemap(addresses: np.ndarray) -> bytes:
    """The bytes for a set of row addresses (any order, repeats allowed)."""
    unique = np.unique(np.asarray(addresses, dtype=np.uint64))
    fragments, offsets = row_address.unpack(unique)
    ids, starts = np.unique(fragments, return_index=True)
    bounds = np.append(starts, len(unique))
    parts = [_U32.pack(len(ids))]
    for i, fragment in enumerate(ids.tolist()):
        chunk = offsets[bounds[i] : bounds[i + 1]]
        # No run optimisation: the reference writes array and bitmap containers only.
        bitmap = BitMap(array.array("I", chunk.tobytes()), optimize=False)
        data = bitmap.serialize()
        parts.append(_U32.pack(fragment) + _U32.pack(len(data)) + data)
    return b"".join(parts)


def deserialize_treemap(data: bytes, where: str) -> np.ndarray:
    """Sorted unique uint64 addresses; anything malformed is a :class:`CorruptIndexError`."""
    view = memoryview(data)
    count = _read_u32(view, 0, where)
    position = 4
    pieces: list[np.ndarray] = []
    previous = -1
    for _ in range(count):
        fragment = _read_u32(view, position, where)
        size = _read_u32(view, position + 4, where)
        position += 8
        if fragment <= previous:
            raise CorruptIndexError(f"{where}: row-address map lists fragments out of order")
        previous = fragment
        if size == 0:
            raise CorruptIndexError(
                f"{where}: row-address map marks all of fragment {fragment}, "
                "which this index never stores"
            )
        if position + size > len(view):
            raise CorruptIndexError(f"{where}: row-address map is cut short")
        offsets = _bitmap_offsets(bytes(view[position : position + size]), where)
        position += size
        pieces.append(row_address.of_offsets(fragment, offsets))
    if position != len(view):
        raise CorruptIndexError(f"{where}: row-address map has {len(view) - position} stray bytes")
    if not pieces:
        return np.zeros(0, dtype=np.uint64)
    return np.concatenate(pieces)


def _read_u32(view: memoryview, position: int, where: str) -> int:
    if position + 4 > len(view):
        raise CorruptIndexError(f"{where}: row-address map is cut short")
    value: int = _U32.unpack_from(view, position)[0]
    return value


def _bitmap_offsets(data: bytes, where: str) -> np.ndarray:
    try:
        bitmap = BitMap.deserialize(data)
    except Exception as exc:  # pyroaring raises assorted types for bad bytes
        raise CorruptIndexError(f"{where}: a Roaring bitmap does not parse: {exc}") from exc
    if len(bitmap) == 0:
        raise CorruptIndexError(f"{where}: row-address map holds an empty fragment entry")
    offsets: np.ndarray = np.frombuffer(bitmap.to_array(), dtype=np.uint32)
    return offsets
