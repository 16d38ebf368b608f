"""Writing an IVF_FLAT index directory as pylance 14 writes it (``index.idx`` and
``auxiliary.idx``; the layout is in ``docs/vector-index-format.md`` and is what
:mod:`lancelet.index.vector.layout` reads).

``index.idx``: no rows, one column ``__flat_marker: uint64 not null``; schema
metadata ``lance:index`` (type and metric), ``lance:ivf`` (the global buffer of the
IVF message, whose ``centroids_tensor`` holds the centroids and whose offsets and
lengths are zero) and ``lance:flat`` (one empty string per partition).

``auxiliary.idx``: ``_rowid: uint64`` and ``flat: fixed_size_list<T>[d] not
null`` (``T`` the column's element type: float16, float32, float64, or uint8 for
hamming, then nullable; the centroids tensor has that type too), the rows grouped by partition in
partition order (row ids ascending within one, as pylance's were); schema metadata
``distance_type``, ``lance:ivf`` (its IVF message gives each partition's offset
and length) and ``storage_metadata`` (``["{\\"dim\\":d}"]``).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet._proto import index_pb2
from lancelet.errors import ArgumentError
from lancelet.index import files
from lancelet.index.vector.layout import AUXILIARY_FILE, INDEX_FILE

INDEX_TYPE = "IVF_FLAT"
# The tensor type of each element type pylance stores centroids and codebooks in.
_TENSOR_TYPES = {
    np.dtype(np.float16): (index_pb2.Tensor.FLOAT16, "<f2"),
    np.dtype(np.float32): (index_pb2.Tensor.FLOAT32, "<f4"),
    np.dtype(np.float64): (index_pb2.Tensor.FLOAT64, "<f8"),
    np.dtype(np.uint8): (index_pb2.Tensor.UINT8, "u1"),
}


def write_ivf_flat(
    directory: io.Place,
    row_ids: np.ndarray,
    vectors: np.ndarray,
    partitions: np.ndarray,
    centroids: np.ndarray,
    loss: float,
    metric: str,
    version: str,
    index_file: bool = True,
) -> None:
    """Write the index of ``vectors`` ((n, d) of the column's element type: unit
    vectors for cosine; ``centroids`` of the same type),
    keyed by ``row_ids`` (uint64), whose partitions (the centroid each joined) are
    ``partitions``, in Lance file format ``version``."""
    count, dimension = centroids.shape
    if vectors.shape != (len(row_ids), dimension) or len(partitions) != len(row_ids):
        raise ArgumentError(
            f"{directory}: {len(row_ids)} row ids, {len(partitions)} partitions and "
            f"vectors of shape {vectors.shape} for {count} centroids of dimension {dimension}"
        )
    order = np.argsort(partitions, kind="stable")
    offsets, lengths = partition_layout(partitions, count)
    if index_file:  # IVF_HNSW_* write their own (hnsw_writer)
        write_index_file(directory.join(INDEX_FILE), centroids, loss, metric, version, INDEX_TYPE)
    rows = pa.table(
        [
            pa.array(np.asarray(row_ids, dtype=np.uint64)[order], pa.uint64()),
            pa.FixedSizeListArray.from_arrays(
                pa.array(np.ascontiguousarray(vectors[order]).ravel()), dimension
            ),
        ],
        schema=auxiliary_schema(dimension, pa.from_numpy_dtype(vectors.dtype)),
    )
    ivf = index_pb2.IVF(offsets=offsets.tolist(), lengths=lengths.tolist())
    meta = {
        "distance_type": metric,
        "storage_metadata": json.dumps([json.dumps({"dim": dimension}, separators=(",", ":"))]),
    }
    write_file(directory.join(AUXILIARY_FILE), rows, ivf, meta, version)


def auxiliary_schema(dimension: int, element: pa.DataType | None = None) -> pa.Schema:
    element = element or pa.float32()
    # pylance's float vectors are "not null"; its hamming (uint8) ones are nullable.
    nullable = element == pa.uint8()
    return pa.schema(
        [
            pa.field("_rowid", pa.uint64()),
            pa.field("flat", pa.list_(element, dimension), nullable=nullable),
        ]
    )


def tensor(values: np.ndarray, shape: list[int]) -> index_pb2.Tensor:
    """``values`` (float16/32/64 or uint8) as a Tensor of ``shape``, little-endian."""
    kind = _TENSOR_TYPES.get(values.dtype)
    if kind is None:
        raise ArgumentError(f"no index tensor holds {values.dtype} values")
    data_type, layout = kind
    data = np.ascontiguousarray(values, dtype=layout).tobytes()
    return index_pb2.Tensor(data_type=data_type, shape=shape, data=data)


def partition_layout(partitions: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, lengths) int64 of ``count`` partitions holding the rows whose
    partitions are ``partitions``, stored partition after partition."""
    lengths = np.bincount(partitions, minlength=count).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return offsets, lengths


def write_index_file(
    path: io.Place, centroids: np.ndarray, loss: float, metric: str, version: str, index_type: str
) -> None:
    """``index.idx`` of an IVF index whose sub-index is FLAT (IVF_FLAT, IVF_PQ,
    IVF_SQ): no rows; the type and metric, and the centroids in the IVF message."""
    count, dimension = centroids.shape
    ivf = index_pb2.IVF(
        offsets=[0] * count,
        lengths=[0] * count,
        centroids_tensor=tensor(centroids, [count, dimension]),
        loss=loss,
    )
    marker = pa.schema([pa.field("__flat_marker", pa.uint64(), nullable=False)])
    meta = {
        "lance:index": json.dumps(
            {"type": index_type, "distance_type": metric}, separators=(",", ":")
        ),
        "lance:flat": json.dumps([""] * count, separators=(",", ":")),
    }
    write_file(path, marker.empty_table(), ivf, meta, version)


def write_file(
    path: io.Place,
    table: pa.Table,
    ivf: index_pb2.IVF,
    meta: dict[str, str],
    version: str,
    more_buffers: tuple[bytes, ...] = (),
) -> None:
    """One file: ``table``'s rows, the IVF message in a global buffer that
    ``lance:ivf`` names (the first after the schema's), ``more_buffers`` after it,
    and ``meta``."""
    files.write_table(
        path, table, version, meta, {"lance:ivf": ivf.SerializeToString()}, more_buffers
    )
