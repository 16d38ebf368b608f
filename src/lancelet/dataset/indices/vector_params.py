"""The IVF partition count and the given models of ``create_index``, checked as
pylance 14 checks them (measured against pylance 14.0.2).

* **Partition count.**  ``num_partitions`` when given; else ``ivf_centroids``'
  row count; else ``rows // target_partition_size`` clamped to 1..4096, where the
  rows are the version's live rows (null vectors counted, deleted rows not) and the
  target defaults to the index type's: 4096 for IVF_FLAT, 8192 for IVF_PQ and IVF_SQ,
  2**20 for IVF_HNSW_*.
  Only an explicit ``num_partitions`` is then bounded by one partition per 256 rows
  for IVF_PQ (see :mod:`vector_build`); a count derived from a target or from given
  centroids is kept as it is.
* **Given IVF centroids** (``ivf_centroids``: a 2-D numpy array of floats, a
  fixed-size-list or fixed-shape-tensor Arrow array, or a list of rows) are used as
  they are, without training: each vector joins its nearest one (the unit vector by
  l2 for cosine, the largest product for dot).
* **A given PQ codebook** (``pq_codebook``: a ``(num_sub_vectors, 2**num_bits,
  dimension / num_sub_vectors)`` numpy array, or an Arrow array of its code words)
  is used as it is; pylance takes it only with given centroids, and ignores it for
  index types without PQ.

Shapes, element types and NaNs are checked here, before any file is written, with
pylance's exception types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.errors import ArgumentError, DataTypeError
from lancelet.index.vector import hnsw_build, pq_train

# pylance 14's default rows per partition by index type, and its partition bound.
TARGET_PARTITION_SIZE = {
    "IVF_FLAT": 4096,
    "IVF_PQ": 8192,
    "IVF_SQ": 8192,
    "IVF_RQ": 4096,
    "IVF_HNSW_FLAT": 1 << 20,
    "IVF_HNSW_PQ": 1 << 20,
    "IVF_HNSW_SQ": 1 << 20,
}
_MAX_PARTITIONS = 4096
_FLOATS = (np.float16, np.float32, np.float64)


@dataclass(frozen=True)
class GivenModels:
    # (partitions, dimension) float32, or None to train them.
    centroids: np.ndarray | None = None
    # (num_sub_vectors, 2**num_bits, dimension / num_sub_vectors) float32, or None.
    codebook: np.ndarray | None = None


NOTHING_GIVEN = GivenModels()


def partition_count(
    index_type: str,
    num_partitions: int | None,
    target_partition_size: object,
    live_rows: int,
    centroids: np.ndarray | None,
    where: str,
) -> int:
    """The partition count to build (checked by the caller when it is given)."""
    if target_partition_size is not None:
        _check_target(target_partition_size, where)
    if num_partitions is not None:
        return num_partitions
    if centroids is not None:
        return len(centroids)
    target = target_partition_size or TARGET_PARTITION_SIZE[index_type]
    assert isinstance(target, int)
    return int(np.clip(live_rows // target, 1, _MAX_PARTITIONS))


def _check_target(value: object, where: str) -> None:
    # pylance takes a bool as an integer (True is a target of 1 row).
    if not isinstance(value, int):
        raise DataTypeError(
            f"{where}: target_partition_size must be an integer, got {type(value).__name__}"
        )
    if value < 1:
        raise ArgumentError(f"{where}: target_partition_size must be >= 1, got {value}")


def given_models(
    index_type: str,
    ivf_centroids: object,
    pq_codebook: object,
    num_partitions: object,
    num_sub_vectors: int,
    num_bits: int,
    dimension: int,
    where: str,
) -> GivenModels:
    """The given centroids and codebook, checked against the column's ``dimension``."""
    if ivf_centroids is None:
        if pq_codebook is not None:
            raise ArgumentError(
                f"{where}: ivf_centroids must be specified when pq_codebook is provided"
            )
        return GivenModels(None, None)
    centroids = _centroids(ivf_centroids, dimension, where)
    if num_partitions is not None and num_partitions != len(centroids):
        raise ArgumentError(
            f"{where}: Ivf centroids has {len(centroids)} clusters, "
            f"but num_partitions={num_partitions}"
        )
    codebook = None
    if pq_codebook is not None and index_type in ("IVF_PQ", "IVF_HNSW_PQ"):
        codebook = _codebook(pq_codebook, num_sub_vectors, num_bits, dimension, where)
    return GivenModels(centroids, codebook)


def _centroids(given: object, dimension: int, where: str) -> np.ndarray:
    matrix = _matrix(given, "IVF centroids", where)
    if matrix.ndim != 2:
        raise ArgumentError(
            f"{where}: Ivf centroids must be 2D array: (clusters, dim), got {matrix.shape}"
        )
    if matrix.shape[0] == 0:
        raise ArgumentError(
            f"{where}: Ivf centroids must have at least one cluster, got {matrix.shape}"
        )
    if matrix.shape[1] != dimension:
        raise ArgumentError(
            f"{where}: the IVF centroids have dimension {matrix.shape[1]}, "
            f"the vector column {dimension}"
        )
    return _finite(matrix, "IVF centroids", where)


