"""pylance 14's IVF_RQ storage (RaBitQ) and the distance estimate it reports,
reproduced to the bit (see ``docs/vector-index-format.md``); the extra bits of a
multi-bit index and the rows pylance skips with them are in :mod:`rabitq_ex`.

Each indexed vector ``x`` in partition ``p`` keeps the sign bits of its rotated
residual ``R(x - c_p)`` plus two float32 factors, ``add`` and ``scale``.  The
rotation ``R`` is pylance's "fast" rotation: four rounds of random sign flips and a
scaled Walsh-Hadamard transform (with a Kac-walk mixing step when the dimension is
not a power of two), driven by the sign bytes kept in the storage metadata.

A query ``q`` (for cosine: ``q`` divided by its length) is rotated once; its binary
inner product with a row's bits is read through a table of the sums of every
subset of 4 rotated query values.  For the partition's rows in whole blocks of 32,
pylance reads that table quantized to bytes (the block "fast scan"); for the rows
after the last whole block, from the float table.  The estimate is then
``(ip - sum(R q) / 2) * scale + add + |q - c_p|²`` (l2, cosine), in float32 in that
order; a dot index ends it differently (:class:`_Terms`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet.errors import ArgumentError, CorruptIndexError, UnsupportedVectorIndexError
from lancelet.index.vector import float32_distance, rabitq_ex
from lancelet.index.vector.rabitq_ex import ExCodes

# A column of auxiliary.idx by name and type, checked (CorruptIndexError if absent).
ColumnReader = Callable[[str, pa.DataType], pa.Array]

CODE_COLUMN = "_rabit_codes"
ADD_COLUMN = "__add_factors"
SCALE_COLUMN = "__scale_factors"
# Rows whose codes pylance packs for its fast scan, and the order of the 16
# rows of each half-block within a packed byte run.
BLOCK = 32
PERM = np.array([0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15])
_ROUNDS = 4
# The fast scan sums byte-quantized table entries in 16-bit lanes: beyond this
# many dimensions a sum could exceed 16 bits, which lancelet does not reproduce.
MAX_DIMENSION = 1024
# Bits per dimension lancelet reads: one sign bit plus the extra widths it scores.
NUM_BITS = (1, *(bits + 1 for bits in rabitq_ex.EX_BITS))
_EXACT_HINT = " (pass use_index=False in nearest for an exact search)"
# Position of each value of a 4-value segment that a subset's lowest bit names.
_LOWEST_BIT = [0] + [(j & -j).bit_length() - 1 for j in range(1, 16)]


@dataclass(frozen=True)
class RabitqStorage:
    # (rows, dimension / 8) uint8 sign bits, row-major, bit d of a row is
    # dimension d (least significant bit first).
    codes: np.ndarray
    add: np.ndarray  # (rows,) float32
    scale: np.ndarray  # (rows,) float32
    # 4 rounds of ceil(dimension / 8) bytes of random sign flips.
    signs: np.ndarray
    # The extra bits of a multi-bit index (None for one bit per dimension).
    extra: ExCodes | None = None
    # (rows,) float32 lower-bound widths (stored for every index; used with extra bits).
    error: np.ndarray | None = None

    @property
    def dimension(self) -> int:
        return int(self.codes.shape[1]) * 8

    @property
    def num_bits(self) -> int:
        """Bits per dimension: the sign bit and the extra bits."""
        return 1 + (self.extra.bits if self.extra is not None else 0)

    @property
    def skips_rows(self) -> bool:
        """Whether pylance skips rows by their lower bound (multi-bit codes)."""
        return self.extra is not None

    def distances(
        self, query: np.ndarray, centroid: np.ndarray, rows: slice, metric: str
    ) -> np.ndarray:
        return self.scores(query, centroid, rows, metric)[0]

    def scores(
        self, query: np.ndarray, centroid: np.ndarray, rows: slice, metric: str
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """pylance's estimates for the rows of one partition (``rows`` is a whole
        partition: the fast-scan blocks count from its first row) and, for a
        multi-bit index, their lower bounds; ``query`` is the query vector, already
        divided by its length (:func:`unit_query`) for a cosine index."""
        rotated, total = _rotated_query(query.tobytes(), self.signs.tobytes())
        terms = _Terms.of(query, centroid, rotated, self.signs, metric)
        inner = _binary_inner_products(subset_sums(rotated), self.codes[rows])
        scaled = (inner + np.float32(-0.5) * total) * self.scale[rows]
        binary = terms.finish(scaled, self.add[rows])
        if self.extra is None:
            return binary, None
        scaled = self.extra.scaled(rotated, total, inner, rows)
        estimate = terms.finish(scaled, self.extra.add[rows])
        bounds = binary - self.extra.error[rows] * terms.reach
        return estimate, float32_distance.f32(bounds)


@lru_cache(maxsize=8)
def _rotated_query(query: bytes, signs: bytes) -> tuple[np.ndarray, np.float32]:
    """The rotated float32 query and its sum, kept for the query's next partitions."""
    rotated = rotate(
        np.frombuffer(query, np.float32).reshape(1, -1), np.frombuffer(signs, np.uint8)
    )
    rotated.setflags(write=False)
    return rotated[0], float32_distance.sequential_sum(rotated[0])


