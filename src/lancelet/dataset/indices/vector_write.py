"""Training, quantizing and writing a vector index's files (the build stage of
:mod:`vector_build`): k-means partitions, PQ codebooks or SQ bounds, the IVF
storage and, for IVF_HNSW_*, the graphs.  Nothing here checks arguments or
commits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from lancelet import io
from lancelet.dataset.indices import vector_elements
from lancelet.dataset.indices.vector_params import IvfParameters
from lancelet.errors import ArgumentError
from lancelet.file import version as file_version
from lancelet.index.vector import (
    ivf_flat_writer,
    ivf_hnsw,
    ivf_pq_writer,
    ivf_rq_writer,
    ivf_sq_writer,
    legacy_layout,
    pq_train,
)
from lancelet.index.vector.ivf_flat_writer import write_ivf_flat
from lancelet.table.manifest import Manifest

_FLAT, _PQ, _SQ, _RQ = (
    ivf_flat_writer.INDEX_TYPE,
    ivf_pq_writer.INDEX_TYPE,
    ivf_sq_writer.INDEX_TYPE,
    ivf_rq_writer.INDEX_TYPE,
)
# pylance trains PQ code words for 50 iterations whatever max_iterations is.
_PQ_MAX_ITERATIONS = 50


@dataclass(frozen=True)
class LegacyNames:
    """What a legacy index file records besides the index: its name and column."""

    name: str
    column: str


def _write_legacy(
    directory: io.Place,
    legacy: LegacyNames,
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


def write_index(
    directory: io.Place,
    manifest: Manifest,
    load: Callable[[], tuple[np.ndarray, np.ndarray]],
    params: IvfParameters,
    rng: np.random.Generator,
    legacy: LegacyNames | None = None,
) -> None:
    """Train, quantize and write the index of the rows ``load`` reads (their keys
    and vectors); loaded here so that the vectors can go once they are quantized."""
    row_keys, vectors = load()
    found = _partitioned(directory, vectors, params, rng)
    version = file_version.index_file_version(manifest.data_storage_version)
    graph_vectors: Callable[[np.ndarray], np.ndarray]
    if params.storage == _RQ:
        signs = ivf_rq_writer.new_signs(found.centroids.shape[1], rng)
        work = vectors.astype(np.float32, copy=False)
        rq = ivf_rq_writer.encode(
            work, found.partitions, found.centroids, signs, params.num_bits, params.metric
        )
        del vectors, work
        ivf_rq_writer.write_ivf_rq(
            directory,
            row_keys,
            rq,
            found.partitions,
            found.centroids,
            found.loss,
            signs,
            params.metric,
            version,
        )
        return
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
