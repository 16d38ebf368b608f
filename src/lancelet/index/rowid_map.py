"""pylance's serialized ``RowIdTreeMap``: a set of row addresses, one Roaring bitmap of
row offsets per fragment.

The bytes, all integers little-endian::

    u32 number of fragments
    per fragment, ascending fragment id:
        u32 fragment id
        u32 n: size of the bitmap that follows; 0 means "every row of the fragment"
        n bytes: a Roaring bitmap of row offsets, in the portable serialization

pylance writes bitmaps without run containers, which is what pyroaring's ``serialize``
gives for a bitmap never run-optimized, so the bytes are pylance's.
"""

from __future__ import annotations

import array
import itertools
import struct
from dataclasses import dataclass

import numpy as np
from pyroaring import BitMap

from lancelet.errors import CorruptIndexError
from lancelet.table import row_address

_U32 = struct.Struct("<I")
_ENTRY = struct.Struct("<II")


@dataclass(frozen=True)
class RowAddressSet:
    """A deserialized map: the addresses listed, and the fragments included whole."""

    addresses: np.ndarray  # sorted unique uint64
    full_fragments: np.ndarray  # uint32 fragment ids whose every row is included


def _bitmap(offsets: np.ndarray) -> BitMap:
    # No run containers: pylance never writes them (and BitMap optimizes by default).
    values = array.array("I", np.ascontiguousarray(offsets, dtype=np.uint32).tobytes())
    return BitMap(values, optimize=False)


def serialize(addresses: np.ndarray) -> bytes:
    """The map holding ``addresses`` (sorted unique uint64 row addresses)."""
    addresses = np.asarray(addresses, dtype=np.uint64)
    fragments, offsets = row_address.unpack(addresses)
    starts: list[int] = (
        np.flatnonzero(np.r_[True, fragments[1:] != fragments[:-1]]).tolist()
        if len(fragments)
        else []
    )
    bounds = [*starts, len(addresses)]
    parts = [_U32.pack(len(starts))]
    for lo, hi in itertools.pairwise(bounds):
        body = _bitmap(offsets[lo:hi]).serialize()
        parts.append(_ENTRY.pack(int(fragments[lo]), len(body)))
        parts.append(body)
    return b"".join(parts)


def deserialize(data: bytes, where: str) -> RowAddressSet:
    """Read a serialized map; ``where`` names it in errors (file and row)."""
    view = memoryview(data)
    if len(view) < 4:
        raise CorruptIndexError(f"{where}: a row id map of {len(view)} bytes has no header")
    (count,) = _U32.unpack_from(view, 0)
    # Every entry takes at least 8 bytes: a count beyond that is damage, not data.
    if count > (len(view) - 4) // 8:
        raise CorruptIndexError(
            f"{where}: a row id map claims {count} fragments in {len(view)} bytes"
        )
    pos = 4
    chunks: list[np.ndarray] = []
    full: list[int] = []
    previous = -1
    for _ in range(count):
        if pos + 8 > len(view):
            raise CorruptIndexError(f"{where}: the row id map ends inside a fragment header")
        fragment, size = _ENTRY.unpack_from(view, pos)
        pos += 8
        if fragment <= previous:
            raise CorruptIndexError(f"{where}: fragment ids of the row id map are not ascending")
        previous = fragment
        if size == 0:
            full.append(fragment)
            continue
        if pos + size > len(view):
            raise CorruptIndexError(f"{where}: a bitmap of fragment {fragment} runs past the map")
        offsets = _offsets(bytes(view[pos : pos + size]), where, fragment)
        pos += size
        chunks.append(row_address.of_offsets(fragment, offsets))
    if pos != len(view):
        raise CorruptIndexError(f"{where}: {len(view) - pos} bytes follow the row id map")
    addresses = np.concatenate(chunks) if chunks else np.empty(0, dtype=np.uint64)
    return RowAddressSet(addresses, np.asarray(full, dtype=np.uint32))


def _offsets(body: bytes, where: str, fragment: int) -> np.ndarray:
    try:
        bitmap = BitMap.deserialize(body)
    except Exception as exc:  # pyroaring raises assorted types for bad bytes
        raise CorruptIndexError(
            f"{where}: the bitmap of fragment {fragment} does not deserialize: {exc}"
        ) from exc
    return np.frombuffer(bitmap.to_array(), dtype=np.uint32)
