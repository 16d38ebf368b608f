"""Bit-packed integer encodings of Lance 2.0 (``Bitpacked`` and ``BitpackedForNonNeg``).

``Bitpacked`` (ArrayEncoding field 10) is a plain little-endian bit stream: value
``i`` occupies stream bits ``[i*b, (i+1)*b)``, where stream bit ``k`` is bit
``k % 8`` of byte ``k // 8``, least significant value bit first.  When ``signed``
is set the top stored bit is a sign bit and is extended on decode.

``BitpackedForNonNeg`` (field 12) uses the FastLanes layout: values are grouped in
chunks of 1024, every chunk is padded with zeros to 1024 values and packed into
``128 * b`` bytes made of words of the uncompressed width ``T``.  Inside a chunk
the 1024 values are spread over ``1024 / T`` lanes; lane ``l`` holds ``T`` values
(``row`` 0..T-1) as a bit stream over the words ``packed[row_word * lanes + l]``,
and row ``r`` of lane ``l`` is value ``FL_ORDER[r // 8] * 16 + (r % 8) * 128 + l``.

pylance 14 never writes either encoding into a 2.0 file (see the facts notes), but
the reader in the reference accepts both, so files from other writers may hold them.
All work is done with whole-array numpy operations: the loops below run over the
8 positions of a byte group or the ``T`` rows of a FastLanes lane, never per value.
"""

from __future__ import annotations

from functools import cache
from typing import Final

import numpy as np
import numpy.typing as npt

from lancelet.errors import CorruptFileError, UnsupportedEncodingError
from lancelet.file.codecs import jit
from lancelet.file.codecs._chunks import gather_ranges
from lancelet.file.codecs.kernels import bitpacking as kernels

_UNCOMPRESSED_WIDTHS: Final = (8, 16, 32, 64)
_CHUNK: Final = 1024
# FastLanes interleaves its 8-row blocks in this order so that SIMD lanes of any
# width (8..64 bits) see the same value order.
_FL_ORDER: Final = (0, 4, 2, 6, 1, 5, 3, 7)

U64Array = npt.NDArray[np.uint64]
UIntArray = npt.NDArray[np.unsignedinteger]


def _check_widths(compressed_bits: int, uncompressed_bits: int) -> None:
    if uncompressed_bits not in _UNCOMPRESSED_WIDTHS:
        raise UnsupportedEncodingError(
            f"bit-packed page: uncompressed_bits_per_value={uncompressed_bits}, "
            f"expected one of {_UNCOMPRESSED_WIDTHS}"
        )
    if not 0 <= compressed_bits <= uncompressed_bits:
        raise CorruptFileError(
            f"bit-packed page: compressed_bits_per_value={compressed_bits} is outside "
            f"0..{uncompressed_bits} (the uncompressed width)"
        )


def _check_count(num_values: int) -> None:
    if num_values < 0:
        raise CorruptFileError(f"bit-packed page: negative value count {num_values}")


def _need_bytes(buf: bytes | memoryview, needed: int, what: str) -> memoryview:
    view = memoryview(buf).cast("B")
    if len(view) < needed:
        raise CorruptFileError(f"{what}: buffer has {len(view)} bytes but {needed} are needed")
    return view


def _low_mask(bits: int) -> np.uint64:
    mask: np.uint64 = np.uint64((1 << bits) - 1)
    return mask


def _result_dtype(uncompressed_bits: int, signed: bool) -> np.dtype[np.integer]:
    kind = "i" if signed else "u"
    return np.dtype(f"<{kind}{uncompressed_bits // 8}")


# ---------------------------------------------------------------------------
# Bitpacked (plain little-endian bit stream)
# ---------------------------------------------------------------------------


def bitpacked_size(num_values: int, compressed_bits: int) -> int:
    """Bytes a ``Bitpacked`` buffer of ``num_values`` values needs."""
    return (num_values * compressed_bits + 7) // 8


def _byte_groups(view: memoryview, num_values: int, bits: int) -> npt.NDArray[np.uint8]:
    """Lay the stream out as rows of ``bits`` bytes, i.e. 8 values per row.

    8 values of ``bits`` bits fill exactly ``bits`` bytes, so within a row every
    value position has a fixed byte range and shift; that is what makes the
    decode a handful of column operations.
    """
    groups = (num_values + 7) // 8
    padded = np.zeros(groups * bits, dtype=np.uint8)
    used = bitpacked_size(num_values, bits)
    padded[:used] = np.frombuffer(view[:used], dtype=np.uint8)
    return padded.reshape(groups, bits)


