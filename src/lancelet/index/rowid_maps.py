"""Many row id tree maps serialized at once, as a BITMAP index stores them: one per
distinct value, written with whole-array numpy rather than one Roaring bitmap object
per value (a column of a million distinct values makes a million maps).

The bytes are those of :func:`lancelet.index.rowid_map.serialize`, all integers little
endian: per map, ``u32`` fragments, then per fragment ``u32`` id, ``u32`` size and a
Roaring bitmap of row offsets in the portable serialization without run containers:

    u32 cookie 12346, u32 containers
    per container: u16 key (the offsets' high 16 bits), u16 cardinality - 1
    per container: u32 where its data starts, from the bitmap's first byte
    per container: an array (cardinality <= 4096: its low 16 bits, u16 each, in order)
                   or a bitmap (1024 u64 words, bit ``low`` set for each offset)

Every part is a whole number of 16-bit words, so the output is written as ``u16``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_COOKIE = 12346  # Roaring's SERIAL_COOKIE_NO_RUNCONTAINER
_ARRAY_MAX = 4096  # the most values an array container holds
_WORDS = 1024  # u64 words of a bitmap container
_BINARY_MAX = (1 << 31) - 1  # bytes one Arrow binary array can hold


class _Layout:
    """Where the parts of every map go.  Rows are row addresses grouped by map;
    an *entry* is one fragment of one map, a *container* 2**16 offsets of an entry."""

    def __init__(self, ids: np.ndarray, starts: np.ndarray) -> None:
        n = len(ids)
        # The address's 16-bit parts, as views (no copies): the low 16 bits of the row
        # offset, its high 16 bits (the container's key), then the fragment id.
        parts = ids.astype("<u8", copy=False).view("<u2").reshape(n, 4)
        self.lows, self.keys = parts[:, 0], parts[:, 1]
        self.fragments = ids.astype("<u8", copy=False).view("<u4").reshape(n, 2)[:, 1]
        opens_map = np.zeros(n, dtype=bool)
        opens_map[starts] = True
        opens_entry = opens_map.copy()
        opens_entry[1:] |= self.fragments[1:] != self.fragments[:-1]
        opens_container = opens_entry.copy()
        opens_container[1:] |= self.keys[1:] != self.keys[:-1]
        self.entry_rows = np.flatnonzero(opens_entry)
        self.container_rows = np.flatnonzero(opens_container)
        self.cardinality = np.diff(np.r_[self.container_rows, n])
        self.bitmap = self.cardinality > _ARRAY_MAX
        data_bytes = np.where(self.bitmap, 8 * _WORDS, 2 * self.cardinality)
        # Every map opens an entry, every entry a container: each container's entry,
        # and each entry's map, count the openings before them.
        first_container = np.flatnonzero(opens_entry[self.container_rows])
        self.entry_of = np.cumsum(opens_entry[self.container_rows]) - 1
        first_entry = np.flatnonzero(opens_map[self.entry_rows])
        map_of = np.cumsum(opens_map[self.entry_rows]) - 1
        self.containers = np.diff(np.r_[first_container, len(self.container_rows)])
        self.entry_count = np.diff(np.r_[first_entry, len(self.entry_rows)])
        data = _sums(data_bytes, first_container)
        self.bitmap_bytes = 8 + 8 * self.containers + data
        entry_bytes = 8 + self.bitmap_bytes
        self.map_bytes = 4 + _sums(entry_bytes, first_entry)
        # Entries follow one another, each map's after its 4-byte count.
        self.entry_at = _exclusive(entry_bytes) + 4 * (map_of + 1)
        self.bitmap_at = self.entry_at + 8
        # Each container's place in its entry, and where its data starts in the bitmap.
        self.index = np.arange(len(self.container_rows)) - first_container[self.entry_of]
        before = _exclusive(data_bytes)
        within = before - before[first_container][self.entry_of]
        self.data_from_bitmap = 8 + 8 * self.containers[self.entry_of] + within


def _sums(values: np.ndarray, firsts: np.ndarray) -> np.ndarray:
    """Sums of ``values`` over the consecutive ranges starting at ``firsts``."""
    if not len(firsts):
        return np.zeros(0, dtype=np.int64)
    sums: np.ndarray = np.add.reduceat(values.astype(np.int64), firsts)
    return sums


def _exclusive(sizes: np.ndarray) -> np.ndarray:
    out = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], out=out[1:])
    return out


def _distinct(ids: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``ids`` with each group's repeats dropped (a set holds an address once)."""
    repeated = np.zeros(len(ids), dtype=bool)
    repeated[1:] = ids[1:] == ids[:-1]
    repeated[starts] = False
    if not repeated.any():
        return ids, starts
    kept = np.flatnonzero(~repeated)
    return ids[kept], np.searchsorted(kept, starts)


