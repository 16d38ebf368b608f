"""Building vector indices: ``create_index`` (IVF_FLAT only, as pylance 14 writes it).

The live rows of the vector column (null vectors and vectors holding NaN left out,
as pylance leaves them out; for cosine, the vectors are made unit vectors first, and
a zero vector, which has no direction, is left out too) are read with their row
addresses (stable row ids on a dataset that has them, as pylance keys them).  The
centroids are trained by k-means on ``num_partitions * sample_rate`` of them drawn
at random (all when there are no more), every row joins its partition, and
the files are written under ``_indices/<uuid>/`` in the dataset's data file format.
One ``CreateIndex`` commit then lists the index over every fragment; if anything
fails, the new directory is removed and the dataset is as it was.

Everything pylance takes but lancelet does not implement (other index types, given
centroids or codebooks, accelerators, shuffle tuning, ``target_partition_size``,
distributed building...) is refused by name before any file is written.
"""

from __future__ import annotations

import uuid as uuid_lib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet.dataset.core.snapshot import Snapshot
from lancelet.dataset.indices import build as index_build
from lancelet.dataset.indices import catalog as indices
from lancelet.dataset.read.scanner import ROW_ADDRESS, ROW_ID, LanceScanner
from lancelet.errors import (
    ArgumentError,
    IndexTypeError,
    UnsupportedIndexError,
    UnsupportedOptionError,
    UnsupportedVectorIndexError,
)
from lancelet.file import version as file_version
from lancelet.index.vector import details as vector_details
from lancelet.index.vector import kmeans
from lancelet.index.vector.ivf_flat_writer import INDEX_TYPE, write_ivf_flat
from lancelet.table import naming
from lancelet.table.manifest import Manifest

# Vector index types pylance builds and lancelet does not (yet).
_OTHER_VECTOR_TYPES = frozenset(
    {
        "IVF_PQ",
        "IVF_SQ",
        "IVF_RQ",
        "IVF_HNSW_FLAT",
        "IVF_HNSW_PQ",
        "IVF_HNSW_SQ",
        "IVF_HNSW_RQ",
        "HNSW",
        "DISKANN",
    }
)
# pylance's create_index parameters lancelet does not implement, with the defaults
# pylance gives them: anything else is refused by name.
PYLANCE_DEFAULTS: Mapping[str, Any] = {
    "ivf_centroids": None,
    "pq_codebook": None,
    "num_sub_vectors": None,
    "accelerator": None,
    "index_cache_size": None,
    "shuffle_partition_batches": None,
    "shuffle_partition_concurrency": None,
    "ivf_centroids_file": None,
    "precomputed_partition_dataset": None,
    "storage_options": None,
    "filter_nan": True,
    "train": True,
    "fragment_ids": None,
    "target_partition_size": None,
    "streaming_sample_rate": None,
    "streaming_coreset_rate": None,
    "streaming_refine_passes": None,
    "skip_transpose": False,
    "progress_callback": None,
}
_METRICS = {"l2": "l2", "euclidean": "l2", "cosine": "cosine", "dot": "dot"}
# kwargs lancelet takes, with pylance's defaults.
_DEFAULT_SAMPLE_RATE = 256
_DEFAULT_MAX_ITERATIONS = 50
_BATCH_ROWS = 1 << 16


@dataclass(frozen=True)
class IvfParameters:
    metric: str
    num_partitions: int
    sample_rate: int
    max_iterations: int


def create_index(
    snapshot: Snapshot,
    column: str,
    index_type: object,
    name: str | None,
    metric: object,
    replace: bool,
    num_partitions: object,
    index_uuid: str | None,
    options: Mapping[str, tuple[Any, Any]],
    kwargs: Mapping[str, Any],
    rng: np.random.Generator | None = None,
) -> Manifest:
    """Build the IVF_FLAT index of ``column`` and commit it; the version that lists it.
    ``options`` maps each of pylance's other parameters to (value given, pylance's
    default): any given otherwise is refused."""
    manifest = snapshot.manifest
    where = f"{snapshot.uri} version {manifest.version}"
    _check_type(index_type, where)
    _refuse_options(options, where)
    params = _parameters(metric, num_partitions, kwargs, where)
    field = index_build.resolve_field(manifest.schema, column, where)
    dimension = _dimension(field.type, field.path, where)
    name = name or f"{field.path}_idx"
    indices.check_new_index(manifest, name, [field.id], replace, where)
    uid = _new_uuid(index_uuid, where)
    directory = snapshot.store.place(naming.INDICES_DIR, str(uid))
    try:
        row_keys, vectors = _live_vectors(snapshot, field.path, dimension, params.metric)
        _build(directory, manifest, row_keys, vectors, params, rng or np.random.default_rng())
        return indices.commit_index(
            snapshot,
            name,
            [field.id],
            uid,
            vector_details.ivf_flat_details(params.metric, params.sample_rate),
            [f.id for f in manifest.fragments],
            replace=replace,
            index_version=vector_details.INDEX_VERSION,
        )
    except BaseException:
        snapshot.store.io.remove_tree(directory.path)
        raise


def _new_uuid(index_uuid: str | None, where: str) -> uuid_lib.UUID:
    if index_uuid is None:
        return uuid_lib.uuid4()
    try:
        return uuid_lib.UUID(str(index_uuid))
    except ValueError as exc:
        raise ArgumentError(f"{where}: index_uuid {index_uuid!r} is not a UUID") from exc