def _extract_position(rows: npt.NDArray[np.uint8], pos: int, bits: int) -> U64Array:
    """Read value ``pos`` (0..7) of every 8-value row."""
    first_bit = pos * bits
    start, shift = divmod(first_bit, 8)
    end = (first_bit + bits - 1) // 8
    out: U64Array = rows[:, start].astype(np.uint64) >> np.uint64(shift)
    for k in range(start + 1, end + 1):
        # A value spans at most 9 bytes; byte k lands at 8*(k-start)-shift < 64.
        out |= rows[:, k].astype(np.uint64) << np.uint64(8 * (k - start) - shift)
    out &= _low_mask(bits)
    return out


def _sign_extend(values: U64Array, bits: int) -> U64Array:
    if bits in {0, 64}:
        return values
    negative = (values >> np.uint64(bits - 1)) & np.uint64(1)
    high = ~_low_mask(bits)
    return np.where(negative.astype(bool), values | high, values)


def decode_bitpacked(
    buf: bytes | memoryview,
    compressed_bits: int,
    uncompressed_bits: int,
    signed: bool,
    num_values: int,
) -> npt.NDArray[np.integer]:
    """Decode a ``Bitpacked`` buffer into ``num_values`` integers.

    Returns ``int{uncompressed_bits}`` values when ``signed`` (the stored top bit
    is sign-extended), otherwise ``uint{uncompressed_bits}``; callers wanting a
    different integer type of the same width can ``.view`` the result.
    """
    _check_widths(compressed_bits, uncompressed_bits)
    _check_count(num_values)
    needed = bitpacked_size(num_values, compressed_bits)
    view = _need_bytes(buf, needed, "Bitpacked page")
    dtype = _result_dtype(uncompressed_bits, signed)
    if compressed_bits == 0 or num_values == 0:
        return np.zeros(num_values, dtype=dtype)
    rows = _byte_groups(view, num_values, compressed_bits)
    wide = np.empty((rows.shape[0], 8), dtype=np.uint64)
    for pos in range(8):
        wide[:, pos] = _extract_position(rows, pos, compressed_bits)
    flat = wide.reshape(-1)[:num_values]
    if signed:
        flat = _sign_extend(flat, compressed_bits)
    # Truncating to the target width keeps the low bytes, which is exactly the
    # two's-complement value for sign-extended input.
    narrow = flat.astype(np.dtype(f"<u{uncompressed_bits // 8}"))
    return narrow.view(dtype)


def bits_needed(values: npt.NDArray[np.integer]) -> tuple[int, bool]:
    """Smallest ``(compressed_bits, signed)`` that represents ``values`` losslessly.

    Follows the reference writer's rule: unsigned data uses its highest set bit;
    signed data adds a sign bit only when a negative value is present.  The
    result is at least 1 because a zero-width stream is not written.
    """
    if values.size == 0:
        return 1, False
    if values.dtype.kind == "u":
        top = int(np.bitwise_or.reduce(values.astype(np.uint64)))
        return max(top.bit_length(), 1), False
    as_int = values.astype(np.int64)
    low, high = int(as_int.min()), int(as_int.max())
    magnitude = max(max(high, 0).bit_length(), (~low).bit_length() if low < 0 else 0)
    signed = low < 0
    return max(magnitude + int(signed), 1), signed


def encode_bitpacked(values: npt.NDArray[np.integer], compressed_bits: int) -> bytes:
    """Pack integers into a ``Bitpacked`` stream of ``compressed_bits`` per value.

    Only the low ``compressed_bits`` bits of each value are kept; pick the width
    with :func:`bits_needed` (and set ``signed`` in the encoding accordingly).
    """
    width = values.dtype.itemsize * 8
    _check_widths(compressed_bits, width)
    if compressed_bits == 0 or values.size == 0:
        return b""
    groups = (values.size + 7) // 8
    flat = np.zeros(groups * 8, dtype=np.uint64)
    flat[: values.size] = values.reshape(-1).view(f"<u{values.dtype.itemsize}")
    wide = (flat & _low_mask(compressed_bits)).reshape(groups, 8)
    rows = np.zeros((groups, compressed_bits), dtype=np.uint8)
    for pos in range(8):
        _scatter_position(rows, wide[:, pos], pos, compressed_bits)
    return rows.reshape(-1)[: bitpacked_size(values.size, compressed_bits)].tobytes()


