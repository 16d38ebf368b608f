"""RaBitQ codes and the IVF_RQ index directory, built as pylance 14 builds them
(``docs/vector-index-format.md``, "IVF_RQ"; the factors were fitted to the ones
pylance 14.0.2 stores, to float32 rounding).

For a vector ``x`` in partition ``p`` (for cosine, the unit vector) let ``o =
R(x - c_p)`` be its rotated residual (:func:`rabitq.rotate`, random sign bytes
drawn per index), ``r² = |o|²`` and ``Rc`` the rotated centroid.

* one bit per dimension: bit ``d`` is set when ``o_d`` is positive or +0; with
  ``s = ±1`` those signs and ``w`` 2 for l2 and cosine, 1 for dot, ``scale = -2w r²
  / Σ|o_d|`` and ``add = E + w r² <s, Rc> / Σ|o_d|``, where ``E`` is ``r²`` (l2,
  cosine) or ``1 - <o, Rc>`` (dot), so that the reader's estimate is ``|x - q|²``
  (or ``1 - x·q``);
* ``error = w r · 1.9 · sqrt((1 - a²) / a²) / sqrt(D - 1)`` with ``a = Σ|o_d| / (r
  sqrt(D))``: the width of the lower bound pylance skips rows by;
* ``ex = num_bits - 1`` more bits: each dimension's magnitude code ``k_d`` (0 to
  ``2^ex - 1``) is ``floor(t |o_d|)`` for the ``t`` whose codes ``|y_d| = k_d + 1/2``
  point closest to ``|o|`` (every ``t`` where a code steps, within a band that
  holds the best one: :func:`scale_range`); the stored
  code is ``k_d`` for a set sign bit, ``2^ex - 1 - k_d`` otherwise, and with ``y``
  the signed codes ``scale_ex = -w r² / <y, o>``, ``add_ex = E + w r² <y, Rc> /
  <y, o>``.

A residual of zero (a vector on its centroid) gets zero factors: its estimate is
``|q - c|²``, exact.  Within each partition the sign codes are packed for
pylance's fast scan (:func:`packed_codes`).  lancelet builds ``num_bits`` 1, 2, 5
(pylance's default) and 9, for dimensions that are a multiple of 8 up to 1024; the
rest is refused by the caller.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet._proto import index_pb2
from lancelet.file import parallel
from lancelet.file.codecs import jit
from lancelet.index.vector import rabitq, rabitq_ex
from lancelet.index.vector.ivf_flat_writer import partition_layout, write_file, write_index_file
from lancelet.index.vector.layout import AUXILIARY_FILE, INDEX_FILE

INDEX_TYPE = "IVF_RQ"
DEFAULT_NUM_BITS = 5
# num_bits whose extra-bit layouts lancelet writes (extra widths 0, 1, 4 and 8).
NUM_BITS = (1, 2, 5, 9)
METRICS = ("l2", "cosine", "dot")
_EPSILON = 1.9
# Rows encoded per block: bounds the float64 temporaries (a few MiB per thread).
_BLOCK_ROWS = 1 << 11
# Rows whose steps numpy sorts at once: bounds the (rows, D * 2^ex) temporaries.
_MAGNITUDE_ROWS = 1 << 8
# The scales searched, as fractions of (2^ex + 9) / max |o_d|, by extra bits (the
# widths lancelet writes): the best scales of rotated Gaussian rows fell within
# 0.17-1.2 (1 bit), 0.54-0.71 (4) and 0.82-0.97 (8) of it (the rotation makes any
# residual's coordinates about Gaussian); a few heavy-tailed rows in 10,000 have
# their best scale outside and get the best within.
_SCALE_BAND = {1: (0.1, 2.0), 4: (0.4, 1.0), 8: (0.7, 1.1)}


@dataclass(frozen=True)
class RqCodes:
    """Every row's codes and factors, rows in the order given."""

    codes: np.ndarray  # (n, D/8) uint8 sign bits, row-major
    add: np.ndarray
    scale: np.ndarray
    error: np.ndarray
    ex_bits: int
    ex_codes: np.ndarray | None  # (n, padded) uint8 per dimension
    ex_add: np.ndarray | None
    ex_scale: np.ndarray | None


