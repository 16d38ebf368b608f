"""Building vector indices: ``create_index`` (IVF_FLAT, IVF_PQ, IVF_SQ and their
IVF_HNSW_* variants, as pylance 14 writes them).

The live rows of the vector column (null vectors and vectors holding NaN left out,
as pylance leaves them out; for cosine, the vectors are made unit vectors first, and
a zero vector, which has no direction, is left out too) are read with their row
addresses (stable row ids on a dataset that has them, as pylance keys them).  The
centroids are trained by k-means on ``num_partitions * sample_rate`` of them drawn
at random (all when there are no more), every row joins its partition, and
the files are written under ``_indices/<uuid>/`` in the dataset's data file format.
IVF_PQ trains its codebook (:mod:`lancelet.index.vector.pq_train`) on
``sample_rate * 256`` rows' residuals (their vectors for dot) and needs at least
256 rows, with at most one partition per 256 of them, as pylance; IVF_SQ takes its
bounds from ``sample_rate * 256`` rows (:mod:`lancelet.index.vector.ivf_sq_writer`).
IVF_HNSW_FLAT / _SQ / _PQ store their rows as the IVF type of the same storage and
add one HNSW graph per partition (:mod:`lancelet.index.vector.ivf_hnsw`; ``m``,
``ef_construction`` and ``max_level`` as pylance takes them).
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
from lancelet.index.vector import (
    hnsw_build,
    ivf_flat_writer,
    ivf_hnsw,
    ivf_pq_writer,
    ivf_sq_writer,
    kmeans,
    pq_train,
)
from lancelet.index.vector.ivf_flat_writer import write_ivf_flat
from lancelet.table import naming
from lancelet.table.index import IndexDetails
from lancelet.table.manifest import Manifest

# Vector index types pylance builds and lancelet does not (yet).
_FLAT, _PQ, _SQ = (
    ivf_flat_writer.INDEX_TYPE,
    ivf_pq_writer.INDEX_TYPE,
    ivf_sq_writer.INDEX_TYPE,
)
# IVF_HNSW_* (index/vector/ivf_hnsw.py): each by the IVF type of its storage.
_HNSW_STORAGE = {"IVF_HNSW_FLAT": _FLAT, "IVF_HNSW_PQ": _PQ, "IVF_HNSW_SQ": _SQ}
_BUILT_TYPES = (_FLAT, _PQ, _SQ, *_HNSW_STORAGE)
_HNSW_OPTIONS = frozenset({"m", "ef_construction", "max_level"})
_OTHER_VECTOR_TYPES = frozenset(
    {
        "IVF_RQ",
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
# pylance trains PQ code words for 50 iterations whatever max_iterations is.
_PQ_MAX_ITERATIONS = 50
_BATCH_ROWS = 1 << 16


@dataclass(frozen=True)
class IvfParameters:
    index_type: str
    metric: str
    num_partitions: int
    sample_rate: int
    max_iterations: int
    # IVF_PQ only.
    num_sub_vectors: int = 0
    # IVF_HNSW_* only.
    hnsw: hnsw_build.HnswParams | None = None

    @property
    def storage(self) -> str:
        """The IVF type whose storage (auxiliary.idx) the index has."""
        return _HNSW_STORAGE.get(self.index_type, self.index_type)


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
    wanted = _check_type(index_type, where)
    options = dict(options)
    num_sub_vectors = options.pop("num_sub_vectors", (None, None))[0]
    # pylance's IVF_HNSW_SQ and IVF_HNSW_FLAT take num_sub_vectors and do nothing with it.
    if wanted != _PQ and wanted not in _HNSW_STORAGE:
        options["num_sub_vectors"] = (num_sub_vectors, None)
    _refuse_options(options, where)
    field = index_build.resolve_field(manifest.schema, column, where)
    dimension = _dimension(field.type, field.path, where)
    params = _parameters(wanted, metric, num_partitions, num_sub_vectors, dimension, kwargs, where)
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
            _details(params),
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


def _check_type(index_type: object, where: str) -> str:
    if not isinstance(index_type, str):
        raise UnsupportedOptionError(
            f"{where}: create_index takes the index type's name; "
            f"lancelet does not take {type(index_type).__name__}"
        )
    wanted = index_type.upper()
    if wanted in _BUILT_TYPES:
        return wanted
    built = ", ".join(_BUILT_TYPES)
    if wanted in _OTHER_VECTOR_TYPES:
        raise UnsupportedVectorIndexError(
            f"{where}: lancelet does not build {wanted} indices (it builds {built})"
        )
    raise UnsupportedIndexError(
        f"{where}: lancelet's create_index builds {built} only, not {index_type!r}; "
        "build scalar indices with create_scalar_index"
    )


def _details(params: IvfParameters) -> IndexDetails:
    base = _ivf_details(params)
    if params.hnsw is None:
        return base
    hnsw = params.hnsw
    return vector_details.ivf_hnsw_details(
        base, params.metric, hnsw.m, hnsw.ef_construction, hnsw.max_level
    )


def _ivf_details(params: IvfParameters) -> IndexDetails:
    if params.storage == _PQ:
        return vector_details.ivf_pq_details(
            params.metric, params.sample_rate, pq_train.NUM_BITS, params.num_sub_vectors
        )
    if params.storage == _SQ:
        return vector_details.ivf_sq_details(
            params.metric, params.sample_rate, ivf_sq_writer.NUM_BITS
        )
    return vector_details.ivf_flat_details(params.metric, params.sample_rate)


def _refuse_options(options: Mapping[str, tuple[Any, Any]], where: str) -> None:
    for option, (given, default) in options.items():
        # The defaults are None, True or False: singletons.
        if given is not default:
            raise UnsupportedOptionError(
                f"{where}: create_index does not support {option}={given!r} in lancelet"
            )


def _parameters(
    index_type: str,
    metric: object,
    num_partitions: object,
    num_sub_vectors: object,
    dimension: int,
    kwargs: Mapping[str, Any],
    where: str,
) -> IvfParameters:
    storage = _HNSW_STORAGE.get(index_type, index_type)
    taken = {"sample_rate", "max_iterations"} | ({"num_bits"} if storage != _FLAT else set())
    if index_type in _HNSW_STORAGE:
        taken |= _HNSW_OPTIONS
    unknown = sorted(set(kwargs) - taken)
    if unknown:
        raise UnsupportedOptionError(
            f"{where}: lancelet's {index_type} create_index does not take {unknown}; "
            f"it takes {', '.join(sorted(taken))}"
        )
    if kwargs.get("num_bits", 8) != 8:
        raise UnsupportedOptionError(
            f"{where}: lancelet builds {index_type} with num_bits=8 only, "
            f"not num_bits={kwargs['num_bits']!r}"
        )
    sub_vectors = _sub_vectors(storage, num_sub_vectors, dimension, where)
    hnsw = None
    if index_type in _HNSW_STORAGE:
        hnsw = hnsw_build.HnswParams(
            kwargs.get("m", hnsw_build.DEFAULT_M),
            kwargs.get("ef_construction", hnsw_build.DEFAULT_EF_CONSTRUCTION),
            kwargs.get("max_level", hnsw_build.DEFAULT_MAX_LEVEL),
        )
        hnsw.check(where)
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
    return IvfParameters(
        index_type,
        _METRICS[metric.lower()],
        num_partitions,
        sample_rate,
        max_iterations,
        sub_vectors,
        hnsw,
    )


def _sub_vectors(index_type: str, given: object, dimension: int, where: str) -> int:
    """IVF_PQ's num_sub_vectors (0 for the other types), checked as pylance does."""
    if index_type != _PQ:
        return 0
    if given is None:
        raise ArgumentError(f"{where}: num_partitions and num_sub_vectors are required for IVF_PQ")
    if not isinstance(given, int) or isinstance(given, bool) or given < 1:
        raise ArgumentError(f"{where}: num_sub_vectors must be an integer >= 1, got {given!r}")
    if dimension % given:
        raise ArgumentError(
            f"{where}: dimension ({dimension}) must be divisible by num_sub_vectors ({given})"
        )
    return given


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
    # Filled in place, batch by batch: the column is held once, not twice.
    capacity = sum(f.physical_rows for f in manifest.fragments)
    vectors = np.empty((capacity, dimension), dtype=np.float32)
    row_keys = np.empty(capacity, dtype=np.uint64)
    filled = 0
    for batch in scanner.to_batches():  # one step per batch
        values = batch.column(path)
        present = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        flat = values.filter(pa.array(present)).flatten()
        block = flat.to_numpy(zero_copy_only=False).reshape(-1, dimension)
        if metric == "cosine":
            block = kmeans.unit_rows(block.astype(np.float32, copy=False))
        column = batch.column(ROW_ID if by_row_id else ROW_ADDRESS)
        if filled + len(block) > len(vectors):  # row counts the manifest lacks
            vectors = _grown(vectors, filled + len(block))
            row_keys = _grown(row_keys, len(vectors))
        row_keys[filled : filled + len(block)] = column.to_numpy(zero_copy_only=False)[present]
        vectors[filled : filled + len(block)] = block
        filled += len(block)
    row_keys, vectors = row_keys[:filled], vectors[:filled]
    kept = ~np.isnan(vectors).any(axis=1)
    if kept.all():  # no copy of the column
        return row_keys, vectors
    return row_keys[kept], np.ascontiguousarray(vectors[kept])