def _scatter_position(rows: npt.NDArray[np.uint8], column: U64Array, pos: int, bits: int) -> None:
    """OR value ``pos`` of every row into its bytes (inverse of the extract step)."""
    first_bit = pos * bits
    start, shift = divmod(first_bit, 8)
    end = (first_bit + bits - 1) // 8
    byte_mask = np.uint64(0xFF)
    rows[:, start] |= ((column << np.uint64(shift)) & byte_mask).astype(np.uint8)
    for k in range(start + 1, end + 1):
        part = (column >> np.uint64(8 * (k - start) - shift)) & byte_mask
        rows[:, k] |= part.astype(np.uint8)


# ---------------------------------------------------------------------------
# BitpackedForNonNeg (FastLanes, chunks of 1024 values)
# ---------------------------------------------------------------------------


def fastlanes_size(num_values: int, compressed_bits: int) -> int:
    """Bytes a ``BitpackedForNonNeg`` buffer of ``num_values`` values needs."""
    chunks = (num_values + _CHUNK - 1) // _CHUNK
    return chunks * _CHUNK * compressed_bits // 8


def _lane_positions(row: int, lanes: int) -> npt.NDArray[np.intp]:
    base = _FL_ORDER[row // 8] * 16 + (row % 8) * 128
    return np.arange(base, base + lanes, dtype=np.intp)


@cache
def _positions(width: int) -> npt.NDArray[np.intp]:
    """Every row's lane positions, (width, lanes)."""
    lanes = _CHUNK // width
    return np.stack([_lane_positions(row, lanes) for row in range(width)])


# Up to this many chunks, unpacking by gathering every value's words at once beats
# the per-row loop, whose cost is its fixed number of numpy calls (measured: 10x for
# one chunk, even at 32, behind at a few hundred).
_FEW_CHUNKS: Final = 32


def _unpack_chunks(words: UIntArray, bits: int) -> UIntArray:
    """Unpack ``words`` shaped (chunks, bits, lanes) into (chunks, 1024) values."""
    if bits == 0:
        return np.zeros((words.shape[0], _CHUNK), dtype=words.dtype)
    if words.shape[0] <= _FEW_CHUNKS:
        return _unpack_by_gather(words, bits)
    return _unpack_by_rows(words, bits)


@cache
def _gather_plan(bits: int, width: int) -> tuple[npt.NDArray[np.intp], ...]:
    """For each of a chunk's 1024 values (in value order): the word holding its low
    bits and the shift; for the values that spill into the next word of their lane,
    their positions, that word and its shift."""
    lanes = _CHUNK // width
    row = np.repeat(np.arange(width), lanes)
    lane = np.tile(np.arange(lanes), width)
    position = np.asarray(_FL_ORDER)[row // 8] * 16 + (row % 8) * 128 + lane
    word, shift = np.divmod(row * bits, width)
    order = np.argsort(position)
    first, shift = (word * lanes + lane)[order], shift[order]
    spill = np.flatnonzero(shift + bits > width)
    return first, shift, spill, first[spill] + lanes, width - shift[spill]


def _unpack_by_gather(words: UIntArray, bits: int) -> UIntArray:
    """:func:`_unpack_chunks` for few chunks: a handful of calls whatever the width."""
    dtype = words.dtype
    width = dtype.itemsize * 8
    first, shift, spill, second, back = _gather_plan(bits, width)
    flat = words.reshape(words.shape[0], -1)
    out: UIntArray = flat[:, first] >> shift.astype(dtype)
    if len(spill):
        out[:, spill] |= flat[:, second] << back.astype(dtype)
    if bits < width:
        out &= dtype.type((1 << bits) - 1)
    return out


def unpack_positions(words: UIntArray, bits: int, positions: npt.NDArray[np.int64]) -> UIntArray:
    """Values ``positions`` (0..1023) of one FastLanes chunk: ``words`` is the chunk's
    ``bits * lanes`` packed words, flat.  Only the words holding those values are read,
    so a take of a few values costs a few array operations whatever the width."""
    dtype = words.dtype
    if bits == 0:
        return np.zeros(len(positions), dtype=dtype)
    width = dtype.itemsize * 8
    first, shift, _, _, _ = _gather_plan(bits, width)
    word = first[positions]
    low = shift[positions]
    out: UIntArray = words[word] >> low.astype(dtype)
    spills = low + bits > width
    if bool(spills.any()):
        # The value continues at the bottom of the next word of its lane.
        lanes = _CHUNK // width
        back = (width - low[spills]).astype(dtype)
        out[spills] |= words[word[spills] + lanes] << back
    if bits < width:
        out &= dtype.type((1 << bits) - 1)
    return out


def _unpack_by_rows(words: UIntArray, bits: int) -> UIntArray:
    """:func:`_unpack_chunks` for many chunks: a few whole-array steps per row."""
    dtype = words.dtype
    width = dtype.itemsize * 8
    lanes = _CHUNK // width
    # Row r of a lane lands at FL_ORDER[r // 8] * 16 + (r % 8) * 128 + lane: viewed as
    # (chunks, 8, 128 / lanes, lanes), that is one plain slice per row; the rows cover
    # every position once.
    out = np.empty((words.shape[0], 8, 128 // lanes, lanes), dtype=dtype)
    mask = dtype.type((1 << bits) - 1)
    for row in range(width):
        word, shift = divmod(row * bits, width)
        vals = words[:, word, :] >> dtype.type(shift) if shift else words[:, word, :]
        if shift + bits > width:
            # The value continues at the bottom of the next word of the same lane.
            vals = vals | (words[:, word + 1, :] << dtype.type(width - shift))
        if bits < width:
            vals = vals & mask
        out[:, row % 8, _FL_ORDER[row // 8] * 16 // lanes, :] = vals
    return out.reshape(words.shape[0], _CHUNK)


def decode_bitpacked_for_non_neg(
    buf: bytes | memoryview,
    compressed_bits: int,
    uncompressed_bits: int,
    num_values: int,
) -> UIntArray:
    """Decode a ``BitpackedForNonNeg`` (FastLanes) buffer to unsigned integers.

    The writer used this for signed types too, storing their raw bits, so a
    caller with an ``int`` column should ``.view`` the result as signed.
    """
    _check_widths(compressed_bits, uncompressed_bits)
    _check_count(num_values)
    needed = fastlanes_size(num_values, compressed_bits)
    view = _need_bytes(buf, needed, "BitpackedForNonNeg page")
    dtype = np.dtype(f"<u{uncompressed_bits // 8}")
    if compressed_bits == 0 or num_values == 0:
        return np.zeros(num_values, dtype=dtype)
    lanes = _CHUNK // uncompressed_bits
    words = np.frombuffer(view[:needed], dtype=dtype).reshape(-1, compressed_bits, lanes)
    if compressed_bits == uncompressed_bits:
        # Full width: word row r of each lane is value row r, no shifting.
        out = np.empty((words.shape[0], _CHUNK), dtype=dtype)
        for row in range(uncompressed_bits):
            out[:, _lane_positions(row, lanes)] = words[:, row, :]
    else:
        out = _unpack_chunks(words, compressed_bits)
    return out.reshape(-1)[:num_values]


def _pack_chunks(chunks: UIntArray, bits: int) -> UIntArray:
    """Inverse of :func:`_unpack_chunks`: (chunks, 1024) to (chunks, bits, lanes)."""
    dtype = chunks.dtype
    width = dtype.itemsize * 8
    lanes = _CHUNK // width
    words = np.zeros((chunks.shape[0], bits, lanes), dtype=dtype)
    if jit.enabled() and bits < 64:
        kernels.pack(np.ascontiguousarray(chunks), bits, _positions(width), words)
        return words
    mask = dtype.type((1 << bits) - 1)
    for row in range(width):
        word, shift = divmod(row * bits, width)
        vals = chunks[:, _lane_positions(row, lanes)] & mask
        words[:, word, :] |= vals << dtype.type(shift)
        if shift + bits > width:
            words[:, word + 1, :] |= vals >> dtype.type(width - shift)
    return words


def encode_bitpacked_for_non_neg(values: npt.NDArray[np.integer], compressed_bits: int) -> bytes:
    """Pack integers with the FastLanes layout, zero-padding the last chunk to 1024."""
    width = values.dtype.itemsize * 8
    _check_widths(compressed_bits, width)
    if compressed_bits == 0 or values.size == 0:
        return b""
    dtype = np.dtype(f"<u{values.dtype.itemsize}")
    count = (values.size + _CHUNK - 1) // _CHUNK
    chunks = np.zeros(count * _CHUNK, dtype=dtype)
    chunks[: values.size] = values.reshape(-1).view(dtype)
    return _pack_chunks(chunks.reshape(count, _CHUNK), compressed_bits).tobytes()


def unpack_inline(
    base: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int64], width: int,
) -> UIntArray | None:  # fmt: skip
    """Inline bit-packed chunks (each its bit count in a ``width``-bit word, then 1024
    FastLanes-packed values; the first ``counts[i]`` kept) in one compiled pass, or
    None when the kernels are off or a chunk's bytes disagree (the caller's numpy
    path then names the damage).  Per page this is a call, not a few dozen numpy
    calls: a compaction of small files decodes a thousand such pages."""
    if not jit.enabled() or width not in _UNCOMPRESSED_WIDTHS or not len(starts):
        return None
    if int(counts.min()) < 0 or int(counts.max()) > _CHUNK:
        return None
    located = _word_chunks(base, starts, sizes, width)
    if located is None:
        return None
    words, word_starts, word_sizes = located
    out = np.empty(int(counts.sum()), dtype=f"<u{width // 8}")
    failed = kernels.unpack_inline(
        words, word_starts, word_sizes, counts.astype(np.int64), _positions(width), out
    )
    return None if failed >= 0 else out


def unpack_inline_selected(
    base: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int64], width: int, index: npt.NDArray[np.int64],
) -> UIntArray | None:  # fmt: skip
    """Values ``index`` (positions among all the chunks' values) of inline bit-packed
    chunks, reading only their words; None when the kernels are off, the chunks are
    not word-aligned, or anything disagrees (the caller then decodes them whole)."""
    if not jit.enabled() or width not in _UNCOMPRESSED_WIDTHS or not len(starts):
        return None
    located = _word_chunks(base, starts, sizes, width)
    if located is None:
        return None
    words, word_starts, word_sizes = located
    counts, index = counts.astype(np.int64), index.astype(np.int64)
    ends = np.cumsum(counts)
    chunks = np.searchsorted(ends, index, side="right")
    offsets = index - (ends - counts)[np.minimum(chunks, len(counts) - 1)]
    lane_word, row = _value_places(width)
    out = np.empty(len(index), dtype=f"<u{width // 8}")
    failed = kernels.unpack_inline_selected(
        words, word_starts, word_sizes, counts, chunks, offsets, lane_word, row, out
    )
    return None if failed >= 0 else out


@cache
def _value_places(width: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """For each of a chunk's 1024 values: its lane (the word it starts in, within its
    row's words) and its row, from the FastLanes order :func:`_positions` gives."""
    lanes = _CHUNK // width
    flat = _positions(width).reshape(-1)
    slot = np.empty(_CHUNK, dtype=np.int64)
    slot[flat] = np.arange(len(flat), dtype=np.int64)
    return slot % lanes, slot // lanes


def _word_chunks(
    base: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    width: int,
) -> tuple[UIntArray, npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """The chunks as ``width``-bit little-endian words, with their starts and sizes in
    words: a view of ``base`` when every chunk lies on word boundaries (as writers lay
    them out), else the chunks copied back to back; None when a chunk is not whole
    words or lies outside ``base`` (damage, which the numpy path names)."""
    step = width // 8
    starts, sizes = starts.astype(np.int64), sizes.astype(np.int64)
    if np.any(sizes % step) or int(starts.min()) < 0 or int((starts + sizes).max()) > len(base):
        return None
    base = np.ascontiguousarray(base, dtype=np.uint8)
    if base.ctypes.data % step or np.any(starts % step):
        base = base[gather_ranges(starts, sizes)]
        starts = np.cumsum(sizes) - sizes
    whole = len(base) - len(base) % step
    words: UIntArray = base[:whole].view(f"<u{step}")
    return words, starts // step, sizes // step
