"""The element types of the vector columns ``create_index`` builds on, as pylance
14 builds them (measured against pylance 14.0.2's files):

* float16, float32 and float64 vectors, for l2, cosine and dot: the index keeps
  the column's type — IVF_FLAT's stored vectors, the centroids tensor and the PQ
  codebook tensor are float16 / float32 / float64 as the column is (IVF_SQ's
  bounds are the smallest and largest value).  A cosine index stores unit
  vectors: a float16 vector divided by its length in float32 and rounded back to
  float16, a float64 one in float64.  lancelet trains in float32 (float64 columns'
  rows join their partitions in float64) and stores the models in the column's type;
* uint8 vectors, for hamming only and IVF_FLAT only: centroids are binary too,
  trained by k-modes (:mod:`lancelet.index.vector.kmodes`).

Anything else is refused with pylance's exception type (ValueError for a metric
the element type does not take, RuntimeError for an index type).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancelet.dataset.indices import vector_params
from lancelet.errors import ArgumentError, IndexTypeError, TrainingError
from lancelet.index.vector import kmeans, kmodes

FLOATS: dict[pa.DataType, np.dtype] = {
    pa.float16(): np.dtype(np.float16),
    pa.float32(): np.dtype(np.float32),
    pa.float64(): np.dtype(np.float64),
}
BINARY = np.dtype(np.uint8)
HAMMING = "hamming"


def element(dtype: pa.DataType, path: str, where: str) -> np.dtype:
    """The numpy type of the column's vector elements (fixed-size lists checked by
    the caller)."""
    value_type = dtype.value_type
    if value_type in FLOATS:
        return FLOATS[value_type]
    if value_type == pa.uint8():
        return BINARY
    raise IndexTypeError(
        f"{where}: lancelet builds vector indices on float16, float32, float64 or "
        f"(hamming) uint8 vectors, not {value_type} (column {path!r})"
    )


def check(element_type: np.dtype, index_type: str, metric: str, given: bool, where: str) -> None:
    """Refuse a metric or index type the element type does not take, as pylance."""
    if element_type == BINARY and metric != HAMMING:
        raise ArgumentError(f"{where}: Unsupported training sample type UInt8 with metric {metric}")
    if element_type != BINARY and metric == HAMMING:
        raise ArgumentError(
            f"{where}: Unsupported training sample type {element_type} with metric hamming "
            "(hamming takes uint8 vectors)"
        )
    if element_type == BINARY and index_type != "IVF_FLAT":
        raise TrainingError(
            f"{where}: {index_type} builder: unsupported data type: UInt8 "
            "(hamming vectors take IVF_FLAT)"
        )
    if element_type == BINARY and given:
        raise ArgumentError(f"{where}: lancelet takes no ivf_centroids for hamming vectors")


def unit_rows(block: np.ndarray) -> np.ndarray:
    """The rows of ``block`` divided by their lengths, in the column's type, as
    pylance normalizes a cosine index's vectors."""
    if block.dtype == np.float64:
        squares = np.zeros(len(block), dtype=np.float64)
        for column in block.T:  # one step per dimension: pylance's summation order
            squares += column * column
        with np.errstate(all="ignore"):
            out: np.ndarray = block / np.sqrt(squares)[:, None]
        return out
    unit = kmeans.unit_rows(block.astype(np.float32, copy=False))
    return unit.astype(block.dtype, copy=False)


@dataclass(frozen=True)
class Partitioned:
    # (k, d) in the column's type: what the index stores.
    centroids: np.ndarray
    partitions: np.ndarray
    loss: float
    # The vectors in the precision they were partitioned in (float32, or float64).
    work: np.ndarray


def partitioned(
    vectors: np.ndarray,
    count: int,
    metric: str,
    given: np.ndarray | None,
    sample_rate: int,
    max_iterations: int,
    rng: np.random.Generator,
) -> Partitioned:
    """The centroids (given, or trained on ``count * sample_rate`` rows), each
    vector's partition and the loss."""
    if vectors.dtype == BINARY:
        sample = kmeans.sample_rows(len(vectors), count * sample_rate, rng)
        modes = kmodes.train(vectors[sample], count, max_iterations, rng)
        members = kmodes.assign(vectors, modes.centroids)
        return Partitioned(modes.centroids, members, modes.loss, vectors)
    work = vectors if vectors.dtype != np.float16 else vectors.astype(np.float32)
    # cosine vectors are unit vectors by now: clustered by l2, as pylance does.
    by = kmeans.DOT if metric == "dot" else kmeans.L2
    if given is not None:
        centroids = given.astype(vectors.dtype)
        members = kmeans.assign(work, centroids.astype(work.dtype), by)
        loss = vector_params.given_centroids_loss(work, members, centroids, by == kmeans.DOT)
        return Partitioned(centroids, members, loss, work)
    sample = kmeans.sample_rows(len(vectors), count * sample_rate, rng)
    trained = kmeans.train(work[sample], count, by, max_iterations, rng)
    centroids = trained.centroids.astype(vectors.dtype)
    members = kmeans.assign(work, centroids.astype(work.dtype), by)
    return Partitioned(centroids, members, trained.loss, work)
