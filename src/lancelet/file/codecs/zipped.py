"""Zipping values with their levels: the two buffers of a full-zip page (2.1 and later).

Every item (a value, or a null or empty list without one) is written in order as its
control word, ``rep << bits_def | def`` in 0, 1, 2 or 4 little-endian bytes (no bytes
when both widths are 0), followed by its value when it has one:

* fixed-width values follow every *visible* item (null items included, as a
  placeholder), ``width`` bytes each;
* variable-width values follow only *valid* items (definition level 0), as a 4 or
  8-byte length and the bytes.

An item is visible unless it marks a null or empty list: with list layers, those are the
items whose definition level exceeds ``max_visible`` (the definition levels of the
layers below the first list).  The repetition index holds where every row starts (an
item whose repetition level is the maximum starts a row) and the data size, byte-packed
in the fewest of 1, 2, 4 or 8 bytes that holds the writer's size bound; it is written
for variable-width values and whenever there are lists.

These functions take the levels and the already compressed per-value bytes, and lay
them out with whole-array operations; choosing the compression is the writer's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.file.codecs._chunks import IntArray

__all__ = ["Levels", "Zipped", "bytepack", "fixed_size_list_rows", "zip_fixed", "zip_variable"]

_NO_SEPARATOR = pa.scalar(b"", pa.large_binary())


@dataclass(frozen=True)
class Levels:
    """One entry per item: repetition and definition levels (None: all 0), the
    page's maximum repetition level, and ``max_visible`` (None without lists)."""

    rep: npt.NDArray[np.integer] | None
    defs: npt.NDArray[np.integer] | None
    max_rep: int = 0
    max_visible: int | None = None


@dataclass(frozen=True)
class Zipped:
    """A full-zip page's buffers and the layout fields that describe them."""

    data: pa.Buffer  # compares equal to the same bytes
    repetition_index: bytes | None
    bits_rep: int
    bits_def: int
    num_items: int
    num_visible_items: int


def _bits(levels: npt.NDArray[np.integer] | None) -> int:
    return 0 if levels is None or not levels.size else int(levels.max()).bit_length()


def _word_bytes(bits: int) -> int:
    return 0 if bits == 0 else 1 if bits <= 8 else 2 if bits <= 16 else 4


def bytepack(values: IntArray, max_value: int) -> bytes:
    """``values`` as little-endian integers of the fewest of 1, 2, 4 or 8 bytes that
    hold ``max_value`` (nothing at all when it is 0)."""
    if max_value == 0:
        return b""
    width = next(w for w in (1, 2, 4, 8) if max_value < 1 << (8 * w))
    return np.asarray(values, dtype=np.uint64).astype(f"<u{width}").tobytes()


@dataclass(frozen=True)
class _Items:
    count: int
    word: int  # control word bytes
    words: IntArray
    new_row: npt.NDArray[np.bool_]
    visible: npt.NDArray[np.bool_]
    valid: npt.NDArray[np.bool_]
    bits_rep: int
    bits_def: int


def _items(levels: Levels, count: int) -> _Items:
    rep = np.zeros(count, np.int64) if levels.rep is None else levels.rep.astype(np.int64)
    defs = np.zeros(count, np.int64) if levels.defs is None else levels.defs.astype(np.int64)
    if rep.size != count or defs.size != count:
        raise ValueError("levels must have one entry per item")
    bits_rep, bits_def = _bits(levels.rep), _bits(levels.defs)
    visible = np.ones(count, bool) if levels.max_visible is None else defs <= levels.max_visible
    new_row = np.ones(count, bool) if levels.rep is None else rep == levels.max_rep
    return _Items(
        count,
        _word_bytes(bits_rep + bits_def),
        (rep << bits_def) | defs,
        new_row,
        visible,
        defs == 0,
        bits_rep,
        bits_def,
    )


def _join(head: npt.NDArray[np.uint8], head_sizes: IntArray, data: npt.NDArray[np.uint8],
          value_offsets: IntArray) -> pa.Buffer:  # fmt: skip
    """Item by item, its ``head_sizes[i]`` bytes of ``head`` then its value
    ``data[value_offsets[i]:value_offsets[i + 1]]``.

    One pass of Arrow's element-wise binary concatenation: the joined array's values
    buffer is the output, so no byte-sized index arrays are built and the output is not
    copied again."""
    count = len(head_sizes)
    head_offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(head_sizes, out=head_offsets[1:])
    total = int(head_offsets[-1] + value_offsets[-1] - value_offsets[0])
    if total == 0:
        return pa.py_buffer(b"")
    heads = _binary(count, head_offsets, head)
    values = _binary(count, np.ascontiguousarray(value_offsets, dtype=np.int64), data)
    joined = pc.binary_join_element_wise(heads, values, _NO_SEPARATOR)
    return joined.buffers()[2].slice(0, total)


def _binary(count: int, offsets: IntArray, data: npt.NDArray[np.uint8]) -> pa.Array:
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(data))]
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), count, buffers)