def _grown(array: np.ndarray, least: int) -> np.ndarray:
    """``array`` with room for at least ``least`` rows (and twice as many as now)."""
    rows = max(least, 2 * len(array), 1)
    out = np.empty((rows, *array.shape[1:]), dtype=array.dtype)
    out[: len(array)] = array
    return out


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
    if params.storage == _PQ:
        if len(vectors) < pq_train.CODE_WORDS:
            raise ArgumentError(
                f"{directory}: {params.index_type} needs at least {pq_train.CODE_WORDS} "
                f"vectors to train its codebook, the column has {len(vectors)}"
            )
        # pylance's IVF_PQ (and IVF_HNSW_PQ) keeps at least 256 rows per partition.
        count = min(count, len(vectors) // pq_train.CODE_WORDS)
    sample = kmeans.sample_rows(len(vectors), count * params.sample_rate, rng)
    # cosine vectors are unit vectors by now: clustered by l2, as pylance does.
    training_metric = kmeans.DOT if params.metric == "dot" else kmeans.L2
    trained = kmeans.train(vectors[sample], count, training_metric, params.max_iterations, rng)
    partitions = kmeans.assign(vectors, trained.centroids, training_metric)
    version = file_version.index_file_version(manifest.data_storage_version)
    centroids, loss = trained.centroids, trained.loss
    index_file = params.hnsw is None
    if params.storage == _PQ:
        codebook = _pq_codebook(vectors, partitions, centroids, params, rng)
        residual = params.metric != "dot"
        codes = pq_train.encode_residuals(vectors, partitions, centroids, codebook, residual)
        ivf_pq_writer.write_ivf_pq(
            directory,
            row_keys,
            codes,
            partitions,
            centroids,
            loss,
            codebook,
            params.metric,
            version,
            index_file,
        )
        graph_vectors = ivf_hnsw.pq_vectors(codes, codebook)
    elif params.storage == _SQ:
        training = vectors[pq_train.training_rows(len(vectors), params.sample_rate, rng)]
        bounds = ivf_sq_writer.bounds(training)
        codes = ivf_sq_writer.encode(vectors, *bounds)
        ivf_sq_writer.write_ivf_sq(
            directory,
            row_keys,
            codes,
            partitions,
            centroids,
            loss,
            bounds,
            params.metric,
            version,
            index_file,
        )
        graph_vectors = ivf_hnsw.sq_vectors(codes, *bounds)
    else:
        write_ivf_flat(
            directory,
            row_keys,
            vectors,
            partitions,
            centroids,
            loss,
            params.metric,
            version,
            index_file,
        )
        graph_vectors = vectors.__getitem__
    if params.hnsw is not None:
        # FLAT cosine graphs use the cosine distance (1 - x·y of the unit vectors).
        dot = params.metric == "dot" or (params.storage == _FLAT and params.metric == "cosine")
        ivf_hnsw.write_graphs(
            directory,
            graph_vectors,
            dot,
            partitions,
            centroids,
            loss,
            params.metric,
            version,
            params.index_type,
            params.hnsw,
            rng,
        )


def _pq_codebook(
    vectors: np.ndarray,
    partitions: np.ndarray,
    centroids: np.ndarray,
    params: IvfParameters,
    rng: np.random.Generator,
) -> np.ndarray:
    """The codebook, trained on the residuals of a sample of rows (on the vectors
    themselves for dot)."""
    rows = pq_train.training_rows(len(vectors), params.sample_rate, rng)
    training = vectors[rows]
    if params.metric != "dot":
        training = pq_train.residuals(training, partitions[rows], centroids)
    return pq_train.train_codebook(training, params.num_sub_vectors, _PQ_MAX_ITERATIONS, rng)
