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

PQ training, transforming (partition and code of every row), shuffling (rows
grouped by partition) and loading (an IVF_PQ index committed from the shuffled
files) write and read the same files pylance's steps do.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.dataset.indices.vector_load import PreparedPq, commit_prepared_ivf_pq
from lancelet.errors import (
    ArgumentError,
    DataColumnNotFoundError,
    IndexTypeError,
    UnsupportedOptionError,
)
from lancelet.file import LanceFileReader, LanceFileWriter
from lancelet.index.vector import kmeans, pq_train
from lancelet.indices.ivf import IvfModel
from lancelet.indices.pq import PqModel

PARTITION_COLUMN = "__ivf_part_id"
RESIDUAL_COLUMN = "__residual_vector"
PQ_COLUMN = "__pq_code"
ROW_ID = "_rowid"
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

    def train_pq(
        self,
        ivf_model: IvfModel,
        num_subvectors: int | None = None,
        *,
        sample_rate: int = 256,
        max_iters: int = 50,
        num_bits: int = 8,
        fragment_ids: list[int] | None = None,
    ) -> PqModel:
        """A PQ codebook trained on ``sample_rate * 2**num_bits`` rows: their
        residuals from their IVF partition's centroid (the vectors themselves for
        dot), each sub-vector clustered by l2 k-means."""
        num_rows = self._count_rows(fragment_ids)
        num_subvectors = _sub_vectors(num_subvectors, self.dimension)
        _check_sample_rate(sample_rate)
        if (1 << num_bits) * sample_rate > num_rows:
            raise ArgumentError(
                "There are not enough rows in the dataset to create PQ codebook with a "
                f"sample rate of {sample_rate} and num_bits of {num_bits}.  "
                f"{(1 << num_bits) * sample_rate} rows needed and there are {num_rows}"
            )
        if num_bits != pq_train.NUM_BITS:
            raise UnsupportedOptionError(
                f"train_pq: lancelet trains 8-bit PQ, not num_bits={num_bits}"
            )
        metric = _normalize_distance_type(ivf_model.distance_type)
        vectors, element = self._vectors(fragment_ids, metric)
        if len(vectors) < pq_train.CODE_WORDS:
            raise ArgumentError(
                f"train_pq: column {self.column[0]!r} has {len(vectors)} vectors that are not "
                f"null or NaN; PQ needs {pq_train.CODE_WORDS}"
            )
        rng = np.random.default_rng()
        training = vectors[pq_train.training_rows(len(vectors), sample_rate, rng)]
        if metric != "dot":
            centroids = _model_matrix(ivf_model.centroids, self.dimension, "IVF centroids")
            assigned = kmeans.assign(training, centroids, kmeans.L2)
            training = pq_train.residuals(training, assigned, centroids)
        codebook = pq_train.train_codebook(training, num_subvectors, max_iters, rng)
        flat = pa.array(codebook.astype(element).ravel())
        return PqModel(num_subvectors, pa.FixedSizeListArray.from_arrays(flat, self.dimension))

    def prepare_global_ivf_pq(
        self,
        num_partitions: int | None,
        num_subvectors: int | None,
        *,
        distance_type: str = "l2",
        accelerator: Any = None,
        sample_rate: int = 256,
        max_iters: int = 50,
        num_bits: int = 8,
        fragment_ids: list[int] | None = None,
    ) -> dict[str, pa.FixedSizeListArray]:
        """IVF centroids and the PQ codebook trained in turn, for distributed
        builds: ``{"ivf_centroids": ..., "pq_codebook": ...}``."""
        ivf = self.train_ivf(
            num_partitions,
            distance_type=distance_type,
            accelerator=accelerator,
            sample_rate=sample_rate,
            max_iters=max_iters,
            fragment_ids=fragment_ids,
        )
        pq = self.train_pq(
            ivf,
            num_subvectors,
            sample_rate=sample_rate,
            max_iters=max_iters,
            num_bits=num_bits,
            fragment_ids=fragment_ids,
        )
        return {"ivf_centroids": ivf.centroids, "pq_codebook": pq.codebook}

    def assign_ivf_partitions(
        self, ivf_model: IvfModel, accelerator: Any, *, output_uri: str | None = None
    ) -> str:
        """pylance computes partitions on a torch accelerator here; lancelet assigns
        them itself in :meth:`transform_vectors`, so this refuses."""
        raise UnsupportedOptionError(
            f"assign_ivf_partitions: lancelet trains on the CPU; accelerator={accelerator!r} "
            "is not supported (transform_vectors assigns the partitions)"
        )

    def transform_vectors(
        self,
        ivf: IvfModel,
        pq: PqModel,
        dest_uri: str,
        fragments: list[Any] | None = None,
        partition_ds_uri: str | None = None,
    ) -> None:
        """Write the Lance file ``dest_uri`` of each vector's row id, IVF partition
        and PQ code (rows of ``fragments``, default all; null and NaN vectors left
        out), in the dataset's row order."""
        if partition_ds_uri is not None:
            raise UnsupportedOptionError(
                "transform_vectors: lancelet assigns partitions itself; "
                "partition_ds_uri (precomputed partitions) is not supported"
            )
        if fragments is not None and len(fragments) == 0:
            raise ArgumentError("fragments must be a non-empty list or None")
        ids = None if fragments is None else [f.fragment_id for f in fragments]
        metric = _normalize_distance_type(ivf.distance_type)
        keys, vectors = self._keyed_vectors(ids, metric)
        centroids = _model_matrix(ivf.centroids, self.dimension, "IVF centroids")
        codebook = _codebook(pq, self.dimension)
        training_metric = kmeans.DOT if metric == "dot" else kmeans.L2
        partitions, scores = kmeans.assign_scored(vectors, centroids, training_metric)
        codes = pq_train.encode_residuals(vectors, partitions, centroids, codebook, metric != "dot")
        loss = float(scores.sum()) * (-1 if metric == "dot" else 1)
        table = pa.Table.from_arrays(
            [
                pa.array(keys, pa.uint64()),
                pa.array(partitions.astype(np.uint32), pa.uint32()),
                pa.FixedSizeListArray.from_arrays(pa.array(codes.ravel()), pq.num_subvectors),
            ],
            schema=_transformed_schema(pq.num_subvectors, loss),
        )
        with LanceFileWriter(dest_uri, table.schema) as writer:
            writer.write_batch(table)

    def shuffle_transformed_vectors(
        self,
        unsorted_filenames: list[str],
        dir_path: str,
        ivf: IvfModel,
        shuffle_output_root_filename: str | None = "sorted",
    ) -> list[str]:
        """Group the rows of the transformed files (in ``dir_path``) by partition:
        one file, ``<root>_0.lance``, of one row per partition holding its rows."""
        if not isinstance(unsorted_filenames, list):
            raise ArgumentError("filenames must be a list of strings")
        root = shuffle_output_root_filename or "sorted"
        rows = pa.concat_tables(
            [_read_file(_joined(dir_path, name)) for name in unsorted_filenames]
        )
        grouped = _by_partition(rows, ivf.num_partitions)
        name = f"{root}_0.lance"
        with LanceFileWriter(_joined(dir_path, name), grouped.schema) as writer:
            writer.write_batch(grouped)
        return [name]

    def load_shuffled_vectors(
        self,
        filenames: list[str],
        dir_path: str,
        ivf: IvfModel,
        pq: PqModel,
        index_name: str | None = None,
    ) -> None:
        """Make the IVF_PQ index of the shuffled files' rows and commit it over every
        fragment of the dataset (named ``<column>_idx`` by default)."""
        if not isinstance(filenames, list):
            raise ArgumentError("filenames must be a list of strings")
        parts = [_read_file(_joined(dir_path, name)).column(0) for name in filenames]
        rows = pa.chunked_array([c for p in parts for c in p.chunks]).combine_chunks().flatten()
        codes = rows.field(2).flatten().to_numpy(zero_copy_only=False)
        prepared = PreparedPq(
            metric=_normalize_distance_type(ivf.distance_type),
            centroids=_model_matrix(ivf.centroids, self.dimension, "IVF centroids"),
            codebook=_codebook(pq, self.dimension),
            row_ids=rows.field(0).to_numpy(zero_copy_only=False),
            partitions=rows.field(1).to_numpy(zero_copy_only=False),
            codes=np.asarray(codes, dtype=np.uint8).reshape(-1, pq.num_subvectors),
        )
        manifest = commit_prepared_ivf_pq(
            self.dataset.snapshot, self.column[0], index_name, prepared
        )
        self.dataset.advance_to(manifest)

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
        table = self._read(fragment_ids, with_row_id=False)
        _, vectors, element = _present_vectors(table, self.dimension, distance_type)
        return vectors, element

    def _keyed_vectors(
        self, fragment_ids: list[int] | None, distance_type: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """(row ids, vectors) as :meth:`_vectors` gives them."""
        table = self._read(fragment_ids, with_row_id=True)
        keys, vectors, _ = _present_vectors(table, self.dimension, distance_type)
        return keys, vectors

    def _read(self, fragment_ids: list[int] | None, with_row_id: bool) -> pa.Table:
        fragments = None
        if fragment_ids is not None:
            fragments = [self.dataset.get_fragment(f) for f in fragment_ids]
        return self.dataset.to_table(
            columns=[self.column[0]], fragments=fragments, with_row_id=with_row_id
        )


def _present_vectors(
    table: pa.Table, dimension: int, distance_type: str
) -> tuple[np.ndarray, np.ndarray, np.dtype[Any]]:
    """(row ids or an empty array, vectors, element type) of the rows whose vector
    is not null and holds no NaN; cosine vectors made unit vectors."""
    column = table.column(0).combine_chunks()
    if isinstance(column, pa.ExtensionArray):
        column = column.storage
    valid = np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    present = column.filter(pa.array(valid))
    element = np.dtype(present.type.value_type.to_pandas_dtype())
    values = present.flatten().to_numpy(zero_copy_only=False)
    vectors = np.asarray(values, dtype=np.float32).reshape(-1, dimension)
    if distance_type == "cosine":
        with np.errstate(all="ignore"):
            vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    kept = np.isfinite(vectors).all(axis=1)
    keys = np.zeros(0, np.uint64)
    if "_rowid" in table.column_names:
        keys = table.column("_rowid").to_numpy().astype(np.uint64)[valid][kept]
    return keys, np.ascontiguousarray(vectors[kept], dtype=np.float32), element


def _model_matrix(array: pa.Array, dimension: int, what: str) -> np.ndarray:
    """A model's FixedSizeList values as (rows, dimension) float32."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    if not pa.types.is_fixed_size_list(array.type) or array.type.list_size != dimension:
        raise ArgumentError(
            f"the {what} must be vectors of dimension {dimension}, not {array.type}"
        )
    values = array.flatten().to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(values, dtype=np.float32).reshape(-1, dimension)


def _codebook(pq: PqModel, dimension: int) -> np.ndarray:
    """The PQ model's codebook as (num_subvectors, 256, dimension / num_subvectors):
    its 256 rows hold the code words sub-vector after sub-vector."""
    if pq.num_bits != pq_train.NUM_BITS:
        raise UnsupportedOptionError(f"lancelet uses 8-bit PQ models, not num_bits={pq.num_bits}")
    sub_vectors = pq.num_subvectors
    flat = _model_matrix(pq.codebook, dimension, "PQ codebook").ravel()
    if dimension % sub_vectors or flat.size != pq_train.CODE_WORDS * dimension:
        raise ArgumentError(
            f"a PQ codebook of {flat.size} values for {sub_vectors} sub-vectors of {dimension}"
        )
    return flat.reshape(sub_vectors, pq_train.CODE_WORDS, dimension // sub_vectors)


def _transformed_schema(sub_vectors: int, loss: float) -> pa.Schema:
    return pa.schema(
        [
            pa.field(ROW_ID, pa.uint64()),
            pa.field(PARTITION_COLUMN, pa.uint32()),
            pa.field(PQ_COLUMN, pa.list_(pa.uint8(), sub_vectors), nullable=False),
        ],
        metadata={"_loss": repr(loss)},
    )


def _by_partition(rows: pa.Table, num_partitions: int) -> pa.Table:
    """One row per partition: the list of its rows (as structs), in file order."""
    partitions = rows.column(PARTITION_COLUMN).to_numpy()
    order = np.argsort(partitions, kind="stable")
    items = pa.StructArray.from_arrays(
        [rows.column(n).combine_chunks().take(pa.array(order)) for n in rows.column_names],
        fields=list(rows.schema),
    )
    counts = np.bincount(partitions, minlength=num_partitions)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    grouped = pa.ListArray.from_arrays(pa.array(offsets), items)
    return pa.table({"partitions": grouped})


def _read_file(uri: str) -> pa.Table:
    return LanceFileReader(uri).read_all().to_table()


def _joined(directory: str, name: str) -> str:
    return f"{directory.rstrip('/')}/{name}"


def _sub_vectors(given: object, dimension: int) -> int:
    """pylance's rule: a divisor of the dimension; by default dimension / 16 (or / 8)."""
    if given is None:
        if dimension % 16 == 0:
            return dimension // 16
        if dimension % 8 == 0:
            return dimension // 8
        raise ArgumentError(
            f"vector dimension {dimension} is not divisible by 16 or 8. PQ performance will "
            "be poor.  Cowardly refusing to create PQ model.  Please specify num_subvectors "
            "manually."
        )
    if not isinstance(given, int) or isinstance(given, bool):
        raise ArgumentError("num_subvectors must be an int")
    if given < 1:
        raise ArgumentError("num_subvectors must be greater than 0")
    if given > dimension:
        raise ArgumentError(
            "num_subvectors must be less than or equal to the dimension of the vectors"
        )
    if dimension % given:
        raise ArgumentError(
            f"dimension ({dimension}) must be divisible by num_subvectors ({given}) without "
            "remainder"
        )
    return given


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
