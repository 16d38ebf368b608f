"""pylance's ``IndicesBuilder``: the steps of building a vector index one at a time
(train the IVF centroids, train the PQ codebook, ...), for checkpointing large
builds.  It works through the dataset's public API, as a user of it would.

IVF training is lancelet's k-means (:mod:`lancelet.index.vector.kmeans`) on
``num_partitions * sample_rate`` vectors drawn at random from the column's
non-null vectors without NaN (all of them when there are fewer), in float32; the
centroids come back in the column's element type, as pylance's do.  cosine
clusters the unit vectors by l2 (its centroids are not unit vectors); dot
clusters spherically (unit centroids).  Accelerators (torch devices) and hamming
training are refused by name.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.errors import (
    ArgumentError,
    DataColumnNotFoundError,
    IndexTypeError,
    UnsupportedFunctionError,
    UnsupportedOptionError,
)
from lancelet.index.vector import kmeans
from lancelet.indices.ivf import IvfModel
from lancelet.indices.pq import PqModel

PARTITION_COLUMN = "__ivf_part_id"
RESIDUAL_COLUMN = "__residual_vector"
PQ_COLUMN = "__pq_code"
_DISTANCES = ("l2", "cosine", "euclidean", "dot", "hamming")


class IndicesBuilder:
    """Helpers that break building a vector index on ``column`` into steps."""

    def __init__(self, dataset: Any, column: str) -> None:
        self.dataset = dataset
        self.column = _normalize_column(dataset.schema, column)
        self.dimension, _ = _vector_type(dataset.schema.field(self.column[0]).type)

    def train_ivf(
        self,
        num_partitions: int | None = None,
        *,
        distance_type: str = "l2",
        accelerator: Any = None,
        sample_rate: int = 256,
        max_iters: int = 50,
        fragment_ids: list[int] | None = None,
    ) -> IvfModel:
        """k-means centroids of the column's vectors (default count: the integer
        nearest the square root of the row count)."""
        if accelerator is not None:
            raise UnsupportedOptionError(
                f"train_ivf: lancelet trains on the CPU; accelerator={accelerator!r} "
                "is not supported"
            )
        num_rows = self._count_rows(fragment_ids)
        if num_partitions is None:
            num_partitions = round(math.sqrt(num_rows))
        _check_sample_rate(sample_rate)
        if num_partitions * sample_rate > num_rows:
            raise ArgumentError(
                "There are not enough rows in the dataset to create IVF centroids with "
                f"{num_partitions} partitions and a sample rate of {sample_rate}. "
                f"{sample_rate * num_partitions} rows needed and there are {num_rows}"
            )
        distance_type = _normalize_distance_type(distance_type)
        _check_count("num_partitions", num_partitions)
        _check_count("max_iters", max_iters, least=0)
        if distance_type == "hamming":
            raise UnsupportedOptionError("train_ivf: lancelet does not train hamming centroids")
        vectors, element = self._vectors(fragment_ids, distance_type)
        if len(vectors) < num_partitions:
            raise ArgumentError(
                f"train_ivf: {num_partitions} partitions need as many vectors; column "
                f"{self.column[0]!r} has {len(vectors)} that are not null or NaN"
            )
        rng = np.random.default_rng()
        sample = vectors[kmeans.sample_rows(len(vectors), num_partitions * sample_rate, rng)]
        metric = kmeans.DOT if distance_type == "dot" else kmeans.L2
        trained = kmeans.train(sample, num_partitions, metric, max_iters, rng)
        flat = pa.array(trained.centroids.astype(element).ravel())
        return IvfModel(pa.FixedSizeListArray.from_arrays(flat, self.dimension), distance_type)

    def train_pq(self, ivf_model: IvfModel, num_subvectors: int | None = None, **_: Any) -> PqModel:
        raise UnsupportedFunctionError("IndicesBuilder.train_pq: not implemented in lancelet")

    def _count_rows(self, fragment_ids: list[int] | None) -> int:
        if fragment_ids is None:
            return int(self.dataset.count_rows())
        total = 0
        for fragment_id in fragment_ids:
            fragment = self.dataset.get_fragment(fragment_id)
            if fragment is None:
                raise ArgumentError(f"Fragment id does not exist: {fragment_id}")
            total += fragment.count_rows()
        return total

    def _vectors(
        self, fragment_ids: list[int] | None, distance_type: str
    ) -> tuple[np.ndarray, np.dtype[Any]]:
        """The column's non-null vectors without NaN as (rows, dimension) float32
        (unit vectors for cosine), and the column's element type."""
        fragments = None
        if fragment_ids is not None:
            fragments = [self.dataset.get_fragment(f) for f in fragment_ids]
        table = self.dataset.to_table(columns=[self.column[0]], fragments=fragments)
        column = table.column(0).combine_chunks()
        if isinstance(column, pa.ExtensionArray):
            column = column.storage
        present = column.filter(column.is_valid())
        element = np.dtype(present.type.value_type.to_pandas_dtype())
        values = present.flatten().to_numpy(zero_copy_only=False)
        vectors = np.asarray(values, dtype=np.float32).reshape(-1, self.dimension)
        if distance_type == "cosine":
            with np.errstate(all="ignore"):
                vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        kept = np.isfinite(vectors).all(axis=1)
        return np.ascontiguousarray(vectors[kept], dtype=np.float32), element


def _check_sample_rate(sample_rate: object) -> None:
    if not isinstance(sample_rate, int) or isinstance(sample_rate, bool) or sample_rate < 2:
        raise ArgumentError(f"The sample_rate must be an int greater than 1, got {sample_rate}")


def _check_count(name: str, value: object, least: int = 1) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise ArgumentError(f"{name} must be an integer >= {least}, got {value!r}")


def _normalize_distance_type(distance_type: object) -> str:
    if not isinstance(distance_type, str) or distance_type.lower() not in _DISTANCES:
        raise ArgumentError(f"Distance type {distance_type} not supported.")
    lowered = distance_type.lower()
    return "l2" if lowered == "euclidean" else lowered


def _normalize_column(schema: pa.Schema, column: object) -> list[str]:
    columns = [column] if isinstance(column, str) else list(column)  # type: ignore[call-overload]
    for name in columns:
        if name not in schema.names:
            raise DataColumnNotFoundError(f"{name} not found in schema")
        _vector_type(schema.field(name).type, name)
    return columns


def _vector_type(dtype: pa.DataType, name: str = "") -> tuple[int, pa.DataType]:
    """(dimension, element type) of a vector column's type."""
    if isinstance(dtype, pa.FixedShapeTensorType) and len(dtype.shape) == 1:
        dimension, element = int(dtype.shape[0]), dtype.value_type
    elif pa.types.is_fixed_size_list(dtype):
        dimension, element = int(dtype.list_size), dtype.value_type
    elif pa.types.is_list(dtype) and pa.types.is_fixed_size_list(dtype.value_type):
        dimension, element = int(dtype.value_type.list_size), dtype.value_type.value_type
    else:
        raise IndexTypeError(
            f"Vector column {name} must be FixedSizeListArray, list<FixedSizeList> "
            f"(multivector), or 1-dimensional FixedShapeTensorArray, got {dtype}"
        )
    if not (pa.types.is_floating(element) or pa.types.is_unsigned_integer(element)):
        raise IndexTypeError(
            f"Vector column {name} must have floating or unsigned integer value type, got {element}"
        )
    return dimension, element