def _check_type(index_type: object, where: str) -> None:
    if not isinstance(index_type, str):
        raise UnsupportedOptionError(
            f"{where}: create_index takes the index type's name; "
            f"lancelet does not take {type(index_type).__name__}"
        )
    wanted = index_type.upper()
    if wanted == INDEX_TYPE:
        return
    if wanted in _OTHER_VECTOR_TYPES:
        raise UnsupportedVectorIndexError(
            f"{where}: lancelet does not build {wanted} indices (it builds {INDEX_TYPE})"
        )
    raise UnsupportedIndexError(
        f"{where}: lancelet's create_index builds {INDEX_TYPE} only, not {index_type!r}; "
        "build scalar indices with create_scalar_index"
    )


def _refuse_options(options: Mapping[str, tuple[Any, Any]], where: str) -> None:
    for option, (given, default) in options.items():
        # The defaults are None, True or False: singletons.
        if given is not default:
            raise UnsupportedOptionError(
                f"{where}: create_index does not support {option}={given!r} in lancelet"
            )


def _parameters(
    metric: object, num_partitions: object, kwargs: Mapping[str, Any], where: str
) -> IvfParameters:
    unknown = sorted(set(kwargs) - {"sample_rate", "max_iterations"})
    if unknown:
        raise UnsupportedOptionError(
            f"{where}: lancelet's IVF_FLAT create_index does not take {unknown}; "
            "it takes sample_rate and max_iterations"
        )
    if not isinstance(metric, str) or metric.lower() not in _METRICS:
        raise ArgumentError(f"{where}: Metric {metric} not supported.")
    if num_partitions is None:
        raise UnsupportedOptionError(
            f"{where}: lancelet needs num_partitions (it does not choose a default count)"
        )
    sample_rate = kwargs.get("sample_rate", _DEFAULT_SAMPLE_RATE)
    max_iterations = kwargs.get("max_iterations", _DEFAULT_MAX_ITERATIONS)
    for option, value, least in (
        ("num_partitions", num_partitions, 1),
        ("sample_rate", sample_rate, 1),
        ("max_iterations", max_iterations, 0),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ArgumentError(f"{where}: {option} must be an integer >= {least}, got {value!r}")
    assert isinstance(num_partitions, int)
    return IvfParameters(_METRICS[metric.lower()], num_partitions, sample_rate, max_iterations)


def _dimension(dtype: pa.DataType, path: str, where: str) -> int:
    if not pa.types.is_fixed_size_list(dtype):
        raise IndexTypeError(
            f"{where}: Vector column {path} must be FixedSizeListArray "
            f"1-dimensional FixedShapeTensorArray, got {dtype}"
        )
    if dtype.value_type != pa.float32():
        raise IndexTypeError(
            f"{where}: lancelet builds vector indices on float32 vectors, "
            f"not {dtype.value_type} (column {path!r})"
        )
    return int(dtype.list_size)


def _live_vectors(
    snapshot: Snapshot, path: str, dimension: int, metric: str
) -> tuple[np.ndarray, np.ndarray]:
    """(row keys uint64, vectors (n, d) float32) of the rows the index holds."""
    manifest = snapshot.manifest
    by_row_id = manifest.stable_row_ids
    scanner = LanceScanner(
        snapshot.store,
        manifest,
        columns=[path],
        with_row_id=by_row_id,
        with_row_address=not by_row_id,
        batch_size=_BATCH_ROWS,
    )
    keys, blocks = [], []
    for batch in scanner.to_batches():  # one step per batch
        values = batch.column(path)
        present = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        flat = values.filter(pa.array(present)).flatten()
        block = flat.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        column = batch.column(ROW_ID if by_row_id else ROW_ADDRESS)
        keys.append(column.to_numpy(zero_copy_only=False)[present].astype(np.uint64))
        blocks.append(block.reshape(-1, dimension))
    row_keys = np.concatenate(keys) if keys else np.empty(0, np.uint64)
    vectors = np.concatenate(blocks) if blocks else np.empty((0, dimension), np.float32)
    if metric == "cosine":
        with np.errstate(all="ignore"):
            vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    kept = ~np.isnan(vectors).any(axis=1)
    return row_keys[kept], np.ascontiguousarray(vectors[kept], dtype=np.float32)


def _build(
    directory: io.Place,
    manifest: Manifest,
    row_keys: np.ndarray,
    vectors: np.ndarray,
    params: IvfParameters,
    rng: np.random.Generator,
) -> None:
    if not len(vectors):
        raise ArgumentError(f"{directory}: there are no vectors to index")
    # pylance trains no more partitions than there are vectors.
    count = min(params.num_partitions, len(vectors))
    sample = kmeans.sample_rows(len(vectors), count * params.sample_rate, rng)
    # cosine vectors are unit vectors by now: clustered by l2, as pylance does.
    training_metric = kmeans.DOT if params.metric == "dot" else kmeans.L2
    trained = kmeans.train(vectors[sample], count, training_metric, params.max_iterations, rng)
    partitions = kmeans.assign(vectors, trained.centroids, training_metric)
    version = file_version.index_file_version(manifest.data_storage_version)
    write_ivf_flat(
        directory,
        row_keys,
        vectors,
        partitions,
        trained.centroids,
        trained.loss,
        params.metric,
        version,
    )
