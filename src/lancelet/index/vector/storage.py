"""The vectors an IVF index keeps per partition (``auxiliary.idx``), and the
distances from a query to the vectors of one partition.

``FlatStorage`` holds the vectors themselves (unit vectors for a cosine index);
``PqStorage`` holds product-quantization codes, which encode the residual from the
partition's centroid for l2 and cosine and the vector itself for dot.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from lancelet.index.vector import float32_distance, other_elements
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
        query to each code word."""
        sub_vectors, _, sub_dimension = self.codebook.shape
        codebook = self._codebook64.transpose(0, 2, 1)
        if metric == "dot":
            parts = query.astype(np.float64).reshape(sub_vectors, 1, sub_dimension)
            return float32_distance.f32(-np.matmul(parts, codebook)[:, 0, :])
        # |r - b|² = |r|² - 2 r·b + |b|², in float64 (one BLAS product per sub-vector,
        # no (codes, sub-dimension) temporary), rounded to float32 once.
        difference: np.ndarray = query - centroid
        if self.half:
            difference = query.astype(np.float16) - centroid.astype(np.float16)
        residual = difference.astype(np.float64).reshape(sub_vectors, 1, sub_dimension)
        products = np.matmul(residual, codebook)[:, 0, :]
        squared = np.einsum("sod,sod->so", residual, residual)
        table = squared - 2 * products + self._codeword_norms
        return float32_distance.f32(np.maximum(table, 0))

    @functools.cached_property
    def _codebook64(self) -> np.ndarray:
        return self.codebook.astype(np.float64)

    @functools.cached_property
    def _codeword_norms(self) -> np.ndarray:
        norms: np.ndarray = np.einsum("scd,scd->sc", self._codebook64, self._codebook64)
        return norms

    def distances(
        self, query: np.ndarray, centroid: np.ndarray, rows: slice, metric: str
    ) -> np.ndarray:
        table = self.table(query, centroid, metric)
        codes = self.codes[rows]
        looked_up = table[np.arange(table.shape[0]), codes]  # (rows, num_sub_vectors)
        summed = looked_up.sum(axis=1, dtype=np.float32)
        return float32_distance.f32(np.float32(1) + summed if metric == "dot" else summed)


Storage = FlatStorage | PqStorage | SqStorage | RabitqStorage
