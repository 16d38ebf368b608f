"""Run-length encoding (the ``Rle`` compressive encoding of files 2.1 and later).

A run-length encoded sequence is two arrays of equal length: the run *values*, in the
column's own fixed width (8, 16, 32 or 64 bits, little endian), and the run *lengths*,
unsigned integers of 8 bits (what every writer so far emits; a run longer than 255 is
split into several runs of the same value) or 16 or 32 bits.  A run length is never 0.

Two containers hold such a pair:

* **mini-block**: each chunk of a mini-block page carries the values and the lengths as
  two of its buffers.  Every chunk restarts its runs, and its runs cover exactly the
  chunk's values, except that writers up to pylance 0.3x let the *last* run of a chunk
  reach past the chunk when they cut it back to a power of two values (the surplus
  values are written again at the start of the next chunk), so a decoder clips that
  run in such a chunk; any other excess or shortfall is damage.
* **block** (2.2: levels of constant pages, dictionary values): one buffer laid out as
  ``u64 size-of-values | values | lengths``, whose runs cover the block exactly.

Decoding is batched: one call takes a byte array and the per-chunk buffer positions of
every chunk to decode, checks them all, and expands every run with one ``np.repeat``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from lancelet.errors import CorruptFileError, UnsupportedEncodingError
from lancelet.file.codecs import jit
from lancelet.file.codecs._chunks import (
    Bytes,
    IntArray,
    as_bytes,
    check_ranges,
    concat_ranges,
    ints,
)
from lancelet.file.codecs.kernels import runs as run_kernels

__all__ = [
    "RleChunks",
    "decode_rle_block",
    "decode_rle_chunks",
    "encode_rle_block",
    "encode_rle_chunks",
    "rle_entry_count",
]

VALUE_BITS: Final = (8, 16, 32, 64)
LENGTH_BITS: Final = (8, 16, 32)
_BLOCK_HEADER: Final = 8
# Fewer runs expand as fast with numpy, and need no compiled kernel loaded.
_COMPILED_MIN_RUNS: Final = 256


def _unsigned(bits: int) -> np.dtype[np.unsignedinteger]:
    return np.dtype(f"<u{bits // 8}")


def _check_widths(bits_per_value: int, length_bits: int, what: str) -> None:
    if bits_per_value not in VALUE_BITS:
        raise UnsupportedEncodingError(
            f"{what}: run-length encoded values of {bits_per_value} bits "
            f"(lancelet reads {', '.join(map(str, VALUE_BITS))})"
        )
    if length_bits not in LENGTH_BITS:
        raise UnsupportedEncodingError(
            f"{what}: run lengths of {length_bits} bits "
            f"(lancelet reads {', '.join(map(str, LENGTH_BITS))})"
        )


def decode_rle_chunks(
    data: Bytes,
    value_starts: npt.ArrayLike,
    value_sizes: npt.ArrayLike,
    length_starts: npt.ArrayLike,
    length_sizes: npt.ArrayLike,
    counts: npt.ArrayLike,
    bits_per_value: int,
    *,
    length_bits: int = 8,
    what: str,
    strict: bool = False,
) -> npt.NDArray[np.unsignedinteger]:
    """Expand the runs of many chunks at once: every chunk's values, concatenated,
    as unsigned integers of ``bits_per_value`` bits (``.view`` them as the column's
    type).  The arguments are those of :func:`rle_chunk_runs`."""
    values, lengths = rle_chunk_runs(
        data,
        value_starts,
        value_sizes,
        length_starts,
        length_sizes,
        counts,
        bits_per_value,
        length_bits=length_bits,
        what=what,
        strict=strict,
    )
    return expanded(values, lengths)


def rle_chunk_runs(
    data: Bytes,
    value_starts: npt.ArrayLike,
    value_sizes: npt.ArrayLike,
    length_starts: npt.ArrayLike,
    length_sizes: npt.ArrayLike,
    counts: npt.ArrayLike,
    bits_per_value: int,
    *,
    length_bits: int = 8,
    what: str,
    strict: bool = False,
) -> tuple[npt.NDArray[np.unsignedinteger], IntArray]:
    """The runs of many chunks, not expanded: their values and lengths (int64), the
    lengths checked to cover each chunk's values exactly.

    Chunk ``i`` keeps its run values in ``data[value_starts[i]:][:value_sizes[i]]`` and
    its run lengths in ``data[length_starts[i]:][:length_sizes[i]]`` (flat, already
    freed of any child compression) and decodes to ``counts[i]`` values; run values
    are unsigned integers of ``bits_per_value`` bits.  ``strict`` refuses a last run
    that reaches past its chunk (block data); otherwise, in a chunk of a power of two
    values, it is clipped, as legacy writers require.  ``what`` names the file,
    column and page in errors.
    """
    _check_widths(bits_per_value, length_bits, what)
    raw = as_bytes(data)
    c_starts = ints("value starts", value_starts, None, what)
    n = c_starts.size
    c_sizes = ints("value sizes", value_sizes, n, what)
    l_starts = ints("length starts", length_starts, n, what)
    l_sizes = ints("length sizes", length_sizes, n, what)
    want = ints("value counts", counts, n, what)
    check_ranges(raw, c_starts, c_sizes, "run values", what)
    check_ranges(raw, l_starts, l_sizes, "run lengths", what)
    runs = _run_counts(c_sizes, l_sizes, bits_per_value // 8, length_bits // 8, what)
    values = concat_ranges(raw, c_starts, c_sizes).view(_unsigned(bits_per_value))
    lengths = concat_ranges(raw, l_starts, l_sizes).view(_unsigned(length_bits)).astype(np.int64)
    _fit_runs(lengths, runs, want, strict, what)
    return values, lengths


def expanded(
    values: npt.NDArray[np.unsignedinteger], lengths: IntArray
) -> npt.NDArray[np.unsignedinteger]:
    """Each value repeated its run's length (not negative), in order."""
    if not jit.enabled() or len(values) < _COMPILED_MIN_RUNS:
        out: npt.NDArray[np.unsignedinteger] = np.repeat(values, lengths)
        return out
    out = np.empty(int(lengths.sum()), dtype=values.dtype)
    run_kernels.expand_runs(values, lengths, out)
    return out


