"""Writing an IVF_PQ index directory as pylance 14 writes it (the layout is in
``docs/vector-index-format.md`` and is what :mod:`lancelet.index.vector.layout`
reads).

``index.idx`` is an IVF_FLAT one's with the type ``IVF_PQ``.  ``auxiliary.idx``
holds ``_rowid: uint64`` and ``__pq_code: fixed_size_list<uint8>[M]`` (``[M / 2]``
for 4-bit codes: sub-vector ``2j`` in the low half of byte ``j``, ``2j + 1`` in its
high half), the rows
grouped by partition in partition order, and **each partition's codes stored
column-major** (its rows' first codes, then their second codes, ...: pylance's
"transposed" codes).  Global buffer 1 holds the IVF message (offsets and lengths),
global buffer 2 the codebook: a ``FLOAT32`` Tensor whose shape says ``[2**nbits, D]``
but whose values run sub-vector by sub-vector (``[M, 2**nbits, D / M]``).  Schema
metadata: ``distance_type``, ``lance:ivf`` and ``storage_metadata``.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet._proto import index_pb2
from lancelet.errors import ArgumentError
from lancelet.index.vector import pq_train
from lancelet.index.vector.ivf_flat_writer import (
    partition_layout,
    tensor,
    write_file,
    write_index_file,
)
from lancelet.index.vector.layout import AUXILIARY_FILE, INDEX_FILE

INDEX_TYPE = "IVF_PQ"
PQ_CODE_COLUMN = "__pq_code"
# Global buffer 1 is the IVF message; the codebook follows it.
_CODEBOOK_POSITION = 2


def write_ivf_pq(
    directory: io.Place,
    row_ids: np.ndarray,
    codes: np.ndarray,
    partitions: np.ndarray,
    centroids: np.ndarray,
    loss: float,
    codebook: np.ndarray,
    metric: str,
    version: str,
    index_file: bool = True,
) -> None:
    """Write the index of the rows keyed by ``row_ids`` (uint64) whose PQ ``codes``
    ((n, M) uint8, row-major) and partitions are given, with the IVF ``centroids``
    and the PQ ``codebook`` ((M, 2**nbits, D / M) float32; 16 code words make
    4-bit codes), in file format ``version``."""
    count, dimension = centroids.shape
    sub_vectors, words = codebook.shape[:2]
    num_bits = 4 if words == 16 else 8
    if codes.shape != (len(row_ids), sub_vectors) or len(partitions) != len(row_ids):
        raise ArgumentError(
            f"{directory}: {len(row_ids)} row ids, {len(partitions)} partitions and "
            f"codes of shape {codes.shape} for {sub_vectors} sub-vectors"
        )
    order = np.argsort(partitions, kind="stable")
    offsets, lengths = partition_layout(partitions, count)
    if index_file:  # IVF_HNSW_* write their own (hnsw_writer)
        write_index_file(directory.join(INDEX_FILE), centroids, loss, metric, version, INDEX_TYPE)
    packed = codes[order] if num_bits == 8 else pq_train.pack_nibbles(codes[order])
    stored = transposed_codes(packed, partitions[order], offsets, lengths)
    code_bytes = packed.shape[1]
    rows = pa.table(
        [
            pa.array(np.asarray(row_ids, dtype=np.uint64)[order], pa.uint64()),
            pa.FixedSizeListArray.from_arrays(pa.array(stored, pa.uint8()), code_bytes),
        ],
        schema=auxiliary_schema(code_bytes),
    )
    ivf = index_pb2.IVF(offsets=offsets.tolist(), lengths=lengths.tolist())
    params = {
        "codebook_position": _CODEBOOK_POSITION,
        "nbits": num_bits,
        "num_sub_vectors": sub_vectors,
        "dimension": dimension,
        "codebook_tensor": [],
        "transposed": True,
    }
    meta = {
        "distance_type": metric,
        "storage_metadata": json.dumps([json.dumps(params, separators=(",", ":"))]),
    }
    write_file(directory.join(AUXILIARY_FILE), rows, ivf, meta, version, (_tensor(codebook),))


def auxiliary_schema(sub_vectors: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("_rowid", pa.uint64()),
            pa.field(PQ_CODE_COLUMN, pa.list_(pa.uint8(), sub_vectors)),
        ]
    )


def transposed_codes(
    codes: np.ndarray, partitions: np.ndarray, offsets: np.ndarray, lengths: np.ndarray
) -> np.ndarray:
    """The bytes of ``codes`` ((n, M), rows in partition order, ``partitions``
    ascending) as the file stores them: within each partition of L rows starting at
    row o, sub-vector s of its row i at byte ``o*M + s*L + i``."""
    rows, sub_vectors = codes.shape
    local = np.arange(rows, dtype=np.int64) - offsets[partitions]
    first = offsets[partitions] * sub_vectors + local
    positions = (
        first[:, None]
        + np.arange(sub_vectors, dtype=np.int64)[None, :] * (lengths[partitions][:, None])
    )
    out = np.empty(rows * sub_vectors, dtype=np.uint8)
    out[positions.ravel()] = codes.ravel()
    return out


def _tensor(codebook: np.ndarray) -> bytes:
    """The codebook in its own element type (the column's)."""
    sub_vectors, words, width = codebook.shape
    return tensor(codebook, [words, sub_vectors * width]).SerializeToString()