@dataclass(frozen=True)
class _Terms:
    """How pylance ends a partition's estimates for one query.  l2 (and cosine,
    searched as l2 on unit vectors): ``(scaled + add) + |q - c|²``.  dot, with
    ``u = Rq·Rc / Rc·Rc`` and ``v = 1 - Rq·Rc`` (Rc the rotated centroid, the
    products summed by :func:`kernel_dot`): ``(scaled + (add - 1) · u) + v``.
    ``reach`` is the query's part of the lower bound: ``|q - c|`` for l2 and
    ``|Rq - u · Rc|`` for dot."""

    weight: np.float32 | None
    shift: np.float32
    reach: np.float32

    @classmethod
    def of(
        cls,
        query: np.ndarray,
        centroid: np.ndarray,
        rotated: np.ndarray,
        signs: np.ndarray,
        metric: str,
    ) -> _Terms:
        if metric != "dot":
            difference = (query - centroid).reshape(1, -1)
            shift = float32_distance.lane_sum(difference * difference)[0]
            return cls(None, shift, np.sqrt(np.maximum(shift, np.float32(0))))
        turned = rotate(centroid.reshape(1, -1), signs)[0]
        product = kernel_dot(rotated, turned)
        weight = np.float32(product / kernel_dot(turned, turned))
        # The bound widens with the query's part across the centroid, Rq - u·Rc
        # (its float32 summation order is not established: only compared).
        across = (rotated - weight * turned).reshape(1, -1)
        reach = np.sqrt(np.maximum(float32_distance.lane_sum(across * across)[0], np.float32(0)))
        return cls(weight, np.float32(1) - product, reach)

    def finish(self, scaled: np.ndarray, add: np.ndarray) -> np.ndarray:
        if self.weight is None:
            return float32_distance.f32((scaled + add) + self.shift)
        return float32_distance.f32((scaled + (add - np.float32(1)) * self.weight) + self.shift)