def _run_counts(
    value_sizes: IntArray, length_sizes: IntArray, value_bytes: int, length_bytes: int, what: str
) -> IntArray:
    """Runs per chunk, checked to agree between the two buffers."""
    bad = (value_sizes % value_bytes != 0) | (length_sizes % length_bytes != 0)
    bad |= value_sizes // value_bytes != length_sizes // length_bytes
    if bad.any():
        chunk = int(np.argmax(bad))
        raise CorruptFileError(
            f"{what}: chunk {chunk} has {int(value_sizes[chunk])} bytes of {value_bytes}-byte "
            f"run values but {int(length_sizes[chunk])} bytes of {length_bytes}-byte run lengths"
        )
    runs: IntArray = value_sizes // value_bytes
    return runs


def _fit_runs(lengths: IntArray, runs: IntArray, want: IntArray, strict: bool, what: str) -> None:
    """Check that each chunk's runs cover its values; clip a legacy overlong last run."""
    if lengths.size and int(lengths.min()) == 0:
        raise CorruptFileError(f"{what}: a run length is 0 (run {int(np.argmin(lengths))})")
    bounds = np.zeros(runs.size + 1, dtype=np.int64)
    np.cumsum(runs, out=bounds[1:])
    cum = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=cum[1:])
    totals = cum[bounds[1:]] - cum[bounds[:-1]]
    short = totals < want
    if short.any():
        chunk = int(np.argmax(short))
        raise CorruptFileError(
            f"{what}: chunk {chunk}'s runs cover {int(totals[chunk])} values, "
            f"but it holds {int(want[chunk])}"
        )
    over = np.flatnonzero(totals > want)
    if not over.size:
        return
    last = bounds[over + 1] - 1
    before_last = totals[over] - lengths[last]
    # Legacy writers overshot only when cutting a chunk back to a power of two values.
    wanted = want[over]
    bad = (before_last >= wanted) | (wanted & (wanted - 1) != 0)
    if strict or bool(bad.any()):
        chunk = int(over[0] if strict else over[np.argmax(bad)])
        raise CorruptFileError(
            f"{what}: chunk {chunk}'s runs cover {int(totals[chunk])} values, "
            f"more than the {int(want[chunk])} it holds"
        )
    lengths[last] = want[over] - before_last


def decode_rle_block(
    data: Bytes,
    num_values: int,
    bits_per_value: int,
    *,
    length_bits: int = 8,
    what: str,
) -> npt.NDArray[np.unsignedinteger]:
    """Decode one block buffer ``u64 values-size | values | lengths`` to ``num_values``
    unsigned integers of ``bits_per_value`` bits; the runs must cover them exactly."""
    _check_widths(bits_per_value, length_bits, what)
    raw = as_bytes(data)
    if raw.size < _BLOCK_HEADER:
        raise CorruptFileError(
            f"{what}: run-length block of {raw.size} bytes is too short for its 8-byte header"
        )
    values_size = int(raw[:_BLOCK_HEADER].view("<u8")[0])
    if values_size > raw.size - _BLOCK_HEADER:
        raise CorruptFileError(
            f"{what}: run-length block declares {values_size} bytes of run values, "
            f"but only {raw.size - _BLOCK_HEADER} bytes follow its header"
        )
    lengths_start = _BLOCK_HEADER + values_size
    return decode_rle_chunks(
        raw,
        [_BLOCK_HEADER],
        [values_size],
        [lengths_start],
        [raw.size - lengths_start],
        [num_values],
        bits_per_value,
        length_bits=length_bits,
        what=what,
        strict=True,
    )


