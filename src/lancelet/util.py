"""pylance's ``lance.util`` helpers: :class:`KMeans` over float32 vectors and
:func:`validate_vector_index`.

``KMeans`` is the clustering lancelet trains IVF indices with (see
:mod:`lancelet.index.vector.kmeans`): Lloyd's iterations for ``l2``, spherical
k-means (unit centroids, largest product) for ``dot``, and for ``cosine`` Lloyd's on
the unit vectors, as an IVF index of that metric is trained (pylance's own
``KMeans`` cannot fit by cosine).  :class:`HNSW` builds one HNSW graph as an
IVF_HNSW_* index builds each partition's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.errors import (
    ArgumentError,
    ModelStateError,
    TrainingError,
    UnsupportedOptionError,
)
from lancelet.file import LanceFileWriter
from lancelet.index.vector import hnsw_build, hnsw_writer, kmeans
from lancelet.io.fileio import file_io_for

_METRICS = {"l2": "l2", "euclidean": "l2", "dot": "dot", "cosine": "cosine"}


def _normalize_metric_type(metric_type: str) -> str:
    normalized = _METRICS.get(str(metric_type).lower())
    if normalized is None:
        raise ArgumentError(f"Invalid metric_type: {metric_type}")
    return normalized


class KMeans:
    """k-means clustering of 2-D float32 data by ``l2``, ``cosine`` or ``dot``.

    Call :meth:`fit` before :meth:`predict` (unless ``centroids`` were given);
    fitting again starts over.  The start is ``k`` distinct random vectors.
    """

    def __init__(
        self,
        k: int,
        metric_type: str = "l2",
        max_iters: int = 50,
        centroids: pa.FixedSizeListArray | None = None,
    ) -> None:
        self.k = k
        self._metric_type = _normalize_metric_type(metric_type)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ArgumentError(f"KMeans: k must be a positive integer, got {k!r}")
        if not isinstance(max_iters, int) or isinstance(max_iters, bool) or max_iters < 0:
            raise ArgumentError(f"KMeans: max_iters must be an integer >= 0, got {max_iters!r}")
        self._max_iters = max_iters
        self._centroids: np.ndarray | None = None
        if centroids is not None:
            self._centroids = _matrix(_to_fixed_size_list(centroids))

    def __repr__(self) -> str:
        return f"lance.KMeans(k={self.k}, metric_type={self._metric_type})"

    @property
    def centroids(self) -> pa.FixedShapeTensorArray | None:
        """The trained centroids as a 1-D fixed-shape tensor array; None before
        :meth:`fit`."""
        if self._centroids is None:
            return None
        dimension = self._centroids.shape[1]
        storage = pa.FixedSizeListArray.from_arrays(pa.array(self._centroids.ravel()), dimension)
        tensor = pa.fixed_shape_tensor(pa.float32(), (dimension,))
        return pa.FixedShapeTensorArray.from_storage(tensor, storage)

    def fit(self, data: Any) -> None:
        """Train the ``k`` centroids on ``data`` (FixedSizeListArray, 1-D fixed-shape
        tensor array or 2-D numpy array, float32)."""
        vectors = self._prepared(_matrix(_to_fixed_size_list(data)))
        if len(vectors) < self.k:
            raise TrainingError(
                "Error training KMeans: KMeans: training does not have sufficient data "
                f"points: n({len(vectors)}) is smaller than k({self.k})"
            )
        metric = kmeans.DOT if self._metric_type == "dot" else kmeans.L2
        rng = np.random.default_rng()
        self._centroids = kmeans.train(vectors, self.k, metric, self._max_iters, rng).centroids

    def predict(self, data: Any) -> pa.UInt32Array:
        """The cluster of each vector of ``data``."""
        if self._centroids is None:
            raise ModelStateError("KMeans must fit (train) first")
        vectors = _matrix(_to_fixed_size_list(data))
        if vectors.shape[1] != self._centroids.shape[1]:
            raise ArgumentError(
                f"Dimension mismatch: kmean model {self._centroids.shape[1]} != "
                f"data {vectors.shape[1]}"
            )
        metric = kmeans.DOT if self._metric_type == "dot" else kmeans.L2
        members = kmeans.assign(self._prepared(vectors), self._centroids, metric)
        return pa.array(members.astype(np.uint32), pa.uint32())

    def _prepared(self, vectors: np.ndarray) -> np.ndarray:
        """cosine clusters the unit vectors (a zero vector stays zero)."""
        if self._metric_type != "cosine":
            return vectors
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        with np.errstate(all="ignore"):
            unit = np.where(norms > 0, vectors / norms, vectors)
        return np.ascontiguousarray(unit, dtype=np.float32)


def _to_fixed_size_list(data: Any) -> pa.FixedSizeListArray:
    if isinstance(data, pa.ChunkedArray):
        data = data.combine_chunks()
    if isinstance(data, pa.FixedShapeTensorArray):
        if len(data.type.shape) != 1:
            raise ArgumentError(
                f"Fixed shape tensor array must be a 1-D array, got {len(data.type.shape)}-D"
            )
        return _to_fixed_size_list(data.storage)
    if isinstance(data, pa.FixedSizeListArray):
        if data.type.value_type != pa.float32():
            raise ArgumentError(f"Array must be float32 type, got: {data.type.value_type}")
        return data
    if isinstance(data, np.ndarray):
        if data.ndim != 2:
            raise ArgumentError(f"Numpy array must be a 2-D array, got {data.ndim}-D")
        if data.dtype != np.float32:
            raise ArgumentError(f"Numpy array must be float32 type, got: {data.dtype}")
        return pa.FixedSizeListArray.from_arrays(pa.array(data.reshape(-1)), data.shape[1])
    raise ArgumentError("Data must be a FixedSizeListArray, Tensor or numpy array")


def _matrix(array: pa.FixedSizeListArray) -> np.ndarray:
    """The (rows, dimension) float32 values; null vectors are refused."""
    if array.null_count:
        raise ArgumentError("KMeans: the data holds null vectors")
    dimension = array.type.list_size
    values = array.flatten().to_numpy(zero_copy_only=False)
    matrix = np.ascontiguousarray(values, dtype=np.float32).reshape(-1, dimension)
    if not np.isfinite(matrix).all():
        raise ArgumentError("KMeans: the data holds NaN or infinite values")
    return matrix


def validate_vector_index(
    dataset: Any,
    column: str,
    refine_factor: int = 5,
    sample_size: int | None = None,
    pass_threshold: float = 1.0,
) -> None:
    """Query the index with the dataset's own vectors (k=1, nprobes=1): each must
    find itself (distance below 1e-6); a ValueError when fewer than
    ``pass_threshold`` of them do.  Vectors holding NaN are skipped."""
    data = dataset.to_table() if sample_size is None else dataset.sample(sample_size)
    vectors = data[column].to_numpy(zero_copy_only=False)
    passes, total = 0, len(vectors)
    for vector in vectors:  # one query per sampled row, as pylance checks
        if np.isnan(vector).any():
            total -= 1
            continue
        query = {"column": column, "q": vector, "k": 1, "nprobes": 1}
        query["refine_factor"] = refine_factor
        found = dataset.to_table(nearest=query)["_distance"].to_pylist()[0]
        passes += 1 if abs(found) < 1e-6 else 0
    if total and passes / total < pass_threshold:
        raise ArgumentError(f"Vector index failed sanity check, only {passes}/{total} passed")


class HNSW:
    """pylance's stand-alone HNSW graph over squared l2
    (:mod:`lancelet.index.vector.hnsw_build`): :meth:`build` it from float32
    vectors, write it with :meth:`to_lance_file` (a legacy Lance file holding the
    graph's rows and its ``lance:hnsw`` entry, as pylance writes it)."""

    def __init__(self, hnsw: _BuiltGraph) -> None:
        self._hnsw = hnsw

    def to_lance_file(self, file_path: str) -> None:
        built = self._hnsw
        table = hnsw_writer.graph_table(list(built.graph.levels))
        schema = table.schema.with_metadata(
            {"lance:hnsw": hnsw_writer.entry(built.graph, built.params)}
        )
        writer = LanceFileWriter.for_dataset(
            file_path,
            schema,
            range(_GRAPH_FIELDS),
            version="0.1",
            file_io=file_io_for(file_path, None, None),
        )
        writer.write_batch(table.replace_schema_metadata(schema.metadata))
        writer.close()

    def vectors(self) -> pa.Array:
        return self._hnsw.vectors

    @staticmethod
    def build(
        vectors_array: Iterator[pa.Array],
        max_level: int = 7,
        m: int = 20,
        ef_construction: int = 100,
    ) -> HNSW:
        arrays = [_fixed_size_list(array) for array in vectors_array]
        if not arrays:
            raise ArgumentError("HNSW.build: no vectors were given")
        vectors = pa.concat_arrays(arrays)
        params = hnsw_build.HnswParams(m, ef_construction, max_level)
        params.check("HNSW.build")
        values = vectors.flatten().to_numpy(zero_copy_only=False)
        matrix = np.asarray(values, dtype=np.float32).reshape(len(vectors), -1)
        graph = hnsw_build.build(matrix, False, params)
        return HNSW(_BuiltGraph(graph, params, vectors))


# The graph file's fields in pre-order: __vector_id, __neighbors and its items,
# _distance and its items.
_GRAPH_FIELDS = 5


@dataclass(frozen=True)
class _BuiltGraph:
    graph: hnsw_build.Graph
    params: hnsw_build.HnswParams
    vectors: pa.Array


def _fixed_size_list(array: object) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if not isinstance(array, pa.FixedSizeListArray):
        raise ArgumentError("Must be a FixedSizeList")
    if array.type.value_type != pa.float32():
        # pylance takes any float type; lancelet does not build on other floats.
        raise UnsupportedOptionError(
            f"HNSW.build: lancelet builds graphs of float32 vectors, not {array.type.value_type}"
        )
    if array.null_count or array.values.null_count:
        raise ArgumentError("HNSW.build: the vectors hold nulls")
    return array
