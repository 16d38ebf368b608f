"""8-bit scalar quantization and the IVF_SQ index directory, as pylance 14 builds and
writes them (``docs/vector-index-format.md``, "Building IVF_SQ").

The quantizer is one pair of bounds for every dimension: the smallest and largest
value among the training rows (``sample_rate * 256`` rows drawn at random, all when
there are no more; unit vectors for cosine).  A value ``v`` is coded as
``(v - start) * 255 / (end - start)`` computed in float64 and truncated toward
zero into 0..255 (values outside the bounds saturate; all zero when the bounds
are equal).  SQ codes the vectors themselves, not residuals.

``index.idx`` is an IVF_FLAT one's with the type ``IVF_SQ``.  ``auxiliary.idx``
holds ``_rowid: uint64`` and ``__sq_code: fixed_size_list<uint8>[D]`` (row-major),
the rows grouped by partition in partition order; schema metadata
``distance_type``, ``lance:ivf`` (the IVF message with the partitions' offsets and
lengths) and ``storage_metadata`` (``{"dim", "num_bits", "bounds": {"start",
"end"}}``).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet._proto import index_pb2
from lancelet.errors import ArgumentError
from lancelet.index.vector.ivf_flat_writer import partition_layout, write_file, write_index_file
from lancelet.index.vector.layout import AUXILIARY_FILE, INDEX_FILE

INDEX_TYPE = "IVF_SQ"
SQ_CODE_COLUMN = "__sq_code"
NUM_BITS = 8
_LEVELS = 255.0
# Vectors coded per block: bounds the float64 temporaries (a few MiB).
_BLOCK_ROWS = 1 << 12


def bounds(training: np.ndarray) -> tuple[float, float]:
    """(start, end): the smallest and largest value of the training vectors."""
    if not training.size:
        raise ArgumentError("cannot train a scalar quantizer on no vectors")
    return float(training.min()), float(training.max())


def encode(vectors: np.ndarray, start: float, end: float) -> np.ndarray:
    """The (n, D) uint8 codes of ``vectors``."""
    codes = np.zeros(vectors.shape, dtype=np.uint8)
    if start == end:
        return codes
    span = end - start
    for first in range(0, len(vectors), _BLOCK_ROWS):  # one step per block
        block = vectors[first : first + _BLOCK_ROWS].astype(np.float64)
        scaled = (block - start) * _LEVELS / span
        # A float-to-u8 cast in Rust saturates (NaN gives 0) and truncates toward 0.
        scaled = np.nan_to_num(np.clip(scaled, 0.0, _LEVELS), nan=0.0)
        codes[first : first + len(block)] = np.trunc(scaled).astype(np.uint8)
    return codes


def write_ivf_sq(
    directory: io.Place,
    row_ids: np.ndarray,
    codes: np.ndarray,
    partitions: np.ndarray,
    centroids: np.ndarray,
    loss: float,
    code_bounds: tuple[float, float],
    metric: str,
    version: str,
    index_file: bool = True,
) -> None:
    """Write the index of the rows keyed by ``row_ids`` (uint64) whose SQ ``codes``
    ((n, D) uint8) and partitions are given, in file format ``version``."""
    count, dimension = centroids.shape
    if codes.shape != (len(row_ids), dimension) or len(partitions) != len(row_ids):
        raise ArgumentError(
            f"{directory}: {len(row_ids)} row ids, {len(partitions)} partitions and "
            f"codes of shape {codes.shape} for dimension {dimension}"
        )
    order = np.argsort(partitions, kind="stable")
    offsets, lengths = partition_layout(partitions, count)
    if index_file:  # IVF_HNSW_* write their own (hnsw_writer)
        write_index_file(directory.join(INDEX_FILE), centroids, loss, metric, version, INDEX_TYPE)
    rows = pa.table(
        [
            pa.array(np.asarray(row_ids, dtype=np.uint64)[order], pa.uint64()),
            pa.FixedSizeListArray.from_arrays(
                pa.array(np.ascontiguousarray(codes[order]).ravel(), pa.uint8()), dimension
            ),
        ],
        schema=auxiliary_schema(dimension),
    )
    ivf = index_pb2.IVF(offsets=offsets.tolist(), lengths=lengths.tolist())
    start, end = code_bounds
    params = {"dim": dimension, "num_bits": NUM_BITS, "bounds": {"start": start, "end": end}}
    meta = {
        "distance_type": metric,
        "storage_metadata": json.dumps([json.dumps(params, separators=(",", ":"))]),
    }
    write_file(directory.join(AUXILIARY_FILE), rows, ivf, meta, version)


def auxiliary_schema(dimension: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("_rowid", pa.uint64()),
            pa.field(SQ_CODE_COLUMN, pa.list_(pa.uint8(), dimension)),
        ]
    )
