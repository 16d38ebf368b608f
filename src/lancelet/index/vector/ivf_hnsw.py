"""The graphs of an IVF_HNSW_* index: one HNSW graph per partition over the rows of
``auxiliary.idx`` (partition by partition, in their stored order), built on the
distances of the index's storage as pylance builds them (measured on the
``_distance`` pylance 14 stores beside each neighbour):

* FLAT: the vectors, squared l2; ``1 - x·y`` for dot and, on the unit vectors, for
  cosine (the cosine distance);
* SQ: the dequantized codes, squared l2 (cosine too), ``1 - x·y`` for dot;
* PQ: the codes decoded through the codebook (residuals for l2 and cosine, squared
  l2; the vectors for dot, ``1 - x·y``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lancelet import io
from lancelet.file import parallel
from lancelet.index.vector import hnsw_build, hnsw_writer
from lancelet.index.vector.ivf_flat_writer import partition_layout
from lancelet.index.vector.layout import INDEX_FILE

_LEVELS = 255


def sq_vectors(codes: np.ndarray, start: float, end: float) -> Callable[[np.ndarray], np.ndarray]:
    """The dequantized vectors of some rows (``lo + code * step``, float32)."""
    step = np.float32(end - start) / np.float32(_LEVELS)

    def rows(chosen: np.ndarray) -> np.ndarray:
        values: np.ndarray = np.float32(start) + codes[chosen].astype(np.float32) * step
        return values

    return rows


def pq_vectors(codes: np.ndarray, codebook: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The vectors (or residuals) some rows' codes stand for; ``codebook`` is
    (sub-vectors, 256, width)."""
    sub_vectors = np.arange(codebook.shape[0])

    def rows(chosen: np.ndarray) -> np.ndarray:
        decoded: np.ndarray = codebook[sub_vectors[None, :], codes[chosen]]
        return decoded.reshape(len(chosen), -1)

    return rows


def write_graphs(
    directory: io.Place,
    vectors_of: Callable[[np.ndarray], np.ndarray],
    dot: bool,
    partitions: np.ndarray,
    centroids: np.ndarray,
    loss: float,
    metric: str,
    version: str,
    index_type: str,
    params: hnsw_build.HnswParams,
) -> None:
    """Build each partition's graph over the vectors ``vectors_of(rows)`` gives for
    its rows (positions among all the rows, whose partitions are ``partitions``) and
    write ``index.idx``; ``dot`` picks ``1 - x·y`` over squared l2.  Every graph's
    levels are the start of one sequence (pylance's), drawn once."""
    order = np.argsort(partitions, kind="stable")
    offsets, lengths = partition_layout(partitions, len(centroids))
    levels = hnsw_build.pylance_levels(int(lengths.max(initial=0)), params)

    def graph(number: int) -> hnsw_build.Graph:  # one call per partition
        rows = order[offsets[number] : offsets[number] + lengths[number]]
        vectors = np.asarray(vectors_of(rows), dtype=np.float32)
        return hnsw_build.build_on_levels(vectors, dot, params, levels[: len(rows)])

    graphs = parallel.map_columns(graph, range(len(lengths)))
    hnsw_writer.write_index_file(
        directory.join(INDEX_FILE), graphs, params, centroids, loss, metric, version, index_type
    )