def _heads(items: _Items, lengths: IntArray, stored: npt.NDArray[np.bool_],
           length_bytes: int) -> tuple[npt.NDArray[np.uint8], IntArray]:  # fmt: skip
    """Each item's control word, then its value's length when it has a value."""
    words = items.words.astype("<u4").view(np.uint8).reshape(-1, 4)[:, : items.word]
    if not length_bytes:
        return np.ascontiguousarray(words).reshape(-1), np.full(items.count, items.word)
    sizes = lengths.astype(f"<u{length_bytes}").view(np.uint8).reshape(-1, length_bytes)
    rows = np.concatenate([words, sizes], axis=1)
    if bool(stored.all()):
        return rows.reshape(-1), np.full(items.count, rows.shape[1])
    keep = np.ones(rows.shape, dtype=bool)
    keep[~stored, items.word :] = False
    return rows[keep], items.word + length_bytes * stored.astype(np.int64)


def _values_bytes(values: pa.Array) -> npt.NDArray[np.uint8]:
    """The bytes of a large binary array's values, in order."""
    raw = values.buffers()[2]
    if raw is None:
        return np.zeros(0, dtype=np.uint8)
    ends = [values.offset, values.offset + len(values)]
    start, end = np.frombuffer(values.buffers()[1], np.int64)[ends]
    return np.frombuffer(raw, np.uint8)[int(start) : int(end)]


def _item_offsets(sizes: IntArray, base: int) -> IntArray:
    out = np.empty(len(sizes) + 1, dtype=np.int64)
    out[0] = base
    np.cumsum(sizes, out=out[1:])
    out[1:] += base
    return out


def zip_fixed(values: npt.NDArray[np.uint8], levels: Levels, num_items: int) -> Zipped:
    """Zip fixed-width values: ``values`` is ``(visible items, width)`` bytes."""
    items = _items(levels, num_items)
    if values.ndim != 2 or values.shape[0] != int(items.visible.sum()):
        raise ValueError("fixed values must be (visible items, width) bytes")
    width = values.shape[1]
    value_sizes = np.where(items.visible, width, 0)
    sizes = items.word + value_sizes
    starts = np.cumsum(sizes) - sizes
    stored = np.zeros(num_items, dtype=bool)
    head, head_sizes = _heads(items, value_sizes, stored, 0)
    out = _join(head, head_sizes, values.reshape(-1), _item_offsets(value_sizes, 0))
    with_index = levels.rep is not None
    return _finish(out, items, starts, out.size if with_index else 0)


def zip_variable(
    offsets: IntArray,
    data: npt.NDArray[np.uint8],
    levels: Levels,
    num_items: int,
    *,
    length_bytes: int = 4,
) -> Zipped:
    """Zip variable-width values: value ``i`` of the visible items is
    ``data[offsets[i]:offsets[i + 1]]`` (null ones get no length, and their bytes, if
    any, are left out)."""
    if length_bytes not in (4, 8):
        raise ValueError("value lengths are 4 or 8 bytes")
    items = _items(levels, num_items)
    visible = int(items.visible.sum())
    if offsets.size != visible + 1:
        raise ValueError("offsets must have one entry per visible item, plus one")
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.zeros(num_items, dtype=np.int64)
    lengths[items.visible] = np.diff(offsets)
    stored = items.visible & items.valid
    # The reference bounds the index by a size that counts a length for every
    # visible item, null ones included; the index width follows that bound.
    bound = int(offsets[-1] - offsets[0]) + items.word * num_items + length_bytes * visible
    if bool(lengths[~stored].any()):
        # Bytes under null values (rare): keep only the stored values' bytes.
        values = _binary(visible, offsets, data).filter(pa.array(stored[items.visible]))
        data = _values_bytes(values)
        offsets = _item_offsets(np.where(stored, lengths, 0)[items.visible], 0)
        lengths = np.where(stored, lengths, 0)
    value_sizes = np.where(stored, lengths, 0)
    sizes = items.word + value_sizes + length_bytes * stored
    starts = np.cumsum(sizes) - sizes
    head, head_sizes = _heads(items, lengths, stored, length_bytes)
    out = _join(head, head_sizes, data, _item_offsets(value_sizes, int(offsets[0])))
    return _finish(out, items, starts, bound)


def _finish(out: pa.Buffer, items: _Items, starts: IntArray, bound: int) -> Zipped:
    index = None
    if bound:
        index = bytepack(np.append(starts[items.new_row], out.size), bound)
    return Zipped(
        out,
        index,
        items.bits_rep,
        items.bits_def,
        items.count,
        int(items.visible.sum()),
    )


def fixed_size_list_rows(
    validity: Sequence[npt.NDArray[np.bool_] | None], data: npt.NDArray[np.uint8]
) -> npt.NDArray[np.uint8]:
    """The per-value bytes of a fixed-size list for :func:`zip_fixed`: for each list
    layer from the outside in that has item validity, ``(values, items so far)``
    booleans packed into ``ceil(items / 8)`` bytes, then the ``(values, k)`` data."""
    parts = [np.packbits(v, axis=1, bitorder="little") for v in validity if v is not None]
    return np.concatenate([*parts, data], axis=1)