@dataclass(frozen=True)
class RleChunks:
    """Run-length encoded chunks: all run values, all run lengths, and each chunk's
    share of both (in bytes), in chunk order."""

    values: bytes
    lengths: bytes
    value_sizes: IntArray
    length_sizes: IntArray


def _as_unsigned(values: npt.NDArray[np.generic]) -> npt.NDArray[np.unsignedinteger]:
    """The values' bits as unsigned integers, so floats compare by bit pattern."""
    if values.ndim != 1 or values.dtype.itemsize * 8 not in VALUE_BITS:
        raise ValueError("run-length encoding takes a 1-D array of 1, 2, 4 or 8-byte values")
    return np.ascontiguousarray(values).view(_unsigned(values.dtype.itemsize * 8))


def _runs(
    bits: npt.NDArray[np.unsignedinteger], chunk_starts: IntArray
) -> tuple[IntArray, IntArray]:
    """Start and length of every maximal run that does not cross a chunk start."""
    n = bits.size
    cut = np.zeros(n, dtype=bool)
    if n:
        cut[0] = True
        cut[1:] = bits[1:] != bits[:-1]
        cut[chunk_starts[chunk_starts < n]] = True
    starts = np.flatnonzero(cut).astype(np.int64)
    lengths = np.diff(np.append(starts, n)).astype(np.int64)
    return starts, lengths


def _split_long(starts: IntArray, lengths: IntArray, limit: int) -> tuple[IntArray, IntArray]:
    """Split runs longer than ``limit`` into full runs of ``limit`` plus a remainder."""
    pieces = (lengths + limit - 1) // limit
    if not (pieces > 1).any():
        return starts, lengths
    run = np.repeat(np.arange(starts.size), pieces)
    index = np.arange(run.size) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    piece_len = np.where(index < pieces[run] - 1, limit, lengths[run] - (pieces[run] - 1) * limit)
    return starts[run] + index * limit, piece_len.astype(np.int64)


def encode_rle_chunks(
    values: npt.NDArray[np.generic], counts: Sequence[int] | IntArray, *, length_bits: int = 8
) -> RleChunks:
    """Run-length encode ``values`` as chunks of ``counts`` values each (a run never
    spans two chunks; runs longer than the length width allows are split)."""
    _check_widths(values.dtype.itemsize * 8, length_bits, "run-length encoder")
    bits = _as_unsigned(values)
    sizes = np.asarray(counts, dtype=np.int64)
    if sizes.ndim != 1 or (sizes.size and int(sizes.min()) <= 0) or int(sizes.sum()) != bits.size:
        raise ValueError("chunk counts must be positive and add up to the number of values")
    chunk_starts = np.cumsum(sizes) - sizes
    starts, lengths = _split_long(*_runs(bits, chunk_starts), (1 << length_bits) - 1)
    chunk_of_run = np.searchsorted(chunk_starts, starts, side="right") - 1
    per_chunk = np.bincount(chunk_of_run, minlength=sizes.size).astype(np.int64)
    return RleChunks(
        values=bits[starts].tobytes(),
        lengths=lengths.astype(_unsigned(length_bits)).tobytes(),
        value_sizes=per_chunk * bits.dtype.itemsize,
        length_sizes=per_chunk * (length_bits // 8),
    )


def encode_rle_block(values: npt.NDArray[np.generic], *, length_bits: int = 8) -> bytes:
    """One block buffer: ``u64 values-size | values | lengths``."""
    if values.size == 0:
        return np.zeros(1, dtype="<u8").tobytes()
    chunks = encode_rle_chunks(values, [values.size], length_bits=length_bits)
    header = np.array([len(chunks.values)], dtype="<u8").tobytes()
    return header + chunks.values + chunks.lengths


def rle_entry_count(
    values: npt.NDArray[np.generic],
    counts: Sequence[int] | IntArray | None = None,
    *,
    length_bits: int = 8,
) -> int:
    """How many (value, length) entries :func:`encode_rle_chunks` would write; the
    writer compares this with the value count to decide whether RLE pays."""
    bits = _as_unsigned(values)
    sizes = np.asarray([bits.size] if counts is None else counts, dtype=np.int64)
    _, lengths = _runs(bits, np.cumsum(sizes) - sizes)
    limit = (1 << length_bits) - 1
    return int(((lengths + limit - 1) // limit).sum())