def _codebook(
    given: object, num_sub_vectors: int, num_bits: int, dimension: int, where: str
) -> np.ndarray:
    words = 1 << num_bits
    matrix = _matrix(given, "PQ codebook", where)
    if isinstance(given, np.ndarray) and (
        matrix.ndim != 3 or matrix.shape[:2] != (num_sub_vectors, words)
    ):
        raise ArgumentError(
            f"{where}: PQ codebook must be 3D array: (sub_vectors, {words}, dim) "
            f"for num_bits={num_bits}, got {matrix.shape}"
        )
    needed = words * dimension
    if matrix.size != needed:
        raise ArgumentError(
            f"{where}: PQ codebook has {matrix.size} values, but the vector column requires "
            f"{needed} ({words} centroids x dimension {dimension} for num_bits {num_bits})"
        )
    width = dimension // num_sub_vectors
    return _finite(matrix.reshape(num_sub_vectors, words, width), "PQ codebook", where)


def _matrix(given: object, what: str, where: str) -> np.ndarray:
    """``given`` as a numpy array of floats: numpy as it is, an Arrow array of
    fixed-size lists or fixed-shape tensors as (rows, values), a list of rows."""
    if isinstance(given, np.ndarray):
        matrix = given
    elif isinstance(given, (pa.Array, pa.ChunkedArray, list, tuple)):
        arrow = given if not isinstance(given, (list, tuple)) else pa.array(given)
        matrix = _from_arrow(arrow, what, where)
    else:
        raise DataTypeError(
            f"{where}: {what} must be a numpy array or an Arrow array, got {type(given).__name__}"
        )
    if matrix.dtype.type not in _FLOATS:
        raise DataTypeError(f"{where}: {what} must be floating number, got {matrix.dtype}")
    return matrix


def _from_arrow(array: Any, what: str, where: str) -> np.ndarray:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if isinstance(array, pa.FixedShapeTensorArray):
        return np.asarray(array.to_numpy_ndarray())
    if pa.types.is_fixed_size_list(array.type) or pa.types.is_list(array.type):
        if array.null_count:
            raise ArgumentError(f"{where}: {what} has null rows")
        values = array.flatten().to_numpy(zero_copy_only=False)
        width = len(values) // max(len(array), 1)
        if width * len(array) != len(values):
            raise ArgumentError(f"{where}: the rows of {what} differ in length")
        return np.asarray(values).reshape(len(array), width)
    raise DataTypeError(f"{where}: {what} must be a list of vectors, not {array.type}")


def _finite(matrix: np.ndarray, what: str, where: str) -> np.ndarray:
    out = np.ascontiguousarray(matrix, dtype=np.float32)
    if not np.isfinite(out).all():
        raise ArgumentError(f"{where}: {what} hold NaN or infinite values")
    return out


def given_centroids_loss(
    vectors: np.ndarray, partitions: np.ndarray, centroids: np.ndarray, by_dot: bool
) -> float:
    """The loss pylance records for given centroids: the sum of each vector's
    distance to its centroid, squared l2 or, for dot, ``1 - x·c``."""
    total = 0.0
    step = 1 << 16
    for start in range(0, len(vectors), step):  # one step per block of rows
        block = vectors[start : start + step].astype(np.float64)
        chosen = centroids[partitions[start : start + step]].astype(np.float64)
        if by_dot:
            total += float((1.0 - np.einsum("ij,ij->i", block, chosen)).sum())
        else:
            total += float(((block - chosen) ** 2).sum())
    return total


# IVF_HNSW_* (index/vector/ivf_hnsw.py): each by the IVF type of its storage.
HNSW_STORAGE = {"IVF_HNSW_FLAT": "IVF_FLAT", "IVF_HNSW_PQ": "IVF_PQ", "IVF_HNSW_SQ": "IVF_SQ"}


@dataclass(frozen=True)
class IvfParameters:
    """A vector index build's parameters, checked."""

    index_type: str
    metric: str
    num_partitions: int
    sample_rate: int
    max_iterations: int
    # IVF_PQ only.
    num_sub_vectors: int = 0
    num_bits: int = pq_train.NUM_BITS
    # Given centroids (and codebook) are used as they are.
    given: GivenModels = NOTHING_GIVEN
    # Only a num_partitions given as such is bounded by the rows (IVF_PQ).
    bounded: bool = True
    # Recorded in the details when given.
    target_partition_size: int | None = None
    # IVF_HNSW_* only.
    hnsw: hnsw_build.HnswParams | None = None

    @property
    def storage(self) -> str:
        """The IVF type whose storage (auxiliary.idx) the index has."""
        return HNSW_STORAGE.get(self.index_type, self.index_type)
