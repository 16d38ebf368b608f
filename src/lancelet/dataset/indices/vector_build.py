"""Building vector indices: ``create_index`` (IVF_FLAT, IVF_PQ, IVF_SQ, IVF_RQ and
the IVF_HNSW_* variants, as pylance 14 writes them).

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
``ef_construction`` and ``max_level`` as pylance takes them).  IVF_RQ codes each
row's rotated residual with ``num_bits`` (default 5) bits per dimension
(:mod:`lancelet.index.vector.ivf_rq_writer`; float32 vectors).
One ``CreateIndex`` commit then lists the index over every fragment; if anything
fails, the new directory is removed and the dataset is as it was.

Everything pylance takes but lancelet does not implement (other index types, given
centroids or codebooks, accelerators, shuffle tuning, ``target_partition_size``,
distributed building...) is refused by name before any file is written.
"""

from __future__ import annotations

import uuid as uuid_lib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.dataset.core.snapshot import Snapshot
from lancelet.dataset.core.terminal_progress import ProgressBar, progress_bar
from lancelet.dataset.indices import build as index_build
from lancelet.dataset.indices import catalog as indices
from lancelet.dataset.indices import vector_elements, vector_params, vector_rows
from lancelet.dataset.indices.vector_params import HNSW_STORAGE, IvfParameters
from lancelet.dataset.indices.vector_write import LegacyNames, write_index
from lancelet.errors import (
    ArgumentError,
    IndexTypeError,
    NumberOutOfRangeError,
    TrainingError,
    UnknownIndexTypeError,
    UnsupportedOptionError,
    UnsupportedVectorIndexError,
)
from lancelet.index.vector import details as vector_details
from lancelet.index.vector import (
    hnsw_build,
    ivf_flat_writer,
    ivf_pq_writer,
    ivf_rq_writer,
    ivf_sq_writer,
    pq_train,
    rabitq,
)
from lancelet.table import naming
from lancelet.table.index import IndexDetails
from lancelet.table.manifest import Manifest

