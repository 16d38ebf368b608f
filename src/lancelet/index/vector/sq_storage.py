"""Scalar-quantized vectors (``__sq_code`` of IVF_SQ / IVF_HNSW_SQ) and the distances
pylance 14 reports from them (measured; see ``docs/vector-index-format.md``).

Every coordinate is one byte: ``code = trunc((x - lo) * 255 / (hi - lo))`` (saturated
to 0..255), with one pair of bounds ``lo``, ``hi`` for the whole index.  The codes
encode the vector itself (a unit vector for a cosine index), never a residual.

* l2 and cosine: the query is quantized the same way and the squared difference of
  the codes summed as an integer, then scaled: ``float32(sum) * (step * step)`` with
  ``step = float32(hi - lo) / 255``, every step in float32 — bit-exact with pylance.
* dot: ``1 - x·q`` with ``x`` dequantized as ``lo + code * (r / 255)`` in float32;
  pylance's summation order is not reproduced, so these distances agree to a few
  float32 ulps only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lancelet.index.vector import float32_distance

_LEVELS = 255


def unit_query(query: np.ndarray) -> np.ndarray:
    """A float32 cosine query divided by its length, its squares added in turn in
    float32, as pylance normalizes the query of an IVF_SQ search: its codes then
    agree with pylance's where a coordinate lies at a code boundary (numpy's norm,
    summed pairwise, put about half of those in the next code; measured on 32
    such queries).  A zero query stays zero."""
    query = np.asarray(query, dtype=np.float32)
    length = np.sqrt(float32_distance.sequential_sum(query * query))
    if not length > 0:
        return np.zeros_like(query)
    unit: np.ndarray = (query / length).astype(np.float32)
    return unit


@dataclass(frozen=True)
class SqStorage:
    # (rows, dimension) uint8, row-major.
    codes: np.ndarray
    lower: float
    upper: float

    @property
    def span(self) -> np.float32:
        span: np.float32 = np.float32(self.upper - self.lower)
        return span

    def quantize(self, query: np.ndarray) -> np.ndarray:
        """The query's codes, as pylance quantizes it (truncating, saturating)."""
        if self.upper == self.lower:
            return np.zeros(query.shape, dtype=np.int64)
        scaled = (query.astype(np.float64) - self.lower) * float(_LEVELS)
        scaled /= self.upper - self.lower
        return np.clip(np.trunc(scaled), 0, _LEVELS).astype(np.int64)

    def dequantized(self, rows: slice | np.ndarray) -> np.ndarray:
        step = self.span / np.float32(_LEVELS)
        values: np.ndarray = np.float32(self.lower) + self.codes[rows].astype(np.float32) * step
        return values

    def distances(
        self, query: np.ndarray, centroid: np.ndarray, rows: slice | np.ndarray, metric: str
    ) -> np.ndarray:
        """``query`` is already a unit vector for a cosine index; ``centroid`` is not
        used (the codes are not residuals)."""
        if metric == "dot":
            products = self.dequantized(rows).astype(np.float64) @ query.astype(np.float64)
            return (1.0 - products).astype(np.float32)
        difference = self.codes[rows].astype(np.int64) - self.quantize(query)
        summed = np.einsum("ij,ij->i", difference, difference).astype(np.float32)
        step = self.span / np.float32(_LEVELS)
        scaled: np.ndarray = summed * (step * step)
        return scaled