def kernel_dot(left: np.ndarray, right: np.ndarray) -> np.float32:
    """float32 dot product as pylance's kernel sums it: a 16-lane fused
    multiply-add over the whole blocks of 16 values, the lanes halved pairwise
    (i and i+8, i+4, i+2, then 0 and 1), plus the leftover products added in
    turn.  The fused step is emulated in float64 (exact for these magnitudes
    unless the terms differ in scale by about 2**29)."""
    whole = len(left) - len(left) % 16
    lanes = np.zeros(16, dtype=np.float32)
    for start in range(0, whole, 16):  # one step per block of 16 values
        part = slice(start, start + 16)
        fused = lanes.astype(np.float64) + left[part].astype(np.float64) * right[part]
        lanes = fused.astype(np.float32)
    while len(lanes) > 1:  # 16 -> 8 -> 4 -> 2 -> 1 lanes
        lanes = lanes[: len(lanes) // 2] + lanes[len(lanes) // 2 :]
    tail = np.float32(0)
    for position in range(whole, len(left)):  # fewer than 16 leftover values
        tail = np.float32(tail + np.float32(left[position] * right[position]))
    total: np.float32 = lanes[0] + tail
    return total


def scored_rows(
    scores: list[tuple[np.ndarray, np.ndarray | None]],
    row_ids: np.ndarray,
    allowed: np.ndarray,
    keep: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The row ids and estimates of the allowed rows (mask) that pylance's scan
    scores, from the probed partitions' :meth:`RabitqStorage.scores` in probe
    order; every allowed row when ``keep`` (k * refine_factor) is not given."""
    found = np.concatenate([estimate for estimate, _ in scores])[allowed]
    row_ids = row_ids[allowed]
    if keep is None:
        return row_ids, found
    bounds = np.concatenate([bound for _, bound in scores if bound is not None])[allowed]
    chosen = rabitq_ex.scored(found, bounds, keep)
    return row_ids[chosen], found[chosen]


def unit_query(query: np.ndarray) -> np.ndarray:
    """The query divided by its length, the length summed as pylance does for an
    IVF_RQ cosine search (squares added in turn, in float32)."""
    query = np.asarray(query, dtype=np.float32)
    length = np.sqrt(float32_distance.sequential_sum(query * query))
    if not length > 0:
        # pylance answers arbitrary rows at NaN distances: refused instead.
        raise ArgumentError("a zero query vector has no cosine distance (IVF_RQ index)")
    return float32_distance.f32(query / length)


def rotate(vectors: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """pylance's fast rotation of each row of a (rows, dimension) array."""
    out = np.array(vectors, dtype=np.float32)
    dimension = out.shape[1]
    flips = np.unpackbits(signs, bitorder="little").reshape(_ROUNDS, -1)[:, :dimension]
    window = 1 << (dimension.bit_length() - 1)
    scale = np.float32(1) / np.sqrt(np.float32(window))
    for round_number in range(_ROUNDS):  # one step per round
        flip = flips[round_number].astype(bool)
        out[:, flip] = -out[:, flip]
        if window == dimension:
            out = _hadamard(out) * scale
            continue
        part = slice(0, window) if round_number % 2 == 0 else slice(dimension - window, None)
        out[:, part] = _hadamard(out[:, part]) * scale
        half = dimension // 2
        left, right = out[:, :half].copy(), out[:, half : 2 * half].copy()
        out[:, :half], out[:, half : 2 * half] = left + right, left - right
    if window != dimension:
        out *= np.float32(0.25)
    return out


def _hadamard(values: np.ndarray) -> np.ndarray:
    """The unscaled Walsh-Hadamard transform of each row (width a power of two),
    butterfly stage by stage as pylance computes it."""
    rows, width = values.shape
    out = np.array(values, dtype=np.float32)
    half = 1
    while half < width:  # one step per butterfly stage
        pairs = out.reshape(rows, width // (2 * half), 2, half)
        first, second = pairs[:, :, 0, :].copy(), pairs[:, :, 1, :].copy()
        pairs[:, :, 0, :], pairs[:, :, 1, :] = first + second, first - second
        half *= 2
    return out


def subset_sums(rotated: np.ndarray) -> np.ndarray:
    """(dimension / 4, 16) table: entry [s, j] sums the values of segment s (4
    consecutive rotated query values) whose bits are set in j, each built from a
    smaller subset plus one value, as pylance builds it."""
    segments = rotated.reshape(-1, 4)
    table = np.zeros((segments.shape[0], 16), dtype=np.float32)
    for subset in range(1, 16):  # one step per subset of a segment
        smaller = subset - (subset & -subset)
        table[:, subset] = table[:, smaller] + segments[:, _LOWEST_BIT[subset]]
    return table


def _binary_inner_products(table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Each row's sum of table entries its code bits select: through the
    byte-quantized table for the whole blocks of 32 rows, exactly (byte after
    byte) for the rows after them."""
    rows, code_bytes = codes.shape
    blocked = rows - rows % BLOCK
    low = (codes & 0x0F).astype(np.intp)
    high = (codes >> 4).astype(np.intp)
    even = 2 * np.arange(code_bytes)
    found = np.empty(rows, dtype=np.float32)
    quantized, low_value, step = _quantized(table)
    sums = quantized[even, low[:blocked]] + quantized[even + 1, high[:blocked]]
    counts = sums.sum(axis=1, dtype=np.int64).astype(np.float32)
    found[:blocked] = counts * step + np.float32(table.shape[0]) * low_value
    pairs = table[even, low[blocked:]] + table[even + 1, high[blocked:]]
    total = np.zeros(rows - blocked, dtype=np.float32)
    for column in range(code_bytes):  # one step per code byte
        total += pairs[:, column]
    found[blocked:] = total
    return found


def _quantized(table: np.ndarray) -> tuple[np.ndarray, np.float32, np.float32]:
    """The table as integers 0-255 (``(t - min) * 255 / (max - min)`` rounded half
    to even), its minimum and the value of one step; all zeros when the range is
    too small to divide by, as pylance does."""
    low_value, high_value = np.float32(table.min()), np.float32(table.max())
    with np.errstate(divide="ignore", over="ignore"):
        factor = np.float32(255) / np.float32(high_value - low_value)
    if not np.isfinite(factor):
        quantized = np.zeros(table.shape, dtype=np.int64)
    else:
        scaled = (table - low_value) * factor
        quantized = np.clip(np.rint(scaled), 0, 255).astype(np.int64)
    step = np.float32(high_value - low_value) / np.float32(255)
    return quantized, low_value, step


def read_storage(
    path: io.Place, params: Any, column: ColumnReader, dimension: int, lengths: np.ndarray
) -> RabitqStorage:
    """The storage from ``auxiliary.idx``'s parsed ``storage_metadata`` (after
    :func:`check_params`) and its columns."""
    signs = _signs(path, params.get("fast_rotation_signs"), dimension)
    codes = _bytes(column, CODE_COLUMN, dimension // 8)
    error = _floats(column, rabitq_ex.ERROR_COLUMN)
    ex_bits = int(params["num_bits"]) - 1
    extra = None
    if ex_bits:
        raw = _bytes(column, rabitq_ex.EX_CODE_COLUMN, rabitq_ex.code_bytes(dimension, ex_bits))
        extra = ExCodes(
            ex_bits,
            rabitq_ex.unpack(raw, ex_bits, rabitq_ex.padded_length(dimension)),
            _floats(column, rabitq_ex.EX_ADD_COLUMN),
            _floats(column, rabitq_ex.EX_SCALE_COLUMN),
            error,
        )
    return RabitqStorage(
        _row_major(codes, lengths),
        _floats(column, ADD_COLUMN),
        _floats(column, SCALE_COLUMN),
        signs,
        extra,
        error,
    )


def _bytes(column: ColumnReader, name: str, width: int) -> np.ndarray:
    values = column(name, pa.list_(pa.uint8(), width))
    flat: np.ndarray = values.values.to_numpy(zero_copy_only=False)
    return flat.reshape(len(values), width)


def _floats(column: ColumnReader, name: str) -> np.ndarray:
    values: np.ndarray = column(name, pa.float32()).to_numpy(zero_copy_only=False)
    return values


def parse_params(path: io.Place, raw: str | None) -> dict[str, Any]:
    """``storage_metadata``: a JSON list holding one JSON object string."""
    try:
        listed = json.loads(raw) if raw is not None else None
        params = json.loads(listed[0]) if isinstance(listed, list) and listed else None
    except (ValueError, TypeError) as exc:
        raise CorruptIndexError(f"{path}: 'storage_metadata' is not JSON: {exc}") from exc
    if not isinstance(params, dict):
        raise CorruptIndexError(f"{path}: 'storage_metadata' does not hold the RQ parameters")
    return params


def check_params(path: io.Place, params: dict[str, Any], dimension: int) -> None:
    """Refuse what lancelet does not reproduce: 3- and 7-bit codes, the dense
    rotation matrix, the older residual-query estimator, unpacked codes and
    dimensions whose codes end mid-byte or whose fast-scan sums could overflow."""
    bits = params.get("num_bits")
    if bits not in NUM_BITS or isinstance(bits, bool):
        raise UnsupportedVectorIndexError(
            f"{path}: lancelet reads IVF_RQ indices of num_bits {', '.join(map(str, NUM_BITS))}, "
            f"not {bits!r}{_EXACT_HINT}"
        )
    expected = {
        "rotation_type": "fast",
        "query_estimator": "raw_query",
        "packed": True,
        "code_dim": dimension,
    }
    for key, value in expected.items():
        if params.get(key) != value:
            raise UnsupportedVectorIndexError(
                f"{path}: lancelet reads IVF_RQ indices with {key} {value!r}, not "
                f"{params.get(key)!r}{_EXACT_HINT}"
            )
    if dimension % 8 or dimension > MAX_DIMENSION:
        raise UnsupportedVectorIndexError(
            f"{path}: lancelet reads IVF_RQ indices of a dimension that is a multiple "
            f"of 8 up to {MAX_DIMENSION}, not {dimension}{_EXACT_HINT}"
        )


def _signs(path: io.Place, value: Any, dimension: int) -> np.ndarray:
    length = _ROUNDS * ((dimension + 7) // 8)
    if (
        not isinstance(value, list)
        or len(value) != length
        or not all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b < 256 for b in value)
    ):
        raise CorruptIndexError(f"{path}: 'fast_rotation_signs' is not a list of {length} bytes")
    return np.array(value, dtype=np.uint8)


def _row_major(codes: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Undo pylance's per-partition packing: each whole block of 32 rows keeps,
    per code byte, 32 bytes whose nibbles interleave the rows' low and high
    nibbles (rows in ``PERM`` order); the rows after the last block are stored
    column-major."""
    rows, code_bytes = codes.shape
    flat = np.ascontiguousarray(codes).reshape(-1)
    out = np.empty((rows, code_bytes), dtype=np.uint8)
    start = 0
    for length in lengths.tolist():  # one step per partition
        blocked = length - length % BLOCK
        if blocked:
            packed = flat[start * code_bytes : (start + blocked) * code_bytes]
            out[start : start + blocked] = _unpack_blocks(packed, blocked, code_bytes)
        rest = length - blocked
        if rest:
            tail = flat[(start + blocked) * code_bytes : (start + length) * code_bytes]
            out[start + blocked : start + length] = tail.reshape(code_bytes, rest).T
        start += length
    return out


def _unpack_blocks(packed: np.ndarray, rows: int, code_bytes: int) -> np.ndarray:
    blocks = packed.reshape(rows // BLOCK, code_bytes, BLOCK)
    low_run, high_run = blocks[:, :, :16], blocks[:, :, 16:]
    first_half = (low_run & 0x0F) | ((high_run & 0x0F) << 4)
    second_half = (low_run >> 4) | (high_run & 0xF0)
    out = np.empty((rows // BLOCK, BLOCK, code_bytes), dtype=np.uint8)
    out[:, PERM, :] = first_half.transpose(0, 2, 1)
    out[:, PERM + 16, :] = second_half.transpose(0, 2, 1)
    return out.reshape(rows, code_bytes)
