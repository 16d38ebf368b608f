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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet.dataset.core.snapshot import Snapshot
from lancelet.dataset.indices import build as index_build
from lancelet.dataset.indices import catalog as indices
from lancelet.dataset.indices import vector_elements, vector_params, vector_rows
from lancelet.errors import (
    ArgumentError,
    IndexTypeError,
    NumberOutOfRangeError,
    TrainingError,
    UnknownIndexTypeError,
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
    legacy_layout,
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
# The types pylance's create_index names when refusing another.
_PYLANCE_TYPES = (_FLAT, _PQ, _SQ, "IVF_HNSW_FLAT", "IVF_HNSW_PQ", "IVF_HNSW_SQ", "IVF_RQ")
# pylance's create_index parameters lancelet does not implement, with the defaults
# pylance gives them: anything else is refused by name.
PYLANCE_DEFAULTS: Mapping[str, Any] = {
    "ivf_centroids": None,
    "pq_codebook": None,
    "num_sub_vectors": None,
    "target_partition_size": None,
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
    "streaming_sample_rate": None,
    "streaming_coreset_rate": None,
    "streaming_refine_passes": None,
    "skip_transpose": False,
    "progress_callback": None,
}
_METRICS = {"l2": "l2", "euclidean": "l2", "cosine": "cosine", "dot": "dot", "hamming": "hamming"}
# kwargs lancelet takes, with pylance's defaults.
_DEFAULT_SAMPLE_RATE = 256
_DEFAULT_MAX_ITERATIONS = 50
# pylance trains PQ code words for 50 iterations whatever max_iterations is.
_PQ_MAX_ITERATIONS = 50
# The options vector_params checks.
_MODEL_OPTIONS = ("ivf_centroids", "pq_codebook", "target_partition_size")


@dataclass(frozen=True)
class IvfParameters:
    index_type: str
    metric: str
    num_partitions: int
    sample_rate: int
    max_iterations: int
    # IVF_PQ only.
    num_sub_vectors: int = 0
    num_bits: int = pq_train.NUM_BITS
    # Given centroids (and codebook) are used as they are.
    given: vector_params.GivenModels = vector_params.NOTHING_GIVEN
    # Only a num_partitions given as such is bounded by the rows (IVF_PQ).
    bounded: bool = True
    # Recorded in the details when given.
    target_partition_size: int | None = None
    # IVF_HNSW_* only.
    hnsw: hnsw_build.HnswParams | None = None

    @property
    def storage(self) -> str:
        """The IVF type whose storage (auxiliary.idx) the index has."""
        return _HNSW_STORAGE.get(self.index_type, self.index_type)


def create_index(
    snapshot: Snapshot,
    column: str | Sequence[str],
    index_type: object,
    name: str | None,
    metric: object,
    replace: bool,
    num_partitions: object,
    index_uuid: str | None,
    options: Mapping[str, tuple[Any, Any]],
    kwargs: Mapping[str, Any],
    rng: np.random.Generator | None = None,
    legacy_file: bool = False,
) -> Manifest:
    """Build the IVF_FLAT index of ``column`` and commit it; the version that lists it.
    ``options`` maps each of pylance's other parameters to (value given, pylance's
    default): any given otherwise is refused.  ``legacy_file`` asks for pylance's
    legacy one-file layout, which (as in pylance) only IVF_PQ has."""
    manifest = snapshot.manifest
    where = f"{snapshot.uri} version {manifest.version}"
    wanted = _check_type(index_type, where)
    options = dict(options)
    shuffle = _shuffle_concurrency(options, where)
    num_sub_vectors = options.pop("num_sub_vectors", (None, None))[0]
    # pylance's IVF_HNSW_SQ and IVF_HNSW_FLAT take num_sub_vectors and do nothing with it.
    if wanted != _PQ and wanted not in _HNSW_STORAGE:
        options["num_sub_vectors"] = (num_sub_vectors, None)
    models = {k: options.pop(k, (None, None))[0] for k in _MODEL_OPTIONS}
    _refuse_options(options, where)
    field = index_build.resolve_field(manifest.schema, _one_column(column, where), where)
    dimension = _dimension(field.type, field.path, where)
    params = _parameters(wanted, metric, num_partitions, num_sub_vectors, dimension, kwargs, where)
    params = _with_models(params, models, manifest.num_rows, dimension, where)
    multivector = _is_multivector(field.type)
    if multivector and params.metric != "cosine":
        raise TrainingError(
            f"{where}: Build Vector Index: multivector type supports only cosine distance"
        )
    vector_type = field.type.value_type if multivector else field.type
    element = vector_elements.element(vector_type, field.path, where)
    if multivector and element != np.float32:
        raise IndexTypeError(
            f"{where}: lancelet builds multivector indices on float32 vectors, not {element}"
        )
    given = params.given.centroids is not None
    vector_elements.check(element, params.index_type, params.metric, given, where)
    name = name or f"{field.path}_idx"
    legacy = _legacy_names(legacy_file, params, element, name, field.path, where)
    indices.check_new_index(manifest, name, [field.id], replace, where)
    uid = _new_uuid(index_uuid, where)
    directory = snapshot.store.place(naming.INDICES_DIR, str(uid))
    try:
        _build(
            directory,
            manifest,
            lambda: vector_rows.live_vectors(
                snapshot, field.path, dimension, params.metric, element, multivector
            ),
            params,
            rng or np.random.default_rng(),
            legacy,
        )
        return indices.commit_index(
            snapshot,
            name,
            [field.id],
            uid,
            vector_details.with_target_partition_size(
                _details(params, shuffle), params.target_partition_size
            ),
            [f.id for f in manifest.fragments],
            replace=replace,
            index_version=vector_details.INDEX_VERSION,
        )
    except BaseException:
        snapshot.store.io.remove_tree(directory.path)
        raise


def _legacy_names(
    legacy_file: bool, params: IvfParameters, element: np.dtype, name: str, column: str, where: str
) -> _LegacyNames | None:
    """What the legacy file records, when one is asked for and the type has it (as in
    pylance, IVF_PQ only; the others are written in the current layout)."""
    if not legacy_file or params.index_type != _PQ:
        return None
    if element != np.float32 or params.num_bits != pq_train.NUM_BITS:
        raise UnsupportedOptionError(
            f"{where}: lancelet writes legacy index files for 8-bit IVF_PQ over float32 "
            f"vectors only, not {params.num_bits}-bit over {element}"
        )
    return _LegacyNames(name, column)


def _write_legacy(
    directory: io.Place,
    legacy: _LegacyNames,
    manifest: Manifest,
    params: IvfParameters,
    found: vector_elements.Partitioned,
    codebook: np.ndarray,
    codes: np.ndarray,
    row_keys: np.ndarray,
) -> None:
    legacy_layout.write(
        directory.join(legacy_layout.FILE),
        legacy.name,
        legacy.column,
        manifest.version,
        params.metric,
        found.centroids,
        found.loss,
        codebook,
        codes,
        row_keys,
        found.partitions,
    )


def _one_column(column: str | Sequence[str], where: str) -> str:
    """pylance takes the column alone or in a list of one."""
    if isinstance(column, str):
        return column
    if not isinstance(column, (list, tuple)) or len(column) != 1:
        raise UnsupportedOptionError(
            f"{where}: Only support building index on 1 column at the moment, got {column!r}"
        )
    return column[0]


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
    # pylance's words and class (NotImplementedError) for any other name.
    raise UnknownIndexTypeError(
        f"{where}: Only {list(_PYLANCE_TYPES)} index types supported. "
        f"Got {wanted} (lancelet builds {built}; scalar indices with create_scalar_index)"
    )


def _details(params: IvfParameters, shuffle: int) -> IndexDetails:
    base = _ivf_details(params, shuffle)
    if params.hnsw is None:
        return base
    hnsw = params.hnsw
    return vector_details.ivf_hnsw_details(
        base, params.metric, hnsw.m, hnsw.ef_construction, hnsw.max_level
    )


def _ivf_details(params: IvfParameters, shuffle: int) -> IndexDetails:
    if params.storage == _PQ:
        return vector_details.ivf_pq_details(
            params.metric, params.sample_rate, params.num_bits, params.num_sub_vectors, shuffle
        )
    if params.storage == _SQ:
        return vector_details.ivf_sq_details(
            params.metric, params.sample_rate, ivf_sq_writer.NUM_BITS, shuffle
        )
    return vector_details.ivf_flat_details(params.metric, params.sample_rate, shuffle)


def _shuffle_concurrency(options: dict[str, tuple[Any, Any]], where: str) -> int:
    """The shuffle_partition_concurrency pylance records (2 unless given), taken out
    of ``options`` with shuffle_partition_batches, which pylance neither checks nor
    records.  Neither changes the index: they only pace pylance's shuffle."""
    options.pop("shuffle_partition_batches", None)
    given = options.pop("shuffle_partition_concurrency", (None, None))[0]
    if given is None:
        return 2
    if not isinstance(given, int):
        raise TypeError(
            f"{where}: shuffle_partition_concurrency: {type(given).__name__!r} object "
            "cannot be interpreted as an integer"
        )
    if given < 0:
        raise NumberOutOfRangeError(
            f"{where}: shuffle_partition_concurrency: can't convert negative int to unsigned"
        )
    return int(given)


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
    """The parameters; a num_partitions of None (derived by :func:`_with_models`)
    is kept as 0 here."""
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
    num_bits = kwargs.get("num_bits", 8)
    if num_bits != 8 and not (index_type == _PQ and num_bits == 4):
        raise UnsupportedOptionError(
            f"{where}: lancelet builds {index_type} with num_bits=8"
            f"{' or 4' if index_type == _PQ else ''} only, not num_bits={num_bits!r}"
        )
    sub_vectors = _sub_vectors(storage, num_sub_vectors, dimension, where)
    if num_bits == 4 and sub_vectors % 2:
        raise TrainingError(
            f"{where}: PQ: num_sub_vectors must be divisible by 2 for num_bits=4, "
            f"but got {sub_vectors}"
        )
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
    sample_rate = kwargs.get("sample_rate", _DEFAULT_SAMPLE_RATE)
    max_iterations = kwargs.get("max_iterations", _DEFAULT_MAX_ITERATIONS)
    for option, value, least in (
        ("num_partitions", 1 if num_partitions is None else num_partitions, 1),
        ("sample_rate", sample_rate, 1),
        ("max_iterations", max_iterations, 0),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ArgumentError(f"{where}: {option} must be an integer >= {least}, got {value!r}")
    assert num_partitions is None or isinstance(num_partitions, int)
    return IvfParameters(
        index_type,
        _METRICS[metric.lower()],
        num_partitions or 0,
        sample_rate,
        max_iterations,
        sub_vectors,
        num_bits,
        hnsw=hnsw,
    )


def _with_models(
    params: IvfParameters,
    models: Mapping[str, Any],
    live_rows: int,
    dimension: int,
    where: str,
) -> IvfParameters:
    """``params`` with the given centroids and codebook and the partition count."""
    given = params.num_partitions or None
    models_given = vector_params.given_models(
        params.index_type,
        models["ivf_centroids"],
        models["pq_codebook"],
        given,
        params.num_sub_vectors,
        params.num_bits,
        dimension,
        where,
    )
    count = vector_params.partition_count(
        params.index_type,
        given,
        models["target_partition_size"],
        live_rows,
        models_given.centroids,
        where,
    )
    bounded = given is not None and models_given.centroids is None
    return replace(
        params,
        num_partitions=count,
        given=models_given,
        bounded=bounded,
        target_partition_size=models["target_partition_size"],
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


def _is_multivector(dtype: pa.DataType) -> bool:
    """A list of vectors per row: each vector is indexed under its row."""
    return bool(pa.types.is_list(dtype) and pa.types.is_fixed_size_list(dtype.value_type))


def _dimension(dtype: pa.DataType, path: str, where: str) -> int:
    if _is_multivector(dtype):
        dtype = dtype.value_type
    if not pa.types.is_fixed_size_list(dtype):
        raise IndexTypeError(
            f"{where}: Vector column {path} must be FixedSizeListArray "
            f"1-dimensional FixedShapeTensorArray, got {dtype}"
        )
    return int(dtype.list_size)


@dataclass(frozen=True)
class _LegacyNames:
    """What a legacy index file records besides the index: its name and column."""

    name: str
    column: str


def _build(
    directory: io.Place,
    manifest: Manifest,
    load: Callable[[], tuple[np.ndarray, np.ndarray]],
    params: IvfParameters,
    rng: np.random.Generator,
    legacy: _LegacyNames | None = None,
) -> None:
    """Train, quantize and write the index of the rows ``load`` reads (their keys
    and vectors); loaded here so that the vectors can go once they are quantized."""
    row_keys, vectors = load()
    found = _partitioned(directory, vectors, params, rng)
    version = file_version.index_file_version(manifest.data_storage_version)
    graph_vectors: Callable[[np.ndarray], np.ndarray]
    if params.storage == _FLAT:
        write_ivf_flat(
            directory,
            row_keys,
            vectors,
            found.partitions,
            found.centroids,
            found.loss,
            params.metric,
            version,
            params.hnsw is None,
        )
        graph_vectors = vectors.__getitem__
    else:
        quantized = _quantized(found, vectors, params, rng)
        # The codes are all the storage keeps: the vectors (most of a build's
        # memory) go before it is written and the graphs are built.
        del vectors
        found = replace(found, work=np.empty(0, np.float32))
        if legacy is not None:
            assert quantized.codebook is not None
            codes, codebook = quantized.codes, quantized.codebook
            _write_legacy(directory, legacy, manifest, params, found, codebook, codes, row_keys)
            return
        graph_vectors = _write_quantized(directory, version, row_keys, found, quantized, params)
    if params.hnsw is None:
        return
    # FLAT cosine graphs use the cosine distance (1 - x·y of the unit vectors).
    dot = params.metric == "dot" or (params.storage == _FLAT and params.metric == "cosine")
    ivf_hnsw.write_graphs(
        directory,
        graph_vectors,
        dot,
        found.partitions,
        found.centroids,
        found.loss,
        params.metric,
        version,
        params.index_type,
        params.hnsw,
        rng,
    )


def _partitioned(
    directory: io.Place, vectors: np.ndarray, params: IvfParameters, rng: np.random.Generator
) -> vector_elements.Partitioned:
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
        if params.bounded:
            count = min(count, len(vectors) // pq_train.CODE_WORDS)
    return vector_elements.partitioned(
        vectors,
        count,
        params.metric,
        params.given.centroids,
        params.sample_rate,
        params.max_iterations,
        rng,
    )


@dataclass(frozen=True)
class _Quantized:
    """The rows' codes, and the PQ codebook or the SQ bounds they were made with."""

    codes: np.ndarray
    codebook: np.ndarray | None = None
    bounds: tuple[float, float] | None = None


def _quantized(
    found: vector_elements.Partitioned,
    vectors: np.ndarray,
    params: IvfParameters,
    rng: np.random.Generator,
) -> _Quantized:
    """The PQ codes (codebook trained unless given) or SQ codes (bounds trained)."""
    if params.storage == _SQ:
        training = vectors[pq_train.training_rows(len(vectors), params.sample_rate, rng)]
        bounds = ivf_sq_writer.bounds(training)
        return _Quantized(ivf_sq_writer.encode(vectors, *bounds), bounds=bounds)
    # Trained and encoded in float32 (float64), stored in the column's type.
    work, work_centroids = found.work, found.centroids.astype(found.work.dtype)
    codebook = params.given.codebook
    if codebook is None:
        codebook = _pq_codebook(work, found.partitions, work_centroids, params, rng)
    codebook = codebook.astype(vectors.dtype)
    residual = params.metric != "dot"
    codes = pq_train.encode_residuals(
        work, found.partitions, work_centroids, codebook.astype(work.dtype), residual
    )
    return _Quantized(codes, codebook=codebook)


def _write_quantized(
    directory: io.Place,
    version: str,
    row_keys: np.ndarray,
    found: vector_elements.Partitioned,
    quantized: _Quantized,
    params: IvfParameters,
) -> Callable[[np.ndarray], np.ndarray]:
    """Write ``auxiliary.idx`` (and ``index.idx`` unless graphs follow); what a
    graph is built on."""
    index_file = params.hnsw is None
    if quantized.bounds is not None:
        ivf_sq_writer.write_ivf_sq(
            directory,
            row_keys,
            quantized.codes,
            found.partitions,
            found.centroids,
            found.loss,
            quantized.bounds,
            params.metric,
            version,
            index_file,
        )
        return ivf_hnsw.sq_vectors(quantized.codes, *quantized.bounds)
    assert quantized.codebook is not None
    ivf_pq_writer.write_ivf_pq(
        directory,
        row_keys,
        quantized.codes,
        found.partitions,
        found.centroids,
        found.loss,
        quantized.codebook,
        params.metric,
        version,
        index_file,
    )
    return ivf_hnsw.pq_vectors(quantized.codes, quantized.codebook)


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
    return pq_train.train_codebook(
        training, params.num_sub_vectors, _PQ_MAX_ITERATIONS, rng, params.num_bits
    )