def serialize_groups(ids: np.ndarray, starts: np.ndarray) -> pa.Array | pa.ChunkedArray:
    """The serialized map of each group of ``ids`` (uint64 row addresses, ascending
    within a group, a repeated address counted once; group ``g`` is
    ``ids[starts[g]:starts[g + 1]]``, none empty), as a binary array."""
    ids, starts = _distinct(np.asarray(ids, dtype=np.uint64), np.asarray(starts, np.int64))
    layout = _Layout(ids, starts)
    map_at = _exclusive(layout.map_bytes)
    total = int(layout.map_bytes.sum())
    out = np.zeros(total // 2, dtype=np.uint16)
    _put32(out, map_at, layout.entry_count)
    _put32(out, layout.entry_at, layout.fragments[layout.entry_rows])
    _put32(out, layout.entry_at + 4, layout.bitmap_bytes)
    _put32(out, layout.bitmap_at, np.full(len(layout.entry_rows), _COOKIE))
    _put32(out, layout.bitmap_at + 4, layout.containers)
    _containers(out, layout)
    return _binary(out.view(np.uint8), np.r_[map_at, total])


def _containers(out: np.ndarray, layout: _Layout) -> None:
    """Each container's header entries, then its data."""
    bitmap_at = layout.bitmap_at[layout.entry_of]
    described = bitmap_at + 8 + 4 * layout.index
    out[described // 2] = layout.keys[layout.container_rows]
    out[described // 2 + 1] = (layout.cardinality - 1).astype(np.uint16)
    located = bitmap_at + 8 + 4 * layout.containers[layout.entry_of] + 4 * layout.index
    _put32(out, located, layout.data_from_bitmap)
    data_at = bitmap_at + layout.data_from_bitmap
    _arrays(out, layout, data_at)
    _bitmaps(out, layout, data_at)


def _arrays(out: np.ndarray, layout: _Layout, data_at: np.ndarray) -> None:
    """Array containers: their low 16 bits, one u16 each, in order (each container's
    rows land at a fixed shift from where they are)."""
    arrays = np.flatnonzero(~layout.bitmap)
    counts = layout.cardinality[arrays]
    shift = data_at[arrays] // 2 - layout.container_rows[arrays]
    rows = _ranges(layout.container_rows[arrays], counts)
    out[rows + np.repeat(shift, counts)] = layout.lows[rows]


def _bitmaps(out: np.ndarray, layout: _Layout, data_at: np.ndarray) -> None:
    """Bitmap containers: 1024 u64 words, bit ``low % 64`` of word ``low // 64`` set
    for each value.  One container at a time: each holds over 4096 values, so there
    are fewer containers than 1 in 4096 rows."""
    bits = np.zeros(1 << 16, dtype=bool)
    for c in np.flatnonzero(layout.bitmap).tolist():
        first = int(layout.container_rows[c])
        bits[:] = False
        bits[layout.lows[first : first + int(layout.cardinality[c])]] = True
        at = int(data_at[c]) // 2
        out[at : at + 4 * _WORDS] = np.packbits(bits, bitorder="little").view("<u2")


def _ranges(firsts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The rows of consecutive ranges, concatenated."""
    shifts = np.repeat(firsts - _exclusive(counts), counts)
    rows: np.ndarray = shifts + np.arange(int(counts.sum()))
    return rows


def _put32(out: np.ndarray, at: np.ndarray, values: np.ndarray) -> None:
    """u32 ``values`` at byte offsets ``at`` (even) of a u16 array, little endian."""
    halves = np.asarray(values, dtype="<u4").view(np.uint16).reshape(-1, 2)
    out[at // 2] = halves[:, 0]
    out[at // 2 + 1] = halves[:, 1]


def _binary(data: np.ndarray, bounds: np.ndarray) -> pa.Array | pa.ChunkedArray:
    """The byte ranges between ``bounds`` as a binary array (chunked past 2 GiB)."""
    buffer = pa.py_buffer(data)
    chunks: list[pa.Array] = []
    first = 0
    while first < len(bounds) - 1:
        # As many maps as fit in one binary array, at least one.
        limit = bounds[first] + _BINARY_MAX
        last = max(first + 1, int(np.searchsorted(bounds, limit, side="right")) - 1)
        offsets = (bounds[first : last + 1] - bounds[first]).astype(np.int32)
        piece = buffer.slice(int(bounds[first]), int(bounds[last] - bounds[first]))
        chunks.append(
            pa.Array.from_buffers(pa.binary(), last - first, [None, pa.py_buffer(offsets), piece])
        )
        first = last
    if len(chunks) <= 1:
        return chunks[0] if chunks else pa.array([], pa.binary())
    return pa.chunked_array(chunks, pa.binary())
