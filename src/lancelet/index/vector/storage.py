"""The vectors an IVF index keeps per partition (``auxiliary.idx``), and the
distances from a query to the vectors of one partition.

``FlatStorage`` holds the vectors themselves (unit vectors for a cosine index);
``PqStorage`` holds product-quantization codes, which encode the residual from the
partition's centroid for l2 and cosine and the vector itself for dot.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lancelet.file.codecs import jit
from lancelet.index.vector import float32_distance, other_elements, pq_kernels
from lancelet.index.vector.rabitq import RabitqStorage
from lancelet.index.vector.sq_storage import SqStorage


@dataclass(frozen=True)
class FlatStorage:
    # (rows, dimension) of the column's type (float16/32/64, uint8 for hamming),
    # in partition order.
    vectors: np.ndarray

    def distances(
        self, query: np.ndarray, centroid: np.ndarray, rows: slice, metric: str
    ) -> np.ndarray:
        """``query`` is already a unit vector for a cosine index.  float16 vectors
        are measured in float32, float64 ones in float64 (then rounded to float32,
        as pylance reports them), uint8 ones by hamming."""
        vectors = self.vectors[rows]
        if metric == "hamming" or vectors.dtype == np.float64:
            return other_elements.distances(vectors, query, metric)
        if metric == "cosine" and vectors.dtype == np.float16:
            # float16 unit vectors are not quite unit: pylance divides by the norms.
            return float32_distance.exact(vectors, query, metric)
        if metric == "cosine":
            # The stored rows are unit vectors: cosine is one product.
            return float32_distance.f32(np.float32(1) - float32_distance.lane_sum(vectors * query))
        return float32_distance.exact(vectors, query, metric)


@dataclass(frozen=True)
class PqStorage:
    # (num_sub_vectors, 2**num_bits, sub_dimension) float32.
    codebook: np.ndarray
    # (rows, num_sub_vectors) uint8, row-major (the file keeps each partition's
    # codes column-major, 4-bit codes two to a byte; the reader unpacks them).
    codes: np.ndarray
    # A float16 column's index: pylance takes the query's residual in float16.
    half: bool = False

    @property
    def num_bits(self) -> int:
        return 4 if self.codebook.shape[1] == 16 else 8

    def table(self, query: np.ndarray, centroid: np.ndarray, metric: str) -> np.ndarray:
        """The (num_sub_vectors, 2**num_bits) distance from each sub-vector of the
        query to each code word: ``|r - b|² = |r|² - 2 r·b + |b|²`` in float64,
        rounded to float32 once (for dot, ``-q·b``); compiled when the kernels are
        on, else one BLAS product per sub-vector, with the same results."""
        sub_vectors, _, sub_dimension = self.codebook.shape
        if metric == "dot":
            residual = query.astype(np.float64).reshape(sub_vectors, sub_dimension)
        else:
            difference: np.ndarray = query - centroid
            if self.half:
                difference = query.astype(np.float16) - centroid.astype(np.float16)
            residual = difference.astype(np.float64).reshape(sub_vectors, sub_dimension)
        if jit.enabled():
            out = np.empty(self.codebook.shape[:2], dtype=np.float32)
            scratch = np.empty(self.codebook.shape[1], dtype=np.float64)
            _compiled_table()(
                residual, self._columns, self._codeword_norms, metric == "dot", out, scratch
            )
            return out
        table = np.matmul(residual[:, None, :], self._columns)[:, 0, :]
        if metric == "dot":
            return float32_distance.f32(-table)
        squared = np.einsum("sd,sd->s", residual, residual)[:, None]
        # (|r|² - 2 r·b) + |b|², in place: x + (-2y) is x - 2y exactly.
        table *= -2
        table += squared
        table += self._codeword_norms
        np.maximum(table, 0, out=table)
        return float32_distance.f32(table)

    @functools.cached_property
    def _codebook64(self) -> np.ndarray:
        return self.codebook.astype(np.float64)

    @functools.cached_property
    def _columns(self) -> np.ndarray:
        """(sub-vectors, sub-dimension, code words) float64, contiguous."""
        return np.ascontiguousarray(self._codebook64.transpose(0, 2, 1))

    @functools.cached_property
    def _flat_codes(self) -> np.ndarray:
        """Each code as a position in the flattened table (sub-vector s, code c at
        ``s * 2**num_bits + c``), kept once: a lookup is then one ``take``."""
        sub_vectors, words = self.codebook.shape[:2]
        kind = np.uint16 if sub_vectors * words <= 1 << 16 else np.int32
        offsets = (np.arange(sub_vectors) * words).astype(kind)
        flat: np.ndarray = self.codes.astype(kind) + offsets
        return flat

    @functools.cached_property
    def _codeword_norms(self) -> np.ndarray:
        norms: np.ndarray = np.einsum("scd,scd->sc", self._codebook64, self._codebook64)
        return norms

    def distances(
        self, query: np.ndarray, centroid: np.ndarray, rows: slice, metric: str
    ) -> np.ndarray:
        return self.looked_up(self.table(query, centroid, metric), rows, metric)

    def looked_up(self, table: np.ndarray, rows: slice, metric: str) -> np.ndarray:
        """The rows' distances through a partition's ``table``, each row's entries
        summed in numpy's pairwise float32 order (compiled when the kernels are on)."""
        if jit.enabled() and table.shape[0] <= pq_kernels.MAX_SUB_VECTORS:
            codes = self.codes[rows]
            summed = np.empty(len(codes), dtype=np.float32)
            _compiled_lookup()(np.ascontiguousarray(table), np.ascontiguousarray(codes), summed)
        else:
            looked_up = table.ravel().take(self._flat_codes[rows])  # (rows, sub-vectors)
            summed = looked_up.sum(axis=1, dtype=np.float32)
        return float32_distance.f32(np.float32(1) + summed if metric == "dot" else summed)


@functools.cache
def _compiled_table() -> Callable[..., Any]:
    compiled: Callable[..., Any] = jit.kernel(pq_kernels.distance_table)
    return compiled


@functools.cache
def _compiled_lookup() -> Callable[..., Any]:
    compiled: Callable[..., Any] = jit.kernel(pq_kernels.lookup_sums)
    return compiled


Storage = FlatStorage | PqStorage | SqStorage | RabitqStorage