# Vector index types pylance builds and lancelet does not (yet).
_FLAT, _PQ, _SQ, _RQ = (
    ivf_flat_writer.INDEX_TYPE,
    ivf_pq_writer.INDEX_TYPE,
    ivf_sq_writer.INDEX_TYPE,
    ivf_rq_writer.INDEX_TYPE,
)
_HNSW_STORAGE = HNSW_STORAGE
_BUILT_TYPES = (_FLAT, _PQ, _SQ, _RQ, *_HNSW_STORAGE)
_HNSW_OPTIONS = frozenset({"m", "ef_construction", "max_level"})
_OTHER_VECTOR_TYPES = frozenset(
    {
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
# The options vector_params checks.
_MODEL_OPTIONS = ("ivf_centroids", "pq_codebook", "target_partition_size")


@dataclass(frozen=True)
class VectorIndexPlan:
    """What one build of a vector index needs, checked: its column and parameters."""

    field_path: str
    field_id: int
    dimension: int
    element: np.dtype
    multivector: bool
    params: IvfParameters
    details: IndexDetails


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
    """Build the vector index of ``column`` and commit it; the version that lists it.
    ``options`` maps each of pylance's other parameters to (value given, pylance's
    default): any given otherwise is refused.  ``legacy_file`` asks for pylance's
    legacy one-file layout, which (as in pylance) only IVF_PQ has."""
    manifest = snapshot.manifest
    where = f"{snapshot.uri} version {manifest.version}"
    plan = plan_index(snapshot, column, index_type, metric, num_partitions, options, kwargs)
    name = name or f"{plan.field_path}_idx"
    legacy = _legacy_names(legacy_file, plan.params, plan.element, name, plan.field_path, where)
    indices.check_new_index(manifest, name, [plan.field_id], replace, where)
    uid = _new_uuid(index_uuid, where)
    build_index(snapshot, plan, uid, rng, legacy)
    try:
        return indices.commit_index(
            snapshot,
            name,
            [plan.field_id],
            uid,
            plan.details,
            [f.id for f in manifest.fragments],
            replace=replace,
            index_version=vector_details.index_version(plan.params.index_type),
        )
    except BaseException:
        snapshot.store.io.remove_tree(snapshot.store.path(naming.INDICES_DIR, str(uid)))
        raise


def plan_index(
    snapshot: Snapshot,
    column: str | Sequence[str],
    index_type: object,
    metric: object,
    num_partitions: object,
    options: Mapping[str, tuple[Any, Any]],
    kwargs: Mapping[str, Any],
) -> VectorIndexPlan:
    """The checked plan of a build (see :func:`create_index` for ``options``)."""
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
    if params.index_type == _RQ and element != np.float32:
        raise IndexTypeError(f"{where}: lancelet builds IVF_RQ indices on float32 vectors only")
    given = params.given.centroids is not None
    vector_elements.check(element, params.index_type, params.metric, given, where)
    details = vector_details.with_target_partition_size(
        _details(params, shuffle), params.target_partition_size
    )
    return VectorIndexPlan(field.path, field.id, dimension, element, multivector, params, details)


def build_index(
    snapshot: Snapshot,
    plan: VectorIndexPlan,
    uid: uuid_lib.UUID,
    rng: np.random.Generator | None = None,
    legacy: LegacyNames | None = None,
) -> None:
    """Write the index's files under ``_indices/<uid>/``; on any failure the
    directory goes."""
    directory = snapshot.store.place(naming.INDICES_DIR, str(uid))

    def load(bar: ProgressBar) -> tuple[np.ndarray, np.ndarray]:
        loaded = vector_rows.live_vectors(
            snapshot,
            plan.field_path,
            plan.dimension,
            plan.params.metric,
            plan.element,
            plan.multivector,
        )
        bar.advance()
        return loaded

    # Two steps: reading the vectors, then training, encoding and writing.
    description = f"Indexing {plan.field_path} ({plan.params.index_type})"
    try:
        with progress_bar(description, total=2, unit="steps") as bar:
            write_index(
                directory,
                snapshot.manifest,
                lambda: load(bar),
                plan.params,
                rng or np.random.default_rng(),
                legacy,
            )
            bar.advance()
    except BaseException:
        snapshot.store.io.remove_tree(directory.path)
        raise


def _legacy_names(
    legacy_file: bool, params: IvfParameters, element: np.dtype, name: str, column: str, where: str
) -> LegacyNames | None:
    """What the legacy file records, when one is asked for and the type has it (as in
    pylance, IVF_PQ only; the others are written in the current layout)."""
    if not legacy_file or params.index_type != _PQ:
        return None
    if element != np.float32 or params.num_bits != pq_train.NUM_BITS:
        raise UnsupportedOptionError(
            f"{where}: lancelet writes legacy index files for 8-bit IVF_PQ over float32 "
            f"vectors only, not {params.num_bits}-bit over {element}"
        )
    return LegacyNames(name, column)


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
    if params.storage == _RQ:
        return vector_details.ivf_rq_details(
            params.metric, params.sample_rate, params.num_bits, shuffle
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
    num_bits = kwargs.get("num_bits", ivf_rq_writer.DEFAULT_NUM_BITS if index_type == _RQ else 8)
    if index_type == _RQ:
        _check_rq(num_bits, metric, dimension, where)
    elif num_bits != 8 and not (index_type == _PQ and num_bits == 4):
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


def _check_rq(num_bits: object, metric: object, dimension: int, where: str) -> None:
    if not isinstance(num_bits, int) or isinstance(num_bits, bool) or not 1 <= num_bits <= 9:
        raise ArgumentError(f"{where}: IVF_RQ num_bits must be in 1..=9, got {num_bits!r}")
    if num_bits not in ivf_rq_writer.NUM_BITS:
        raise UnsupportedOptionError(
            f"{where}: lancelet builds IVF_RQ with num_bits "
            f"{', '.join(map(str, ivf_rq_writer.NUM_BITS))}, not {num_bits}"
        )
    if isinstance(metric, str) and _METRICS.get(metric.lower()) not in ivf_rq_writer.METRICS:
        raise UnsupportedOptionError(
            f"{where}: lancelet builds IVF_RQ indices of metric l2, cosine or dot, not {metric}"
        )
    if dimension % 8 or dimension > rabitq.MAX_DIMENSION:
        raise UnsupportedOptionError(
            f"{where}: lancelet builds IVF_RQ indices of a dimension that is a multiple of 8 "
            f"up to {rabitq.MAX_DIMENSION}, not {dimension}"
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