def new_signs(dimension: int, rng: np.random.Generator) -> np.ndarray:
    """The fast rotation's random sign bytes: 4 rounds of ceil(D / 8)."""
    length = 4 * ((dimension + 7) // 8)
    signs: np.ndarray = rng.integers(0, 256, length, dtype=np.uint8)
    return signs


def encode(
    vectors: np.ndarray,
    partitions: np.ndarray,
    centroids: np.ndarray,
    signs: np.ndarray,
    num_bits: int,
    metric: str,
) -> RqCodes:
    """The codes of ``vectors`` ((n, D) float32; unit vectors for cosine) in their
    partitions, for an index of ``metric``."""
    rotated_centroids = rabitq.rotate(centroids.astype(np.float32), signs).astype(np.float64)

    def block(start: int) -> tuple[np.ndarray | None, ...]:  # one call per block of rows
        part = slice(start, start + _BLOCK_ROWS)
        return _encode_block(
            vectors[part],
            partitions[part],
            centroids,
            rotated_centroids,
            signs,
            num_bits - 1,
            metric == "dot",
        )

    # Blocks on the pool's threads (the compiled search releases the GIL); one empty
    # block when there are no rows.
    blocks = parallel.map_columns(block, range(0, max(len(vectors), 1), _BLOCK_ROWS))
    columns = zip(*blocks, strict=True)
    merged = [np.concatenate(parts) if parts[0] is not None else None for parts in columns]
    codes, add, scale, error, ex_codes, ex_add, ex_scale = merged
    assert codes is not None and add is not None and scale is not None and error is not None
    return RqCodes(codes, add, scale, error, num_bits - 1, ex_codes, ex_add, ex_scale)


def _encode_block(
    vectors: np.ndarray,
    partitions: np.ndarray,
    centroids: np.ndarray,
    rotated_centroids: np.ndarray,
    signs: np.ndarray,
    ex_bits: int,
    dot: bool,
) -> tuple[np.ndarray | None, ...]:
    # l2 (and cosine) estimate |x - q|² = r² + |q - c|² - 2<o, R(q - c)>; dot
    # estimates 1 - x·q = (1 - c·q) - <o, Rq>: the product's weight and the exact
    # part differ.
    residual = vectors.astype(np.float32) - centroids[partitions].astype(np.float32)
    o = rabitq.rotate(residual, signs).astype(np.float64)
    dimension = o.shape[1]
    positive = ~np.signbit(o)
    codes = np.packbits(positive, axis=1, bitorder="little")
    squared = np.einsum("ij,ij->i", o, o)
    absolute = np.abs(o)
    length = absolute.sum(axis=1)
    turned = rotated_centroids[partitions]
    sign = np.where(positive, 1.0, -1.0)
    weight = 1.0 if dot else 2.0
    exact = 1.0 - np.einsum("ij,ij->i", o, turned) if dot else squared
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = _finite(-2.0 * weight * squared / length)
        add = exact + _finite(weight * squared * np.einsum("ij,ij->i", sign, turned) / length)
        cosine = length / np.sqrt(squared * dimension)
        spread = np.sqrt(np.maximum(1.0 - cosine * cosine, 0.0)) / cosine
        error = _finite(weight * np.sqrt(squared) * _EPSILON * spread / np.sqrt(dimension - 1))
    out: list[np.ndarray | None] = [codes, _f32(add), _f32(scale), _f32(error)]
    if not ex_bits:
        return (*out, None, None, None)
    magnitude = best_magnitudes(absolute, ex_bits)
    top = (1 << ex_bits) - 1
    stored = np.where(positive, magnitude, top - magnitude).astype(np.uint8)
    signed = sign * (magnitude + 0.5)
    aligned = np.einsum("ij,ij->i", signed, o)
    with np.errstate(divide="ignore", invalid="ignore"):
        ex_scale = _finite(-weight * squared / aligned)
        ex_add = exact + _finite(weight * squared * np.einsum("ij,ij->i", signed, turned) / aligned)
    padded = np.zeros((len(o), rabitq_ex.padded_length(dimension)), dtype=np.uint8)
    padded[:, :dimension] = stored
    return (*out, padded, _f32(ex_add), _f32(ex_scale))


def best_magnitudes(absolute: np.ndarray, ex_bits: int) -> np.ndarray:
    """Each row's codes ``k = min(floor(t |o|), 2^ex - 1)`` for the ``t`` that
    maximizes the cosine between ``k + 1/2`` and ``|o|`` (``absolute``, (n, D)
    float64) within :func:`scale_range`: every ``t`` there at which a code steps
    up (``j / |o_d|``) is scored from running sums of how the product and the
    squared length grow, once all steps at that ``t`` are taken.  Compiled
    (:mod:`rq_kernels`) when the kernels are on, else in numpy over blocks of rows;
    both give the same codes."""
    rows, dimension = absolute.shape
    top = (1 << ex_bits) - 1
    out = np.zeros((rows, dimension), dtype=np.int64)
    low, high = scale_range(absolute, ex_bits)
    if jit.enabled():
        values = np.ascontiguousarray(absolute, dtype=np.float64)
        _compiled_magnitudes()(values, top, low, high, out)
        return out
    for start in range(0, rows, _MAGNITUDE_ROWS):  # one step per block of rows
        part = slice(start, start + _MAGNITUDE_ROWS)
        out[part] = _magnitudes_numpy(absolute[part], top, low[part], high[part])
    return out


def scale_range(absolute: np.ndarray, ex_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """The scales searched per row: a band around ``(2^ex + 9) / max |o_d|`` that
    holds the best scale of nearly every row (``_SCALE_BAND``); searching every
    scale would cost ``D * 2^ex`` steps per row."""
    lower, upper = _SCALE_BAND[ex_bits]
    with np.errstate(divide="ignore"):
        end = ((1 << ex_bits) + 9) / absolute.max(axis=1)
    end = np.where(np.isfinite(end), end, 0.0)
    return lower * end, upper * end


def start_codes(absolute: np.ndarray, low: np.ndarray, top: int) -> np.ndarray:
    """The codes at the lowest scale: how many steps ``j / |o_d|`` are at most it."""
    with np.errstate(invalid="ignore"):
        codes = np.minimum(np.floor(low[:, None] * absolute), top)
    codes = np.nan_to_num(codes, nan=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        codes += (codes < top) & ((codes + 1) / absolute <= low[:, None])
        codes -= (codes > 0) & (codes / absolute > low[:, None])
    out: np.ndarray = codes.astype(np.int64)
    return out


def _magnitudes_numpy(
    absolute: np.ndarray, top: int, low: np.ndarray, high: np.ndarray
) -> np.ndarray:
    rows = absolute.shape[0]
    first = start_codes(absolute, low, top)
    steps = np.arange(1, top + 1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        events = steps[None, None, :] / absolute[:, :, None]
    taken = (steps[None, None, :] <= first[:, :, None]) | (events > high[:, None, None])
    events = np.where(taken, np.inf, events).reshape(rows, -1)
    order = np.argsort(events, axis=1, kind="stable")
    times = np.take_along_axis(events, order, axis=1)
    dims, levels = np.divmod(order, top)
    gained = np.take_along_axis(absolute, dims, axis=1)
    start_product = ((first + 0.5) * absolute).sum(axis=1)
    start_length = ((first + 0.5) ** 2).sum(axis=1)
    product = start_product[:, None] + np.cumsum(gained, axis=1)
    length = start_length[:, None] + np.cumsum(2.0 * (levels + 1), axis=1)
    after = np.concatenate([times[:, 1:], np.full((rows, 1), np.inf)], axis=1)
    # Only once every step at a time is taken is the state one some t reaches.
    reached = np.isfinite(times) & (after > times)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(reached, product / np.sqrt(length), -np.inf)
        start = start_product / np.sqrt(start_length)
    best = np.argmax(score, axis=1)[:, None]
    chosen = np.take_along_axis(score, best, axis=1)[:, 0]
    at = np.take_along_axis(times, best, axis=1)[:, 0]
    following = np.take_along_axis(after, best, axis=1)[:, 0]
    # Between the chosen step and the next, clear of rounding at either.
    middle = np.where(np.isfinite(following), 0.5 * (at + following), 2.0 * at)
    opening = np.where(np.isfinite(times[:, 0]), 0.5 * (low + times[:, 0]), low)
    middle = np.where(chosen > start, middle, opening)
    with np.errstate(invalid="ignore"):
        magnitude = np.minimum(np.floor(middle[:, None] * absolute), top)
    out: np.ndarray = np.nan_to_num(magnitude, nan=0.0).astype(np.int64)
    return out


@cache
def _compiled_magnitudes() -> Callable[..., Any]:
    """The compiled kernel (its module imports numba: imported at first use)."""
    kernels = importlib.import_module("lancelet.index.vector.rq_kernels")
    compiled: Callable[..., Any] = jit.kernel(kernels.best_magnitudes)
    return compiled


def _finite(values: np.ndarray) -> np.ndarray:
    """Zero where a zero residual left nothing to divide by."""
    out: np.ndarray = np.where(np.isfinite(values), values, 0.0)
    return out


def _f32(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float32)


def packed_codes(codes: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The sign codes of rows grouped by partition, packed as pylance packs them
    (the inverse of the reader's unpacking): in each partition, each whole block of
    32 rows stores per code byte 32 bytes whose first 16 hold the low nibbles of
    rows ``PERM`` and ``PERM + 16`` and whose last 16 their high nibbles; the rows
    after the last whole block are stored column-major."""
    rows, code_bytes = codes.shape
    out = np.empty(rows * code_bytes, dtype=np.uint8)
    start = 0
    for length in lengths.tolist():  # one step per partition
        blocked = length - length % rabitq.BLOCK
        if blocked:
            block = codes[start : start + blocked].reshape(-1, rabitq.BLOCK, code_bytes)
            first = block[:, rabitq.PERM, :].transpose(0, 2, 1)
            second = block[:, rabitq.PERM + 16, :].transpose(0, 2, 1)
            packed = np.empty((len(block), code_bytes, rabitq.BLOCK), dtype=np.uint8)
            packed[:, :, :16] = (first & 0x0F) | ((second & 0x0F) << 4)
            packed[:, :, 16:] = (first >> 4) | (second & 0xF0)
            out[start * code_bytes : (start + blocked) * code_bytes] = packed.reshape(-1)
        rest = codes[start + blocked : start + length]
        out[(start + blocked) * code_bytes : (start + length) * code_bytes] = rest.T.reshape(-1)
        start += length
    return out.reshape(rows, code_bytes)


def pack_extra(values: np.ndarray, bits: int) -> np.ndarray:
    """(rows, padded) codes -> pylance's blocked bytes (1, 4 or 8 bits)."""
    rows = values.shape[0]
    blocks = values.reshape(rows, -1, rabitq_ex.BLOCK_DIMENSIONS)
    if bits == 1:
        packed = np.packbits(blocks, axis=2, bitorder="little")
    elif bits == 4:
        units = blocks.reshape(rows, -1, 4, 16)
        packed = (units[:, :, :, :8] | (units[:, :, :, 8:] << 4)).reshape(rows, -1, 32)
    elif bits == 8:
        packed = blocks
    else:
        raise ValueError(f"lancelet does not pack {bits}-bit extra codes")
    out: np.ndarray = np.ascontiguousarray(packed.reshape(rows, -1), dtype=np.uint8)
    return out


def write_ivf_rq(
    directory: io.Place,
    row_ids: np.ndarray,
    rq: RqCodes,
    partitions: np.ndarray,
    centroids: np.ndarray,
    loss: float,
    signs: np.ndarray,
    metric: str,
    version: str,
) -> None:
    """Write ``index.idx`` and ``auxiliary.idx`` of the rows keyed by ``row_ids``."""
    count, dimension = centroids.shape
    order = np.argsort(partitions, kind="stable")
    offsets, lengths = partition_layout(partitions, count)
    write_index_file(directory.join(INDEX_FILE), centroids, loss, metric, version, INDEX_TYPE)
    code_bytes = dimension // 8
    columns: dict[str, pa.Array] = {
        "_rowid": pa.array(np.asarray(row_ids, dtype=np.uint64)[order], pa.uint64()),
        rabitq.CODE_COLUMN: _byte_rows(packed_codes(rq.codes[order], lengths), code_bytes),
        rabitq.ADD_COLUMN: pa.array(rq.add[order], pa.float32()),
        rabitq.SCALE_COLUMN: pa.array(rq.scale[order], pa.float32()),
        rabitq_ex.ERROR_COLUMN: pa.array(rq.error[order], pa.float32()),
    }
    if rq.ex_codes is not None:
        assert rq.ex_add is not None and rq.ex_scale is not None
        extra = pack_extra(rq.ex_codes, rq.ex_bits)[order]  # packed first: half the bytes
        columns[rabitq_ex.EX_CODE_COLUMN] = _byte_rows(extra, extra.shape[1])
        columns[rabitq_ex.EX_ADD_COLUMN] = pa.array(rq.ex_add[order], pa.float32())
        columns[rabitq_ex.EX_SCALE_COLUMN] = pa.array(rq.ex_scale[order], pa.float32())
    ivf = index_pb2.IVF(offsets=offsets.tolist(), lengths=lengths.tolist())
    params = {
        "rotate_mat_position": None,
        "fast_rotation_signs": signs.tolist(),
        "rotation_type": "fast",
        "code_dim": dimension,
        "num_bits": rq.ex_bits + 1,
        "packed": True,
        "query_estimator": "raw_query",
    }
    meta = {
        "storage_metadata": json.dumps([json.dumps(params, separators=(",", ":"))]),
        "distance_type": metric,
    }
    write_file(directory.join(AUXILIARY_FILE), pa.table(columns), ivf, meta, version)


def _byte_rows(values: np.ndarray, width: int) -> pa.Array:
    flat = pa.array(np.ascontiguousarray(values).reshape(-1), pa.uint8())
    return pa.FixedSizeListArray.from_arrays(flat, width)


# -- the rows of a segment as one byte matrix (optimize and compaction move rows) ----

_FACTORS = 3  # add, scale, error
_EX_FACTORS = 2  # add_ex, scale_ex


def to_payload(rq: RqCodes) -> np.ndarray:
    """Each row's codes and factors as one row of bytes: sign codes, the float32
    factors, then (multi-bit) the extra factors and codes."""
    factors = [rq.add, rq.scale, rq.error]
    parts = [rq.codes]
    if rq.ex_codes is not None:
        assert rq.ex_add is not None and rq.ex_scale is not None
        factors += [rq.ex_add, rq.ex_scale]
    stacked = np.ascontiguousarray(np.stack(factors, axis=1), dtype="<f4")
    parts.append(stacked.view(np.uint8).reshape(len(rq.codes), 4 * len(factors)))
    if rq.ex_codes is not None:
        parts.append(rq.ex_codes)
    return np.concatenate(parts, axis=1)


def from_payload(payload: np.ndarray, dimension: int, ex_bits: int) -> RqCodes:
    """The inverse of :func:`to_payload`."""
    code_bytes = dimension // 8
    count = _FACTORS + (_EX_FACTORS if ex_bits else 0)
    raw = np.ascontiguousarray(payload[:, code_bytes : code_bytes + 4 * count])
    factors = raw.view("<f4").astype(np.float32)
    codes = np.ascontiguousarray(payload[:, :code_bytes])
    add, scale, error = (np.ascontiguousarray(factors[:, i]) for i in range(_FACTORS))
    if not ex_bits:
        return RqCodes(codes, add, scale, error, 0, None, None, None)
    ex_codes = np.ascontiguousarray(payload[:, code_bytes + 4 * count :])
    ex_add, ex_scale = np.ascontiguousarray(factors[:, 3]), np.ascontiguousarray(factors[:, 4])
    return RqCodes(codes, add, scale, error, ex_bits, ex_codes, ex_add, ex_scale)


def stored_payload(storage: rabitq.RabitqStorage) -> np.ndarray:
    """The payload of every row an open index stores, rows in its order."""
    extra = storage.extra
    assert storage.error is not None
    rq = RqCodes(
        storage.codes,
        storage.add,
        storage.scale,
        storage.error,
        storage.num_bits - 1,
        extra.values if extra is not None else None,
        extra.add if extra is not None else None,
        extra.scale if extra is not None else None,
    )
    return to_payload(rq)
